"""The ``fast=False`` rerun of ``extract_text`` (the text is under half of resiliparse's words)
continues from the fast pass (curator/extract/resume.py) instead of parsing and extracting the
page again, and the ``<body>``/thin-page reruns (default balance) start from the fast pass's
pruned raw tree: the same text on every real page, one parse per page (and one
``extract_content`` for the ratio rerun), per-thread stashes that never outlive the call, and
trafilatura's own functions for any other trafilatura source."""

from __future__ import annotations

import inspect
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from lxml import html as lhtml

from bench.gold_set import load_gold
from curator.extract import extract_html as eh
from curator.extract import resume


@pytest.fixture(scope="module")
def runs() -> list[tuple[str, str, bool, bool, bool]]:
    """Every second gold page (315 of 630, all splits) extracted as ``read_warc`` does (the
    defaults): (page, text, whether it took the ratio rerun, whether that rerun resumed,
    whether it took a ``<body>``/thin rerun, in default balance)."""
    eh.prepare("trafilatura")
    eh.prepare("resiliparse")
    out = []
    own_rerun, own_traf = resume.rerun, eh._trafilatura
    for page in load_gold("all")[::2]:
        seen = {"ratio": False, "resumed": False, "body": False}

        def rerun(stash, key, run, seen=seen):  # type: ignore[no-untyped-def]
            text = own_rerun(stash, key, run)
            seen["resumed"] |= text is not None and key[0] == "recall"
            return text

        def traf(html, fast=True, balance="recall", *a, seen=seen):  # type: ignore[no-untyped-def]
            seen["ratio"] |= not fast and balance == "recall"  # the defaults' ratio rerun
            seen["body"] |= not fast and balance == "default"  # the <body>/thin reruns
            return own_traf(html, fast, balance, *a)
        resume.rerun, eh._trafilatura = rerun, traf  # type: ignore[assignment]
        try:
            text = eh.extract_text(page.html)
        finally:
            resume.rerun, eh._trafilatura = own_rerun, own_traf  # type: ignore[assignment]
        out.append((page.html, text, seen["ratio"], seen["resumed"], seen["body"]))
    return out


@pytest.fixture(scope="module")
def ratio_pages(runs: list[tuple[str, str, bool, bool, bool]]) -> list[str]:
    """Pages whose fast text is under half of resiliparse's words: the ratio rerun."""
    return [html for html, _, ratio, *_ in runs if ratio]


@pytest.fixture(scope="module")
def body_pages(runs: list[tuple[str, str, bool, bool, bool]]) -> list[str]:
    """Pages that take the ``<body>`` or thin-page rerun (default balance)."""
    return [html for html, *_, body in runs if body]


def _resumed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the reruns that continued from a stash (a one-element list)."""
    count = [0]
    own = resume.rerun

    def counting(stash, key, run):  # type: ignore[no-untyped-def]
        text = own(stash, key, run)
        count[0] += text is not None
        return text
    monkeypatch.setattr(resume, "rerun", counting)
    return count


def test_installed_for_this_trafilatura() -> None:
    eh.prepare("trafilatura")
    import trafilatura.core as core

    assert resume.installed()
    assert core.trafilatura_sequence is resume._sequence
    assert core._extract_and_compare is resume._extract_and_compare
    assert core.prune_unwanted_nodes is resume._prune_unwanted_nodes
    assert core._recall_retry is resume._recall_retry


def test_same_text_on_real_pages(runs: list[tuple[str, str, bool, bool, bool]]) -> None:
    """Every ratio rerun of the gold pages resumed, with the text trafilatura's fresh rerun
    gives; the same on every <body>/thin rerun (started from the pruned tree) and on every
    fourth other page."""
    ratio = [r for r in runs if r[2]]
    assert len(ratio) >= 25
    assert all(r[3] for r in ratio)
    assert not any(r[3] for r in runs if not r[2])
    body = [r for r in runs if r[4]]
    assert len(body) >= 10
    checked = ratio + body + [r for r in runs if not r[2] and not r[4]][::4]
    with resume.stock():
        assert not resume.installed()
        changed = [i for i, (html, ours, *_) in enumerate(checked)
                   if eh.extract_text(html) != ours]
    assert changed == []


@pytest.mark.parametrize("options", [{"balance": "default"}, {"balance": "precision"},
                                     {"include_comments": True}, {"shape": False},
                                     {"post_meta": True}, {"include_tables": False}])
def test_same_text_with_other_options(ratio_pages: list[str], options: dict,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Other options: the same text too (only recall with comments off resumes)."""
    resumed = _resumed(monkeypatch)
    for html in ratio_pages[::6]:
        ours = eh.extract_text(html, **options)
        with resume.stock():
            assert ours == eh.extract_text(html, **options)
    if "balance" in options or "include_comments" in options:
        assert resumed[0] == 0


def _counting(counts: dict[str, int], key: str, fn: Any) -> Any:
    """``fn``, counting its calls in ``counts[key]``."""

    def counted(*a: Any, **k: Any) -> Any:
        counts[key] += 1
        return fn(*a, **k)

    return counted


def test_rerun_does_not_parse_or_extract_again(ratio_pages: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A ratio rerun neither parses the page nor runs trafilatura's main extractor again
    (the old code did both twice on each of these pages)."""
    import trafilatura.core as core

    counts = {"prepare": 0, "extract_content": 0}
    prepare_tree, extract_content = eh._prepare_tree, core.extract_content

    monkeypatch.setattr(eh, "_prepare_tree", _counting(counts, "prepare", prepare_tree))
    monkeypatch.setattr(core, "extract_content",
                        _counting(counts, "extract_content", extract_content))
    pages = ratio_pages[:8]
    assert len(pages) == 8
    for html in pages:
        eh.extract_text(html)
    assert counts == {"prepare": len(pages), "extract_content": len(pages)}
    counts.update(prepare=0, extract_content=0)
    with resume.stock():
        for html in pages:
            eh.extract_text(html)
    assert counts == {"prepare": 2 * len(pages), "extract_content": 2 * len(pages)}


def _counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count curator's tree edits (one per parse) and trafilatura's raw-tree prune calls that
    prune (``RAW_TREE_PRUNE_XPATH``)."""
    import trafilatura.core as core

    counts = {"prepare": 0, "raw_prunes": 0}
    prepare_tree, prune = eh._prepare_tree, resume._SWAP.originals["prune_unwanted_nodes"]

    def counted_prune(tree, nodelist, *a):  # type: ignore[no-untyped-def]
        counts["raw_prunes"] += nodelist is core.RAW_TREE_PRUNE_XPATH
        return prune(tree, nodelist, *a)

    monkeypatch.setattr(eh, "_prepare_tree", _counting(counts, "prepare", prepare_tree))
    # trafilatura's function, which curator's calls and resume.stock() puts back
    monkeypatch.setitem(resume._SWAP.originals, "prune_unwanted_nodes", counted_prune)
    return counts


def test_body_rerun_starts_from_the_pruned_tree(body_pages: list[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A <body>/thin rerun neither parses the page nor prunes the raw tree again (the old
    code did both twice on each of these pages), and gives the fresh rerun's text."""
    eh.prepare("trafilatura")
    pages = body_pages[:8]
    assert len(pages) == 8
    counts = _counted(monkeypatch)
    ours = [eh.extract_text(html) for html in pages]
    assert counts == {"prepare": len(pages), "raw_prunes": len(pages)}
    counts.update(prepare=0, raw_prunes=0)
    with resume.stock():
        assert [eh.extract_text(html) for html in pages] == ours
    assert counts == {"prepare": 2 * len(pages), "raw_prunes": 2 * len(pages)}


def test_body_rerun_escalation_continues_from_the_fast_pass(
        body_pages: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The recall retry of a <body>/thin rerun's escalation takes the fast pass's
    extract_content result (trafilatura's retry runs it again), with the same text."""
    import trafilatura.core as core

    counts = {"extract_content": 0, "retries": 0}
    extract_content, retry = core.extract_content, resume._SWAP.originals["_recall_retry"]

    monkeypatch.setattr(core, "extract_content",
                        _counting(counts, "extract_content", extract_content))
    monkeypatch.setitem(resume._SWAP.originals, "_recall_retry",
                        _counting(counts, "retries", retry))
    ours = [eh.extract_text(html) for html in body_pages]
    mine = dict(counts)
    counts.update(extract_content=0, retries=0)
    with resume.stock():
        assert [eh.extract_text(html) for html in body_pages] == ours
    assert mine["retries"] == 0 < counts["retries"]
    assert counts["extract_content"] - mine["extract_content"] == counts["retries"]


@pytest.mark.parametrize("options", [{"balance": "default"}, {"balance": "precision"},
                                     {"include_comments": True}, {"body_ratio": 0.5},
                                     {"shape": False}, {"screen_reader_text": True}])
def test_body_rerun_with_other_options(body_pages: list[str], options: dict,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Other options: the same text as the fresh rerun; only the recall fast pass with
    comments off leaves a tree to start from."""
    counts = {"restarts": 0}
    monkeypatch.setattr(resume, "_restart", _counting(counts, "restarts", resume._restart))
    for html in body_pages[::4]:
        ours = eh.extract_text(html, **options)
        with resume.stock():
            assert ours == eh.extract_text(html, **options)
    if "balance" in options or "include_comments" in options:
        assert counts["restarts"] == 0
    else:
        assert counts["restarts"] > 0


def test_restart_refuses_other_options(body_pages: list[str]) -> None:
    """The restart checks what its argument needs (comments off, not precision, the recorded
    options but fast and focus, the stashed tree) before it touches anything."""
    from trafilatura.settings import Extractor

    stash = resume.Stash()
    stash.tree = lhtml.fromstring(body_pages[0])
    stash.options = Extractor(fast=True, recall=True, comments=False)
    before = lhtml.tostring(stash.tree)
    for options, tree in ((Extractor(comments=True), stash.tree),
                          (Extractor(precision=True, comments=False), stash.tree),
                          (Extractor(comments=False, tables=False), stash.tree),
                          (Extractor(comments=False), lhtml.fromstring(body_pages[0]))):
        with pytest.raises(resume._NotResumable):
            resume._restart(tree, options, None, stash)
    assert lhtml.tostring(stash.tree) == before
    assert getattr(resume._LOCAL, "pruned", None) is None


def test_threads_keep_their_own_stash(ratio_pages: list[str], body_pages: list[str],
                                      runs: list[tuple[str, str, bool, bool, bool]]) -> None:
    """Dask workers extract in threads: pages extracted concurrently give the texts they give
    one at a time, and no stash is left on any thread."""
    pages = ratio_pages[:12] + body_pages[:8] + [r[0] for r in runs[:12]]
    with resume.stock():
        expected = [eh.extract_text(h) for h in pages]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(eh.extract_text, pages * 2))
        left = list(pool.map(lambda _: tuple(getattr(resume._LOCAL, name, None) for name in
                                             ("record", "resume", "restart", "pruned",
                                              "retry")),
                             range(8)))
    assert got == expected * 2
    assert set(left) == {(None, None, None, None, None)}


def test_stash_is_dropped_when_the_call_fails(ratio_pages: list[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A rerun that fails (failure injection: compare_extraction raises) leaves no stash on
    the thread; the next page is extracted as before."""
    import trafilatura.core as core

    def broken(*a, **k):  # type: ignore[no-untyped-def]
        raise RuntimeError("injected")

    stashes: list[resume.Stash] = []

    class Spy(resume.Stash):
        __slots__ = ()

        def __init__(self) -> None:
            super().__init__()
            stashes.append(self)

    monkeypatch.setattr(resume, "Stash", Spy)
    monkeypatch.setattr(core, "compare_extraction", broken)
    page = next(h for h in ratio_pages if len(eh._trafilatura(h)) < 2500)
    with pytest.raises(RuntimeError, match="injected"):
        eh.extract_text(page)
    assert getattr(resume._LOCAL, "record", None) is None
    assert getattr(resume._LOCAL, "resume", None) is None
    assert stashes and stashes[-1].tree is None and stashes[-1].body is None
    monkeypatch.undo()
    with resume.stock():
        expected = eh.extract_text(page)
    assert eh.extract_text(page) == expected


@pytest.mark.parametrize("module", sorted(resume.SOURCES))
def test_other_trafilatura_sources_rerun_afresh(module: str, ratio_pages: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A trafilatura whose source differs by one character in any module the reasoning reads
    keeps its own functions: the rerun parses the page again."""
    import importlib

    eh.prepare("trafilatura")
    text = inspect.getsource(importlib.import_module(module))
    with resume.stock():
        assert not resume.installed()
        assert resume.install({module: text.replace("\n", "\n ", 1)}) is False
        assert not resume.installed()
        counts = {"parsed": 0}
        monkeypatch.setattr(eh, "_prepare_tree", _counting(counts, "parsed", eh._prepare_tree))
        eh.extract_text(ratio_pages[0])
        assert counts["parsed"] == 2
        assert resume.install({module: text}) is True  # the same text is accepted
    assert resume.installed()
