"""Runs a pipeline: stage by stage in DAG order, with completion markers so that a rerun only
does what is missing. A global stage runs its phases; a chain of per-document stages (a fused
group, :meth:`~curator.core.pipeline.Pipeline.fused_groups`) runs as one distributed ``map``
over shards, one pass per shard (:mod:`curator.core.shard_runner`). What decides whether a
stage's results are reused, and the files that keep it, is :mod:`curator.core.stage_state`.

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
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from curator.base.errors import CuratorError, StageError, fs_error_line
from curator.base.redact import redact
from curator.core import tracing
from curator.core.context import GlobalContext, StageContext
from curator.core.executors import Executor
from curator.core.id_hashes import count_duplicate_ids
from curator.core.identity import digest, explain
from curator.core.lock import WorkDirLock
from curator.core.pipeline import Pipeline, StageNode
from curator.core.preflight import preflight
from curator.core.progress import Progress
from curator.core.report import RunReport, StageReport, skipped_note, write_report
from curator.core.shard_runner import (
    ShardTask,
    Step,
    id_hash_path,
    out_shards,
    read_marker,
    remove_files,
    run_shard,
    shard_key,
    stage_dir,
    survey_shard,
    written_outputs,
)
from curator.core.stage import GlobalStage, Shard, ShardSpec, ShardStage, Source
from curator.core.stage_state import (
    SURVEYS_FILE,
    drop_orphan_outputs,
    effective_fingerprint,
    files_changed,
    global_ancestors,
    input_shards,
    input_state,
    list_source,
    markers,
    param_files,
    read_stage_key,
    read_surveys,
    record_used,
    remove_obsolete,
    stage_result,
    surveyed_fingerprint,
    used_state,
)
from curator.core.stats import ShardStats, StageStats, aggregate
from curator.core.usage import Meter
from curator.storage import nofollow
from curator.storage.atomic import (
    remove_dead_temps,
    remove_temps_of_dead_runs,
    set_run_id,
    write_json,
)
from curator.storage.outputs import (
    adopt,
    check_output_dir,
    claim_output_dir,
    claimed,
    missing_or_foreign,
)

__all__ = ["Runner"]







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
            result = stage_result(node, self.work_dir, p.state, p.after, p.files, out, {}, agg,
                                  [], secs, stats[k])
            if len(plans) > 1:
                result["fused"] = [q.node.id for q in plans]
            results[node.id] = result
            if self.ex.is_root:
                sdir = stage_dir(self.work_dir, node.id)
                remove_obsolete(self.work_dir, node.id, set(p.names))
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
        gctx.used.update(rec.used(1, [self.work_dir], work_dir=self.work_dir)[0])
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
        result = stage_result(node, self.work_dir, state, after, files, out, gctx.artifacts, agg,
                              inputs, time.perf_counter() - t0, gctx.shard_stats)
        if self.ex.is_root:
            record_used(sdir, gctx.shard_stats, gctx.used)
            write_json(os.path.join(sdir, "_SUCCESS.json"), result)
            self._log_stage(node.id, agg, result["seconds"])
        self.ex.barrier()
        return result

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
        for marker in markers(sdir, self.work_dir):
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


# -- the runner's own records and checks ---------------------------------------------------------

#: The work_dir's tally of runs (:meth:`Runner._count_run`).
RUNS_FILE = "_runs.json"


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
