from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from curator.text import split_sentences, split_words


def test_sentences_abbreviations_initials_and_titles() -> None:
    text = ("Dr. Smith met Prof. Jones at 5 p.m. on Monday. J. R. R. Tolkien wrote it, e.g. "
            "the Hobbit. It costs approx. 5 dollars! Did it? Yes. See Fig. 3 for details.")
    assert split_sentences(text) == [
        "Dr. Smith met Prof. Jones at 5 p.m. on Monday.",
        "J. R. R. Tolkien wrote it, e.g. the Hobbit.",
        "It costs approx. 5 dollars!",
        "Did it?",
        "Yes.",
        "See Fig. 3 for details.",
    ]


def test_sentences_naive_regex_would_fail() -> None:
    text = "The U.S. Army arrived. Mr. Brown left with Mrs. Green."
    naive = [s for s in re.split(r"(?<=[.!?])\s+", text) if s]
    ours = split_sentences(text)
    assert ours == ["The U.S. Army arrived.", "Mr. Brown left with Mrs. Green."]
    assert len(naive) > len(ours)


def test_sentences_final_abbreviation_then_capital_splits() -> None:
    assert split_sentences("We sell apples, pears etc. Then we close.") == [
        "We sell apples, pears etc.", "Then we close."]


def test_sentences_cjk_without_spaces_and_paragraphs() -> None:
    assert split_sentences("今天天气很好。我们去公园吧！好吗？") == [
        "今天天气很好。", "我们去公园吧！", "好吗？"]
    assert split_sentences("これはペンです。あれは本です。", lang="ja") == [
        "これはペンです。", "あれは本です。"]
    assert split_sentences("A heading\n\nThe body text. More body.") == [
        "A heading", "The body text.", "More body."]


def test_sentences_other_scripts() -> None:
    assert split_sentences("यह पहला वाक्य है। यह दूसरा है।", lang="hi") == [
        "यह पहला वाक्य है।", "यह दूसरा है।"]
    assert split_sentences("هل أنت بخير؟ نعم.", lang="ar") == ["هل أنت بخير؟", "نعم."]


def test_sentences_language_specific_abbreviations() -> None:
    text = "Er kam z.B. gestern. Das ist gut."
    assert split_sentences(text, lang="de") == ["Er kam z.B. gestern.", "Das ist gut."]


def test_sentences_quotes_stay_with_sentence() -> None:
    assert split_sentences('He said "stop." Then he left.') == ['He said "stop."',
                                                                "Then he left."]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(list("ab .!?\n。D r\t") + ["Dr.", "e.g.", " J. ", "\n\n"]),
                max_size=40).map("".join))
def test_sentences_cover_all_non_space_text(text: str) -> None:
    out = split_sentences(text)
    assert all(s == s.strip() and s for s in out)
    assert "".join("".join(s.split()) for s in out) == "".join(text.split())


def test_words_cjk_per_character_and_latin_words() -> None:
    assert split_words("我爱北京") == ["我", "爱", "北", "京"]
    assert split_words("これは日本語") == ["こ", "れ", "は", "日", "本", "語"]
    assert split_words("한국어 문장") == ["한국어", "문장"]
    assert split_words("Don't stop... state-of-the-art #1 3.14") == [
        "Don't", "stop", "...", "state-of-the-art", "#", "1", "3.14"]
    mixed = split_words("Python是一种语言")
    assert mixed == ["Python", "是", "一", "种", "语", "言"]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60))
def test_words_lose_only_whitespace(text: str) -> None:
    assert "".join(split_words(text)) == "".join(text.split())
