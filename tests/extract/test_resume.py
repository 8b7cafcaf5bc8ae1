"""The ``fast=False`` rerun of ``extract_text`` (the text is under half of resiliparse's words)
continues from the fast pass (curator/extract/resume.py) instead of parsing and extracting the
page again: the same text on every real page, one parse and one ``extract_content`` per page,
per-thread stashes that never outlive the call, and trafilatura's own functions for any other
trafilatura source."""

from __future__ import annotations

import inspect
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench.extraction_quality import load_gold
from curator.extract import extract_html as eh
from curator.extract import resume


@pytest.fixture(scope="module")
def runs() -> list[tuple[str, str, bool, bool]]:
    """Every second gold page (315 of 630, all splits) extracted as ``read_warc`` does (the
    defaults): (page, text, whether it took the ratio rerun, whether that rerun resumed)."""
    eh.prepare("trafilatura")
    eh.prepare("resiliparse")
    out = []
    own_rerun, own_traf = resume.rerun, eh._trafilatura
    for page in load_gold("all")[::2]:
        seen = {"ratio": False, "resumed": False}

        def rerun(stash, key, run, seen=seen):  # type: ignore[no-untyped-def]
            text = own_rerun(stash, key, run)
            seen["resumed"] |= text is not None
            return text

        def traf(html, fast=True, balance="recall", *a, seen=seen):  # type: ignore[no-untyped-def]
            seen["ratio"] |= not fast and balance == "recall"  # the defaults' ratio rerun
            return own_traf(html, fast, balance, *a)
        resume.rerun, eh._trafilatura = rerun, traf  # type: ignore[assignment]
        try:
            text = eh.extract_text(page.html)
        finally:
            resume.rerun, eh._trafilatura = own_rerun, own_traf  # type: ignore[assignment]
        out.append((page.html, text, seen["ratio"], seen["resumed"]))
    return out


@pytest.fixture(scope="module")
def ratio_pages(runs: list[tuple[str, str, bool, bool]]) -> list[str]:
    """Pages whose fast text is under half of resiliparse's words: the ratio rerun."""
    return [html for html, _, ratio, _ in runs if ratio]


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


def test_same_text_on_real_pages(runs: list[tuple[str, str, bool, bool]]) -> None:
    """Every ratio rerun of the gold pages resumed, with the text trafilatura's fresh rerun
    gives; the same on every fourth other page."""
    ratio = [r for r in runs if r[2]]
    assert len(ratio) >= 25
    assert all(resumed for *_, resumed in ratio)
    assert not any(resumed for _, _, r, resumed in runs if not r)
    checked = ratio + [r for r in runs if not r[2]][::4]
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


def test_rerun_does_not_parse_or_extract_again(ratio_pages: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A ratio rerun neither parses the page nor runs trafilatura's main extractor again
    (the old code did both twice on each of these pages)."""
    import trafilatura.core as core

    counts = {"prepare": 0, "extract_content": 0}
    prepare_tree, extract_content = eh._prepare_tree, core.extract_content

    def counted_prepare(*a, **k):  # type: ignore[no-untyped-def]
        counts["prepare"] += 1
        return prepare_tree(*a, **k)

    def counted_extract(*a, **k):  # type: ignore[no-untyped-def]
        counts["extract_content"] += 1
        return extract_content(*a, **k)

    monkeypatch.setattr(eh, "_prepare_tree", counted_prepare)
    monkeypatch.setattr(core, "extract_content", counted_extract)
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


def test_threads_keep_their_own_stash(ratio_pages: list[str],
                                      runs: list[tuple[str, str, bool, bool]]) -> None:
    """Dask workers extract in threads: pages extracted concurrently give the texts they give
    one at a time, and no stash is left on any thread."""
    pages = ratio_pages[:12] + [r[0] for r in runs[:12]]
    with resume.stock():
        expected = [eh.extract_text(h) for h in pages]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(eh.extract_text, pages * 2))
        left = list(pool.map(lambda _: (getattr(resume._LOCAL, "record", None),
                                        getattr(resume._LOCAL, "resume", None)), range(8)))
    assert got == expected * 2
    assert set(left) == {(None, None)}


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
        parsed = [0]
        prepare_tree = eh._prepare_tree

        def counted(*a, **k):  # type: ignore[no-untyped-def]
            parsed[0] += 1
            return prepare_tree(*a, **k)

        monkeypatch.setattr(eh, "_prepare_tree", counted)
        eh.extract_text(ratio_pages[0])
        assert parsed[0] == 2
        assert resume.install({module: text}) is True  # the same text is accepted
    assert resume.installed()
