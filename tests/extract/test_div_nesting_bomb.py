"""A page of deeply nested ``<div>``s: resiliparse's main-content pass is quadratic in their
depth (100,000 nested: 6 minutes in one C call, which the per-page time limit cannot
interrupt), so beyond ``DEEP_DIVS`` the page gets no resiliparse text instead."""

from __future__ import annotations

from curator.extract.adapters.resiliparse_text import DEEP_DIVS, _deep_divs, text_and_tree
from curator.extract.extract_html import extract_text

PROSE = "<p>Deep text here for the reader, a whole sentence of prose about the weather.</p>"


def _nested(n: int, tag: str = "div") -> str:
    return f"<html><body>{f'<{tag}>' * n}{PROSE}{f'</{tag}>' * n}</body></html>"


def test_nesting_deeper_than_the_limit_is_found_in_any_case() -> None:
    assert _deep_divs(_nested(DEEP_DIVS + 1))
    assert _deep_divs(_nested(DEEP_DIVS + 1, "DIV"))
    assert _deep_divs("<html><body>" + "<div class='x'>" * (DEEP_DIVS + 1))  # never closed
    assert not _deep_divs(_nested(DEEP_DIVS))
    # many divs side by side are no bomb, nor are other tags nested deep
    assert not _deep_divs("<html><body>" + "<div>x</div>" * 20_000 + "</body></html>")
    assert not _deep_divs(_nested(20_000, "span"))


def test_a_nesting_bomb_gets_no_resiliparse_text_and_a_shallow_page_keeps_it() -> None:
    assert text_and_tree(_nested(20_000))[0] == ""  # was the prose, after ~12 s in C
    assert "weather" in text_and_tree(_nested(DEEP_DIVS))[0]
    assert extract_text(_nested(20_000), timeout_s=30) == ""
    assert "weather" in extract_text(_nested(50))
