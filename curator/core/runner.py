"""Runs a pipeline: stage by stage in DAG order, with completion markers so that a rerun only
does what is missing. A global stage runs its phases; a chain of per-document stages (a fused
group, :meth:`~curator.core.pipeline.Pipeline.fused_groups`) runs as one distributed ``map``
over shards, one pass per shard (:mod:`curator.core.shard_runner`).

Layout under ``work_dir``::

    stages/<id>/data/<shard>.jsonl.zst     output shards of materialised stages (atomic)
    stages/<id>/_done/<shard>.json         shard marker: fingerprint + stats (written last)
    stages/<id>/_SUCCESS.json              stage marker: fingerprint, shards, artifacts, stats
    stages/<id>/_phases/<phase>/<key>.pkl  resumable intermediate results of global stages
    rejected/<id>/<shard>.jsonl.zst        removed documents with stage and reason
    quarantine/<id>/<shard>.jsonl.zst      unusable input records with reason and location
    report.json, report.html

A marker is keyed on the stage's fingerprint (its parameters and its inputs' fingerprints),
never on the number of workers, so a run may resume on a different cluster size.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from curator.base.errors import CuratorError, InputError, StageError, fs_error_line
from curator.base.files import files_under
from curator.base.redact import redact, redact_value
from curator.core import tracing
from curator.core.context import GlobalContext, StageContext, write_json
from curator.core.executors import Executor
from curator.core.identity import describe_input_change, digest, explain, identities
from curator.core.lock import WorkDirLock
from curator.core.pipeline import Pipeline, StageNode
from curator.core.preflight import preflight
from curator.core.progress import Progress
from curator.core.report import RunReport, StageReport, skipped_note, write_report
from curator.core.shard_context import DEFAULT_MAX_DOC_BYTES
from curator.core.shard_runner import (
    ShardTask,
    Step,
    id_hash_path,
    out_shards,
    read_marker,
    remove_files,
    remove_orphan_outputs,
    run_shard,
    shard_key,
    source_key,
    stage_dir,
    survey_shard,
    written_outputs,
)
from curator.core.stage import GlobalStage, Shard, ShardSpec, ShardStage, Source, Stage
from curator.core.stats import ShardStats, StageStats
from curator.core.usage import Meter, Usage, stage_usage
from curator.storage import nofollow
from curator.storage.atomic import remove_dead_temps, remove_temps_of_dead_runs, set_run_id
from curator.storage.outputs import (
    adopt,
    check_output_dir,
    claim_output_dir,
    claimed,
    file_ids,
    missing_or_foreign,
)
from curator.storage.shards import SHARD_SUFFIX

__all__ = ["Runner", "count_duplicate_ids", "shard_key", "source_key", "stage_dir"]

#: Id hashes compared at once when counting duplicate ids (8 bytes each: 64 MB).
ID_HASH_BATCH = 8_000_000


def count_duplicate_ids(paths: Sequence[str], batch: int = ID_HASH_BATCH) -> int:
    """Documents whose id hash was already seen, over the sorted per-shard hash files, in
    hash ranges of about ``batch`` entries so memory stays bounded whatever the corpus."""
    import numpy as np

    sizes = [os.path.getsize(p) // 8 for p in paths if os.path.exists(p)]
    paths = [p for p in paths if os.path.exists(p)]
    total = sum(sizes)
    if total < 2:
        return 0
    parts = max(1, -(-total // batch))
    edges = [(i << 64) // parts for i in range(parts + 1)]
    dups = 0
    for lo, hi in itertools.pairwise(edges):
        pieces = []
        for p in paths:
            a = np.memmap(p, dtype="<u8", mode="r") if parts > 1 else np.fromfile(p, "<u8")
            if not len(a):
                continue
            i = 0 if lo == 0 else int(np.searchsorted(a, np.uint64(lo)))
            j = len(a) if hi >= 1 << 64 else int(np.searchsorted(a, np.uint64(hi)))
            if j > i:
                pieces.append(np.array(a[i:j]))
            del a
        if pieces:
            h = np.sort(np.concatenate(pieces))
            dups += int(np.count_nonzero(h[1:] == h[:-1]))
    return dups


def list_source(stage: Source, stage_id: str, fingerprint: str, work_dir: str,
                artifacts: dict[str, Any], max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES,
                content: bool = False,
                ) -> tuple[list[ShardSpec], list[str], list[dict[str, Any]]]:
    """(shard specs, their keys, the identity of what each reads) of a source (root only)."""
    specs = stage.shards(StageContext(
        stage_id=stage_id, work_dir=work_dir, artifacts=artifacts, max_doc_bytes=max_doc_bytes))
    _check_specs(stage_id, specs)
    paths = [stage.input_paths(sp) for sp in specs]
    if (getattr(stage, "params", None) or {}).get("paths"):  # files the user's globs found
        _check_not_own_output(stage_id, work_dir, [p for ps in paths for p in ps])
    ids = identities([p for ps in paths for p in ps], getattr(stage, "storage_options", None),
                     content=content)
    reads = [{p: ids[p] for p in ps} for ps in paths]
    keys = [source_key(fingerprint, sp, rd) for sp, rd in zip(specs, reads, strict=True)]
    return specs, keys, reads


@dataclass
class _Plan:
    """One stage of a fused group before it runs: its keys and what decides a rerun."""

    node: StageNode
    after: dict[str, str]
    files: Any
    eff: str
    state: str
    specs: list[ShardSpec] = field(default_factory=list)  # a source: its shards
    reads: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[Shard] = field(default_factory=list)  # otherwise: its input shards
    names: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)  # this stage's key per shard
    done: dict[str, Any] | None = None
    prepared: Any = None  # ShardStage.prepare's value (surveys_input)
    used: tracing.UsedState = field(default_factory=tracing.UsedState)


class Runner:
    """Executes a :class:`Pipeline` on an :class:`Executor`.

    The root process holds the work_dir lock (:class:`~curator.core.lock.WorkDirLock`) for the
    whole run; pass ``lock`` when the caller took it already (the CLI does, before starting a
    cluster, so a second run fails at once).
    """

    def __init__(self, pipeline: Pipeline, executor: Executor,
                 log: Callable[[str], None] | None = None, lock: WorkDirLock | None = None
                 ) -> None:
        self.pipe = pipeline
        self.ex = executor
        self.work_dir = pipeline.work_dir
        nofollow.confine(self.work_dir)
        # every line passes redact(): a URL's password or a secret from the environment
        # never reaches the terminal, whoever calls the runner
        self.log = (lambda msg: log(redact(msg))) if (log and executor.is_root) else (
            lambda _msg: None)
        self.results: dict[str, dict[str, Any]] = {}
        self.lock = lock
        #: the stage being worked on, named by a disk error outside a shard task
        self._at = ""
        #: ``identity: content``: input files are known by a hash of their bytes too
        self.content = pipeline.config.identity == "content"
        #: surveys made while planning a group, written after its stage folders are set up
        self._surveys: dict[str, Any] = {}

    def run(self) -> dict[str, Any]:
        """Run every stage that is not already done; return the run summary (report data)."""
        with self._locked():
            t_start = time.perf_counter()
            try:
                preflight(self.pipe, self.ex)
                self._check_outputs()
                for group in self.pipe.fused_groups():
                    self._at = group[0].id
                    with self._disk_errors():
                        if isinstance(group[0].stage, GlobalStage):
                            self.results[group[0].id] = self._run_global(group[0])
                        else:
                            self.results.update(self._run_group(group))
                if self.ex.is_root:
                    self._drop_orphan_outputs()
            except BaseException as e:
                self._count_run(time.perf_counter() - t_start,
                                "interrupted" if isinstance(e, KeyboardInterrupt) else "failed")
                raise
            return self._summary(time.perf_counter() - t_start)

    def _drop_orphan_outputs(self) -> None:
        gone = drop_orphan_outputs(self.pipe)
        if gone:
            self.log(f"removed {len(gone)} file(s) that stages no longer in the pipeline wrote "
                     f"into its output folders: {', '.join(sorted(gone)[:3])}"
                     + (", ..." if len(gone) > 3 else ""))

    def _count_run(self, seconds: float, ended: str) -> dict[str, Any]:
        """Add this run to the work_dir's tally (``_runs.json``: runs, their wall seconds, how
        many were interrupted or failed) and return it: the report's header shows the time
        every run of this work_dir took, not only the last resumed one's."""
        path = os.path.join(self.work_dir, RUNS_FILE)
        tally: dict[str, Any] = {"runs": 0, "seconds": 0.0, "interrupted": 0, "failed": 0}
        with contextlib.suppress(OSError, orjson.JSONDecodeError, AttributeError, TypeError):
            with open(path, "rb") as f:
                got = orjson.loads(f.read())
            tally.update({k: got[k] for k in tally if isinstance(got.get(k), int | float)})
        tally["runs"] += 1
        tally["seconds"] = round(tally["seconds"] + seconds, 3)
        if ended in ("interrupted", "failed"):
            tally[ended] += 1
        if self.ex.is_root:
            with contextlib.suppress(OSError):
                write_json(path, tally)
        return tally

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The work_dir checked, locked (unless the caller holds the lock) and adopted by the
        root; a refusal there stops every rank with the same error."""
        own_lock = None
        error = None
        run_id = ""
        if self.ex.is_root:
            try:
                _check_writable(self.work_dir)
                if self.lock is None or not self.lock.held:
                    own_lock = WorkDirLock(self.work_dir).acquire()
                run_id = (own_lock or self.lock).run_id  # type: ignore[union-attr]
                self._adopt_work_dir()
                self.pipe.seal()
            except CuratorError as e:
                error = (type(e), str(e))
        error, run_id = self.ex.broadcast((error, run_id))
        if error:
            raise error[0](error[1])
        if not self.ex.is_root:
            self.pipe.seal()  # the root made the key: read it
        try:
            self.ex.set_run_id(run_id)
            if self.ex.is_root:
                self._remove_temps_of_dead_runs(run_id)
            yield
        finally:
            set_run_id("")
            if own_lock is not None:
                own_lock.release()

    @contextlib.contextmanager
    def _disk_errors(self) -> Iterator[None]:
        """A disk full, a missing permission, a read-only file system, in any phase of a
        stage: one line naming the stage being worked on."""
        try:
            yield
        except OSError as e:
            line = fs_error_line(e)
            if line is None or os.environ.get("CURATOR_DEBUG"):
                raise
            raise StageError(f"stage '{self._at}': {line}") from None

    def _adopt_work_dir(self) -> None:
        """A work_dir copied (``cp -a``) or moved since its last run: its markers' paths are
        rebased on read (:func:`~curator.core.shard_runner.read_marker`), its claims on output
        folders outside it are dropped when the original still exists, and the intermediate
        phase results of global stages, which may name the original's files, are dropped."""
        origin = adopt(self.work_dir)
        if origin is None:
            return
        dropped = 0
        with contextlib.suppress(OSError), os.scandir(os.path.join(self.work_dir, "stages")) as it:
            for e in it:
                phases = os.path.join(e.path, "_phases")
                if os.path.isdir(phases):
                    with contextlib.suppress(OSError):
                        nofollow.rmtree(phases)
                    dropped += 1
        self.log(f"work_dir was copied or moved from {origin}: its results are reused where "
                 "their files are here" + (f"; unfinished phases of {dropped} stage(s) restart"
                                           if dropped else ""))

    def _summary(self, seconds: float) -> dict[str, Any]:
        """The run summary (report.json), written with report.html by the root."""
        cfg = self.pipe.config
        report = RunReport(
            name=cfg.name, work_dir=self.work_dir, executor=self.ex.kind, workers=self.ex.size,
            seconds=round(seconds, 3),
            stages=[StageReport.from_result(n.id, self.results[n.id]) for n in self.pipe.nodes],
            extra={"all_runs": self._count_run(seconds, "done")})
        if self.ex.is_root and cfg.report:
            write_report(report, self.work_dir)
        self.ex.barrier()
        return report.to_json()

    # -- a chain of per-document stages -----------------------------------------------------
    def _plan(self, group: list[StageNode]) -> list[_Plan]:
        """Keys of every stage of a fused group, before it runs. The stages after the first
        read no folder: their input shards are the previous stage's keys (path ``""``)."""
        head = group[0]
        after = global_ancestors(self.pipe, head.id, self.results)
        plans: list[_Plan] = []
        for k, node in enumerate(group):
            files = self.ex.broadcast(param_files(node.stage, self.content) if self.ex.is_root
                                      else None)
            used = used_state(self.ex, self.work_dir, node.id)
            eff = effective_fingerprint(node.fingerprint, after, files, used.epoch)
            p = _Plan(node, after, files, eff, "", used=used)
            if isinstance(node.stage, Source):
                listing: Any = None
                if self.ex.is_root:
                    try:
                        listing = list_source(node.stage, node.id, eff, self.work_dir,
                                              self._upstream_artifacts(node),
                                              self.pipe.max_doc_bytes, self.content)
                    except CuratorError as e:
                        listing = (type(e), str(e))
                listing = self.ex.broadcast(listing)
                if len(listing) == 2:  # an error on the root: every rank stops with it
                    raise listing[0](listing[1])
                p.specs, p.keys, p.reads = listing
                p.names = [sp.name for sp in p.specs]
                p.state = digest({"fp": eff, "shards": [[sp.name, key] for sp, key in
                                                        zip(p.specs, p.keys, strict=True)]})
            else:
                p.inputs = input_shards(self.pipe, node, self.results) if not k else [
                    Shard(name, "", 0, 0, key)
                    for name, key in zip(plans[-1].names, plans[-1].keys, strict=True)]
                p.names = [s.name for s in p.inputs]
                keyed = eff
                if not k and getattr(node.stage, "surveys_input", False):
                    # what the whole input holds decides every shard's output: a change
                    # redoes each shard (its key), not the stage from scratch
                    p.prepared = self._prepare(node, p.inputs)
                    keyed = surveyed_fingerprint(eff, p.prepared)
                p.keys = [shard_key(keyed, s.name, s.key or s.path) for s in p.inputs]
                p.state = input_state(keyed, p.inputs)
            p.done = read_marker(os.path.join(stage_dir(self.work_dir, node.id), "_SUCCESS.json"),
                                 self.work_dir)
            plans.append(p)
        return plans

    def _run_group(self, group: list[StageNode]) -> dict[str, dict[str, Any]]:
        """Run a fused group (often of one stage): every shard in one pass through all its
        stages (``run_shard`` on the executor); then each stage's result, marker and log line
        as if it had run alone."""
        plans = self._plan(group)
        if self._all_reusable(plans):
            if self.ex.is_root:
                for path, surveys in self._surveys.items():
                    write_json(path, surveys)
            self._surveys.clear()
            for p in plans:
                self.log(f"[{p.node.id}] done earlier, skipped")
                assert p.done is not None  # noqa: S101 - invariant (reusable plans have one)
                p.done["skipped"] = True
            return {p.node.id: p.done for p in plans if p.done is not None}
        if self.ex.is_root:
            for p in plans:
                self._at = p.node.id
                self._reset_if_stale(p.node, p.eff, p.after, p.files, p.done, p.used)
            for path, surveys in self._surveys.items():
                write_json(path, surveys)
            self._at = group[0].id
        self._surveys.clear()
        self.ex.barrier()
        artifacts = self._upstream_artifacts(group[0])
        for p in plans:
            self._at = p.node.id
            self._claim_outputs(p.node, artifacts)
        self._at = group[0].id
        label = group[0].id if len(group) == 1 else f"{group[0].id}..{group[-1].id}"
        progress = Progress(label, enabled=self.ex.is_root, mode=self.pipe.config.progress,
                            live_dir=os.path.join(stage_dir(self.work_dir, group[0].id),
                                                  "_progress"))
        tasks = self._shard_tasks(plans, artifacts)
        t0 = time.perf_counter()
        progress.start(len(tasks))
        per_shard = self.ex.map(run_shard, tasks, progress=progress)
        progress.finish()
        self._remove_dead_temps(group, artifacts)
        results = self._group_results(plans, per_shard, time.perf_counter() - t0)
        self.ex.barrier()
        return results

    def _prepare(self, node: StageNode, inputs: list[Shard]) -> Any:
        """``stage.prepare`` over every input shard's survey, on every process. Surveys are
        cached in ``stages/<id>/_surveys.json`` by input shard key: a rerun surveys only the
        shards that changed (none when nothing did)."""
        stage = node.stage
        assert isinstance(stage, ShardStage)  # noqa: S101 - invariant (surveys_input)
        cache_path = os.path.join(stage_dir(self.work_dir, node.id), SURVEYS_FILE)
        keys = [s.key or s.path for s in inputs]
        cached = read_surveys(self.work_dir, node) if self.ex.is_root else {}
        todo = self.ex.broadcast([i for i, k in enumerate(keys) if k not in cached]
                                 if self.ex.is_root else None)
        got = self.ex.map(survey_shard, [(stage, inputs[i].path) for i in todo])
        prepared = None
        if self.ex.is_root:
            cached.update({keys[i]: g for i, g in zip(todo, got, strict=True)})
            surveys = [cached[k] for k in keys]
            prepared = stage.prepare(surveys, [s.name for s in inputs],
                                     [s.path for s in inputs])
            # written once the stage folder is set up (a fresh start clears it)
            self._surveys[cache_path] = {"fingerprint": node.fingerprint,
                                         "surveys": dict(zip(keys, surveys, strict=True))}
        return self.ex.broadcast(prepared)

    def _all_reusable(self, plans: list[_Plan]) -> bool:
        """Every stage of the group is done for the same state, and what it made is still
        there: the group's output (a stage that ran fused has no files) and every file the
        stages wrote (one deleted by hand makes its shard redo)."""
        last = len(plans) - 1
        for k, p in enumerate(plans):
            if not p.done or p.done.get("state") != p.state:
                return False
            if k == last and not all(s.get("path") for s in p.done.get("shards", [])):
                return False
            if missing_or_foreign(written_outputs(p.done), self.work_dir,
                                  p.done.get("written_ids")):
                return False
        return True

    def _shard_tasks(self, plans: list[_Plan], artifacts: dict[str, Any]) -> list[ShardTask]:
        """One task per input shard of the group's first stage, one step per stage."""
        head, last = plans[0], len(plans) - 1
        source = isinstance(head.node.stage, Source)
        save = self.pipe.config.save_rejected
        tasks = []
        for i, name in enumerate(head.names):
            steps = [Step(p.node.stage, p.node.id, p.eff, p.keys[i], artifacts,
                          write=k == last, prepared=p.prepared) for k, p in enumerate(plans)]
            if source:
                tasks.append(ShardTask(steps, self.work_dir, name, head.specs[i], None, save,
                                       self.pipe.max_doc_bytes, read=head.reads[i]))
            else:
                tasks.append(ShardTask(steps, self.work_dir, name, None, head.inputs[i].path,
                                       save, self.pipe.max_doc_bytes))
        return tasks

    def _group_results(self, plans: list[_Plan], per_shard: list[list[ShardStats]],
                       wall: float) -> dict[str, dict[str, Any]]:
        """Each stage's result from its shards' stats; the root writes its ``_SUCCESS.json``
        and logs its line."""
        source = isinstance(plans[0].node.stage, Source)
        stats = [[r[k] for r in per_shard] for k in range(len(plans))]
        busy = [sum(st.seconds for st in s) for s in stats]
        results: dict[str, dict[str, Any]] = {}
        for k, p in enumerate(plans):
            node = p.node
            self._at = node.id  # a disk error writing its result names it
            # one pass did every stage: each gets the share of the wall time its own work took
            secs = wall * (busy[k] / sum(busy) if sum(busy) > 0 else 1 / len(plans))
            out = out_shards(stats[k])
            agg = aggregate(stats[k], None if source and not k else p.inputs, out)
            if source and not k:
                id_files = [id_hash_path(self.work_dir, node.id, n) for n in p.names]
                dups = count_duplicate_ids(id_files) if self.ex.is_root else 0
                if dups:
                    agg.counters["duplicate_ids"] = dups
            result = self._result(node, p.state, p.after, p.files, out, {}, agg, [], secs,
                                  stats[k])
            if len(plans) > 1:
                result["fused"] = [q.node.id for q in plans]
            results[node.id] = result
            if self.ex.is_root:
                sdir = stage_dir(self.work_dir, node.id)
                _remove_obsolete(self.work_dir, node.id, set(p.names))
                record_used(sdir, stats[k])
                write_json(os.path.join(sdir, "_SUCCESS.json"), result)
                self._log_stage(node.id, agg, result["seconds"])
                with contextlib.suppress(OSError):
                    nofollow.rmtree(os.path.join(sdir, "_ids"))
        return results

    # -- one global stage -------------------------------------------------------------------
    def _run_global(self, node: StageNode) -> dict[str, Any]:
        sdir = stage_dir(self.work_dir, node.id)
        stage = node.stage
        assert isinstance(stage, GlobalStage)  # noqa: S101 - invariant (kind is "global")
        artifacts = self._upstream_artifacts(node)
        after = global_ancestors(self.pipe, node.id, self.results)
        files = self.ex.broadcast(param_files(stage, self.content) if self.ex.is_root else None)
        used = used_state(self.ex, self.work_dir, node.id)
        eff = effective_fingerprint(node.fingerprint, after, files, used.epoch)
        inputs = input_shards(self.pipe, node, self.results)
        state = input_state(eff, inputs)
        done = read_marker(os.path.join(sdir, "_SUCCESS.json"), self.work_dir)
        if done and done.get("state") == state and not missing_or_foreign(
                written_outputs(done), self.work_dir, done.get("written_ids")):
            self.log(f"[{node.id}] done earlier, skipped")
            done["skipped"] = True
            return done
        if self.ex.is_root:
            self._reset_if_stale(node, state, after, files, done, used)
        self.ex.barrier()

        self._claim_outputs(node, artifacts)
        progress = Progress(node.id, enabled=self.ex.is_root, mode=self.pipe.config.progress,
                            live_dir=os.path.join(sdir, "_progress"))
        gctx = GlobalContext(
            executor=self.ex, fingerprint=state, stage=stage, progress=progress, log=self.log,
            pipeline=self.pipe.config.name, stage_id=node.id, work_dir=self.work_dir,
            artifacts=artifacts,
            save_rejected=self.pipe.config.save_rejected, max_doc_bytes=self.pipe.max_doc_bytes,
        )
        t0 = time.perf_counter()
        driver = Meter()
        with tracing.recording() as rec:  # what the driver's part of the stage reads
            out = stage.run(inputs, gctx)
        gctx.used.update(rec.used(1, [self.work_dir])[0])
        self._remove_dead_temps([node], artifacts)
        if not isinstance(out, list):
            raise StageError(f"stage '{node.id}': run() must return the output shards "
                             "(use ctx.write_shards or ctx.passthrough)")
        # shards made by the stage itself: they depend on everything the stage read
        out = [s if s.key else Shard(s.name, s.path, s.docs, s.bytes,
                                     digest({"fp": state, "shard": s.name, "path": s.path}))
               for s in out]
        progress.finish()
        agg = aggregate(gctx.shard_stats, inputs, out, usage=gctx.task_usage,
                        driver=driver.stop())
        agg.counters = agg.counters + gctx.counters  # the driver's own counts
        result = self._result(node, state, after, files, out, gctx.artifacts, agg, inputs,
                              time.perf_counter() - t0, gctx.shard_stats)
        if self.ex.is_root:
            record_used(sdir, gctx.shard_stats, gctx.used)
            write_json(os.path.join(sdir, "_SUCCESS.json"), result)
            self._log_stage(node.id, agg, result["seconds"])
        self.ex.barrier()
        return result

    def _result(self, node: StageNode, state: str, after: dict[str, str], files: Any,
                out: list[Shard], artifacts: dict[str, Any], agg: StageStats,
                global_inputs: list[Shard], seconds: float,
                shard_stats: Sequence[ShardStats] = ()) -> dict[str, Any]:
        """A stage's ``_SUCCESS.json``: what it made, from what, with its stats."""
        stage = node.stage
        return {
            "fingerprint": node.fingerprint,
            "state": state,
            "identity": node.identity,
            "after": after,
            "files": files,
            "stage": stage.name,
            "kind": stage.kind,
            "params": redact_value(stage.params),
            "inputs": node.inputs,
            "shards": [{"name": s.name, "path": s.path, "docs": s.docs, "bytes": s.bytes,
                        "key": s.key} for s in out],
            "artifacts": artifacts,
            "stats": agg.to_json(),
            # what a global stage read, to say which inputs changed when it is stale
            "input_keys": {s.name: s.key for s in global_inputs},
            "seconds": round(seconds, 3),
            # files written outside the stage folder (checked before a rerun reuses them),
            # and where the work_dir was (a copied work_dir rebases the paths above)
            "written": [f for st in shard_stats for f in st.files],
            "written_ids": file_ids([f for st in shard_stats for f in st.files]),
            "work_dir": self.work_dir,
        }

    def _log_stage(self, sid: str, agg: StageStats, seconds: float) -> None:
        self.log(_stage_line(sid, agg, seconds))
        if agg.counters.get("duplicate_ids"):
            self.log(f"[{sid}] warning: {agg.counters['duplicate_ids']} document(s) "
                     "have an id seen before in this source (counter duplicate_ids; "
                     "read_jsonl/read_parquet 'ids: rewrite' makes them unique)")

    def _remove_dead_temps(self, nodes: Sequence[StageNode], artifacts: dict[str, Any]
                           ) -> None:
        """Once the stages' work is done: drop temporaries left in their folders (stage folder,
        rejected, quarantine, output folders) by writers that died, on every host. A writer
        killed mid-write (a Dask worker lost) leaves one that a retried task cannot be relied on
        to see (it may have listed the folder before the temporary appeared)."""
        folders: list[str] = []
        for node in nodes:
            ctx = StageContext(stage_id=node.id, work_dir=self.work_dir, artifacts=artifacts)
            folders += [stage_dir(self.work_dir, node.id),
                        os.path.join(self.work_dir, "rejected", node.id),
                        os.path.join(self.work_dir, "quarantine", node.id)]
            with contextlib.suppress(CuratorError):
                folders += list(node.stage.output_dirs(ctx))
        self.ex.on_every_host(remove_dead_temps, folders, True)

    def _remove_temps_of_dead_runs(self, run_id: str) -> None:
        """Temporaries in the work_dir's stage folders and its claimed output folders that are
        not this run's were left by runs that died (on any host: the lock rules out a live
        one); they go now."""
        wd = self.work_dir
        folders = [os.path.join(wd, kind) for kind in ("stages", "rejected", "quarantine")]
        n, size = remove_temps_of_dead_runs(folders + sorted(claimed(wd)), run_id)
        if n:
            self.log(f"removed {n} temporary file(s) ({size / 1e6:.1f} MB) left in the work_dir "
                     "by a run that died")

    def _check_outputs(self) -> None:
        """Refuse a foreign output folder of any stage before the first stage runs, not hours
        later when that stage's turn comes."""
        self._on_root_output_dirs(self.pipe.nodes, {}, check_output_dir)

    def _claim_outputs(self, node: StageNode, artifacts: dict[str, Any]) -> None:
        """Claim the folders the stage writes (root); any refusal stops every rank."""
        self._on_root_output_dirs([node], artifacts, claim_output_dir)

    def _on_root_output_dirs(self, nodes: Sequence[StageNode], artifacts: dict[str, Any],
                             action: Callable[..., Any]) -> None:
        """``action`` (check or claim) on each output folder of ``nodes``, on the root; a
        refusal there stops every rank with the same error."""
        error = None
        if self.ex.is_root:
            try:
                for node in nodes:
                    ctx = StageContext(stage_id=node.id, work_dir=self.work_dir,
                                       artifacts=artifacts)
                    for d in node.stage.output_dirs(ctx):
                        action(d, node.stage.name, work_dir=self.work_dir,
                               replaces=node.stage.replaces_outputs)
            except CuratorError as e:
                error = (type(e), str(e))
        error = self.ex.broadcast(error)
        if error:
            raise error[0](error[1])

    def _reset_if_stale(self, node: StageNode, key: str, after: dict[str, str],
                        files: dict[str, Any], done: dict[str, Any] | None,
                        used: tracing.UsedState | None = None) -> None:
        """Start the stage afresh when its configuration changed (a global stage: also when
        any input changed; any stage: when something its code read changed); per-shard
        changes are handled by the shard markers."""
        used = used or tracing.UsedState()
        sdir = stage_dir(self.work_dir, node.id)
        old_key, old_identity = read_stage_key(sdir)
        if old_key == key:
            return
        if old_key is not None:
            why = explain(old_identity, node.identity) or files_changed(done, files) or (
                used.reasons()) or (
                ["its input shards changed"] if isinstance(node.stage, GlobalStage) else
                [f"global stage(s) above it changed: {', '.join(after)}"])
            self.log(f"[{node.id}] rerunning: {'; '.join(why)}")
        for marker in _markers(sdir, self.work_dir):
            remove_files(marker.get("files") or [], self.work_dir)
        for d in (sdir, os.path.join(self.work_dir, "rejected", node.id),
                  os.path.join(self.work_dir, "quarantine", node.id)):
            nofollow.rmtree(d)
        nofollow.makedirs(sdir)
        write_json(os.path.join(sdir, "_FINGERPRINT"), {
            "key": key, "identity": node.identity, "epoch": used.epoch, "used": used.now})

    def _upstream_artifacts(self, node: StageNode) -> dict[str, Any]:
        arts: dict[str, Any] = {}
        for anc in reversed(self.pipe.ancestors(node.id)):  # nearest ancestor wins
            arts.update(self.results[anc].get("artifacts") or {})
        return arts



# -- keys shared by the runner and `curator status` ----------------------------------------------


#: The work_dir's tally of runs (:meth:`Runner._count_run`).
RUNS_FILE = "_runs.json"
#: A surveying stage's surveys by input shard key (:meth:`Runner._prepare`).
SURVEYS_FILE = "_surveys.json"


def read_surveys(work_dir: str, node: StageNode) -> dict[str, Any]:
    """The surveys a stage made earlier, by input shard key (empty when its settings changed
    or there are none)."""
    path = os.path.join(stage_dir(work_dir, node.id), SURVEYS_FILE)
    with contextlib.suppress(OSError, orjson.JSONDecodeError, AttributeError):
        with open(path, "rb") as f:
            got = orjson.loads(f.read())
        if isinstance(got, dict) and got.get("fingerprint") == node.fingerprint and \
                isinstance(got.get("surveys"), dict):
            return got["surveys"]
    return {}


def surveyed_fingerprint(eff: str, prepared: Any) -> str:
    """The fingerprint shard keys are made from for a stage that surveys its input."""
    return digest({"fp": eff, "prepared": prepared})


def global_ancestors(pipe: Pipeline, stage_id: str, results: dict[str, dict[str, Any]]
                     ) -> dict[str, str]:
    """State of every global stage above ``stage_id``: their artifacts (a tokenizer, a model)
    depend on the whole dataset, so a stage below one reruns when its state changes."""
    return {a: results[a]["state"] for a in sorted(pipe.ancestors(stage_id))
            if results[a].get("kind") == "global"}


def effective_fingerprint(fingerprint: str, after: dict[str, str],
                          files: dict[str, Any] | None = None, epoch: str = "") -> str:
    """The stage fingerprint plus what its results also depend on: the state of global stages
    above it, the identity of the files its parameters name (``Stage.input_files``) and the
    epoch of what its code read while it ran (:class:`~curator.core.tracing.UsedState`)."""
    if not after and not files and not epoch:
        return fingerprint
    return digest({"fp": fingerprint, "after": after, **({"files": files} if files else {}),
                   **({"epoch": epoch} if epoch else {})})


def used_state(ex: Executor, work_dir: str, stage_id: str) -> tracing.UsedState:
    """What the stage read in earlier runs and whether it changed (checked on the root)."""
    return ex.broadcast(tracing.used_state(os.path.join(stage_dir(work_dir, stage_id),
                                                        "_FINGERPRINT")) if ex.is_root else None)


def record_used(sdir: str, stats: Iterable[ShardStats], extra: dict[str, Any] | None = None
                ) -> None:
    """Keep in the stage's ``_FINGERPRINT`` what its shards (this run's and the reused ones)
    and phases read: the next run checks it."""
    path = os.path.join(sdir, "_FINGERPRINT")
    try:
        with open(path, "rb") as f:
            obj = orjson.loads(f.read(64 << 20))
    except (OSError, orjson.JSONDecodeError):
        return
    if not isinstance(obj, dict):
        return
    used: dict[str, Any] = dict(extra or {})
    for st in stats:
        used.update(st.used)
    if obj.get("used") != used:
        obj["used"] = used
        write_json(path, obj)


def param_files(stage: Stage, content: bool = False) -> dict[str, Any]:
    """Identity of the files ``stage``'s parameters name: those typed :data:`FilePath` /
    :data:`DirPath` (a folder: every file under it) and ``Stage.input_files`` (globs
    expanded). ``content``: with a hash of each local file (pipeline ``identity: content``)."""
    import glob

    named = dict.fromkeys(stage.input_files(), "file")
    named.update(stage.input_paths_of_params())
    paths: list[str] = []
    for p in named:
        local = "://" not in p or p.startswith("file://")
        if local and any(c in p for c in "*?["):
            paths.extend(sorted(glob.glob(p)) or [p])
        elif local and os.path.isdir(p.removeprefix("file://")):  # a folder: its files
            paths.extend(files_under(p.removeprefix("file://")) or [p])
        else:
            paths.append(p)
    return identities(paths, getattr(stage, "storage_options", None),
                      content=content) if paths else {}


def files_changed(done: dict[str, Any] | None, files: dict[str, Any]) -> list[str]:
    """``files it reads changed: <path> (size, mtime_ns)`` when a parameter-named file did."""
    old = (done or {}).get("files")
    if old is None or old == files:
        return []
    return [f"files it reads changed: {describe_input_change(old, files)}"]


def input_shards(pipe: Pipeline, node: StageNode, results: dict[str, dict[str, Any]]
                 ) -> list[Shard]:
    return merge_inputs([(i, results[i]["shards"]) for i in node.inputs])


def merge_inputs(per_input: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> list[Shard]:
    """The shards of a stage's inputs, in input order, each name unique per input path: two
    inputs may both hold ``wiki-00000`` (a source and a stage that forwarded one of its
    shards, e.g. an empty one), and the later is named ``<input id>.<name>`` so their output
    files and markers never collide; the same path reached twice is read once."""
    out: list[Shard] = []
    taken: dict[str, str] = {}  # name -> path
    for sid, shards in per_input:
        for s in shards:
            name, path = s["name"], s["path"]
            if name in taken and path and taken[name] == path:
                continue
            if name in taken:
                name = f"{sid}.{name}"
                n = 1
                while name in taken:
                    n += 1
                    name = f"{sid}.{s['name']}.{n}"
            taken[name] = path
            out.append(Shard(name, path, s["docs"], s.get("bytes", 0), s.get("key", "")))
    return out


def input_state(fingerprint: str, inputs: Sequence[Shard]) -> str:
    return digest({"fp": fingerprint, "inputs": [[s.name, s.key or s.path] for s in inputs]})


def read_stage_key(sdir: str) -> tuple[str | None, dict[str, Any] | None]:
    """(key, identity) the stage folder was started with (``_FINGERPRINT``)."""
    try:
        with open(os.path.join(sdir, "_FINGERPRINT"), "rb") as f:
            raw = f.read(64 << 20)  # a key, an identity, what it read (never trust its size)
    except OSError:
        return None, None
    try:
        obj = orjson.loads(raw)
        return obj["key"], obj.get("identity")
    except (orjson.JSONDecodeError, KeyError, TypeError):  # before identities were kept
        return raw.decode(errors="replace").strip(), None


def _markers(sdir: str, work_dir: str) -> Iterator[dict[str, Any]]:
    with contextlib.suppress(OSError), os.scandir(os.path.join(sdir, "_done")) as it:
        for e in it:
            if e.name.endswith(".json"):
                m = read_marker(e.path, work_dir)
                if m:
                    yield m


def _remove_obsolete(work_dir: str, stage_id: str, names: set[str]) -> None:
    """Drop what this stage made for shards that no longer exist (an input file was removed,
    a listing shrank): their markers, output shards, set-aside records and written files."""
    sdir = stage_dir(work_dir, stage_id)
    stale: list[str] = []  # no _done folder yet: nothing of this stage to drop
    with contextlib.suppress(OSError), os.scandir(os.path.join(sdir, "_done")) as it:
        stale = [e.name[:-5] for e in it if e.name.endswith(".json") and e.name[:-5] not in names]
    for name in stale:
        m = read_marker(os.path.join(sdir, "_done", f"{name}.json"), work_dir) or {}
        remove_files(m.get("files") or [], work_dir)
        for p in (os.path.join(sdir, "data", f"{name}{SHARD_SUFFIX}"),
                  os.path.join(work_dir, "rejected", stage_id, f"{name}.jsonl.zst"),
                  os.path.join(work_dir, "quarantine", stage_id, f"{name}.jsonl.zst"),
                  os.path.join(sdir, "_done", f"{name}.json")):
            nofollow.unlink(p)


def aggregate(stats: Sequence[ShardStats], inputs: list[Shard] | None,
              outputs: list[Shard] | None = None, usage: Sequence[Usage] = (),
              driver: Usage | None = None) -> StageStats:
    """Sum per-shard stats into per-stage stats; ``cpu_s`` sums the shards done in this run,
    the phase items (``usage``) and the driver's own time, ``peak_rss_mb`` is the largest
    high-water mark among them (:mod:`curator.core.usage`)."""
    agg = StageStats.of_shards(stats)
    if not stats and inputs is not None:  # a global stage that passed shards through
        passed = outputs if outputs is not None else inputs
        agg.docs_in = sum(s.docs for s in inputs)
        agg.bytes_in = sum(s.bytes for s in inputs)
        agg.docs_out = sum(s.docs for s in passed)
        agg.bytes_out = sum(s.bytes for s in passed)
    agg.sort_tallies()
    agg.shard_seconds = round(agg.shard_seconds, 3)
    ran = [Usage(st.cpu_s, st.peak_rss_mb or 0.0, st.proc) for st in stats
           if not st.resumed and st.cpu_s is not None]
    used = stage_usage([*usage, *ran], driver)
    agg.cpu_s, agg.peak_rss_mb = used["cpu_s"], used["peak_rss_mb"]
    return agg


def _stage_line(sid: str, agg: StageStats, secs: float) -> str:
    q = agg.set_aside
    extra = f", {q} quarantined" if q else ""
    held = agg.docs_in - agg.docs_out - agg.removed - q
    if held > 0:  # handed to no one and not removed (train_quality_classifier's positives)
        extra += f", {held} not passed on"
    if agg.shards_resumed:
        extra += f", {agg.shards_resumed} shards reused"
    note = skipped_note(agg)
    return (f"[{sid}] {agg.docs_in} -> {agg.docs_out} docs ({agg.removed} removed{extra}) "
            f"in {secs:.2f}s" + (f"; {note}" if note else ""))


def _check_not_own_output(stage_id: str, work_dir: str, paths: list[str]) -> None:
    """Refuse a source file inside the work_dir or an output folder this work_dir's stages
    claimed. ``paths: data/**/*.jsonl*`` with ``work_dir: data/work`` read the run's own
    shards and outputs on every rerun: 1, then 3, then 7 documents, duplicates counted only
    as a warning."""
    if not paths:
        return
    mine = os.path.realpath(work_dir)
    roots = {mine: "the work_dir", **{d: f"the output folder of stage '{owner}'"
                                      for d, owner in claimed(work_dir).items()}}
    for p in paths:
        if "://" in p and not p.startswith("file://"):
            continue
        real = os.path.realpath(p.removeprefix("file://"))
        for root, what in roots.items():
            if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                raise InputError(
                    f"stage '{stage_id}': its paths match '{p}', inside {what} '{root}': this "
                    "pipeline's own output, which every rerun would read again; narrow the "
                    "pattern or move the work_dir or output elsewhere")


def drop_orphan_outputs(pipe: Pipeline) -> list[str]:
    """An output folder keeps the documents of the current inputs only, whatever its writer
    is called: the files a removed or renamed stage wrote into a folder the pipeline still
    writes are removed (:func:`~curator.core.shard_runner.remove_orphan_outputs`)."""
    folders: dict[str, set[str]] = {}
    for node in pipe.nodes:
        ctx = StageContext(stage_id=node.id, work_dir=pipe.work_dir, artifacts={})
        with contextlib.suppress(CuratorError):
            for d in node.stage.output_dirs(ctx):
                if "://" not in d or d.startswith("file://"):
                    real = os.path.realpath(d.removeprefix("file://"))
                    folders.setdefault(real, set()).add(node.id)
    return remove_orphan_outputs(pipe.work_dir, {n.id for n in pipe.nodes}, folders)


def _check_specs(stage_id: str, specs: Any) -> None:
    if not isinstance(specs, list) or not all(isinstance(s, ShardSpec) for s in specs):
        raise StageError(f"stage '{stage_id}': shards() must return a list of ShardSpec")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise StageError(f"stage '{stage_id}': shard names are not unique")


def _check_writable(work_dir: str) -> None:
    try:
        probe = os.path.join(work_dir, ".write-test")
        try:
            f = nofollow.open_file(probe, "w", exclusive=True)
        except FileExistsError:  # a killed run's, or a hard link: removed, never written to
            nofollow.unlink(probe)
            f = nofollow.open_file(probe, "w", exclusive=True)
        with f:
            f.write("ok")
        nofollow.unlink(probe)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise
        raise CuratorError(f"work_dir '{work_dir}' is not writable: {e.strerror}") from None


