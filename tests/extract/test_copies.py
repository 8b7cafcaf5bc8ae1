"""trafilatura's backup of the cleaned tree is made only where something reads it
(curator/extract/copies.py): not in fast mode with comments off; the text is the same as
trafilatura's own ``_prepare_tree`` gives for every option set, forum threads included, and
another trafilatura source keeps its own function."""

from __future__ import annotations

import glob
import gzip
import os
import sys
from collections import Counter
from typing import Any

import pytest

from curator.extract import copies
from curator.extract import extract_html as eh
from tests.extract.helpers_extract import assert_swapped

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.gold_set import load_gold  # noqa: E402

#: Every balance, fast on and off, comments on and off.
OPTION_SETS = [{"fast": fast, "favor_precision": balance == "precision",
                "favor_recall": balance == "recall", "include_comments": comments}
               for fast in (True, False) for balance in ("precision", "default", "recall")
               for comments in (False, True)]


@pytest.fixture(scope="module")
def pages() -> list[tuple[str, str]]:
    """Gold pages of every type, the forum threads that declare DiscussionForumPosting
    (where trafilatura reads the backup with comments on), and the documentation and
    collection pages of tests/extract/data."""
    gold = load_gold("all")
    forums = [p for p in gold if "DiscussionForumPosting" in p.html][::3]
    picked = {p.id: p.html for p in gold[::25] + forums}
    for path in sorted(glob.glob(os.path.join(REPO, "tests/extract/data/*/*.html.gz"))):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            picked[os.path.basename(path)] = f.read()
    return list(picked.items())


def _extract(html: str, **kw: Any) -> str:
    import trafilatura

    return trafilatura.extract(html, deduplicate=False, **kw) or ""


def test_installed_for_this_trafilatura() -> None:
    eh.prepare("trafilatura")
    import trafilatura.core as core

    assert_swapped(core, "_prepare_tree", copies.prepare_tree, copies.stock)


def _copies_in_prepare(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the copies made inside ``_prepare_tree`` (stock or ours), by function name."""
    import trafilatura.core as core

    made: Counter[str] = Counter()
    inner = core.copy

    def counting(obj: Any) -> Any:
        made[sys._getframe(1).f_code.co_name] += 1
        return inner(obj)

    monkeypatch.setattr(core, "copy", counting)
    return made


def test_no_backup_in_fast_mode_without_comments(pages, monkeypatch) -> None:
    """One copy per prepared tree (the raw tree, which tree_cleaning prunes) instead of two;
    trafilatura's function makes both."""
    eh.prepare("trafilatura")
    made = _copies_in_prepare(monkeypatch)
    html = pages[0][1]
    _extract(html, fast=True, favor_recall=True, include_comments=False)
    ours = made.copy()
    made.clear()
    with copies.stock():
        _extract(html, fast=True, favor_recall=True, include_comments=False)
    assert made["_prepare_tree"] == 2 * ours["prepare_tree"] > 0
    made.clear()
    eh.extract_text(html, fast=True, fallback=False)  # curator's first pass
    assert made["prepare_tree"] == 1 and made["_prepare_tree"] == 0


@pytest.mark.parametrize("kw", [{"fast": False}, {"fast": True, "include_comments": True},
                                {"fast": False, "include_comments": True}])
def test_backup_made_where_it_can_be_read(pages, monkeypatch, kw) -> None:
    eh.prepare("trafilatura")
    made = _copies_in_prepare(monkeypatch)
    _extract(pages[0][1], **kw)
    ours = made["prepare_tree"]
    made.clear()
    with copies.stock():
        _extract(pages[0][1], **kw)
    assert ours == made["_prepare_tree"] >= 2


def test_same_text_as_trafilatura_for_every_option_set(pages, monkeypatch) -> None:
    """trafilatura.extract with and without the replacement, 12 option sets; the forum
    threads do take the branch that converts the backup again (comments on)."""
    eh.prepare("trafilatura")
    import trafilatura.core as core

    forum_reads = 0
    convert = core.convert_tags

    def counting(*a: Any, **k: Any) -> Any:
        nonlocal forum_reads
        forum_reads += sys._getframe(1).f_code.co_name == "trafilatura_sequence"
        return convert(*a, **k)

    monkeypatch.setattr(core, "convert_tags", counting)
    for name, html in pages:
        for kw in OPTION_SETS:
            ours = _extract(html, **kw)
            with copies.stock():
                theirs = _extract(html, **kw)
            assert ours == theirs, (name, kw)
    assert forum_reads >= 4  # pages where the backup is read with comments on


def test_same_text_through_curator(pages) -> None:
    """extract_text's default (fast first, a rerun without fast on some pages) and with
    comments on."""
    eh.prepare("trafilatura")
    for name, html in pages:
        for kw in ({}, {"include_comments": True}, {"balance": "precision"}):
            ours = eh.extract_text(html, **kw)  # type: ignore[arg-type]
            with copies.stock():
                assert ours == eh.extract_text(html, **kw), (name, kw)  # type: ignore[arg-type]


def test_other_trafilatura_source_keeps_its_function() -> None:
    """A trafilatura.core whose text differs by one character is left as it is."""
    eh.prepare("trafilatura")
    import inspect

    import trafilatura.core as core

    source = inspect.getsource(core)
    changed = source.replace("if not options.fast:", "if not options.fast or True:", 1)
    assert changed != source
    with copies.stock():
        stock = core._prepare_tree
        assert not copies.install(changed)
        assert core._prepare_tree is stock
        assert copies.install(source)  # the pinned text: installed
        assert core._prepare_tree is copies.prepare_tree
    assert core._prepare_tree is copies.prepare_tree


def test_backup_read_follows_the_options() -> None:
    from trafilatura.settings import Extractor

    for fast in (True, False):
        for comments in (True, False):
            options = Extractor(fast=fast, comments=comments)
            assert copies.backup_read(options) == (not fast or comments)
