"""trafilatura's link density test without lxml's ElementPath layer
(curator/extract/link_density.py): the same answer as trafilatura's own function for every
element trafilatura tests on real pages, in every balance and fast mode, and another
trafilatura source keeps its own function."""

from __future__ import annotations

import glob
import gzip
import os
import sys
from typing import Any

import pytest

from curator.extract import extract_html as eh
from curator.extract import link_density

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))

from extraction_quality import load_gold  # noqa: E402

OPTION_SETS = [{"fast": fast, "favor_precision": balance == "precision",
                "favor_recall": balance == "recall"}
               for fast in (True, False) for balance in ("precision", "default", "recall")]


@pytest.fixture(scope="module")
def pages() -> list[str]:
    gold = load_gold("all")
    picked = [p.html for p in gold[::9]]
    for path in sorted(glob.glob(os.path.join(REPO, "tests/extract/data/*/*.html.gz"))):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            picked.append(f.read())
    return picked


def test_installed_for_this_trafilatura() -> None:
    eh.prepare("trafilatura")
    import trafilatura.htmlprocessing as h

    assert h.link_density_test is link_density.link_density_test
    with link_density.stock():
        assert h.link_density_test.__module__ == "trafilatura.htmlprocessing"
    assert h.link_density_test is link_density.link_density_test


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
