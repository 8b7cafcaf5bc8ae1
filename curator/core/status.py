"""``curator status FILE``: what a rerun would reuse and what it would redo, and why, without
running any stage.

It computes the same keys the runner does (:mod:`curator.core.identity`): sources are listed
(cheap by contract; a ``latest`` selector is resolved again) and their files' identities read;
shard keys below them follow from the markers. A global stage that must rerun makes the keys of
its outputs unknown until it has run, so everything below it is reported as "to run" with that
stage named as the reason.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any

from curator.base.errors import CuratorError
from curator.base.redact import redact_value
from curator.core import tracing
from curator.core.identity import describe_input_change, digest, explain
from curator.core.lock import LOCK_NAME
from curator.core.pipeline import Pipeline, StageNode
from curator.core.shard_runner import read_marker, shard_key, stage_dir, written_outputs
from curator.core.stage_state import (
    drop_orphan_outputs,
    effective_fingerprint,
    files_changed,
    input_state,
    list_source,
    merge_inputs,
    param_files,
    read_stage_key,
    read_surveys,
    surveyed_fingerprint,
)
from curator.storage import nofollow
from curator.storage.outputs import missing_or_foreign


@dataclass
class StageStatus:
    """One stage's line: ``done``, ``stale`` (results exist but something changed) or
    ``to run`` (never run, or interrupted), with the reasons."""

    id: str
    status: str
    shards: int | None = None
    redo: int | None = None
    reasons: list[str] = field(default_factory=list)
    #: of ``redo``, shards redone only if the survey of new input changes their plan
    maybe: int = 0

    def line(self, width: int) -> str:
        counts = ""
        if self.shards is not None and self.redo is not None:
            some = f"{self.redo - self.maybe} to {self.redo}" if self.maybe else f"{self.redo}"
            counts = (f"{self.shards} shard{'s' if self.shards != 1 else ''}" if not self.redo
                      else f"{some} of {self.shards} shard{'s' if self.shards != 1 else ''}"
                      " to redo")
        detail = "; ".join(([counts] if counts else []) + self.reasons)
        return f"{self.id:{width}s}  {self.status:7s}  {detail}".rstrip()


def pipeline_status(pipe: Pipeline) -> list[StageStatus]:
    """Status of every stage, in pipeline order. Lists sources; writes nothing but what a
    source's listing caches (e.g. a dump's status file)."""
    wd = pipe.work_dir
    known: dict[str, dict[str, Any] | None] = {}  # id -> {"state", "kind", "shards"} or None
    out: list[StageStatus] = []
    # a stage started and not finished is the live run's while one holds the work_dir
    unfinished = "started by the run in progress" if _holder(wd) else "interrupted earlier"
    for node in pipe.nodes:
        st, res = _node_status(pipe, node, wd, known, unfinished)
        known[node.id] = res
        out.append(st)
    rows = {r.id: r for r in out}
    for group in pipe.fused_groups():
        # a fused group runs its shards through all its stages: a done stage before one that
        # reruns is read (or computed) again, though its results stay the same
        redo = next((n.id for n in group if rows[n.id].status != "done"), None)
        for n in group:
            if n.id == redo:
                break
            if redo is not None:
                rows[n.id].reasons.append(f"runs again with '{redo}' (fused)")
        last = rows[group[-1].id]
        if last.status == "done" and _not_written(wd, group[-1].id):
            last.status = "to run"
            last.reasons.append("its output was not written (it ran fused); now it is")
    return out


def _not_written(wd: str, stage_id: str) -> bool:
    done = read_marker(os.path.join(stage_dir(wd, stage_id), "_SUCCESS.json"), wd) or {}
    return any(not s.get("path") for s in done.get("shards", []))


def _node_status(pipe: Pipeline, node: StageNode, wd: str,
                 known: dict[str, dict[str, Any] | None], unfinished: str = "interrupted earlier"
                 ) -> tuple[StageStatus, dict[str, Any] | None]:
    sdir = stage_dir(wd, node.id)
    done = read_marker(os.path.join(sdir, "_SUCCESS.json"), wd)
    old_key, old_identity = read_stage_key(sdir)
    started = old_key is not None or done is not None
    unknown = [a for a in node.inputs if known[a] is None]
    glob_unknown = [a for a in pipe.ancestors(node.id) if known[a] is None]
    if unknown or glob_unknown:
        first = (unknown or glob_unknown)[0]
        return StageStatus(node.id, "stale" if started else "to run",
                           reasons=[f"upstream '{first}' reruns first"]), None
    after = {a: known[a]["state"] for a in sorted(pipe.ancestors(node.id))  # type: ignore[index]
             if known[a]["kind"] == "global"}  # type: ignore[index]
    content = pipe.config.identity == "content"
    files = param_files(node.stage, content)
    used = tracing.used_state(os.path.join(sdir, "_FINGERPRINT"))
    eff = effective_fingerprint(node.fingerprint, after, files, used.epoch)
    config = [] if not started else explain(old_identity, node.identity) if (
        old_identity or old_key) else []
    config = config or files_changed(done, files) or used.reasons()
    kind = node.stage.kind
    state, details = _keys(pipe, node, wd, known, eff, content)
    names = [name for name, _, _ in details]
    gone = missing_or_foreign(written_outputs(done), wd, done.get("written_ids")) if done else []
    if done and done.get("state") == state and not gone:
        return (StageStatus(node.id, "done", len(done["shards"]), 0),
                {"state": state, "kind": kind, "shards": done["shards"]})
    st = StageStatus(node.id, "stale" if done else "to run")
    legacy = ["made by a curator from before input identities were recorded: redone once"] if (
        (done is not None and "state" not in done) or (old_key is not None and not old_identity)
    ) else []
    if kind == "global" and gone and done and done.get("state") == state:
        st.reasons = [f"{len(gone)} output file(s) missing or not this work_dir's: "
                      f"{_rel(gone[0], wd)}"]
        return st, None
    if kind == "global":
        if legacy:
            st.reasons = legacy
            return st, None
        st.reasons = [r for r in config if not r.startswith("no record")] if done else []
        if done and not st.reasons:
            changed = _changed_inputs(done, node, known)
            st.reasons = [f"input shards changed ({changed})" if changed else "inputs changed"]
        if not done:
            st.reasons = [unfinished if started else "never run"]
        return st, None  # its outputs are known once it has run
    # source and shard stages: per shard, from the markers
    config_changed = old_key is not None and old_key != eff
    redo, why, st.maybe = ((len(details), [], 0) if config_changed
                           else _shards_to_redo(sdir, wd, details))
    st.shards, st.redo = len(names), redo
    if config_changed:
        st.reasons = [r for r in config if not r.startswith("no record")] or [
            "stages above it changed" if after else "configuration changed"]
    elif why:
        st.reasons = why + ([f"... ({redo - len(why)} more)"] if redo > len(why) else [])
    if not done and not config_changed:
        st.reasons.insert(0, unfinished if started else "never run")
    removed = set(_previous_names(done)) - set(names) if done else set()
    if removed:
        st.reasons.append(f"{len(removed)} shard(s) gone (their outputs will be removed)")
    shards = [{"name": n, "key": k, "path": "", "docs": 0} for n, k, _ in details]
    if legacy:
        st.reasons = legacy
    return st, {"state": state, "kind": kind, "shards": shards}



#: (shard name, its key now, the identity of what a source shard reads; ``None`` otherwise)
ShardKey = tuple[str, str, dict[str, Any] | str | None]
#: The reason for a writer's shard whose own input did not change, while other input shards
#: are new to its survey.
SURVEY_PENDING = ("if what the new input shards hold changes the plan of every file (its "
                  "columns, their types, the rows written first); the run surveys them first")


def _keys(pipe: Pipeline, node: StageNode, wd: str, known: dict[str, dict[str, Any] | None],
          eff: str, content: bool) -> tuple[str, list[ShardKey]]:
    """The stage's state and its shards' keys, as the runner would compute them now: a
    source's from its listing, another stage's from its inputs' shards."""
    if node.stage.kind == "source":
        specs, keys, reads = list_source(node.stage, node.id, eff, wd,
                                         _artifacts(pipe, node, known), pipe.max_doc_bytes,
                                         content)
        state = digest({"fp": eff, "shards": [[sp.name, k] for sp, k in
                                              zip(specs, keys, strict=True)]})
        return state, [(sp.name, k, rd) for sp, k, rd in zip(specs, keys, reads, strict=True)]
    inputs = merge_inputs([(i, known[i]["shards"])  # type: ignore[index]
                           for i in node.inputs])
    keyed = eff
    pending: set[str] = set()
    if getattr(node.stage, "surveys_input", False):  # a writer: as the runner keys it
        cached = read_surveys(wd, node)
        if all((s.key or s.path) in cached for s in inputs):
            keyed = surveyed_fingerprint(eff, node.stage.prepare(  # type: ignore[attr-defined]
                [cached[s.key or s.path] for s in inputs], [s.name for s in inputs],
                [s.path for s in inputs]))
        else:  # the run surveys the new input first: an unchanged shard redoes only if
            # what the new input holds changes the plan every file is written to
            pending = {s.name for s in inputs if (s.key or s.path) in cached}
    return input_state(keyed, inputs), [
        (s.name, shard_key(keyed, s.name, s.key or s.path),
         SURVEY_PENDING if s.name in pending else None) for s in inputs]


def _shards_to_redo(sdir: str, wd: str, details: list[ShardKey]
                    ) -> tuple[int, list[str], int]:
    """How many shards a rerun redoes (marker missing, key changed, output lost), why, for
    the first three of them, and how many of them only if new input changes their plan."""
    redo, why, maybe = 0, [], 0
    for name, key, read in details:
        marker = read_marker(os.path.join(sdir, "_done", f"{name}.json"), wd)
        lost = missing_or_foreign(_marker_outputs(marker), wd,
                                  marker.get("file_ids")) if marker else []
        if marker and marker.get("key") == key and not lost:
            continue
        if lost and marker and marker.get("key") == key:
            redo += 1
            if len(why) < 3:
                why.append(f"{name}: output file(s) missing or not this work_dir's: "
                           f"{_rel(lost[0], wd)}" + (f" (+{len(lost) - 1})" if len(lost) > 1
                                                     else ""))
            continue
        redo += 1
        maybe += bool(marker) and read is SURVEY_PENDING
        if marker and len(why) < 3:
            why.append(f"{name}: " + (read if isinstance(read, str) else
                                      describe_input_change(marker.get("read"),
                                                            redact_value(read))
                                      if read is not None else "its upstream shard changed"))
    return redo, why, maybe


def _marker_outputs(marker: dict[str, Any]) -> list[str]:
    """Files a shard marker says were made: its output shard (when written) and what the stage
    wrote outside its folder."""
    stats = marker.get("stats") if isinstance(marker.get("stats"), dict) else {}
    path = stats.get("path") if isinstance(stats, dict) else None
    files = [f for f in marker.get("files") or [] if isinstance(f, str)]
    return ([path] if isinstance(path, str) and path else []) + files


def _rel(path: str, wd: str) -> str:
    return os.path.relpath(path, wd) if path.startswith(wd + os.sep) else path


def _artifacts(pipe: Pipeline, node: StageNode, known: dict[str, Any]) -> dict[str, Any]:
    arts: dict[str, Any] = {}
    for anc in reversed(pipe.ancestors(node.id)):
        done = read_marker(os.path.join(stage_dir(pipe.work_dir, anc), "_SUCCESS.json"),
                           pipe.work_dir) or {}
        arts.update(done.get("artifacts") or {})
    return arts


def _previous_names(done: dict[str, Any]) -> list[str]:
    return [s["name"] for s in done.get("shards", [])]


def _changed_inputs(done: dict[str, Any], node: StageNode, known: dict[str, Any]) -> str:
    """For a global stage: how many of its input shards are new or changed since its run."""
    before = done.get("input_keys") or {}
    now = {s["name"]: s["key"] for i in node.inputs for s in known[i]["shards"]}
    changed = sum(before.get(n) != k for n, k in now.items())
    gone = sum(n not in now for n in before)
    parts = ([f"{changed} of {len(now)} changed or new"] if changed else []) + (
        [f"{gone} gone"] if gone else [])
    return ", ".join(parts)


#: The folders of a stage that curator creates in the work_dir, by kind.
STAGE_FOLDERS = ("stages", "rejected", "quarantine", "cache")


@dataclass
class Leftover:
    """What a stage no longer in the pipeline left in the work_dir: its curator-made folders
    (``stages/<id>``, ``rejected/<id>``, ``quarantine/<id>``, ``cache/<id>``: semantic_dedup's
    embeddings) and output folders it claimed."""

    id: str
    folders: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    bytes: int = 0


def leftovers(pipe: Pipeline) -> list[Leftover]:
    """Stage folders in the work_dir whose id no stage of ``pipe`` has (a stage removed or
    renamed), and output folders claimed by a stage that no current stage declares. Only real
    folders (not symlinks) directly under ``stages/``, ``rejected/``, ``quarantine/``; a
    ``stages/<id>`` folder without a curator marker in it is not counted as curator's."""
    from curator.core.shard_context import StageContext
    from curator.storage.outputs import claimed

    wd = pipe.work_dir
    ids = {n.id for n in pipe.nodes}
    found: dict[str, Leftover] = {}
    for kind in STAGE_FOLDERS:
        top = os.path.join(wd, kind)
        try:
            entries = sorted(os.scandir(top), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.name in ids or not e.is_dir(follow_symlinks=False):
                continue
            if kind == "stages" and not any(os.path.lexists(os.path.join(e.path, m)) for m in (
                    "_FINGERPRINT", "_SUCCESS.json", "_done", "_phases")):
                continue
            lo = found.setdefault(e.name, Leftover(e.name))
            lo.folders.append(os.path.join(kind, e.name))
            lo.bytes += _size(e.path)
    declared: set[str] = set()
    for n in pipe.nodes:
        try:
            dirs = n.stage.output_dirs(StageContext(stage_id=n.id, work_dir=wd, artifacts={}))
        except CuratorError:
            continue
        declared.update(os.path.realpath(d) for d in dirs if "://" not in d)
    for path, owner in sorted(claimed(wd).items()):
        if "://" not in path and path not in declared:
            found.setdefault(f"({owner})", Leftover(f"({owner})")).outputs.append(path)
    return list(found.values())


def _size(folder: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def render_leftovers(items: list[Leftover], source: str | None) -> list[str]:
    """The lines ``curator status`` adds for :func:`leftovers`, with the offer to prune."""
    if not items:
        return []
    lines = ["not in this pipeline any more (a stage removed or renamed):"]
    for lo in items:
        if lo.folders:
            lines.append(f"  {lo.id}: {', '.join(lo.folders)} ({_human(lo.bytes)})")
        for out in lo.outputs:
            lines.append(f"  output folder {out} claimed by {lo.id}: kept (your data); "
                         "delete it yourself if unwanted")
    if any(lo.folders for lo in items):
        lines.append(f"`curator prune {source or 'FILE'}` lists them, `--yes` removes them "
                     "(only these curator-made folders)")
    return lines


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def prune(pipe: Pipeline, items: list[Leftover]) -> list[str]:
    """Remove the curator-made folders of ``items`` and drop their stale output claims from
    the registry (the output folders themselves are kept); returns what was removed."""
    from curator.storage.outputs import claimed, write_registry

    wd = pipe.work_dir
    # what the pruned stages wrote into a folder a current stage writes (a renamed writer)
    removed = drop_orphan_outputs(pipe) if items else []
    for lo in items:
        for rel in lo.folders:
            path = os.path.join(wd, rel)
            if os.path.isdir(path) and not os.path.islink(path):
                nofollow.confine(wd)
                nofollow.rmtree(path)
                removed.append(rel)
    stale = {p for lo in items for p in lo.outputs}
    if stale:
        write_registry(wd, {k: v for k, v in claimed(wd).items() if k not in stale})
    return removed


def render(pipe: Pipeline, rows: list[StageStatus]) -> str:
    """The table ``curator status`` prints, plus who holds the work_dir if a run is going."""
    width = max(len(r.id) for r in rows)
    lines = [f"{pipe.source_file}: work_dir {pipe.work_dir}"]
    holder = _holder(pipe.work_dir)
    if holder:
        lines.append(f"a run is in progress ({holder}): results may change while you look")
    lines += [r.line(width) for r in rows]
    todo = [r for r in rows if r.status != "done"]
    lines.append("nothing to do: a rerun reuses every stage" if not todo else
                 f"a rerun redoes {len(todo)} of {len(rows)} stages")
    lines += render_leftovers(leftovers(pipe), pipe.source_file)
    lines += render_dead_temps(pipe.work_dir)
    return "\n".join(lines)


def dead_temps(work_dir: str) -> tuple[int, int, list[str]]:
    """Temporary files in the work_dir's stage folders that no live run is writing (written by
    runs that died, on any host): how many, their bytes, and the folders (relative) they are
    in. A live run's own temporaries (its id is in the lock file) are not counted."""
    from curator.storage.atomic import temp_run_id, temps

    live = _live_run_id(work_dir)
    n = size = 0
    where: set[str] = set()
    for d, name, nbytes in temps([os.path.join(work_dir, k) for k in STAGE_FOLDERS]):
        run = temp_run_id(name)
        if live and run == live:
            continue
        n += 1
        size += nbytes
        where.add(_rel(d, work_dir))
    return n, size, sorted(where)


def render_dead_temps(work_dir: str) -> list[str]:
    n, size, where = dead_temps(work_dir)
    if not n:
        return []
    shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
    return [f"temporary files of runs that died: {n} ({_human(size)}) in {shown}; the next "
            "run of this work_dir removes them"]


def _live_run_id(work_dir: str) -> str:
    """The id of the run holding the work_dir's lock, "" when none does."""
    from curator.core.lock import holder_run_id

    text = _held_lock_text(work_dir)
    return holder_run_id(text) if text is not None else ""


def _holder(work_dir: str) -> str:
    from curator.core.lock import describe_holder

    text = _held_lock_text(work_dir)
    return describe_holder(text) if text is not None else ""


def _held_lock_text(work_dir: str) -> bytes | None:
    """What the work_dir's lock file holds while another process holds the lock, else None
    (free, absent, unreadable). Opened without following a symlink; a lock file is a line."""
    import fcntl

    path = os.path.join(work_dir, LOCK_NAME)
    try:
        fh = os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")
    except OSError:
        return None
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return fh.read(1 << 16)
        except OSError:
            return None
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return None
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            from curator.core.lock import describe_holder

            return describe_holder(fh.read())
        except OSError:
            return ""
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return ""
