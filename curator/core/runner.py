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
import itertools
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import xxhash

from curator.core.context import (
    DEFAULT_MAX_DOC_BYTES,
    HIST_BINS,
    GlobalContext,
    ShardContext,
    StageContext,
    length_bin,
    write_json,
)
from curator.core.document import Document
from curator.core.errors import CuratorError, StageError, fs_error_line
from curator.core.executors import Executor
from curator.core.identity import describe_input_change, digest, explain, identities
from curator.core.lock import WorkDirLock
from curator.core.pipeline import Pipeline, StageNode
from curator.core.progress import Progress
from curator.core.stage import Shard, ShardSpec, Stage
from curator.core.usage import Meter, Usage, stage_usage
from curator.storage.atomic import atomic_open
from curator.storage.limits import TOO_LARGE
from curator.storage.outputs import check_output_dir, claim_output_dir
from curator.storage.shards import SHARD_SUFFIX, read_shard, record_writer

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
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES
    #: What this shard's result depends on (see :mod:`curator.core.identity`); a marker with
    #: another key is stale.
    key: str = ""
    #: Identity of the files a source shard reads, recorded in the marker (to explain reruns).
    read: dict[str, Any] | None = None


def utf8_len(text: str) -> int:
    """UTF-8 size of ``text``; ASCII text (most of it) is measured without encoding a copy."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def stage_dir(work_dir: str, stage_id: str) -> str:
    return os.path.join(work_dir, "stages", stage_id)


#: Distinct ``meta.source`` values listed per source stage in the report (the rest: "(other)").
MAX_SOURCES_LISTED = 50
#: Id hashes compared at once when counting duplicate ids (8 bytes each: 64 MB).
ID_HASH_BATCH = 8_000_000


def id_hashes(doc_ids: Sequence[str]) -> Any:
    """64-bit hashes (xxh3) of document ids, as a numpy array; duplicates are counted on
    these (a false match needs ~4 billion distinct ids to become likely)."""
    import numpy as np

    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(i.encode("utf-8", "surrogatepass")) for i in doc_ids),
                       dtype=np.uint64, count=len(doc_ids))


def id_hash_path(work_dir: str, stage_id: str, shard: str) -> str:
    return os.path.join(stage_dir(work_dir, stage_id), "_ids", f"{shard}.u64")


def _write_id_hashes(path: str, doc_ids: Sequence[str]) -> None:
    import numpy as np

    arr = np.sort(id_hashes(doc_ids)).astype("<u8", copy=False)
    with atomic_open(path, "wb") as f:
        f.write(arr.tobytes())


_NO_SOURCE = object()


def _tally(sources: Counter[str], src: Any, n: int) -> None:
    key = str(src) if src is not None else "-"
    if key in sources or len(sources) < MAX_SOURCES_LISTED:
        sources[key] += n
    else:
        sources["(other)"] += n


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


def run_shard(task: ShardTask) -> dict[str, Any]:
    """Produce one output shard (or return the stats of the one already produced)."""
    sdir = stage_dir(task.work_dir, task.stage_id)
    marker = os.path.join(sdir, "_done", f"{task.name}.json")
    cached = _read_json(marker)
    if cached and cached.get("key") == task.key:
        cached["stats"]["resumed"] = True
        return cached["stats"]
    # Redone (new, changed or interrupted): what an earlier attempt set aside for this shard is
    # obsolete even if this attempt sets nothing aside.
    if cached:
        _remove_files(cached.get("files") or [])
    for kind in ("rejected", "quarantine"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(task.work_dir, kind, task.stage_id, f"{task.name}.jsonl.zst"))

    t0 = time.perf_counter()
    meter = Meter()  # CPU seconds and peak RSS of this shard (report)
    ctx = ShardContext(shard=task.name, stage_id=task.stage_id, work_dir=task.work_dir,
                       artifacts=task.artifacts, save_rejected=task.save_rejected,
                       max_doc_bytes=task.max_doc_bytes)
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

    doc_ids: list[str] = []
    sources: Counter[str] = Counter()

    def source_docs(docs: Iterator[Document]) -> Iterator[Document]:
        """A source's documents, counted, with the run-wide size cap (a safety net for sources
        that materialise records before checking them), their ids (duplicate count) and
        their ``meta.source`` tally. One generator: this runs once per document."""
        cap = ctx.doc_cap(getattr(stage, "max_doc_mb", None))  # a reader's own override wins
        quarter = cap // 4  # a text of at most cap/4 characters is at most cap UTF-8 bytes
        add_id = doc_ids.append
        last: Any = _NO_SOURCE
        run = n = b = 0
        try:
            for d in docs:
                t = d.text
                if len(t) > quarter and utf8_len(t) > cap:
                    ctx.quarantine({"id": d.id, "meta": d.meta}, TOO_LARGE,
                                   detail=f"document of {utf8_len(t)} bytes > max_doc_mb "
                                          f"({cap} bytes)")
                    continue
                add_id(d.id)
                src = d.meta.get("source")
                if src != last:
                    if run:
                        _tally(sources, last, run)
                    last, run = src, 0
                run += 1
                n += 1
                b += utf8_len(t)
                yield d
        finally:
            if run:
                _tally(sources, last, run)
            stats["docs_in"] += n
            stats["bytes_in"] += b

    try:
        if task.spec is not None:
            out_docs = source_docs(stage.read(task.spec, ctx))  # type: ignore[attr-defined]
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
        if task.spec is not None:
            # A source's "in" is every record it produced: kept, removed or set aside.
            stats["docs_in"] = n + sum(ctx.rejected.values()) + sum(ctx.quarantined.values())
            stats["sources"] = dict(sources)
            _write_id_hashes(id_hash_path(task.work_dir, task.stage_id, task.name), doc_ids)
        ctx.close(ok=True)
    except CuratorError:
        ctx.close(ok=False)
        raise
    except Exception as e:
        ctx.close(ok=False)
        if os.environ.get("CURATOR_DEBUG"):
            raise
        why = fs_error_line(e) or f"{type(e).__name__}: {e}"
        raise StageError(f"stage '{task.stage_id}' failed on shard '{task.name}': {why}") from e
    stats.update(
        path=out_path, rejected=dict(ctx.rejected), quarantined=dict(ctx.quarantined),
        counters=dict(ctx.counters), length_hist=hist,
        rejected_by_source=dict(ctx.rejected_by_source),
        seconds=round(time.perf_counter() - t0, 4), resumed=False, key=task.key,
        **meter.stop().as_stats(),
    )
    read = task.read if task.spec is not None else {"upstream": task.input_path}
    write_json(marker, {"fingerprint": task.fingerprint, "key": task.key, "read": read,
                        "files": ctx.files, "stats": stats})
    return stats


def shard_key(fingerprint: str, name: str, upstream: str) -> str:
    """Key of a shard computed from one upstream shard: the stage's (effective) fingerprint
    and the upstream shard's key, so a change upstream reaches exactly the shards below it."""
    return digest({"fp": fingerprint, "shard": name, "input": upstream})


def source_key(fingerprint: str, spec: ShardSpec, read: dict[str, Any]) -> str:
    """Key of a source shard: the stage fingerprint, the shard's data (URL, byte range,
    checksum, resolved dump date...) and the identity of the files it reads."""
    return digest({"fp": fingerprint, "shard": spec.name, "data": spec.data, "read": read})


def list_source(stage: Stage, stage_id: str, fingerprint: str, work_dir: str,
                artifacts: dict[str, Any], max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES,
                ) -> tuple[list[ShardSpec], list[str], list[dict[str, Any]]]:
    """(shard specs, their keys, the identity of what each reads) of a source (root only)."""
    specs = stage.shards(StageContext(  # type: ignore[attr-defined]
        stage_id=stage_id, work_dir=work_dir, artifacts=artifacts, max_doc_bytes=max_doc_bytes))
    _check_specs(stage_id, specs)
    paths = [stage.input_paths(sp) for sp in specs]  # type: ignore[attr-defined]
    ids = identities([p for ps in paths for p in ps], getattr(stage, "storage_options", None))
    reads = [{p: ids[p] for p in ps} for ps in paths]
    keys = [source_key(fingerprint, sp, rd) for sp, rd in zip(specs, reads, strict=True)]
    return specs, keys, reads


def _remove_files(paths: Sequence[str]) -> None:
    """Files a stage wrote for a shard outside its own folder (``ctx.wrote``), now obsolete."""
    for p in paths:
        with contextlib.suppress(OSError):
            os.unlink(p)


def run_shard_tasks(gctx: GlobalContext, shards: list[Shard], process: Processor | None = None
                    ) -> tuple[list[Shard], list[dict[str, Any]]]:
    """Map :func:`run_shard` over input shards (used by shard stages and global stages)."""
    tasks = [
        ShardTask(gctx.stage, gctx.stage_id, gctx.fingerprint, gctx.work_dir, s.name, None,
                  s.path, gctx.save_rejected, gctx.upstream_artifacts, process,
                  gctx.max_doc_bytes, key=shard_key(gctx.fingerprint, s.name, s.key or s.path))
        for s in shards
    ]
    stats = gctx.executor.map(run_shard, tasks, progress=gctx.progress)
    return _out_shards(stats), stats


def _out_shards(stats: Sequence[dict[str, Any]]) -> list[Shard]:
    return [Shard(st["shard"], st["path"], st["docs_out"], st["bytes_out"], st.get("key", ""))
            for st in stats]


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
        self.log = log if (log and executor.is_root) else (lambda _msg: None)
        self.results: dict[str, dict[str, Any]] = {}
        self.lock = lock

    def run(self) -> dict[str, Any]:
        """Run every stage that is not already done; return the run summary (report data)."""
        own_lock = None
        error = None
        if self.ex.is_root:
            try:
                _check_writable(self.work_dir)
                if self.lock is None or not self.lock.held:
                    own_lock = WorkDirLock(self.work_dir).acquire()
            except CuratorError as e:
                error = (type(e), str(e))
        error = self.ex.broadcast(error)
        if error:
            raise error[0](error[1])
        try:
            return self._run()
        finally:
            if own_lock is not None:
                own_lock.release()

    def _run(self) -> dict[str, Any]:
        cfg = self.pipe.config
        t_start = time.perf_counter()
        self._check_outputs()
        for node in self.pipe.nodes:
            try:
                self.results[node.id] = self._run_node(node)
            except OSError as e:  # disk full, no permission, read-only: one line, any phase
                line = fs_error_line(e)
                if line is None or os.environ.get("CURATOR_DEBUG"):
                    raise
                raise StageError(f"stage '{node.id}': {line}") from None
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
        stage = node.stage
        artifacts = self._upstream_artifacts(node)
        after = global_ancestors(self.pipe, node.id, self.results)
        files = param_files(stage) if self.ex.is_root else None
        files = self.ex.broadcast(files)
        eff = effective_fingerprint(node.fingerprint, after, files)
        specs: list[ShardSpec] = []
        keys: list[str] = []
        reads: list[dict[str, Any]] = []
        inputs: list[Shard] = []
        if stage.kind == "source":
            listing: Any = None
            if self.ex.is_root:
                try:
                    listing = list_source(stage, node.id, eff, self.work_dir, artifacts,
                                          self.pipe.max_doc_bytes)
                except CuratorError as e:
                    listing = (type(e), str(e))
            listing = self.ex.broadcast(listing)
            if len(listing) == 2:  # an error on the root: every rank stops with it
                raise listing[0](listing[1])
            specs, keys, reads = listing
            state = digest({"fp": eff, "shards": [[sp.name, k] for sp, k in
                                                  zip(specs, keys, strict=True)]})
        else:
            inputs = input_shards(self.pipe, node, self.results)
            state = input_state(eff, inputs)
        done = _read_json(os.path.join(sdir, "_SUCCESS.json"))
        if done and done.get("state") == state:
            self.log(f"[{node.id}] done earlier, skipped")
            done["skipped"] = True
            return done
        if self.ex.is_root:
            self._reset_if_stale(node, state if stage.kind == "global" else eff, after,
                                 files, done)
        self.ex.barrier()

        self._claim_outputs(node, artifacts)
        progress = Progress(node.id, enabled=self.ex.is_root, mode=self.pipe.config.progress)
        fingerprint = state if stage.kind == "global" else eff
        gctx = GlobalContext(
            executor=self.ex, fingerprint=fingerprint, stage=stage, progress=progress,
            stage_id=node.id, work_dir=self.work_dir, artifacts=artifacts,
            save_rejected=self.pipe.config.save_rejected, max_doc_bytes=self.pipe.max_doc_bytes,
        )
        t0 = time.perf_counter()
        driver = Meter()
        if stage.kind == "source":
            progress.start(len(specs))
            tasks = [ShardTask(stage, node.id, eff, self.work_dir, sp.name, sp, None,
                               self.pipe.config.save_rejected, artifacts,
                               max_doc_bytes=self.pipe.max_doc_bytes, key=k, read=rd)
                     for sp, k, rd in zip(specs, keys, reads, strict=True)]
            stats = self.ex.map(run_shard, tasks, progress=progress)
            out = _out_shards(stats)
        elif stage.kind == "shard":
            progress.start(len(inputs))
            out, stats = run_shard_tasks(gctx, inputs)
        elif stage.kind == "global":
            progress.start(len(inputs))
            out = stage.run(inputs, gctx)  # type: ignore[attr-defined]
            if not isinstance(out, list):
                raise StageError(f"stage '{node.id}': run() must return the output shards "
                                 "(use ctx.write_shards or ctx.passthrough)")
            # shards made by the stage itself: they depend on everything the stage read
            out = [s if s.key else Shard(s.name, s.path, s.docs, s.bytes,
                                         digest({"fp": state, "shard": s.name, "path": s.path}))
                   for s in out]
            stats = gctx.shard_stats
        else:  # pragma: no cover
            raise StageError(f"stage '{node.id}' has unknown kind '{stage.kind}'")
        progress.finish()
        agg = aggregate(stats, inputs if stage.kind != "source" else None, out,
                        usage=gctx.task_usage, driver=driver.stop())
        agg["counters"] = dict(Counter(agg["counters"]) + gctx.counters)
        id_files: list[str] = []
        if stage.kind == "source":
            id_files = [id_hash_path(self.work_dir, node.id, sp.name) for sp in specs]
            dups = count_duplicate_ids(id_files) if self.ex.is_root else 0
            if dups:
                agg["counters"]["duplicate_ids"] = dups
        result = {
            "fingerprint": node.fingerprint,
            "state": state,
            "identity": node.identity,
            "after": after,
            "files": files,
            "stage": stage.name,
            "kind": stage.kind,
            "params": stage.params,
            "inputs": node.inputs,
            "shards": [{"name": s.name, "path": s.path, "docs": s.docs, "bytes": s.bytes,
                        "key": s.key} for s in out],
            "artifacts": gctx.artifacts,
            "stats": agg,
            # what a global stage read, to say which inputs changed when it is stale
            "input_keys": {s.name: s.key for s in inputs} if stage.kind == "global" else {},
            "seconds": round(time.perf_counter() - t0, 3),
        }
        if self.ex.is_root:
            if stage.kind != "global":
                _remove_obsolete(self.work_dir, node.id, {st["shard"] for st in stats})
            write_json(os.path.join(sdir, "_SUCCESS.json"), result)
            self.log(_stage_line(node.id, agg, result["seconds"]))
            if agg["counters"].get("duplicate_ids"):
                self.log(f"[{node.id}] warning: {agg['counters']['duplicate_ids']} document(s) "
                         "have an id seen before in this source (counter duplicate_ids; "
                         "read_jsonl/read_parquet 'ids: rewrite' makes them unique)")
            shutil.rmtree(os.path.join(sdir, "_ids"), ignore_errors=True)
        self.ex.barrier()
        return result

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
                        files: dict[str, Any], done: dict[str, Any] | None) -> None:
        """Start the stage afresh when its configuration changed (a global stage: also when
        any input changed); per-shard changes are handled by the shard markers."""
        sdir = stage_dir(self.work_dir, node.id)
        old_key, old_identity = read_stage_key(sdir)
        if old_key == key:
            return
        if old_key is not None:
            why = explain(old_identity, node.identity) or files_changed(done, files) or (
                ["its input shards changed"] if node.stage.kind == "global" else
                [f"global stage(s) above it changed: {', '.join(after)}"])
            self.log(f"[{node.id}] rerunning: {'; '.join(why)}")
        for marker in _markers(sdir):
            _remove_files(marker.get("files") or [])
        for d in (sdir, os.path.join(self.work_dir, "rejected", node.id),
                  os.path.join(self.work_dir, "quarantine", node.id)):
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(sdir, exist_ok=True)
        write_json(os.path.join(sdir, "_FINGERPRINT"), {"key": key, "identity": node.identity})

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


# -- keys shared by the runner and `curator status` ----------------------------------------------


def global_ancestors(pipe: Pipeline, stage_id: str, results: dict[str, dict[str, Any]]
                     ) -> dict[str, str]:
    """State of every global stage above ``stage_id``: their artifacts (a tokenizer, a model)
    depend on the whole dataset, so a stage below one reruns when its state changes."""
    return {a: results[a]["state"] for a in sorted(pipe.ancestors(stage_id))
            if results[a].get("kind") == "global"}


def effective_fingerprint(fingerprint: str, after: dict[str, str],
                          files: dict[str, Any] | None = None) -> str:
    """The stage fingerprint plus what its results also depend on: the state of global stages
    above it and the identity of the files its parameters name (``Stage.input_files``)."""
    if not after and not files:
        return fingerprint
    return digest({"fp": fingerprint, "after": after, **({"files": files} if files else {})})


def param_files(stage: Stage) -> dict[str, Any]:
    """Identity of the files ``stage``'s parameters name (globs expanded)."""
    import glob

    paths: list[str] = []
    for p in stage.input_files():
        local = "://" not in p or p.startswith("file://")
        paths.extend(sorted(glob.glob(p)) or [p] if local and any(c in p for c in "*?[")
                     else [p])
    return identities(paths, getattr(stage, "storage_options", None)) if paths else {}


def files_changed(done: dict[str, Any] | None, files: dict[str, Any]) -> list[str]:
    """``files it reads changed: <path> (size, mtime_ns)`` when a parameter-named file did."""
    old = (done or {}).get("files")
    if old is None or old == files:
        return []
    return [f"files it reads changed: {describe_input_change(old, files)}"]


def input_shards(pipe: Pipeline, node: StageNode, results: dict[str, dict[str, Any]]
                 ) -> list[Shard]:
    inputs = [Shard(s["name"], s["path"], s["docs"], s.get("bytes", 0), s.get("key", ""))
              for i in node.inputs for s in results[i]["shards"]]
    names = [s.name for s in inputs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise StageError(f"stage '{node.id}': two inputs have a shard named '{dup}'; give "
                         "each source stage its own id")
    return inputs


def input_state(fingerprint: str, inputs: Sequence[Shard]) -> str:
    return digest({"fp": fingerprint, "inputs": [[s.name, s.key or s.path] for s in inputs]})


def read_stage_key(sdir: str) -> tuple[str | None, dict[str, Any] | None]:
    """(key, identity) the stage folder was started with (``_FINGERPRINT``)."""
    try:
        with open(os.path.join(sdir, "_FINGERPRINT"), "rb") as f:
            raw = f.read(1 << 20)  # a key and an identity: a few KB (never trust a file's size)
    except OSError:
        return None, None
    try:
        obj = orjson.loads(raw)
        return obj["key"], obj.get("identity")
    except (orjson.JSONDecodeError, KeyError, TypeError):  # before identities were kept
        return raw.decode(errors="replace").strip(), None


def _markers(sdir: str) -> Iterator[dict[str, Any]]:
    with contextlib.suppress(OSError), os.scandir(os.path.join(sdir, "_done")) as it:
        for e in it:
            if e.name.endswith(".json"):
                m = _read_json(e.path)
                if m:
                    yield m


def _remove_obsolete(work_dir: str, stage_id: str, names: set[str]) -> None:
    """Drop what this stage made for shards that no longer exist (an input file was removed,
    a listing shrank): their markers, output shards, set-aside records and written files."""
    sdir = stage_dir(work_dir, stage_id)
    with contextlib.suppress(OSError), os.scandir(os.path.join(sdir, "_done")) as it:
        stale = [e.name[:-5] for e in it if e.name.endswith(".json") and e.name[:-5] not in names]
    for name in stale:
        m = _read_json(os.path.join(sdir, "_done", f"{name}.json")) or {}
        _remove_files(m.get("files") or [])
        for p in (os.path.join(sdir, "data", f"{name}{SHARD_SUFFIX}"),
                  os.path.join(work_dir, "rejected", stage_id, f"{name}.jsonl.zst"),
                  os.path.join(work_dir, "quarantine", stage_id, f"{name}.jsonl.zst"),
                  os.path.join(sdir, "_done", f"{name}.json")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)


def aggregate(stats: Sequence[dict[str, Any]], inputs: list[Shard] | None,
              outputs: list[Shard] | None = None, usage: Sequence[Usage] = (),
              driver: Usage | None = None) -> dict[str, Any]:
    """Sum per-shard stats into per-stage stats; ``cpu_s`` sums the shards done in this run,
    the phase items (``usage``) and the driver's own time, ``peak_rss_mb`` is the largest
    high-water mark among them (:mod:`curator.core.usage`)."""
    agg: dict[str, Any] = {"docs_in": 0, "bytes_in": 0, "docs_out": 0, "bytes_out": 0,
                           "rejected": Counter(), "quarantined": Counter(), "counters": Counter(),
                           "rejected_by_source": Counter(),
                           "length_hist": [0] * HIST_BINS, "shard_seconds": 0.0,
                           "shards_resumed": 0}
    sources: Counter[str] = Counter()
    for st in stats:
        for k in ("docs_in", "bytes_in", "docs_out", "bytes_out"):
            agg[k] += st.get(k, 0)
        agg["rejected"].update(st.get("rejected", {}))
        agg["quarantined"].update(st.get("quarantined", {}))
        agg["counters"].update(st.get("counters", {}))
        sources.update(st.get("sources", {}))
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
    agg.update(stage_usage([*usage, *(st for st in stats if not st.get("resumed"))], driver))
    if sources:  # source stages: output documents per meta.source
        agg["sources"] = dict(sorted(sources.items(), key=lambda kv: (-kv[1], kv[0])))
    return agg


def _stage_line(sid: str, agg: dict[str, Any], secs: float) -> str:
    removed = sum(agg["rejected"].values())
    q = sum(agg["quarantined"].values())
    extra = f", {q} quarantined" if q else ""
    if agg.get("shards_resumed"):
        extra += f", {agg['shards_resumed']} shards reused"
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
