"""Runs one shard through a chain of per-document stages in one pass: one read, one write.

A :class:`ShardTask` holds the stages of a *fused group* (see
:meth:`curator.core.pipeline.Pipeline.fused_groups`): a source or shard stage followed by the
shard stages that are its only consumers. The documents stream from the first stage through
the others; only the last stage's output is written (``stages/<last>/data/<shard>``). Every
stage still gets its own :class:`~curator.core.shard_context.ShardContext` (its rejected and
quarantined documents, its counters) and its own stats and ``_done`` marker, so the report
and ``curator status`` see every stage as before. A group of one stage is the plain case, and
:func:`run_shard_tasks` serves global stages' final phase (``GlobalContext.write_shards``).

Layout under ``work_dir`` (see :mod:`curator.core.runner`)::

    stages/<id>/data/<shard>.jsonl.zst     output shards of materialised stages (atomic)
    stages/<id>/_done/<shard>.json         shard marker: key + stats (the last stage's first,
                                           with the others' inside: the group's commit point)
    rejected/<id>/<shard>.jsonl.zst        removed documents with stage and reason
    quarantine/<id>/<shard>.jsonl.zst      unusable input records with reason and location
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from curator.base.document import Document
from curator.base.errors import CuratorError, StageError, fs_error_line, install_hint
from curator.base.redact import redact, redact_value
from curator.core import tracing
from curator.core.id_hashes import write_id_hashes
from curator.core.identity import digest
from curator.core.progress import heartbeat, heartbeat_path
from curator.core.shard_context import DEFAULT_MAX_DOC_BYTES, Mapper, ShardContext
from curator.core.stage import Shard, ShardSpec, ShardStage, Source, Stage
from curator.core.stats import ShardStats, length_bin
from curator.core.usage import Meter, Usage
from curator.storage import nofollow
from curator.storage.atomic import write_json
from curator.storage.limits import TOO_LARGE
from curator.storage.outputs import claimed, file_ids, missing_or_foreign, rebase, trusted
from curator.storage.shards import SHARD_SUFFIX, read_shard, record_writer

Processor = Callable[[Iterator[Document], ShardContext], Iterator[Document]]

#: Distinct ``meta.source`` values listed per source stage in the report (the rest: "(other)").
MAX_SOURCES_LISTED = 50


@dataclass
class Step:
    """One stage of a shard task, applied to the previous step's documents."""

    stage: Stage
    stage_id: str
    fingerprint: str
    #: What this stage's result for the shard depends on (see :mod:`curator.core.identity`);
    #: it chains the keys of the steps above, so the last step's key is the group's key.
    key: str
    artifacts: dict[str, Any] = field(default_factory=dict)
    #: Write this step's output to ``stages/<id>/data`` (the last step of a task); the others
    #: stream into the next step and are not materialised.
    write: bool = True
    #: Override of ``stage.process`` (a global stage's final phase).
    process: Processor | None = None
    #: ``stage.prepare``'s value, for ``ctx.prepared`` (``ShardStage.surveys_input``)
    prepared: Any = None


@dataclass
class ShardTask:
    """Everything a worker needs to take one shard through a (fused) chain of stages."""

    steps: list[Step]
    work_dir: str
    name: str
    spec: ShardSpec | None  # when the first step is a source
    input_path: str | None  # when it is a shard or global stage
    save_rejected: bool
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES
    #: Identity of the files a source shard reads, recorded in the marker (to explain reruns).
    read: dict[str, Any] | None = None


def utf8_len(text: str) -> int:
    """UTF-8 size of ``text``; ASCII text (most of it) is measured without encoding a copy."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def stage_dir(work_dir: str, stage_id: str) -> str:
    return os.path.join(work_dir, "stages", stage_id)


def marker_path(work_dir: str, stage_id: str, shard: str) -> str:
    return os.path.join(stage_dir(work_dir, stage_id), "_done", f"{shard}.json")


def data_path(work_dir: str, stage_id: str, shard: str) -> str:
    return os.path.join(stage_dir(work_dir, stage_id), "data", f"{shard}{SHARD_SUFFIX}")




def id_hash_path(work_dir: str, stage_id: str, shard: str) -> str:
    return os.path.join(stage_dir(work_dir, stage_id), "_ids", f"{shard}.u64")




_NO_SOURCE = object()


def _tally(sources: Counter[str], src: Any, n: int) -> None:
    key = str(src) if src is not None else "-"
    if key in sources or len(sources) < MAX_SOURCES_LISTED:
        sources[key] += n
    else:
        sources["(other)"] += n


def _resumable(task: ShardTask) -> list[ShardStats] | None:
    """The stats of every step when the last step's marker has its key (it chains the keys of
    the steps above, and holds their markers too) and its output, else ``None``: the shard is
    redone for the whole group. A step whose own marker is missing (a kill between two marker
    writes) gets it back; an existing file is never rewritten."""
    last = task.steps[-1]
    m = read_marker(marker_path(task.work_dir, last.stage_id, task.name), task.work_dir)
    if not m or m.get("key") != last.key or not isinstance(m.get("stats"), dict):
        return None
    above = m.get("group") or []
    if len(above) != len(task.steps) - 1 or any(
            not isinstance(e, dict) or e.get("key") != st.key
            or not isinstance(e.get("stats"), dict)
            for e, st in zip(above, task.steps, strict=False)):
        return None
    try:
        stats = [ShardStats.from_json(e["stats"]) for e in (*above, m)]
    except ValueError:  # a damaged marker: the shard is redone
        return None
    if last.write and not stats[-1].path:  # made fused earlier, now materialised
        return None
    # what the markers say was written must still be there, and be this work_dir's
    made = [stats[-1].path] if last.write else []
    ids: dict[str, Any] = {}
    for e in (*above, m):
        made += [f for f in e.get("files") or [] if isinstance(f, str)]
        ids.update(e.get("file_ids") if isinstance(e.get("file_ids"), dict) else {})
    if missing_or_foreign(made, task.work_dir, ids):
        return None
    for e, st in zip(above, task.steps, strict=False):
        path = marker_path(task.work_dir, st.stage_id, task.name)
        if not os.path.exists(path):
            write_json(path, e)
    for st in stats:
        st.resumed = True
    return stats


def _clear(task: ShardTask) -> None:
    """Before a shard is redone: what earlier attempts of each step left for it is obsolete
    (files written elsewhere, set-aside records, the marker; for a step no longer
    materialised, its earlier output shard) even if this attempt sets nothing aside."""
    for st in reversed(task.steps):  # the last step's marker (the group's) goes first
        marker = marker_path(task.work_dir, st.stage_id, task.name)
        m = read_marker(marker, task.work_dir)
        if m:
            remove_files(m.get("files") or [], task.work_dir)
        paths = [os.path.join(task.work_dir, kind, st.stage_id, f"{task.name}.jsonl.zst")
                 for kind in ("rejected", "quarantine")]
        if len(task.steps) > 1:  # the markers are rewritten last step last
            paths.append(marker)
        if not st.write:
            paths.append(data_path(task.work_dir, st.stage_id, task.name))
        for p in paths:
            nofollow.unlink(p)


def run_shard(task: ShardTask) -> list[ShardStats]:
    """Take one shard through the task's steps, or return the stats an earlier run marked.

    Four parts: *read* the shard (a source's documents under the run's size cap), *process*
    it through each step's ``process`` (counted and timed between steps), *write* what the
    last step keeps, *mark* every step done. One record per step, in step order."""
    nofollow.confine(task.work_dir)
    cached = _resumable(task)
    if cached is not None:
        return cached
    _clear(task)
    run = _Pass(task)
    with tracing.recording() as rec, run.naming_the_failed_step():
        docs = run.read()
        for k, step in enumerate(task.steps):
            if k or task.spec is None:  # a source's documents come from read()
                docs = _processor(step)(docs, run.ctxs[k])  # Filter.process: keep or reject
            docs = run.counted(docs, k)
        with run.output() as write:
            for doc in docs:
                write(doc)
        run.publish()
    stats = run.finish()
    # what each step's code opened and imported, beyond what its key holds already: the
    # work_dir (its own and upstream shards) and a source shard's own input files
    used = rec.used(len(task.steps), [task.work_dir], (task.read or {}) if task.spec else (),
                    work_dir=task.work_dir)
    for st, u in zip(stats, used, strict=True):
        st.used = u
    _mark(task, run.ctxs, stats)
    return stats


class _Pass:
    """One pass of a shard through its steps: their contexts, counts and timers, and which
    step to blame when something raises."""

    def __init__(self, task: ShardTask) -> None:
        self.task = task
        self.t0 = time.perf_counter()
        self.meter = Meter()  # CPU seconds and peak RSS of this pass (report)
        steps = task.steps
        self.last = len(steps) - 1
        self.ctxs = [ShardContext(shard=task.name, stage_id=st.stage_id, work_dir=task.work_dir,
                                  artifacts=st.artifacts, save_rejected=task.save_rejected,
                                  max_doc_bytes=task.max_doc_bytes) for st in steps]
        for st, c in zip(steps, self.ctxs, strict=True):
            c.prepared = st.prepared
        self.stats = [ShardStats(task.name) for _ in steps]
        #: seconds spent inside next() of step k's output (k and everything above it)
        self.pulled = [0.0] * len(steps)
        #: the step whose code raised, found where the exception first crosses a step boundary
        self.culprit: int | None = None
        self.doc_ids: list[str] = []
        self.sources: Counter[str] = Counter()
        self.out_path = ""
        if task.spec is not None:  # a source's rejections count under its name (report)
            head, ctx0 = steps[0].stage, self.ctxs[0]
            name_of = getattr(head, "source_name", None)
            ctx0.default_source = (name_of(ctx0) if callable(name_of) else None) or getattr(
                head, "source", None) or steps[0].stage_id

    # -- read --------------------------------------------------------------------------------
    def read(self) -> Iterator[Document]:
        """The documents of the first step: a source's (capped, see :meth:`_capped`) or the
        upstream shard's, counted into step 0, with a heartbeat for the progress line."""
        task, head = self.task, self.task.steps[0]
        if task.spec is not None:
            if not isinstance(head.stage, Source):
                raise StageError(f"stage '{head.stage_id}' is not a source")
            docs = self._capped(head.stage.read(task.spec, self.ctxs[0]))
        else:
            assert task.input_path is not None  # noqa: S101 - invariant (not a source task)
            docs = self._read_counted(read_shard(task.input_path))
        # progress inside a long shard: the driver shows what is read so far (core/progress.py)
        return heartbeat(docs, heartbeat_path(task.work_dir, head.stage_id, task.name))

    def _read_counted(self, docs: Iterator[Document]) -> Iterator[Document]:
        """The documents a shard or global stage reads, counted."""
        n = b = 0
        try:
            for d in docs:
                n += 1
                b += utf8_len(d.text)
                yield d
        finally:
            self.stats[0].docs_in += n
            self.stats[0].bytes_in += b

    def _capped(self, docs: Iterator[Document]) -> Iterator[Document]:
        """A source's documents, counted, with the run-wide size cap (a safety net for sources
        that materialise records before checking them), their ids (duplicate count) and
        their ``meta.source`` tally. One generator: this runs once per document."""
        ctx0 = self.ctxs[0]
        cap = ctx0.doc_cap(getattr(self.task.steps[0].stage, "max_doc_mb", None))
        quarter = cap // 4  # a text of at most cap/4 characters is at most cap UTF-8 bytes
        add_id = self.doc_ids.append
        sources = self.sources
        last_src: Any = _NO_SOURCE
        run = n = b = 0
        try:
            for d in docs:
                t = d.text
                if len(t) > quarter and utf8_len(t) > cap:
                    ctx0.quarantine({"id": d.id, "meta": d.meta}, TOO_LARGE,
                                    detail=f"document of {utf8_len(t)} bytes > max_doc_mb "
                                           f"({cap} bytes)")
                    continue
                add_id(d.id)
                src = d.meta.get("source")
                if src != last_src:
                    if run:
                        _tally(sources, last_src, run)
                    last_src, run = src, 0
                run += 1
                n += 1
                b += utf8_len(t)
                yield d
        finally:
            if run:
                _tally(sources, last_src, run)
            self.stats[0].docs_in += n
            self.stats[0].bytes_in += b

    # -- process -----------------------------------------------------------------------------
    def counted(self, docs: Iterator[Document], k: int) -> Iterator[Document]:
        """Step k's output: counted out of k (and into k+1, one generator), its lengths
        binned, timed, and blamed on step k if it raises."""
        n = b = 0
        hist = self.stats[k].length_hist
        pc = time.perf_counter
        spent = 0.0
        it = iter(docs)
        try:
            while True:
                t = pc()
                try:
                    d = next(it)
                except StopIteration:
                    spent += pc() - t
                    break
                except Exception:
                    if self.culprit is None:
                        self.culprit = k
                    raise
                spent += pc() - t
                ln = utf8_len(d.text)
                n += 1
                b += ln
                hist[length_bin(ln)] += 1
                yield d
        finally:
            self.pulled[k] += spent
            out = self.stats[k]
            out.docs_out += n
            out.bytes_out += b
            if k < self.last:
                into = self.stats[k + 1]
                into.docs_in += n
                into.bytes_in += b

    # -- write -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def output(self) -> Iterator[Callable[[Document], None]]:
        """A function that writes one of the last step's documents to its output shard
        (atomic: published when the block ends without error), or drops it when the step is
        a passthrough (its output is its input shard)."""
        task, final = self.task, self.task.steps[self.last]
        try:
            if (final.stage.passthrough and final.process is None and self.last == 0
                    and task.input_path is not None):
                self.out_path = task.input_path
                yield _drop
            else:
                self.out_path = data_path(task.work_dir, final.stage_id, task.name)
                with record_writer(self.out_path) as w:
                    yield w.write_doc
        except Exception:
            if self.culprit is None:
                self.culprit = self.last
            raise

    def publish(self) -> None:
        """After the output: a source's own totals and id hashes, then each step's
        rejected/quarantined records (a full disk there names that step)."""
        if self.task.spec is not None:
            # A source's "in" is every record it produced: kept, removed or set aside.
            s0, ctx0 = self.stats[0], self.ctxs[0]
            s0.docs_in = (s0.docs_out + sum(ctx0.rejected.values())
                          + sum(ctx0.quarantined.values()))
            s0.sources = dict(self.sources)
            self.culprit = 0  # what fails from here on is the source's own file
            write_id_hashes(id_hash_path(self.task.work_dir, self.task.steps[0].stage_id,
                                          self.task.name), self.doc_ids)
        for k, c in enumerate(self.ctxs):
            self.culprit = k
            c.close(ok=True)
        self.culprit = None

    @contextlib.contextmanager
    def naming_the_failed_step(self) -> Iterator[None]:
        """On an error: discard the steps' set-aside files, and raise a one-line
        :class:`StageError` naming the step and shard (``CURATOR_DEBUG``: the original)."""
        try:
            yield
        except CuratorError:
            for c in self.ctxs:
                c.close(ok=False)
            raise
        except Exception as e:
            for c in self.ctxs:
                c.close(ok=False)
            if os.environ.get("CURATOR_DEBUG"):
                raise
            # redacted here, on the worker: the message also lands in the worker's own log
            why = redact(fs_error_line(e) or f"{type(e).__name__}: {e}") + install_hint(e)
            sid = self.task.steps[self.culprit or 0].stage_id
            raise StageError(f"stage '{sid}' failed on shard '{self.task.name}': {why}") from e

    def finish(self) -> list[ShardStats]:
        """Each step's record, with its own time: what pulling its output took minus pulling
        its input (reading the input counts for the first step, writing and setting up for
        the last)."""
        total = time.perf_counter() - self.t0
        used = self.meter.stop()
        task, prev = self.task, 0.0
        for k, st in enumerate(task.steps):
            own = max((total - prev) if k == self.last else (self.pulled[k] - prev), 0.0)
            prev = self.pulled[k]
            c, s = self.ctxs[k], self.stats[k]
            s.path = self.out_path if k == self.last else (task.input_path or "") if (
                k == 0 and st.stage.passthrough and task.input_path) else ""
            s.rejected, s.quarantined = dict(c.rejected), dict(c.quarantined)
            s.counters, s.rejected_by_source = dict(c.counters), dict(c.rejected_by_source)
            s.seconds, s.key, s.files = round(own, 4), st.key, list(c.files)
            # one process ran the whole chain: its CPU is split by each step's share of the
            # pass's time, its peak RSS is the chain's (an upper bound for each step)
            u = Usage(used.cpu_s * (own / total if total > 0 else 1 / len(task.steps)),
                      used.peak_rss_mb, used.proc).as_stats()
            s.cpu_s, s.peak_rss_mb, s.proc = u["cpu_s"], u["peak_rss_mb"], u["proc"]
        return self.stats


tracing.step_frames(_Pass.counted.__code__, "k")


def _drop(doc: Document) -> None:
    """The output of a passthrough step: its documents are already in its input shard."""


# -- mark ------------------------------------------------------------------------------------
def _mark(task: ShardTask, ctxs: Sequence[ShardContext], stats: Sequence[ShardStats]) -> None:
    """Write every step's ``_done`` marker. The last step's comes first and holds the others:
    it alone says the shard is done for the whole group, so a marker that exists is never
    redone or rewritten."""
    steps, last = task.steps, len(task.steps) - 1
    markers = []
    for k, st in enumerate(steps):
        if k == 0:
            read = task.read if task.spec is not None else {"upstream": task.input_path}
        else:
            read = {"upstream": f"{steps[k - 1].stage_id} (fused)"}
        markers.append({"fingerprint": st.fingerprint, "key": st.key, "read": redact_value(read),
                        "files": ctxs[k].files, "file_ids": file_ids(ctxs[k].files),
                        "stats": stats[k].to_json(),
                        "work_dir": task.work_dir})
    if last:
        markers[last]["group"] = markers[:last]
    for k in (last, *range(last)):
        try:
            write_json(marker_path(task.work_dir, steps[k].stage_id, task.name), markers[k])
        except OSError as e:
            line = fs_error_line(e)
            if line is None or os.environ.get("CURATOR_DEBUG"):
                raise
            raise StageError(f"stage '{steps[k].stage_id}' failed on shard '{task.name}': "
                             f"{line}") from None


def _processor(st: Step) -> Processor:
    if st.process is not None:
        return st.process
    if isinstance(st.stage, ShardStage):
        return st.stage.process
    raise StageError(f"stage '{st.stage_id}' is not a shard stage")


def survey_shard(item: tuple[Any, str]) -> Any:
    """A stage's survey of one input shard (``ShardStage.survey``), on a worker."""
    stage, path = item
    return stage.survey(read_shard(path) if path else iter(()))


def shard_key(fingerprint: str, name: str, upstream: str) -> str:
    """Key of a shard computed from one upstream shard: the stage's (effective) fingerprint
    and the upstream shard's key, so a change upstream reaches exactly the shards below it."""
    return digest({"fp": fingerprint, "shard": name, "input": upstream})


def source_key(fingerprint: str, spec: ShardSpec, read: dict[str, Any]) -> str:
    """Key of a source shard: the stage fingerprint, the shard's data (URL, byte range,
    checksum, resolved dump date...) and the identity of the files it reads."""
    return digest({"fp": fingerprint, "shard": spec.name, "data": spec.data, "read": read})


def remove_files(paths: Sequence[str], work_dir: str) -> None:
    """Files a stage wrote for a shard outside its own folder (``ctx.wrote``), now obsolete.
    Only files inside the work_dir or a folder it claimed are removed (a marker copied from
    another work_dir may name that one's files: they are never touched)."""
    claims: list[str] | None = None
    for p in paths:
        if not isinstance(p, str) or "://" in p:
            continue
        if claims is None:
            claims = list(claimed(work_dir))
        if trusted(p, work_dir, claims):
            with contextlib.suppress(OSError):
                nofollow.unlink(p)


def run_shard_tasks(executor: Mapper, stage: Stage, stage_id: str, fingerprint: str,
                    work_dir: str, shards: list[Shard], *, artifacts: dict[str, Any],
                    save_rejected: bool, max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES,
                    process: Processor | None = None, progress: Any = None,
                    ) -> tuple[list[Shard], list[ShardStats]]:
    """Map one stage over input shards, one output shard each (a global stage's final phase,
    ``GlobalContext.write_shards``)."""
    tasks = [
        ShardTask([Step(stage, stage_id, fingerprint,
                        shard_key(fingerprint, s.name, s.key or s.path), artifacts,
                        process=process)],
                  work_dir, s.name, None, s.path, save_rejected, max_doc_bytes)
        for s in shards
    ]
    stats = [r[0] for r in executor.map(run_shard, tasks, progress=progress)]
    return out_shards(stats), stats


def out_shards(stats: Sequence[ShardStats]) -> list[Shard]:
    """The shards a stage's per-shard stats describe (path ``""``: streamed, not written)."""
    return [Shard(st.shard, st.path, st.docs_out, st.bytes_out, st.key) for st in stats]


def read_marker(path: str, work_dir: str) -> dict[str, Any] | None:
    """A shard or stage marker; when it was written in another place (the work_dir was copied
    or moved: its ``work_dir`` differs), the paths in it that lay under that place are rebased
    onto ``work_dir``, so a copy reads and checks its own files, never the original's."""
    m = _read_json(path)
    if m and isinstance(m.get("work_dir"), str) and m["work_dir"] != work_dir:
        m = rebase(m, m["work_dir"], work_dir)
    return m


def written_outputs(done: dict[str, Any]) -> list[str]:
    """The files a stage result (``_SUCCESS.json``) says its stage made: its output shards
    and what it wrote outside its folder (``ctx.wrote``)."""
    paths = [s.get("path") for s in done.get("shards") or [] if isinstance(s, dict)]
    paths += done.get("written") or []
    return [p for p in paths if isinstance(p, str) and p]


def stage_writes(work_dir: str, stage_id: str) -> dict[str, Any]:
    """``path -> [size, mtime_ns]`` (``None`` when not recorded) of every file the markers in
    ``stages/<stage_id>`` say the stage wrote: what curator made, and may remove again."""
    sdir = stage_dir(work_dir, stage_id)
    out: dict[str, Any] = {}
    with contextlib.suppress(OSError), os.scandir(os.path.join(sdir, "_done")) as it:
        for e in it:
            m = read_marker(e.path, work_dir) if e.name.endswith(".json") else None
            if not m:
                continue
            ids = m.get("file_ids") if isinstance(m.get("file_ids"), dict) else {}
            for f in m.get("files") or []:
                if isinstance(f, str):
                    out[f] = ids.get(f)
    done = read_marker(os.path.join(sdir, "_SUCCESS.json"), work_dir) or {}
    ids = done.get("written_ids") if isinstance(done.get("written_ids"), dict) else {}
    for f in written_outputs(done):
        out.setdefault(f, ids.get(f))
    return out


def remove_orphan_outputs(work_dir: str, live: set[str], folders: dict[str, set[str]]
                          ) -> list[str]:
    """Files that a stage no longer in the pipeline (a folder under ``stages/`` whose id is
    not in ``live``: removed or renamed) wrote into an output folder the pipeline still
    writes (``folders``: its real path -> ids of the stages writing it), and that none of those
    stages wrote: removed, when still the very file written (size and modification time as
    its marker recorded them). Such a file holds documents of inputs the output no longer
    has, whatever its writer was called. Returns the removed paths."""
    if not folders:
        return []
    try:
        with os.scandir(os.path.join(work_dir, "stages")) as it:
            gone = sorted(e.name for e in it
                          if e.name not in live and e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    current: dict[str, set[str]] = {}
    removed: list[str] = []
    for sid in gone:
        for path, fid in stage_writes(work_dir, sid).items():
            if ("://" in path and not path.startswith("file://")) or not isinstance(fid, list):
                continue
            path = path.removeprefix("file://")
            real = os.path.realpath(path)
            folder = next((f for f in folders
                           if real.startswith(f.rstrip(os.sep) + os.sep)), None)
            if folder is None:
                continue
            if folder not in current:
                current[folder] = {os.path.realpath(p.removeprefix("file://"))
                                   for s in folders[folder] for p in stage_writes(work_dir, s)}
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if (real in current[folder] or not stat.S_ISREG(st.st_mode)
                    or [st.st_size, st.st_mtime_ns] != fid):
                continue
            with contextlib.suppress(FileNotFoundError):
                nofollow.unlink(path)
                removed.append(path)
    return removed


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            return orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError):
        return None
