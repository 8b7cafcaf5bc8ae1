"""What a stage sees while it runs: where to write, how to reject, count and quarantine (the
worker-side contexts of :mod:`curator.core.shard_context`, re-exported here), and for global
stages how to run a distributed, resumable phase (:class:`GlobalContext`)."""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from curator.base.document import Document
from curator.base.errors import StageError, fs_error_line
from curator.core import tracing
from curator.core.progress import item_beats
from curator.core.shard_context import (
    DEFAULT_MAX_DOC_BYTES,
    Mapper,
    ShardContext,
    StageContext,
)
from curator.core.shard_runner import run_shard_tasks
from curator.core.stage import PhaseContext, Shard
from curator.core.stats import HIST_BINS, ShardStats, length_bin
from curator.core.usage import Usage, call_measured
from curator.storage import nofollow, sealed
from curator.storage.atomic import write_json

__all__ = ["DEFAULT_MAX_DOC_BYTES", "HIST_BINS", "GlobalContext", "ShardContext", "ShardStats",
           "StageContext", "length_bin"]


class GlobalContext(PhaseContext):
    """Driver-side context of a :class:`~curator.core.stage.GlobalStage`."""

    def __init__(self, *, executor: Mapper, fingerprint: str, stage: Any,
                 progress: Any = None, log: Callable[[str], None] | None = None,
                 pipeline: str = "", **kw: Any) -> None:
        super().__init__(**kw)
        #: The name of the pipeline running the stage (for what it writes about its origin).
        self.pipeline = pipeline
        self.log = log or (lambda _msg: None)
        self._key: bytes | None = None
        self.executor = executor
        self.fingerprint = fingerprint
        self.stage = stage
        self.progress = progress
        #: Artifacts this stage publishes for downstream stages (JSON-able values).
        self.artifacts: dict[str, Any] = {}
        self.counters: Counter[str] = Counter()
        #: what :meth:`write_shards` did, per output shard (a stage sums its counters)
        self.shard_stats: list[ShardStats] = []
        #: CPU and memory of the items :meth:`map` ran (report).
        self.task_usage: list[Usage] = []
        #: What the items :meth:`map` ran read, ``{path: identity}`` (:mod:`.tracing`).
        self.used: dict[str, Any] = {}

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

        Progress: the phase has its own line, ``[<stage>:<phase>] done/total tasks, docs,
        docs/s, ETA`` (bar, log lines, Dask task keys ``curator:<stage>:<phase>``); ``fn``
        counts the documents it handles with :func:`curator.core.progress.step`.
        """
        items = list(items)
        if phase is None:
            return self._measured(fn, items, self._phase_progress(None))
        keys = [str(k) for k in (keys if keys is not None else range(len(items)))]
        if len(set(keys)) != len(keys):
            raise ValueError(f"phase '{phase}': keys must be unique")
        pdir = os.path.join(self.stage_dir, "_phases", phase)
        beats = os.path.join(self.stage_dir, "_progress", phase)
        key = self._work_dir_key()
        tasks = [_PhaseTask(fn, item, os.path.join(pdir, f"{k}.pkl"), self.fingerprint,
                            key, f"{self.stage_id}/{phase}/{k}",
                            os.path.join(beats, k.replace(os.sep, "_") + ".json"),
                            self.work_dir)
                 for item, k in zip(items, keys, strict=True)]
        out = []
        for result, note, _docs in self._measured(_run_phase_task, tasks,
                                                   self._phase_progress(phase)):
            if note:
                self.log(f"[{self.stage_id}] {note}")
            out.append(result)
        return out

    def _phase_progress(self, phase: str | None) -> Any:
        """The progress line of one ``map``: ``[<stage>:<phase>]`` (or ``[<stage>]``)."""
        if self.progress is None or not hasattr(self.progress, "phase"):
            return None
        label = f"{self.stage_id}:{phase}" if phase else self.stage_id
        return self.progress.phase(label, docs_of=_phase_docs if phase else _no_docs)

    def _work_dir_key(self) -> bytes:
        if self._key is None:  # made (or replaced) by the root alone, then shared
            self._key = self.executor.broadcast(
                sealed.work_dir_key(self.work_dir) if self.executor.is_root else None)
        return self._key

    def work_dir_tag(self, purpose: str) -> str:
        """16 hex digits that tell this work_dir from any other, even one at the same path on
        another machine (derived from its random key; a copy made with it shares it). Call it
        on every rank (MPI: the key is broadcast)."""
        return hmac.new(self._work_dir_key(), purpose.encode(), hashlib.sha256).hexdigest()[:16]

    def _measured(self, fn: Callable[[Any], Any], items: list[Any],
                  progress: Any = None) -> list[Any]:
        if progress is not None:
            progress.start(len(items))
        try:
            pairs = self.executor.map(functools.partial(_confined, self.work_dir, fn), items,
                                      progress=progress)
        finally:
            if progress is not None:
                progress.finish()
        self.task_usage.extend(u for _, u, _ in pairs)
        for _, _, used in pairs:
            self.used.update(used)
        return [r for r, _, _ in pairs]

    def write_shards(
        self,
        process: Callable[[Iterator[Document], ShardContext], Iterator[Document]],
        shards: Sequence[Shard],
    ) -> list[Shard]:
        """Final phase: run ``process`` over each input shard and write the stage's output
        shards the standard way (atomic, resumable, rejected docs and stats recorded)."""
        if self.progress is not None:
            self.progress.start(len(shards))
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


def _confined(work_dir: str, fn: Callable[[Any], Any], item: Any
              ) -> tuple[Any, Any, dict[str, Any]]:
    """``call_measured(fn, item)`` on a worker that writes below ``work_dir`` without following
    symlinks (:mod:`curator.storage.nofollow`), and what it read outside the work_dir
    (:mod:`curator.core.tracing`; nothing for a phase result saved by an earlier run)."""
    nofollow.confine(work_dir)
    with tracing.recording() as rec:
        result, usage = call_measured(fn, item)
    return result, usage, rec.used(1, [work_dir], work_dir=work_dir)[0]


def _phase_docs(pair: Any) -> int | None:
    """Documents a finished phase task counted (``((result, note, docs), usage, used)``;
    None: it counts none)."""
    return pair[0][2]


def _no_docs(_pair: Any) -> None:
    return None


class _PhaseTask:
    def __init__(self, fn: Callable[[Any], Any], item: Any, path: str, fp: str, key: bytes,
                 label: str, beat: str, work_dir: str = "") -> None:
        self.fn, self.item, self.path, self.fp = fn, item, path, fp
        self.key, self.label, self.beat, self.work_dir = key, label, beat, work_dir
        #: the Dask task key's name: the item's key within the phase
        self.name = os.path.basename(path)[: -len(".pkl")]


def _run_phase_task(task: _PhaseTask) -> tuple[Any, str | None, int | None]:
    """(result, a line to log or None, documents counted: None when the task counts none,
    or its result was saved by an earlier run). A saved result is used only if its
    HMAC verifies under the work_dir's key (it was written by a run of ours, for this place):
    unpickling an unverified file could run code planted in a shared work_dir."""
    note = None
    if os.path.exists(task.path):
        try:
            saved = sealed.load(task.path, task.key, task.label)
        except (sealed.Unsealed, OSError) as e:
            note = f"{task.path}: not used ({e}); recomputing"
        else:
            # (fingerprint, result, what computing it read): a result is reused only with
            # its record, whose inputs are all as they were; it joins the stage's record
            fp, result, used = (*saved, None)[:3] if isinstance(saved, tuple) else (None,) * 3
            if fp == task.fp:
                changes = tracing.changed(used, task.work_dir) if isinstance(used, dict) else {}
                if isinstance(used, dict) and not changes:
                    tracing.carry(used)
                    return result, None, None
                why = (f"{tracing.describe(changes)}, which it read, changed" if changes
                       else "no record of what computing it read")
                note = f"{task.path}: not used ({why}); recomputing"
    try:
        with item_beats(task.beat) as meter, tracing.recording() as rec:
            result = task.fn(task.item)
        used = rec.used(1, [task.work_dir] if task.work_dir else [], work_dir=task.work_dir)[0]
        # the record first: a result on disk always has one (a kill between leaves a record
        # alone, which only makes the next run check one more file)
        write_json(task.path[: -len(".pkl")] + tracing.USED_SUFFIX, used)
        sealed.dump(task.path, (task.fp, result, used), task.key, task.label)
    except OSError as e:  # disk full, no permission, read-only: one line naming stage and phase
        line = fs_error_line(e)
        if line is None or os.environ.get("CURATOR_DEBUG"):
            raise
        pdir = os.path.dirname(task.path)  # <work_dir>/stages/<id>/_phases/<phase>
        stage = os.path.basename(os.path.dirname(os.path.dirname(pdir)))
        raise StageError(f"stage '{stage}', phase '{os.path.basename(pdir)}': {line}") from None
    return result, note, meter.docs_counted()
