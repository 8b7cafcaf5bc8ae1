"""The ``fast=False`` rerun of ``extract_text`` (the text is under half of resiliparse's words)
continues from the fast pass (curator/extract/fastpath/core.py) instead of parsing and
extracting the page again, and the ``<body>``/thin-page reruns (default balance) start from
the fast pass's pruned raw tree: the same text as a fresh rerun on every real page, one parse
per page (and one ``extract_content`` for the ratio rerun), stashes that never outlive the
call, threads that never share one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from lxml import html as lhtml

from bench.gold_set import load_gold
from curator.extract import extract_html as eh
from curator.extract import fastpath, tree_edits
from curator.extract.adapters import trafilatura_text
from curator.extract.fastpath import core


@pytest.fixture(scope="module")
def runs() -> list[tuple[str, str, bool, bool, bool]]:
    """Every second gold page (315 of 630, all splits) extracted as ``read_warc`` does (the
    defaults): (page, text, whether it took the ratio rerun, whether that rerun continued
    from the stash, whether it took a ``<body>``/thin rerun, in default balance)."""
    eh.prepare("trafilatura")
    eh.prepare("resiliparse")
    out = []
    own_rerun, own_traf = fastpath.rerun, trafilatura_text.page_text
    for page in load_gold("all")[::2]:
        seen = {"ratio": False, "resumed": False, "body": False}

        def rerun(stash, key, seen=seen, **kw):  # type: ignore[no-untyped-def]
            text = own_rerun(stash, key, **kw)
            seen["resumed"] |= text is not None and key[0] == "recall"
            return text

        def traf(html, fast=True, balance="recall", *a, seen=seen):  # type: ignore[no-untyped-def]
            seen["ratio"] |= not fast and balance == "recall"  # the defaults' ratio rerun
            seen["body"] |= not fast and balance == "default"  # the <body>/thin reruns
            return own_traf(html, fast, balance, *a)
        fastpath.rerun, trafilatura_text.page_text = rerun, traf  # type: ignore[assignment]
        try:
            text = eh.extract_text(page.html)
        finally:
            fastpath.rerun, trafilatura_text.page_text = own_rerun, own_traf  # type: ignore[assignment]
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


def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rerun parses and extracts the page afresh (what the stash saves)."""
    monkeypatch.setattr(fastpath, "rerun", lambda stash, key, **kw: None)


def _fresh_texts(pages: list[str], **options: Any) -> list[str]:
    with pytest.MonkeyPatch.context() as m:
        _fresh(m)
        return [eh.extract_text(h, **options) for h in pages]


def _resumed(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the reruns that continued from a stash and those that restarted from its
    pruned raw tree."""
    count = {"resumed": 0, "restarted": 0}
    own = fastpath.rerun

    def counting(stash, key, **kw):  # type: ignore[no-untyped-def]
        kind = ("resumed" if stash is not None and stash.ready(key) else
                "restarted" if stash is not None and stash.restartable(key) else None)
        text = own(stash, key, **kw)
        if kind and text is not None:
            count[kind] += 1
        return text
    monkeypatch.setattr(fastpath, "rerun", counting)
    return count


def test_same_text_on_real_pages(runs: list[tuple[str, str, bool, bool, bool]]) -> None:
    """Every ratio rerun of the gold pages continued from the stash, with the text a fresh
    rerun gives; the same on every <body>/thin rerun (started from the pruned tree) and on
    every fourth other page."""
    ratio = [r for r in runs if r[2]]
    assert len(ratio) >= 25
    assert all(r[3] for r in ratio)
    assert not any(r[3] for r in runs if not r[2])
    body = [r for r in runs if r[4]]
    assert len(body) >= 10
    checked = ratio + body + [r for r in runs if not r[2] and not r[4]][::4]
    assert _fresh_texts([r[0] for r in checked]) == [r[1] for r in checked]


@pytest.mark.parametrize("options", [{"balance": "default"}, {"balance": "precision"},
                                     {"include_comments": True}, {"shape": False},
                                     {"post_meta": True}, {"include_tables": False}])
def test_same_text_with_other_options(ratio_pages: list[str], options: dict,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Other options: the same text too (only recall with comments off continues)."""
    counts = _resumed(monkeypatch)
    pages = ratio_pages[::6]
    ours = [eh.extract_text(html, **options) for html in pages]
    assert ours == _fresh_texts(pages, **options)
    if "balance" in options or "include_comments" in options:
        assert counts["resumed"] == 0


def _counting(counts: dict[str, int], key: str, fn: Any) -> Any:
    """``fn``, counting its calls in ``counts[key]``."""

    def counted(*a: Any, **k: Any) -> Any:
        counts[key] += 1
        return fn(*a, **k)

    return counted


def test_rerun_does_not_parse_or_extract_again(ratio_pages: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A ratio rerun neither parses the page nor runs the main extractor again (a fresh
    rerun does both twice on each of these pages)."""
    counts = {"prepare": 0, "extract_content": 0}
    monkeypatch.setattr(trafilatura_text, "prepare_tree",
                        _counting(counts, "prepare", tree_edits.prepare_tree))
    monkeypatch.setattr(core, "extract_content",
                        _counting(counts, "extract_content", core.extract_content))
    pages = ratio_pages[:8]
    assert len(pages) == 8
    for html in pages:
        eh.extract_text(html)
    assert counts == {"prepare": len(pages), "extract_content": len(pages)}
    counts.update(prepare=0, extract_content=0)
    _fresh_texts(pages)
    assert counts == {"prepare": 2 * len(pages), "extract_content": 2 * len(pages)}


def test_body_rerun_starts_from_the_pruned_tree(body_pages: list[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A <body>/thin rerun neither parses the page nor prunes the raw tree again (a fresh
    rerun does both twice on each of these pages), and gives the fresh rerun's text."""
    pages = body_pages[:8]
    assert len(pages) == 8
    counts = {"prepare": 0, "raw_prunes": 0}
    prune = core.prune_unwanted_nodes

    def counted_prune(tree, nodelist, *a):  # type: ignore[no-untyped-def]
        counts["raw_prunes"] += nodelist is core.RAW_TREE_PRUNE_XPATH
        return prune(tree, nodelist, *a)

    monkeypatch.setattr(trafilatura_text, "prepare_tree",
                        _counting(counts, "prepare", tree_edits.prepare_tree))
    monkeypatch.setattr(core, "prune_unwanted_nodes", counted_prune)
    ours = [eh.extract_text(html) for html in pages]
    assert counts == {"prepare": len(pages), "raw_prunes": len(pages)}
    counts.update(prepare=0, raw_prunes=0)
    assert _fresh_texts(pages) == ours
    assert counts == {"prepare": 2 * len(pages), "raw_prunes": 2 * len(pages)}


def test_body_rerun_escalation_continues_from_the_fast_pass(
        body_pages: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The recall retry of a <body>/thin rerun's escalation takes the fast pass's
    extract_content result (a fresh rerun's retry runs it again), with the same text."""
    counts = {"extract_content": 0, "continued": 0}
    monkeypatch.setattr(core, "extract_content",
                        _counting(counts, "extract_content", core.extract_content))
    monkeypatch.setattr(core, "_compared", _counting(counts, "continued", core._compared))
    ours = [eh.extract_text(html) for html in body_pages]
    mine = dict(counts)
    counts.update(extract_content=0, continued=0)
    assert _fresh_texts(body_pages) == ours
    assert counts["continued"] == 0 < mine["continued"]
    assert counts["extract_content"] - mine["extract_content"] == mine["continued"]


@pytest.mark.parametrize("options", [{"balance": "default"}, {"balance": "precision"},
                                     {"include_comments": True}, {"body_ratio": 0.5},
                                     {"shape": False}, {"screen_reader_text": True}])
def test_body_rerun_with_other_options(body_pages: list[str], options: dict,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Other options: the same text as the fresh rerun; only the recall fast pass with
    comments off leaves a tree to start from."""
    counts = _resumed(monkeypatch)
    pages = body_pages[::4]
    ours = [eh.extract_text(html, **options) for html in pages]
    assert ours == _fresh_texts(pages, **options)
    if "balance" in options or "include_comments" in options:
        assert counts["restarted"] == 0
    else:
        assert counts["restarted"] > 0


def test_restart_refuses_other_options(body_pages: list[str]) -> None:
    """The restart checks what its argument needs (comments off, not precision, the recorded
    options but fast and focus, the stashed tree) before it touches anything."""
    stash = core.Stash()
    stash.tree = lhtml.fromstring(body_pages[0])
    stash.options = core.options_for(True, False, True, False, True)
    before = lhtml.tostring(stash.tree)
    for options, tree in ((core.options_for(False, False, False, True, True), stash.tree),
                          (core.options_for(False, True, False, False, True), stash.tree),
                          (core.options_for(False, False, False, False, False), stash.tree),
                          (core.options_for(False, False, False, False, True),
                           lhtml.fromstring(body_pages[0]))):
        with pytest.raises(core.NotResumable):
            core.trafilatura_sequence(tree, options, None, core._Pass(restart=stash))
    assert lhtml.tostring(stash.tree) == before


def test_threads_keep_their_own_stash(ratio_pages: list[str], body_pages: list[str],
                                      runs: list[tuple[str, str, bool, bool, bool]]) -> None:
    """Dask workers extract in threads: pages extracted concurrently give the texts they give
    one at a time afresh."""
    pages = ratio_pages[:12] + body_pages[:8] + [r[0] for r in runs[:12]]
    expected = _fresh_texts(pages)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(eh.extract_text, pages * 2))
    assert got == expected * 2


def test_stash_is_dropped_when_the_call_fails(ratio_pages: list[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A rerun that fails (failure injection: compare_extraction raises) leaves the stash
    empty; the next page is extracted as before."""
    def broken(*a, **k):  # type: ignore[no-untyped-def]
        raise RuntimeError("injected")

    stashes: list[core.Stash] = []

    class Spy(core.Stash):
        __slots__ = ()

        def __init__(self) -> None:
            super().__init__()
            stashes.append(self)

    monkeypatch.setattr(fastpath, "Stash", Spy)
    monkeypatch.setattr(core, "compare_extraction", broken)
    page = next(h for h in ratio_pages if len(trafilatura_text.page_text(h)) < 2500)
    with pytest.raises(RuntimeError, match="injected"):
        eh.extract_text(page)
    assert stashes and stashes[-1].tree is None and stashes[-1].body is None
    monkeypatch.undo()
    assert eh.extract_text(page) == _fresh_texts([page])[0]
