"""Runs a pipeline: stage by stage in DAG order, each stage as one distributed ``map`` over
shards, with completion markers so that a rerun only does what is missing.

Layout under ``work_dir``::

    stages/<id>/data/<shard>.jsonl.zst     output shards (atomic)
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
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from curator.core.context import (
    HIST_BINS,
    GlobalContext,
    ShardContext,
    StageContext,
    length_bin,
    write_json,
)
from curator.core.document import Document
from curator.core.errors import CuratorError, StageError
from curator.core.executors import Executor
from curator.core.pipeline import Pipeline, StageNode
from curator.core.progress import Progress
from curator.core.stage import Shard, ShardSpec, Stage
from curator.io.shards import SHARD_SUFFIX, read_shard, record_writer

Processor = Callable[[Iterator[Document], ShardContext], Iterator[Document]]


@dataclass
class ShardTask:
    """Everything a worker needs to produce one output shard."""

    stage: Stage
    stage_id: str
    fingerprint: str
    work_dir: str
    name: str
    spec: ShardSpec | None  # for sources
    input_path: str | None  # for shard and global stages
    save_rejected: bool
    artifacts: dict[str, Any]
    process: Processor | None = None  # override (global stages' final phase)


def utf8_len(text: str) -> int:
    """UTF-8 size of ``text``; ASCII text (most of it) is measured without encoding a copy."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def stage_dir(work_dir: str, stage_id: str) -> str:
    return os.path.join(work_dir, "stages", stage_id)


def run_shard(task: ShardTask) -> dict[str, Any]:
    """Produce one output shard (or return the stats of the one already produced)."""
    sdir = stage_dir(task.work_dir, task.stage_id)
    marker = os.path.join(sdir, "_done", f"{task.name}.json")
    cached = _read_json(marker)
    if cached and cached.get("fingerprint") == task.fingerprint:
        cached["stats"]["resumed"] = True
        return cached["stats"]

    t0 = time.perf_counter()
    ctx = ShardContext(shard=task.name, stage_id=task.stage_id, work_dir=task.work_dir,
                       artifacts=task.artifacts, save_rejected=task.save_rejected)
    stats: dict[str, Any] = {"shard": task.name, "docs_in": 0, "bytes_in": 0, "docs_out": 0,
                             "bytes_out": 0}
    hist = [0] * HIST_BINS
    stage = task.stage
    out_path = os.path.join(sdir, "data", f"{task.name}{SHARD_SUFFIX}")

    def counted(docs: Iterator[Document]) -> Iterator[Document]:
        n = b = 0
        try:
            for d in docs:
                n += 1
                b += utf8_len(d.text)
                yield d
        finally:
            stats["docs_in"] += n
            stats["bytes_in"] += b

    try:
        if task.spec is not None:
            out_docs = counted(stage.read(task.spec, ctx))  # type: ignore[attr-defined]
        else:
            assert task.input_path is not None
            process = task.process or stage.process  # type: ignore[attr-defined]
            out_docs = process(counted(read_shard(task.input_path)), ctx)
        if stage.passthrough and task.process is None and task.input_path:
            n = b = 0
            for d in out_docs:
                n += 1
                ln = utf8_len(d.text)
                b += ln
                hist[length_bin(ln)] += 1
            out_path = task.input_path
        else:
            n = b = 0
            with record_writer(out_path) as w:
                for d in out_docs:
                    w.write_doc(d)
                    ln = utf8_len(d.text)
                    n += 1
                    b += ln
                    hist[length_bin(ln)] += 1
        stats["docs_out"], stats["bytes_out"] = n, b
        ctx.close(ok=True)
    except CuratorError:
        ctx.close(ok=False)
        raise
    except Exception as e:
        ctx.close(ok=False)
        if os.environ.get("CURATOR_DEBUG"):
            raise
        raise StageError(
            f"stage '{task.stage_id}' failed on shard '{task.name}': {type(e).__name__}: {e}"
        ) from e
    stats.update(
        path=out_path, rejected=dict(ctx.rejected), quarantined=dict(ctx.quarantined),
        counters=dict(ctx.counters), length_hist=hist,
        rejected_by_source=dict(ctx.rejected_by_source),
        seconds=round(time.perf_counter() - t0, 4), resumed=False,
    )
    write_json(marker, {"fingerprint": task.fingerprint, "stats": stats})
    return stats


def run_shard_tasks(gctx: GlobalContext, shards: list[Shard], process: Processor | None = None
                    ) -> tuple[list[Shard], list[dict[str, Any]]]:
    """Map :func:`run_shard` over input shards (used by shard stages and global stages)."""
    tasks = [
        ShardTask(gctx.stage, gctx.stage_id, gctx.fingerprint, gctx.work_dir, s.name, None,
                  s.path, gctx.save_rejected, gctx.upstream_artifacts, process)
        for s in shards
    ]
    stats = gctx.executor.map(run_shard, tasks, progress=gctx.progress)
    out = [Shard(st["shard"], st["path"], st["docs_out"], st["bytes_out"]) for st in stats]
    return out, stats


class Runner:
    """Executes a :class:`Pipeline` on an :class:`Executor`."""

    def __init__(self, pipeline: Pipeline, executor: Executor,
                 log: Callable[[str], None] | None = None) -> None:
        self.pipe = pipeline
        self.ex = executor
        self.work_dir = pipeline.work_dir
        self.log = log if (log and executor.is_root) else (lambda _msg: None)
        self.results: dict[str, dict[str, Any]] = {}

    def run(self) -> dict[str, Any]:
        """Run every stage that is not already done; return the run summary (report data)."""
        cfg = self.pipe.config
        if self.ex.is_root:
            _check_writable(self.work_dir)
        self.ex.barrier()
        t_start = time.perf_counter()
        for node in self.pipe.nodes:
            self.results[node.id] = self._run_node(node)
        summary = {
            "name": cfg.name,
            "work_dir": self.work_dir,
            "executor": {"type": self.ex.kind, "workers": self.ex.size},
            "seconds": round(time.perf_counter() - t_start, 3),
            "stages": [self._stage_summary(n) for n in self.pipe.nodes],
        }
        if self.ex.is_root and cfg.report:
            from curator.core.report import write_report

            write_report(summary, self.work_dir)
        self.ex.barrier()
        return summary

    # -- one stage --------------------------------------------------------------------------
    def _run_node(self, node: StageNode) -> dict[str, Any]:
        sdir = stage_dir(self.work_dir, node.id)
        done = _read_json(os.path.join(sdir, "_SUCCESS.json"))
        if done and done.get("fingerprint") == node.fingerprint:
            self.log(f"[{node.id}] done earlier, skipped")
            done["skipped"] = True
            return done
        if self.ex.is_root:
            self._reset_if_stale(node)
        self.ex.barrier()

        artifacts = self._upstream_artifacts(node)
        inputs = [Shard(s["name"], s["path"], s["docs"], s.get("bytes", 0))
                  for i in node.inputs for s in self.results[i]["shards"]]
        names = [s.name for s in inputs]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise StageError(f"stage '{node.id}': two inputs have a shard named '{dup}'; give "
                             "each source stage its own id")
        progress = Progress(node.id, enabled=self.ex.is_root, mode=self.pipe.config.progress)
        gctx = GlobalContext(
            executor=self.ex, fingerprint=node.fingerprint, stage=node.stage, progress=progress,
            stage_id=node.id, work_dir=self.work_dir, artifacts=artifacts,
            save_rejected=self.pipe.config.save_rejected,
        )
        t0 = time.perf_counter()
        stage = node.stage
        if stage.kind == "source":
            specs = None
            if self.ex.is_root:
                specs = stage.shards(StageContext(  # type: ignore[attr-defined]
                    stage_id=node.id, work_dir=self.work_dir, artifacts=artifacts))
                _check_specs(node.id, specs)
            specs = self.ex.broadcast(specs)
            progress.start(len(specs))
            tasks = [ShardTask(stage, node.id, node.fingerprint, self.work_dir, sp.name, sp, None,
                               self.pipe.config.save_rejected, artifacts) for sp in specs]
            stats = self.ex.map(run_shard, tasks, progress=progress)
            out = [Shard(st["shard"], st["path"], st["docs_out"], st["bytes_out"])
                   for st in stats]
        elif stage.kind == "shard":
            progress.start(len(inputs))
            out, stats = run_shard_tasks(gctx, inputs)
        elif stage.kind == "global":
            progress.start(len(inputs))
            out = stage.run(inputs, gctx)  # type: ignore[attr-defined]
            if not isinstance(out, list):
                raise StageError(f"stage '{node.id}': run() must return the output shards "
                                 "(use ctx.write_shards or ctx.passthrough)")
            stats = gctx.shard_stats
        else:  # pragma: no cover
            raise StageError(f"stage '{node.id}' has unknown kind '{stage.kind}'")
        progress.finish()
        agg = aggregate(stats, inputs if stage.kind != "source" else None, out)
        agg["counters"] = dict(Counter(agg["counters"]) + gctx.counters)
        result = {
            "fingerprint": node.fingerprint,
            "stage": stage.name,
            "kind": stage.kind,
            "params": stage.params,
            "inputs": node.inputs,
            "shards": [{"name": s.name, "path": s.path, "docs": s.docs, "bytes": s.bytes}
                       for s in out],
            "artifacts": gctx.artifacts,
            "stats": agg,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        if self.ex.is_root:
            write_json(os.path.join(sdir, "_SUCCESS.json"), result)
            self.log(_stage_line(node.id, agg, result["seconds"]))
        self.ex.barrier()
        return result

    def _reset_if_stale(self, node: StageNode) -> None:
        sdir = stage_dir(self.work_dir, node.id)
        fp_file = os.path.join(sdir, "_FINGERPRINT")
        old = None
        with contextlib.suppress(OSError), open(fp_file) as f:
            old = f.read().strip()
        if old != node.fingerprint:
            if old is not None:
                self.log(f"[{node.id}] parameters or inputs changed: rerunning")
            for d in (sdir, os.path.join(self.work_dir, "rejected", node.id),
                      os.path.join(self.work_dir, "quarantine", node.id)):
                shutil.rmtree(d, ignore_errors=True)
            os.makedirs(sdir, exist_ok=True)
            with open(fp_file, "w") as f:
                f.write(node.fingerprint)

    def _upstream_artifacts(self, node: StageNode) -> dict[str, Any]:
        arts: dict[str, Any] = {}
        for anc in reversed(self.pipe.ancestors(node.id)):  # nearest ancestor wins
            arts.update(self.results[anc].get("artifacts") or {})
        return arts

    def _stage_summary(self, node: StageNode) -> dict[str, Any]:
        r = self.results[node.id]
        return {"id": node.id, "stage": r["stage"], "kind": r["kind"], "inputs": r["inputs"],
                "params": r["params"], "seconds": r["seconds"], "skipped": r.get("skipped", False),
                "artifacts": r["artifacts"], "shards": len(r["shards"]), **r["stats"]}


def aggregate(stats: Sequence[dict[str, Any]], inputs: list[Shard] | None,
              outputs: list[Shard] | None = None) -> dict[str, Any]:
    """Sum per-shard stats into per-stage stats."""
    agg: dict[str, Any] = {"docs_in": 0, "bytes_in": 0, "docs_out": 0, "bytes_out": 0,
                           "rejected": Counter(), "quarantined": Counter(), "counters": Counter(),
                           "rejected_by_source": Counter(),
                           "length_hist": [0] * HIST_BINS, "shard_seconds": 0.0,
                           "shards_resumed": 0}
    for st in stats:
        for k in ("docs_in", "bytes_in", "docs_out", "bytes_out"):
            agg[k] += st.get(k, 0)
        agg["rejected"].update(st.get("rejected", {}))
        agg["quarantined"].update(st.get("quarantined", {}))
        agg["counters"].update(st.get("counters", {}))
        agg["rejected_by_source"].update(st.get("rejected_by_source", {}))
        for i, c in enumerate(st.get("length_hist", [])):
            agg["length_hist"][i] += c
        agg["shard_seconds"] += st.get("seconds", 0.0)
        agg["shards_resumed"] += bool(st.get("resumed"))
    if not stats and inputs is not None:  # a global stage that passed shards through
        passed = outputs if outputs is not None else inputs
        agg["docs_in"] = sum(s.docs for s in inputs)
        agg["bytes_in"] = sum(s.bytes for s in inputs)
        agg["docs_out"] = sum(s.docs for s in passed)
        agg["bytes_out"] = sum(s.bytes for s in passed)
    for k in ("rejected", "quarantined", "counters", "rejected_by_source"):
        agg[k] = dict(sorted(agg[k].items(), key=lambda kv: (-kv[1], kv[0])))
    agg["shard_seconds"] = round(agg["shard_seconds"], 3)
    return agg


def _stage_line(sid: str, agg: dict[str, Any], secs: float) -> str:
    removed = sum(agg["rejected"].values())
    q = sum(agg["quarantined"].values())
    extra = f", {q} quarantined" if q else ""
    return (f"[{sid}] {agg['docs_in']} -> {agg['docs_out']} docs ({removed} removed{extra}) "
            f"in {secs:.2f}s")


def _check_specs(stage_id: str, specs: Any) -> None:
    if not isinstance(specs, list) or not all(isinstance(s, ShardSpec) for s in specs):
        raise StageError(f"stage '{stage_id}': shards() must return a list of ShardSpec")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise StageError(f"stage '{stage_id}': shard names are not unique")


def _check_writable(work_dir: str) -> None:
    try:
        os.makedirs(work_dir, exist_ok=True)
        probe = os.path.join(work_dir, ".write-test")
        with open(probe, "w") as f:
            f.write("ok")
        os.unlink(probe)
    except OSError as e:
        raise CuratorError(f"work_dir '{work_dir}' is not writable: {e.strerror}") from None


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            return orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError):
        return None
