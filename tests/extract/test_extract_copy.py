"""trafilatura copies a tree given to it before pruning it; curator's own call hands over a
tree it parsed for that call and never reads again, so that one copy is skipped. Other callers'
trees are still copied (left intact), and the text is the same with or without the skip."""

from __future__ import annotations

import copy
import os

import pytest
from lxml import etree

from curator.extract import extract_html as eh
from curator.extract.timeout import ExtractTimeout

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.gold_set import load_gold  # noqa: E402


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return [p.html for p in load_gold("all")[::6]]


def test_installed_for_this_trafilatura() -> None:
    eh.prepare("trafilatura")
    import trafilatura.core as core

    assert core.copy is eh._copy_unless_owned


def test_same_text_with_and_without_the_skip(pages, monkeypatch) -> None:
    eh.prepare("trafilatura")
    import trafilatura.core as core

    skipped = 0
    own = eh._copy_unless_owned

    def counting(obj):  # type: ignore[no-untyped-def]
        nonlocal skipped
        skipped += obj is not None and getattr(eh._OWNED, "tree", None) is obj
        return own(obj)

    for html in pages:
        monkeypatch.setattr(core, "copy", counting)
        fast = eh.extract_text(html)
        monkeypatch.setattr(core, "copy", copy.copy)
        assert fast == eh.extract_text(html)
    assert skipped >= len(pages)  # one skipped copy per trafilatura call, at least one a page
    assert getattr(eh._OWNED, "tree", None) is None


def test_other_callers_trees_are_still_copied(pages) -> None:
    eh.prepare("trafilatura")
    import trafilatura
    from trafilatura.utils import load_html

    for html in pages[:10]:
        tree = load_html(html)
        before = etree.tostring(tree)
        trafilatura.extract(tree, deduplicate=False)
        assert etree.tostring(tree) == before


def test_ownership_ends_with_a_timed_out_call(pages, monkeypatch) -> None:
    eh.prepare("trafilatura")
    import trafilatura

    def slow(*a, **k):  # type: ignore[no-untyped-def]
        raise ExtractTimeout("timed out")

    monkeypatch.setattr(trafilatura, "extract", slow)
    with pytest.raises(ExtractTimeout):
        eh.extract_text(pages[0])
    assert getattr(eh._OWNED, "tree", None) is None
