"""Word counts in every script: the extractor's rules compare texts by words, and a CJK
paragraph is one space-separated "word"."""

from __future__ import annotations

import pytest

from bench.family_quality import load_unseen
from bench.gold_set import prf
from curator.extract import extract_html
from curator.extract.adapters import resiliparse_text
from curator.extract.extract_html import extract_text
from curator.extract.words import count_words


def test_a_character_of_a_script_without_spaces_is_a_word() -> None:
    assert count_words("two words") == 2
    assert count_words("東京都は晴れ") == 1 + 6
    assert count_words("ニュース 速報") == 2 + 6
    assert count_words("서울 날씨") == 2 + 4
    assert count_words("") == 0


#: Tuning pages (bench/gold/unseen.jsonl.zst) where counting by spaces replaced the
#: article: a CJK article of a few paragraphs was "a few words" against a menu's many items.
PAGES = ("magic-html/article/931ec5cf06d4cf66", "fundus/jp/NikkanGeadai_2025_01_31",
         "magic-html/article/1b929fec5b591f38")


@pytest.fixture(scope="module")
def pages() -> dict:
    return {p.id: p for p in load_unseen("tuning") if p.id in PAGES}


@pytest.mark.parametrize("page_id", PAGES)
def test_a_cjk_article_is_not_swapped_for_the_page(pages, page_id, monkeypatch) -> None:
    page = pages[page_id]
    got = prf(extract_text(page.html), page.gold)[2]
    # the same page with the rules counting by spaces: the article is replaced
    def spaces(text: str) -> int:
        return len(text.split())

    monkeypatch.setattr(extract_html, "count_words", spaces)
    monkeypatch.setattr(resiliparse_text, "count_words", spaces)
    before = prf(extract_text(page.html), page.gold)[2]
    assert got >= 0.94 and got - before >= 0.05, (got, before)
