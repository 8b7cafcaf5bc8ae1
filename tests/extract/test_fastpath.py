"""The fast path (curator/extract/fastpath/) is trafilatura's algorithm: for every option set
(fast on and off, every balance, comments on and off) its text of a page is
``trafilatura.extract``'s, forum threads included; its backup tree is made only where it is
read, and the tree it is given is not copied (curator parsed it for this call)."""

from __future__ import annotations

import glob
import gzip
import os
import sys
from collections import Counter
from typing import Any

import pytest

from bench.gold_set import load_gold
from curator.extract.fastpath import core, load_html

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: Every balance, fast on and off, comments on and off.
OPTION_SETS = [{"fast": fast, "favor_precision": balance == "precision",
                "favor_recall": balance == "recall", "include_comments": comments}
               for fast in (True, False) for balance in ("precision", "default", "recall")
               for comments in (False, True)]


@pytest.fixture(scope="module")
def pages() -> list[tuple[str, str]]:
    """Gold pages of every type, the forum threads that declare DiscussionForumPosting
    (where the backup is read with comments on), and the documentation and collection pages
    of tests/extract/data."""
    gold = load_gold("all")
    forums = [p for p in gold if "DiscussionForumPosting" in p.html][::6]
    picked = {p.id: p.html for p in gold[::50] + forums}
    for path in sorted(glob.glob(os.path.join(REPO, "tests/extract/data/*/*.html.gz")))[::3]:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            picked[os.path.basename(path)] = f.read()
    return list(picked.items())


def _ours(html: str, include_tables: bool = True, **kw: Any) -> str:
    tree = load_html(html)
    return "" if tree is None else core.extract(tree, include_tables=include_tables, **kw)


def test_same_text_as_trafilatura_for_every_option_set(pages, monkeypatch) -> None:
    """trafilatura.extract as it ships and the fast path, 12 option sets; the forum threads
    do take the branch that converts the backup again (comments on)."""
    import trafilatura

    forum_reads = 0
    convert = core.convert_tags

    def counting(*a: Any, **k: Any) -> Any:
        nonlocal forum_reads
        forum_reads += sys._getframe(1).f_code.co_name == "trafilatura_sequence"
        return convert(*a, **k)

    monkeypatch.setattr(core, "convert_tags", counting)
    for name, html in pages:
        for kw in OPTION_SETS:
            theirs = trafilatura.extract(html, deduplicate=False, **kw) or ""
            assert _ours(html, **kw) == theirs, (name, kw)
    assert forum_reads >= 4  # pages where the backup is read with comments on


def _copies_in_prepare(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the copies the fast path makes, by the function that makes them."""
    made: Counter[str] = Counter()
    inner = core.copy

    def counting(obj: Any) -> Any:
        made[sys._getframe(1).f_code.co_name] += 1
        return inner(obj)

    monkeypatch.setattr(core, "copy", counting)
    return made


def test_no_backup_in_fast_mode_without_comments(pages, monkeypatch) -> None:
    """One copy per prepared tree (the raw tree, which tree_cleaning prunes) instead of
    trafilatura's two; none of the tree given (trafilatura's ``bare_extraction`` copies it)."""
    made = _copies_in_prepare(monkeypatch)
    _ours(pages[0][1], fast=True, favor_precision=False, favor_recall=True,
          include_comments=False)
    assert made == {"_prepare_tree": 1}


@pytest.mark.parametrize("kw", [{"fast": False}, {"fast": True, "include_comments": True},
                                {"fast": False, "include_comments": True}])
def test_backup_made_where_it_can_be_read(pages, monkeypatch, kw) -> None:
    made = _copies_in_prepare(monkeypatch)
    _ours(pages[0][1], **{"favor_precision": False, "favor_recall": True,
                          "include_comments": False, **kw})
    assert made["_prepare_tree"] == 2
