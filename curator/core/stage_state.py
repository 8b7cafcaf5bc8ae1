"""A stage's state between runs, shared by the runner and ``curator status`` (which must compute
the same keys without running anything): what decides whether a stage's results are reused (its
effective fingerprint, the state of its inputs, the keys of a source's shards), the files under
``stages/<id>`` that keep it (``_FINGERPRINT``, ``_SUCCESS.json``, ``_surveys.json``, the shard
markers) and the removal of what no current shard or stage makes any more.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from curator.base.errors import CuratorError, InputError, StageError
from curator.base.files import files_under
from curator.base.redact import redact_value
from curator.core import tracing
from curator.core.context import StageContext
from curator.core.executors import Executor
from curator.core.identity import describe_input_change, digest, identities
from curator.core.pipeline import Pipeline, StageNode
from curator.core.shard_context import DEFAULT_MAX_DOC_BYTES
from curator.core.shard_runner import (
    read_marker,
    remove_files,
    remove_orphan_outputs,
    source_key,
    stage_dir,
)
from curator.core.stage import Shard, ShardSpec, Source, Stage
from curator.core.stats import ShardStats, StageStats
from curator.storage import nofollow
from curator.storage.atomic import write_json
from curator.storage.outputs import claimed, file_ids
from curator.storage.shards import SHARD_SUFFIX


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


#: A surveying stage's surveys by input shard key (:meth:`~curator.core.runner.Runner._prepare`).
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


def stage_result(node: StageNode, work_dir: str, state: str, after: dict[str, str], files: Any,
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
        "work_dir": work_dir,
    }


def markers(sdir: str, work_dir: str) -> Iterator[dict[str, Any]]:
    with contextlib.suppress(OSError), os.scandir(os.path.join(sdir, "_done")) as it:
        for e in it:
            if e.name.endswith(".json"):
                m = read_marker(e.path, work_dir)
                if m:
                    yield m


def remove_obsolete(work_dir: str, stage_id: str, names: set[str]) -> None:
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
