"""What a stage sees while it runs: where to write, how to reject, count and quarantine (the
worker-side contexts of :mod:`curator.core.shard_context`, re-exported here), and for global
stages how to run a distributed, resumable phase (:class:`GlobalContext`)."""

from __future__ import annotations

import functools
import os
import pickle
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from curator.core.document import Document
from curator.core.errors import StageError, fs_error_line
from curator.core.shard_context import (
    DEFAULT_MAX_DOC_BYTES,
    HIST_BINS,
    ShardContext,
    StageContext,
    length_bin,
    write_json,
)
from curator.core.shard_runner import run_shard_tasks
from curator.core.usage import Usage, call_measured
from curator.storage.atomic import atomic_open

if TYPE_CHECKING:  # pragma: no cover
    from curator.core.executors import Executor
    from curator.core.stage import Shard

__all__ = ["DEFAULT_MAX_DOC_BYTES", "HIST_BINS", "GlobalContext", "ShardContext", "StageContext",
           "length_bin", "write_json"]


class GlobalContext(StageContext):
    """Driver-side context of a :class:`~curator.core.stage.GlobalStage`."""

    def __init__(self, *, executor: Executor, fingerprint: str, stage: Any,
                 progress: Any = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.executor = executor
        self.fingerprint = fingerprint
        self.stage = stage
        self.progress = progress
        #: Artifacts this stage publishes for downstream stages (JSON-able values).
        self.artifacts: dict[str, Any] = {}
        self.counters: Counter[str] = Counter()
        self.shard_stats: list[dict[str, Any]] = []
        #: CPU and memory of the items :meth:`map` ran (report).
        self.task_usage: list[Usage] = []

    @property
    def is_root(self) -> bool:
        return self.executor.is_root

    @property
    def workers(self) -> int:
        return self.executor.size

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], *, phase: str | None = None,
            keys: Sequence[str] | None = None) -> list[Any]:
        """Run ``fn`` over ``items`` across the cluster; results in item order.

        With ``phase`` each result is also saved under the stage folder, keyed by ``keys``
        (default: the item index), so a rerun after a crash skips finished items. Keep results
        small: write bulky data to files inside ``fn`` and return their paths.
        """
        if phase is None:
            return self._measured(fn, list(items))
        keys = [str(k) for k in (keys if keys is not None else range(len(items)))]
        if len(set(keys)) != len(keys):
            raise ValueError(f"phase '{phase}': keys must be unique")
        pdir = os.path.join(self.stage_dir, "_phases", phase)
        tasks = [_PhaseTask(fn, item, os.path.join(pdir, f"{k}.pkl"), self.fingerprint)
                 for item, k in zip(items, keys, strict=True)]
        return self._measured(_run_phase_task, tasks)

    def _measured(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        pairs = self.executor.map(functools.partial(call_measured, fn), items)
        self.task_usage.extend(u for _, u in pairs)
        return [r for r, _ in pairs]

    def write_shards(
        self,
        process: Callable[[Iterator[Document], ShardContext], Iterator[Document]],
        shards: Sequence[Shard],
    ) -> list[Shard]:
        """Final phase: run ``process`` over each input shard and write the stage's output
        shards the standard way (atomic, resumable, rejected docs and stats recorded)."""
        out, stats = run_shard_tasks(
            self.executor, self.stage, self.stage_id, self.fingerprint, self.work_dir,
            list(shards), artifacts=self.upstream_artifacts, save_rejected=self.save_rejected,
            max_doc_bytes=self.max_doc_bytes, process=process, progress=self.progress)
        self.shard_stats.extend(stats)
        return out

    def passthrough(self, shards: Sequence[Shard]) -> list[Shard]:
        """Output the input shards unchanged (stages that only produce artifacts)."""
        return list(shards)

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] += n


class _PhaseTask:
    def __init__(self, fn: Callable[[Any], Any], item: Any, path: str, fp: str) -> None:
        self.fn, self.item, self.path, self.fp = fn, item, path, fp


def _run_phase_task(task: _PhaseTask) -> Any:
    if os.path.exists(task.path):
        with open(task.path, "rb") as f:
            fp, result = pickle.load(f)
        if fp == task.fp:
            return result
    try:
        result = task.fn(task.item)
        with atomic_open(task.path, "wb") as f:
            pickle.dump((task.fp, result), f, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError as e:  # disk full, no permission, read-only: one line naming stage and phase
        line = fs_error_line(e)
        if line is None or os.environ.get("CURATOR_DEBUG"):
            raise
        pdir = os.path.dirname(task.path)  # <work_dir>/stages/<id>/_phases/<phase>
        stage = os.path.basename(os.path.dirname(os.path.dirname(pdir)))
        raise StageError(f"stage '{stage}', phase '{os.path.basename(pdir)}': {line}") from None
    return result
