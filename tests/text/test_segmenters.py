"""Words of Chinese, Japanese, Korean and Thai split by their real segmenters, on real text
(tests/text/data/segmenter_messages.md), with the words datatrove's tokenizers give."""

from __future__ import annotations

import json
from pathlib import Path

from curator.text import words
from curator.text.words import SegmenterMissing, segmented_language, split_words

DATA = Path(__file__).parent / "data" / "segmenter_messages.jsonl"
LANGS = ("zh", "ja", "ko", "th")


def _rows() -> list[dict[str, str]]:
    return [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines()]


def test_chinese_words_are_words_not_characters() -> None:
    for lang in ("zh", "zh-CN", "zh_Hans", "cmn_Hani", "ZH"):
        assert split_words("我爱北京天安门", lang) == ["我", "爱", "北京", "天安门"], lang
    # no language, or one split by script: one character per word, as before
    assert split_words("我爱北京天安门") == list("我爱北京天安门")
    assert split_words("我爱北京天安门", "en") == list("我爱北京天安门")


def test_each_language_gets_its_segmenter() -> None:
    assert split_words("吾輩は猫である。名前はまだ無い。", "ja") == [
        "吾輩", "は", "猫", "で", "ある", "。", "名前", "は", "まだ", "無い", "。"]
    assert split_words("저는 서울에 살고 있습니다.", "ko") == [
        "저", "는", "서울", "에", "살", "고", "있", "습니다", "."]
    assert split_words("ผมรักภาษาไทย วันนี้อากาศดีมาก", "th") == [
        "ผม", "รัก", "ภาษาไทย", "วันนี้", "อากาศ", "ดีมาก"]
    assert [segmented_language(x) for x in ("jpn_Jpan", "kor", "tha_Thai", "de", None)] == [
        "ja", "ko", "th", None, None]


def test_real_text_words_sit_between_whitespace_chunks_and_characters() -> None:
    for row in _rows():
        for lang in ("zh", "ja", "th"):
            text = row[lang]
            words = split_words(text, lang)
            chars = len("".join(text.split()))
            assert len(text.split()) < len(words) < chars, (lang, text)
            # nothing but whitespace is lost or reordered
            assert "".join(words) == "".join(text.split()), (lang, text)


def test_words_equal_datatrove_word_tokenizers_on_real_text() -> None:
    from datatrove.utils.word_tokenizers import KiwiTokenizer, SpaCyTokenizer, ThaiTokenizer

    # FineWeb-2's tokenizers as datatrove builds them; Kiwi's "cong" model, the one that
    # kiwipiepy-model ships (datatrove's default "sbg" is not in it)
    theirs = {"zh": SpaCyTokenizer("zh"), "ja": SpaCyTokenizer("ja"),
              "ko": KiwiTokenizer("cong"), "th": ThaiTokenizer()}
    rows = _rows()
    assert len(rows) >= 20
    for lang in LANGS:
        for row in rows:
            assert split_words(row[lang], lang) == theirs[lang].word_tokenize(row[lang]), (
                lang, row["catalog"])


def test_long_japanese_text_is_cut_for_sudachi_on_lines() -> None:
    line = "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。\n"
    text = line * 1500  # about 150 kB: three times what Sudachi accepts in one call
    words = split_words(text, "ja")
    assert words == split_words(line, "ja") * 1500


def test_a_missing_segmenter_is_one_line_naming_language_and_package(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pythainlp", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "pythainlp.tokenize", None)
    got: list[BaseException] = []

    def split() -> None:
        try:
            split_words("ผมรักภาษาไทย", "th")
        except SegmenterMissing as e:
            got.append(e)

    monkeypatch.setattr(words, "_loaded", {})  # none loaded yet in this process
    split()
    assert len(got) == 1
    msg = str(got[0])
    assert "\n" not in msg and "'th'" in msg and "pip install pythainlp" in msg, msg


def test_japanese_from_many_threads_at_once() -> None:
    # Sudachi's tokenizer serves one thread at a time: each thread gets its own
    from concurrent.futures import ThreadPoolExecutor

    texts = [r["ja"] for r in _rows()]
    alone = [split_words(t, "ja") for t in texts]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda t: split_words(t, "ja"), texts * 4)) == alone * 4
