"""trafilatura's link density test without lxml's ElementPath layer
(curator/extract/link_density.py): the same answer as trafilatura's own function for every
element trafilatura tests on real pages, in every balance and fast mode, and another
trafilatura source keeps its own function."""

from __future__ import annotations

import re
from typing import Any

import pytest

from curator.extract import extract_html as eh
from curator.extract import link_density
from tests.extract.helpers_extract import assert_swapped, gold_and_doc_pages

OPTION_SETS = [{"fast": fast, "favor_precision": balance == "precision",
                "favor_recall": balance == "recall"}
               for fast in (True, False) for balance in ("precision", "default", "recall")]


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return gold_and_doc_pages(9)


def test_installed_for_this_trafilatura() -> None:
    eh.prepare("trafilatura")
    import trafilatura.htmlprocessing as h

    assert_swapped(h, "link_density_test", link_density.link_density_test, link_density.stock)


def test_same_answer_as_trafilatura_for_every_tested_element(pages: list[str]) -> None:
    """Each call trafilatura makes is answered by both functions on the same element, before
    trafilatura acts on the answer: links, images, short and long elements, farms."""
    eh.prepare("trafilatura")
    import trafilatura
    import trafilatura.htmlprocessing as h

    with link_density.stock():
        stock = h.link_density_test
    calls: list[tuple[bool, bool]] = []

    def both(element: Any, favor_precision: bool = False) -> tuple[bool, bool]:
        want = stock(element, favor_precision)
        assert link_density.link_density_test(element, favor_precision) == want
        calls.append(want)
        return want

    saved, h.link_density_test = h.link_density_test, both
    try:
        for html in pages:
            for kw in OPTION_SETS:
                trafilatura.extract(html, deduplicate=False, **kw)
    finally:
        h.link_density_test = saved
    # every branch of the test was taken
    assert {(False, False), (True, False), (False, True), (True, True)} <= set(calls)
    assert len(calls) > 10_000


def test_same_text_as_trafilatura(pages: list[str]) -> None:
    eh.prepare("trafilatura")
    for html in pages[::2]:
        for kw in OPTION_SETS[::2]:
            with link_density.stock():
                want = eh.extract_text(html, fast=kw["fast"])
            assert eh.extract_text(html, fast=kw["fast"]) == want


def test_another_trafilatura_keeps_its_own_function() -> None:
    eh.prepare("trafilatura")
    import trafilatura.htmlprocessing as h

    with link_density.stock():
        assert link_density.install("def link_density_test(element): ...") is False
        assert h.link_density_test is not link_density.link_density_test


def test_the_loop_is_installed_in_both_modules() -> None:
    """main_extractor imported the loop by name: both names must be the twin, and stock()
    must give both back (benchmarks time trafilatura as it ships)."""
    eh.prepare("trafilatura")
    import trafilatura.htmlprocessing as h
    import trafilatura.main_extractor as m

    assert link_density.loop_installed()
    assert h.delete_by_link_density is m.delete_by_link_density is \
        link_density.delete_by_link_density
    with link_density.stock():
        assert m.delete_by_link_density.__module__ == "trafilatura.htmlprocessing"
        assert h.delete_by_link_density is m.delete_by_link_density
    assert m.delete_by_link_density is link_density.delete_by_link_density


def test_the_loop_deletes_what_trafilatura_deletes(pages: list[str]) -> None:
    """Every loop trafilatura runs on real pages (every tag, both balances, backtracking or
    not) is run by trafilatura's function on a copy of the subtree and by the twin on the
    subtree itself: the trees left are the same."""
    eh.prepare("trafilatura")
    import copy

    import trafilatura
    import trafilatura.main_extractor as m
    from lxml import etree

    with link_density.stock():
        stock = m.delete_by_link_density
    assert stock is not link_density.delete_by_link_density
    seen: list[str] = []

    def both(subtree: Any, tagname: str, backtracking: bool = False,
             favor_precision: bool = False) -> Any:
        want = etree.tostring(stock(copy.deepcopy(subtree), tagname, backtracking,
                                    favor_precision))
        got = link_density.delete_by_link_density(subtree, tagname, backtracking,
                                                  favor_precision)
        assert etree.tostring(got) == want
        seen.append(tagname)
        return got

    saved, m.delete_by_link_density = m.delete_by_link_density, both
    try:
        for html in pages[::3]:
            for kw in OPTION_SETS[:3]:
                trafilatura.extract(html, deduplicate=False, **kw)
    finally:
        m.delete_by_link_density = saved
    assert {"div", "list", "p", "head", "quote"} <= set(seen)


def test_a_link_is_read_once_per_loop() -> None:
    """Nested blocks of one sidebar: trafilatura reads the ten links' text once per ancestor
    that holds more than four links; the loop reads each once."""
    eh.prepare("trafilatura")
    import trafilatura.htmlprocessing as h
    from lxml import html as lhtml

    links = "".join(f"<ref>link number {i}</ref> " for i in range(10))
    page = "<body>" + "<div>" * 6 + links + "</div>" * 6 + "</body>"
    calls: list[str] = []
    trim = h.trim

    def counting(text: str) -> str:
        calls.append(text)
        return trim(text)

    def reads(loop: Any) -> int:
        calls.clear()
        h.trim = counting
        try:
            loop(lhtml.fromstring(page), "div", True)
        finally:
            h.trim = trim
        return sum(re.fullmatch(r"link number \d", c) is not None for c in calls)

    with link_density.stock():
        import trafilatura.main_extractor as m

        assert reads(m.delete_by_link_density) == 60
    assert reads(link_density.delete_by_link_density) == 10


def test_another_trafilatura_keeps_its_own_loop() -> None:
    eh.prepare("trafilatura")
    import trafilatura.main_extractor as m

    with link_density.stock():
        assert link_density.install(loop_sources={"collect_link_info": "def f(): ..."})
        assert not link_density.loop_installed()
        assert m.delete_by_link_density is not link_density.delete_by_link_density
