"""The walk of one shard task through curator's modules, traced with ``sys.setprofile``.

A reader following a shard task (``run_shard``) from function to function, each one the first
time it runs, sees the module change at each call and return; every time the walk enters a
module it already left is a jump back a reader has to make. Between the shard runner, the
stage's context and the output bookkeeping (``shard_runner``, ``shard_context``,
``storage.outputs``) what is left of them is the runner coming back after each of its parts
and the stage calling its context (``reject``); marking a shard done is the runner's and
storage's work alone.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from curator.core import pipeline as pl
from curator.core import runner
from curator.core.executors import LocalExecutor

#: The modules of a shard's data path: its pass, its stages' context, its outputs' records.
DATA_PATH = ("curator.core.shard_runner", "curator.core.shard_context", "curator.storage.outputs")
#: Most jumps back between them in one shard task.
MAX_RETURNS = 7


def walk(fn: Callable[[Any], Any], arg: Any) -> tuple[Any, list[tuple[str, str]]]:
    """``fn(arg)`` and the (module, function) of every curator function it ran, in the order
    each first ran (a function called again, once per document, is not walked again)."""
    seen: set[Any] = set()
    order: list[tuple[str, str]] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event != "call" or frame.f_code in seen:
            return
        mod = frame.f_globals.get("__name__", "")
        if mod.startswith("curator."):
            seen.add(frame.f_code)
            order.append((mod, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        out = fn(arg)
    finally:
        sys.setprofile(None)
    return out, order


def returns(order: Sequence[tuple[str, str]], modules: Sequence[str]) -> tuple[int, list[str]]:
    """(times the walk enters one of ``modules`` it had left, the modules in walk order)."""
    mods: list[str] = []
    for mod, _ in order:
        if mod in modules and (not mods or mods[-1] != mod):
            mods.append(mod)
    back = sum(1 for i, m in enumerate(mods) if m in mods[:i])
    return back, mods


def test_returns_counts_entries_into_a_module_already_left() -> None:
    order = [("a", "f"), ("a", "g"), ("b", "h"), ("a", "i"), ("c", "j"), ("b", "k"),
             ("x", "l"), ("b", "m")]
    assert returns(order, ("a", "b", "c")) == (2, ["a", "b", "a", "c", "b"])
    assert returns(order, ("a",)) == (0, ["a"])


def one_shard_walk(tmp_path: Path) -> list[tuple[str, str]]:
    """The walk of the one task of a fused source + filter group (20 documents, 4 rejected),
    run for real by the runner on the local executor."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": str(i), "text": " ".join(["word"] * (i + 1)),
                                        "meta": {"source": "s"}}) + "\n" for i in range(20)))
    pipe = pl.loads(f"name: t\nwork_dir: {tmp_path / 'w'}\nstages:\n"
                    f"  - read_jsonl: {{paths: {docs}}}\n"
                    "  - word_count_filter: {min_words: 5}\n", source="p.yaml")
    walks: list[list[tuple[str, str]]] = []
    real = runner.run_shard

    def traced(task: Any) -> Any:
        out, order = walk(real, task)
        walks.append(order)
        return out

    runner.run_shard = traced
    try:
        summary = runner.Runner(pipe, LocalExecutor()).run()
    finally:
        runner.run_shard = real
    assert summary["stages"][1]["docs_out"] == 16  # the task ran for real
    assert len(walks) == 1
    return walks[0]


def test_a_shard_task_jumps_back_between_its_data_path_modules_at_most_7_times(
        tmp_path: Path) -> None:
    order = one_shard_walk(tmp_path)
    back, mods = returns(order, DATA_PATH)
    shown = " > ".join(m.rpartition(".")[2] for m in mods)
    assert back <= MAX_RETURNS, f"{back} jumps back: {shown}"
    # marking the shard done (its markers, their file ids) no longer goes through the context
    start = next(i for i, (_, fn) in enumerate(order) if fn == "_mark")
    marking = [mod for mod, _ in order[start:]]
    assert "curator.core.shard_context" not in marking, shown
