"""A ``<title>`` without ``</title>`` (curator/extract/html_repair.py ``close_open_title``):
the parsers made the rest of the page the title, so the page had no text at all."""

from __future__ import annotations

import pytest
import trafilatura

from curator.extract.extract_html import extract_text
from curator.extract.html_repair import close_open_title
from curator.extract.timeout import ExtractTimeout, time_limit

BODY = ("<p>HONOLULU - South Korean golfer Choi Kyung-ju won the Sony Open on Sunday, beating "
        "Rory Sabbatini by three shots for his seventh title on the American tour.</p>"
        "<p>The 38-year-old finished at a four-round total of 14-under 266 at Waialea Country "
        "Club while Sabbatini posted an 11-under 269, and he thanked the crowd.</p>")
# as in page-signal's Google News pages: the title's end was cut out with part of a script
BROKEN = ("<html><head><title>Korean Golfer Wins 7th US PGA Title ntById('font'); obj.size = 9;"
          "}</script></head><body><div class='article'>" + BODY + "</div></body></html>")


def test_page_with_an_unclosed_title_has_its_text() -> None:
    assert not trafilatura.extract(BROKEN)  # the whole page is the title's text
    assert "seventh title on the American tour" in extract_text(BROKEN)
    assert "Waialea Country Club" in extract_text(BROKEN)


def test_the_title_ends_at_the_first_tag() -> None:
    page = "<html><TITLE lang=en>A title</head><body>" + BODY
    assert close_open_title(page) == "<html><TITLE lang=en>A title</title></head><body>" + BODY


def test_pages_with_a_closed_title_or_none_are_the_same_string() -> None:
    for page in ("<html><head><title>t</title></head><body>" + BODY,
                 "<html><head><TITLE>t</TITLE ></head><body>" + BODY,
                 "<html><body>" + BODY, "<title>only text, no tag after it"):
        assert close_open_title(page) is page


@pytest.mark.parametrize("page", ["<title>" + "<title x>" * 200_000, "<title " * 200_000,
                                  "<title>" + "x" * 5_000_000])
def test_linear_on_hostile_pages(page: str) -> None:
    """Many start tags and no end tag: one search for each kind of tag (it runs before the
    page's time limit; 5 s tells linear from quadratic here)."""
    try:
        with time_limit(5.0):
            close_open_title(page)
    except ExtractTimeout:
        pytest.fail("close_open_title took over 5 s")
