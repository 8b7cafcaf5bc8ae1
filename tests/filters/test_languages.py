"""The heuristic presets on real text in seven languages (the same messages, human translations;
tests/filters/data/parallel_messages.md): with ``languages: recommended`` no language is
dropped wholesale, with the language each document gets from ``language_id`` itself."""

from __future__ import annotations

import json
from pathlib import Path

from curator.base.document import Document
from curator.core.registry import resolve
from curator.filters.language_id import DEFAULT_MODEL, predict_languages

DATA = Path(__file__).parent / "data" / "parallel_messages.jsonl"
LANGS = ["en", "de", "fr", "es", "ru", "zh", "ja"]


def _texts() -> list[dict[str, str]]:
    return [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines()]


def _kept(stage: str, params: dict) -> dict[str, float]:
    """The share of each language's texts ``stage`` keeps, each document labelled by
    language_id's own model (meta.language, as in a pipeline)."""
    st = resolve(stage).from_params(params, id=stage)
    out = {}
    for lang in LANGS:
        texts = [t[lang] for t in _texts()]
        labels, _ = predict_languages(texts, DEFAULT_MODEL)
        assert sum(x == lang for x in labels) >= 0.9 * len(texts), (lang, labels)
        keep = sum(st.check(Document(str(i), t, {"language": label})) is None
                   for i, (t, label) in enumerate(zip(texts, labels, strict=True)))
        out[lang] = keep / len(texts)
    return out


def test_gopher_quality_recommended_keeps_every_language():
    short = {"overrides": {"word_count": {"min_words": 20}}}
    published = _kept("gopher_quality", short)
    assert published["en"] >= 0.9
    assert all(published[lang] == 0 for lang in LANGS if lang != "en")  # English stop words
    kept = _kept("gopher_quality", {**short, "languages": "recommended"})
    assert all(v >= 0.75 for v in kept.values()), kept


def test_chinese_and_japanese_repetition_is_judged_on_their_words():
    # split by script (a language without a segmenter), their "words" are characters, whose
    # n-grams repeat far more than n-grams of words
    chars = _kept("gopher_repetition", {"language": "und"})
    assert chars["zh"] < chars["en"] - 0.1 and chars["ja"] < chars["en"] - 0.1, chars
    # split by their segmenters (the document's language), fewer repeat
    words = _kept("gopher_repetition", {})
    assert words["en"] == chars["en"]
    assert words["zh"] > chars["zh"] and words["ja"] > chars["ja"] + 0.1, (chars, words)
    # and with FineWeb-2's limits for their words, as many as English are kept
    kept = _kept("gopher_repetition", {"languages": "recommended"})
    assert min(kept["zh"], kept["ja"]) >= kept["en"] - 0.1, kept


def test_fineweb2_thresholds_are_applied_per_language():
    st = resolve("gopher_repetition").from_params({"languages": "fineweb2"}, id="g")
    rules = {k.split(":")[1]: r for k, r in st.by_language["zh"]}
    assert rules["top_2gram"].max_ratio == 0.256  # FineWeb-2's configs/cmn_Hani.yml
    assert rules["dup_10gram"].max_ratio == 0.127
    assert "dup_para_frac" not in rules
    by_name = {k.split(":")[1]: r for k, r in st.by_language["cmn_Hani"]}  # FineWeb-2's name
    assert by_name["top_2gram"].max_ratio == 0.256
    q = resolve("gopher_quality").from_params({"languages": "fineweb2"}, id="q")
    th = {k.split(":")[1]: r for k, r in q.by_language["th"]}
    assert (th["mean_word_length"].min_length, th["mean_word_length"].max_length) == (2, 10)
    assert "ที่" in th["stop_words"].stop_words
    kept = _kept("gopher_repetition", {"languages": "fineweb2"})
    assert min(kept["zh"], kept["ja"]) >= kept["en"] - 0.12, kept


def test_a_language_entry_adds_to_the_presets_own_settings():
    st = resolve("gopher_quality").from_params(
        {"overrides": {"word_count": {"min_words": 20}},
         "languages": {"xx": {"disable": ["stop_words"]}}}, id="g")
    (word_count,) = [r for k, r in st.by_language["xx"] if k.endswith(":word_count")]
    assert word_count.min_words == 20
    assert not [k for k, _ in st.by_language["xx"] if k.endswith(":stop_words")]
