"""The fast path's link density test without lxml's ElementPath layer, and its loop reading
each link's text once (curator/extract/fastpath/htmlprocessing.py): the same answer as
trafilatura's own function for every element the extraction tests on real pages, in every
balance and fast mode, and the same trees out of every loop."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from lxml import etree

from curator.extract.fastpath import core, htmlprocessing, load_html, main_extractor
from tests.extract.helpers_extract import gold_and_doc_pages

OPTION_SETS = [{"fast": fast, "favor_precision": balance == "precision",
                "favor_recall": balance == "recall"}
               for fast in (True, False) for balance in ("precision", "default", "recall")]


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return gold_and_doc_pages(18)


def _extract(html: str, **kw: Any) -> None:
    tree = load_html(html)
    if tree is not None:
        core.extract(tree, include_comments=True, include_tables=True, **kw)


def test_same_answer_as_trafilatura_for_every_tested_element(pages: list[str],
                                                             monkeypatch) -> None:
    """Each call the loop makes is answered by both functions on the same element, before
    the loop acts on the answer: links, images, short and long elements, farms."""
    from trafilatura.htmlprocessing import link_density_test as stock

    ours = htmlprocessing.link_density_test
    calls: list[tuple[bool, bool]] = []

    def both(element: Any, favor_precision: bool = False,
             lengths: dict[Any, int] | None = None) -> tuple[bool, bool]:
        want = stock(element, favor_precision)
        assert ours(element, favor_precision, lengths) == want
        assert ours(element, favor_precision) == want  # without the loop's lengths too
        calls.append(want)
        return want

    monkeypatch.setattr(htmlprocessing, "link_density_test", both)
    for html in pages:
        for kw in OPTION_SETS:
            _extract(html, **kw)
    # every branch of the test was taken
    assert {(False, False), (True, False), (False, True), (True, True)} <= set(calls)
    assert len(calls) > 5_000


def test_the_loop_deletes_what_trafilatura_deletes(pages: list[str], monkeypatch) -> None:
    """Every loop the extraction runs on real pages (every tag, both balances, backtracking or
    not) is run by trafilatura's function on a copy of the subtree and by curator's on the
    subtree itself: the trees left are the same."""
    from trafilatura.htmlprocessing import delete_by_link_density as stock

    ours = htmlprocessing.delete_by_link_density
    seen: list[str] = []

    def both(subtree: Any, tagname: str, backtracking: bool = False,
             favor_precision: bool = False) -> Any:
        want = etree.tostring(stock(copy.deepcopy(subtree), tagname, backtracking,
                                    favor_precision))
        got = ours(subtree, tagname, backtracking, favor_precision)
        assert etree.tostring(got) == want
        seen.append(tagname)
        return got

    monkeypatch.setattr(main_extractor, "delete_by_link_density", both)
    for html in pages[::3]:
        for kw in OPTION_SETS[:3]:
            _extract(html, **kw)
    assert {"div", "list", "p", "head", "quote"} <= set(seen)


def test_a_link_is_read_once_per_loop(monkeypatch) -> None:
    """Nested blocks of one sidebar: trafilatura reads the ten links' text once per ancestor
    that holds more than four links; curator's loop reads each once."""
    import trafilatura.htmlprocessing as h
    from lxml import html as lhtml

    links = "".join(f"<ref>link number {i}</ref> " for i in range(10))
    page = "<body>" + "<div>" * 6 + links + "</div>" * 6 + "</body>"
    calls: list[str] = []
    trim = h.trim

    def counting(text: str) -> str:
        calls.append(text)
        return trim(text)

    def reads(module: Any, loop: Any) -> int:
        calls.clear()
        with monkeypatch.context() as m:
            m.setattr(module, "trim", counting)
            loop(lhtml.fromstring(page), "div", True)
        return sum(re.fullmatch(r"link number \d", c) is not None for c in calls)

    assert reads(h, h.delete_by_link_density) == 60
    assert reads(htmlprocessing, htmlprocessing.delete_by_link_density) == 10
