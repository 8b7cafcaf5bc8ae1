"""Listing pages: the cards that extractors drop as link-dense (curator/extract/listing.py),
on real pages of bench/gold's tuning split."""

from __future__ import annotations

import pytest

from bench.gold_set import prf
from curator.extract.extract_html import extract_text
from tests.extract.helpers_extract import tuning_pages as _tuning


@pytest.mark.parametrize("page_id, before, after", [
    ("wcxb/0337", 0.1, 0.85),  # a news index: 20 article cards; trafilatura kept a comment box
    ("wcxb/2936", 0.1, 0.6),  # a shop's product grid of 50 entries
])
def test_listing_cards_are_kept_where_the_text_misses_them(page_id, before, after) -> None:
    """The gold of a listing page is its cards' text; trafilatura (and resiliparse) drop the
    cards as link-dense and keep a teaser or a comment box. ``listing_ratio`` appends the
    cards after whatever trafilatura found (nothing it kept is dropped). Off by default
    (it lost on held-out pages), so the default leaves the page as it was."""
    page = _tuning()[page_id]
    without = extract_text(page.html)
    assert without == extract_text(page.html, listing_ratio=0.0)
    cards = extract_text(page.html, listing_ratio=0.1)
    assert prf(without, page.gold)[2] < before
    assert prf(cards, page.gold)[2] > after
    assert cards.startswith(without)


@pytest.mark.parametrize("page_id", [
    "readability/pixnet",  # Chinese: few space-separated words, the text is not short
    "scrapinghub/21486419bb109c5a",  # an article next to a sidebar of 12 linked teasers
    "scrapinghub/2c46804d9db4a85e",  # an article above a grid of 12 related stories
])
def test_articles_next_to_cards_are_left_alone(page_id) -> None:
    """An article's text is not a small share of its page, even where a block of related
    links is larger than it, or where the script writes no spaces between words."""
    page = _tuning()[page_id]
    text = extract_text(page.html, listing_ratio=0.1)
    assert text == extract_text(page.html, listing_ratio=0.0)
    assert prf(text, page.gold)[2] > 0.95


@pytest.mark.parametrize("ratio", [-0.1, 1.5])
def test_listing_ratio_outside_0_1_is_a_config_error(ratio) -> None:
    from curator.base.errors import ConfigError
    from curator.extract.extract_html import ExtractHtml

    with pytest.raises(ConfigError, match="listing_ratio"):
        ExtractHtml(listing_ratio=ratio)
