"""What a stage actually read while it ran: every file it opened and every module it imported.

A stage's key holds what curator can know before running it (its parameters, its code as the
import graph shows it, the files its parameters name). What the code then does is known only
while it runs: a custom stage opens ``mydata/list.txt``, a model loader follows a symlink into
a cache, a library imports a module by a computed name. Like ninja's depfiles, the run records
those reads and the next run checks them:

* a process-wide audit hook (:func:`sys.addaudithook`, installed once per process, in every
  worker of every executor since it is installed where a task runs) sees each ``open`` and
  ``import`` event; while a task is being recorded (:func:`recording`) the ones of that task's
  thread (or of any thread, when it is the only task of the process) are kept, attributed to
  the step whose code was running (:func:`step_frames`);
* at the task's end, :meth:`Recorder.used` turns them into ``{path: identity}``: size,
  ``mtime_ns``, ``ctime_ns``, inode and a digest of the content (a module: of its code without
  comments, :mod:`curator.core.codehash`). Left out: files the key already covers (the work_dir,
  a source shard's own input files), files the task wrote (its output), folders, files that
  do not exist, the Python installation (standard library and installed packages, see
  :func:`curator.core.codehash.library_file`), ``/proc``, ``/sys``, ``/dev``, and modules
  curator does not follow (its run machinery, libraries); a module opened in its compiled
  form (``__pycache__/*.pyc``) counts as its source file;
* a folder the task's code lists (``os.listdir``/``os.scandir``: ``glob``, ``os.walk``,
  ``Path.iterdir``) is recorded by the names it holds (:func:`listing`), but not one it wrote
  into, nor the import system's or curator's own listings; a task that opened or listed a
  relative path records its current directory (:data:`CWD`);
* :func:`changed` tells which recorded inputs differ now: the same stat is taken as the same
  content (``ctime`` cannot be set back), another stat is settled by the digest (a ``touch``
  changes nothing).

What an audit hook cannot see, native code's opens (a Rust reader, pyarrow's IO threads) and the
environment variables it reads with ``getenv``, a library preloaded by the ``curator`` command
sees (:mod:`curator.core.native_reads`): drained into the task's record at its end, the files as
opened files, the variables as ``env:NAME`` entries whose identity is a digest of the value
keyed by the work_dir's key (never the value). Still unseen: reads by a subprocess that is not a
curator process, ``dlopen`` from C, the network; and, in a process not started by the command
(``curator.run`` from a notebook), native reads. A stage declares those: a parameter typed
``FilePath``/``DirPath`` or :meth:`Stage.input_files` for a file, ``code_deps`` for a module or
data file, ``version`` for the rest.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import stat
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from typing import Any

from curator.core import native_reads as native
from curator.core.codehash import (
    OWN_READS,
    ROOT,
    followed,
    is_user_module,
    keyed_variable,
    library_dirs,
    library_file,
)

#: Paths never recorded: kernel and device files, and the host's own configuration (which
#: differs between the hosts of a cluster and says nothing about a stage's data).
SYSTEM_DIRS = ("/proc/", "/sys/", "/dev/", "/etc/")
#: This host's name, kept with each identity: a file only another host could see (its local
#: disk) is not taken for gone.
HOST = socket.gethostname()

_lock = threading.Lock()
_installed = False
_local = threading.local()
#: Recorders of this process now recording (a task's threads without their own find the only
#: one when there is exactly one).
_active: list[Recorder] = []
#: Code objects whose frames mark a step: the name of their local holding the step index.
_STEP_CODES: dict[types.CodeType, str] = {}
#: Folders of the Python installation, as the hook compares an opened path with them.
_LIBRARY_PREFIXES: tuple[str, ...] = ()
#: Digests by (path, size, mtime_ns, ctime_ns, inode): each file is read once per process.
_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}
#: What names an environment variable among a record's paths (``env:EXTRA``).
ENV = "env:"
#: The entry of a record that holds the current directory a task resolved relative paths in.
CWD = "cwd:"
#: A recording's number, as the native library knows it.
_TOKENS = itertools.count(1)


def step_frames(code: types.CodeType, local: str) -> None:
    """Frames running ``code`` belong to the step index held in their local ``local``: an
    event under such a frame (the innermost) is that step's (a fused chain of stages pulls
    documents through one generator per step)."""
    _STEP_CODES[code] = local


class Recorder:
    """The opens and imports of one task, by step (``-1``: outside any step's frames)."""

    def __init__(self) -> None:
        self.opened: dict[int, set[str]] = {}
        self.imported: dict[int, set[str]] = {}
        #: folders whose entries the task's code listed (``os.listdir``, ``os.scandir``: what
        #: ``glob``, ``os.walk`` and ``Path.iterdir`` call)
        self.listed: dict[int, set[str]] = {}
        self.written: set[str] = set()
        #: identities another record brought in (a result reused from an earlier run carries
        #: what computing it read): part of every step's
        self.carried: dict[str, Any] = {}
        #: environment variables native code read (``getenv``)
        self.environ: set[str] = set()
        self.cwd = os.getcwd()
        self.token = next(_TOKENS)

    def add(self, kind: str, what: str) -> None:
        step = _current_step()
        into = {"open": self.opened, "list": self.listed}.get(kind, self.imported)
        into.setdefault(step, set()).add(what)

    def take(self, entries: Iterable[tuple[str, str]]) -> None:
        """Add what native code read (:meth:`curator.core.native_reads.Lib.drain`): a file Python's
        ``open`` also opened is already here, with its step; the rest counts for every step."""
        seen = set().union(*self.opened.values()) if self.opened else set()
        for kind, what in entries:
            if kind == "e":
                self.environ.add(what)
            elif kind == "w":
                self.written.add(what)
            elif what not in seen and not what.startswith(_LIBRARY_PREFIXES):
                self.opened.setdefault(-1, set()).add(what)

    def used(
        self,
        steps: int,
        skip_dirs: Iterable[str] = (),
        skip_files: Iterable[str] = (),
        work_dir: str = "",
    ) -> list[dict[str, dict[str, Any]]]:
        """``{path: identity}`` per step (``steps`` of them); what no step's frames were
        running when it happened counts for every step, as do the environment variables
        native code read (keyed by ``work_dir``'s key: none without it)."""
        skip_d = tuple(_dir_prefix(d) for d in skip_dirs if d)
        skip_f = {
            os.path.realpath(os.path.join(self.cwd, f))
            for f in (*skip_files, *self.written)
            if "://" not in f
        }
        wrote = tuple(
            _dir_prefix(os.path.dirname(os.path.join(self.cwd, f)))
            for f in self.written
            if "://" not in f
        )
        per: list[dict[str, dict[str, Any]]] = [{} for _ in range(steps)]
        for step in set(self.opened) | set(self.imported) | set(self.listed):
            found: dict[str, dict[str, Any]] = {}
            for p in self.opened.get(step, ()):
                path = _wanted_file(p, self.cwd, skip_d, skip_f)
                if path is not None:
                    ident = identity(path)
                    if ident is not None:
                        found[path] = ident
                        if not os.path.isabs(p):  # another current directory: another file
                            found[CWD] = {"cwd": self.cwd, "host": HOST}
            for p in self.listed.get(step, ()):
                path = _wanted_dir(p, self.cwd, skip_d, wrote)
                ident = listing(path) if path is not None else None
                if path is not None and ident is not None:
                    found[path] = ident
                    if not os.path.isabs(p):
                        found[CWD] = {"cwd": self.cwd, "host": HOST}
            for name in self.imported.get(step, ()):
                path = _module_file(name)
                if path is not None and not path.startswith(skip_d):
                    ident = identity(path)
                    if ident is not None:
                        found[path] = ident
            for k in range(steps) if step < 0 or step >= steps else (step,):
                per[k].update(found)
        env = _env_identities(self.environ, work_dir)
        for k in range(steps) if self.carried or env else ():
            per[k].update(self.carried)
            per[k].update(env)
        return per


@contextlib.contextmanager
def recording() -> Iterator[Recorder]:
    """Record the opens and imports of the enclosed code (this thread's, and any thread's
    while this is the only recording in the process)."""
    install()
    rec = Recorder()
    nat = native.lib()
    prev = nat.enter(rec.token) if nat is not None else 0
    outer = getattr(_local, "rec", None)
    _local.rec = rec
    with _lock:
        _active.append(rec)
        _only(nat)
    try:
        yield rec
    finally:
        _local.rec = outer
        with _lock:
            _active.remove(rec)
            _only(nat)
        if nat is not None:
            nat.leave(prev)
            rec.take(nat.drain(rec.token))
        if outer is not None:  # an enclosing record sees what the enclosed one saw
            for mine, theirs in (
                (rec.opened, outer.opened),
                (rec.imported, outer.imported),
                (rec.listed, outer.listed),
            ):
                for step, got in mine.items():
                    theirs.setdefault(step, set()).update(got)
            outer.written |= rec.written
            outer.carried.update(rec.carried)
            outer.environ |= rec.environ


def _only(nat: native.Lib | None) -> None:
    """Native threads that are no recording's (pyarrow's IO pool) record into the only
    recording of the process, as the audit hook attributes Python's (under ``_lock``)."""
    if nat is not None:
        nat.only(_active[0].token if len(_active) == 1 else 0)


def _env_key(work_dir: str, create: bool = False) -> bytes | None:
    """The work_dir's key (``create``: made if it has none yet, as a task recording a
    variable needs it); ``None`` without one."""
    from curator.base.errors import CuratorError
    from curator.core.identity import fingerprint_key

    try:
        return fingerprint_key(work_dir, create) if work_dir else None
    except CuratorError:
        return None


def _env_value(name: str, key: bytes | None) -> str | None:
    """A digest of variable ``name``'s value keyed by ``key`` (``unset`` when it is not set;
    ``None`` without a key: nothing to compare with, so a change)."""
    value = os.environ.get(name)
    if value is None or key is None:
        return None if value is not None else "unset"
    from curator.base.redact import keyed_digest

    return keyed_digest(key)(f"{name}={value}")


def _env_identities(names: Iterable[str], work_dir: str) -> dict[str, dict[str, Any]]:
    keyed = sorted(n for n in names if keyed_variable(n))
    key = _env_key(work_dir, create=True) if any(n in os.environ for n in keyed) else None
    values = {n: _env_value(n, key) for n in keyed}
    return {ENV + n: {"env": v, "host": HOST} for n, v in values.items() if v is not None}


def carry(used: dict[str, Any]) -> None:
    """Add to this thread's record what an earlier run read to make a result reused now: the
    stage's record then still holds it (else a reused result's inputs would go unchecked)."""
    rec = getattr(_local, "rec", None)
    if rec is not None:
        rec.carried.update(used)


def install() -> None:
    """The process's audit hook (once; a hook cannot be removed, so it does nothing while no
    task records)."""
    global _installed, _LIBRARY_PREFIXES
    with _lock:
        if not _installed:
            _LIBRARY_PREFIXES = library_dirs()
            sys.addaudithook(_hook)
            _installed = True


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" or event == "ctypes.dlopen":
        path, flags = (args[0], args[2]) if event == "open" else (args[0], 0)
        if path is None or isinstance(path, int):
            return
        path = os.fsdecode(path)
        if event == "ctypes.dlopen" and os.sep not in path:  # a library found by the loader
            return
        rec = getattr(_local, "rec", None) or (_active[0] if len(_active) == 1 else None)
        if rec is None:
            if getattr(_local, "rec", None) is None and not (flags or 0) & os.O_ACCMODE:
                _own_read(path)
            return
        if (flags or 0) & os.O_ACCMODE != os.O_RDONLY:  # what it writes is its output
            rec.written.add(path)
        elif not path.startswith(_LIBRARY_PREFIXES):  # the many opens of library imports
            rec.add("open", path)
    elif event == "os.listdir" or event == "os.scandir":
        _listed(args[0])
    elif event == "import":
        rec = getattr(_local, "rec", None) or (_active[0] if len(_active) == 1 else None)
        if rec is not None and (followed(args[0]) or is_user_module(args[0])):
            rec.add("import", args[0])


def _listed(path: Any) -> None:
    """A folder the running task's code listed: which files it holds decided what the task read
    (a file added to a globbed folder is never opened by the run that did not see it). The
    import system's listings of ``sys.path`` are not the task's, nor are curator's own (the
    folders its stages list are their parameters, keyed already) or this module's."""
    rec = getattr(_local, "rec", None) or (_active[0] if len(_active) == 1 else None)
    if rec is None or isinstance(path, int):
        return
    caller = sys._getframe(2).f_globals.get("__name__") or ""
    if caller.startswith("importlib") or (
        (caller == "curator" or caller.startswith("curator.")) and not is_user_module(caller)
    ):
        return
    path = "." if path is None else os.fsdecode(path)
    if not path.startswith(_LIBRARY_PREFIXES):
        rec.add("list", path)


def _own_read(path: str) -> None:
    """Keep a file read outside any task by the user's own code (at import, in ``setup()``, in
    a factory) for the module whose frame is innermost on the stack (:func:`_users_module`):
    a custom stage's key holds it (:func:`curator.core.codehash.own_reads`); a module's code
    it opened (an import by a computed name) is followed as a module
    (:func:`curator.core.codehash.runtime_imports`)."""
    if path.startswith(_LIBRARY_PREFIXES) or path.startswith(SYSTEM_DIRS):
        return
    owner = _users_module()
    if owner is None:
        return
    full = os.path.abspath(path)
    if full.endswith(".pyc"):  # a module loaded from its compiled form: its source counts
        folder, name = os.path.split(full)
        if os.path.basename(folder) != "__pycache__":
            return
        full = os.path.join(os.path.dirname(folder), name.split(".")[0] + ".py")
    if not full.startswith(SYSTEM_DIRS):
        OWN_READS.setdefault(owner, set()).add(full)


def _users_module() -> str | None:
    """The user's module whose code is innermost on this thread's stack (looking through
    library frames and curator's stage logic) while a module of the user's is being imported
    or a stage is being built; ``None`` otherwise: curator's run machinery or ``__main__``
    comes first, or the user's code is merely running (a helper that reads a run's output
    between two runs of the Python API is not what a stage was made from)."""
    f: types.FrameType | None = sys._getframe(3)
    owner = None
    while f is not None:
        name = f.f_globals.get("__name__") or ""
        code = f.f_code
        if owner is None:
            if name == "curator" or name.startswith("curator."):
                if not followed(name):
                    return None
            elif name == "__main__":
                return None
            elif is_user_module(name):
                owner = name
        if owner is not None:
            if code.co_name == "<module>" and name != "__main__" and is_user_module(name):
                return owner  # being imported
            if code in _BUILD_CODES:
                return owner  # being built
        f = f.f_back
    return None


#: Code of the methods that build a stage (:class:`curator.core.stage.Stage`), registered by
#: that module: a read under them is part of what the stage was made from.
_BUILD_CODES: set[types.CodeType] = set()


def building(*functions: Any) -> None:
    """Frames running these functions build a stage (``Stage.__init__``, ``from_params``)."""
    _BUILD_CODES.update(getattr(fn, "__code__", fn) for fn in functions)


def _current_step() -> int:
    """The step whose frame is innermost on this thread's stack, else -1."""
    if not _STEP_CODES:
        return -1
    f: types.FrameType | None = sys._getframe(2)
    while f is not None:
        local = _STEP_CODES.get(f.f_code)
        if local is not None:
            k = f.f_locals.get(local)
            return k if isinstance(k, int) else -1
        f = f.f_back
    return -1


def _dir_prefix(d: str) -> str:
    return os.path.realpath(d).rstrip(os.sep) + os.sep


def _wanted_file(p: str, cwd: str, skip_d: tuple[str, ...], skip_f: set[str]) -> str | None:
    """The absolute path of an opened file worth recording, else ``None``."""
    path = os.path.normpath(os.path.join(cwd, p))
    if path.startswith(SYSTEM_DIRS):
        return None
    if path.endswith(".pyc"):  # a module loaded from its compiled form: its source counts
        folder, name = os.path.split(path)
        if os.path.basename(folder) != "__pycache__":
            return None
        path = os.path.join(os.path.dirname(folder), name.split(".")[0] + ".py")
    if library_file(path) or (path.endswith(".py") and not _followed_file(path)):
        return None
    real = os.path.realpath(path)
    if real in skip_f or real.startswith(skip_d) or path.startswith(skip_d):
        return None
    return path if os.path.isfile(real) else None


def _wanted_dir(p: str, cwd: str, skip_d: tuple[str, ...], wrote: tuple[str, ...]) -> str | None:
    """The absolute path of a listed folder worth recording, else ``None`` (also for one the
    task wrote into: ``wrote`` holds the folders of the files it wrote)."""
    path = os.path.normpath(os.path.join(cwd, p))
    if path.startswith(SYSTEM_DIRS) or library_file(path + os.sep):
        return None
    full, real = path.rstrip(os.sep) + os.sep, _dir_prefix(path)
    if full.startswith(skip_d) or real.startswith(skip_d):
        return None
    if any(w.startswith((full, real)) for w in wrote):
        return None
    return path


def listing(path: str) -> dict[str, Any] | None:
    """A digest of the names a folder holds (``None`` when it cannot be listed)."""
    import hashlib

    try:
        with os.scandir(path) as it:
            names = sorted(os.fsencode(e.name) for e in it)
    except OSError:
        return None
    digest = hashlib.sha256(b"\0".join(names)).hexdigest()[:16]
    return {"listing": digest, "host": HOST}


def _followed_file(path: str) -> bool:
    """Whether a module file is code curator follows: its stage logic, or the user's (a file
    outside the Python installation)."""
    root = ROOT.rstrip(os.sep) + os.sep
    if path.startswith(root):
        rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
        return followed(rel.removesuffix(".__init__"))
    return not library_file(path)


def _module_file(name: str) -> str | None:
    """The source file of module ``name`` when curator follows it (stage logic, the user's
    own code), else ``None``."""
    if not (followed(name) or is_user_module(name)):
        return None
    path = getattr(sys.modules.get(name), "__file__", None)
    if not path or not (path.endswith(".py") or is_user_module(name)):  # the user's: compiled too
        return None
    return os.path.abspath(path)


def identity(path: str) -> dict[str, Any] | None:
    """Stat and content digest of a file (``None`` when it cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    d = _digest(path, st)
    if d is None:
        return None
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        "digest": d,
        "host": HOST,
    }


def _digest(path: str, st: os.stat_result) -> str | None:
    key = (path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    hit = _DIGESTS.get(key)
    if hit is not None:
        return hit
    if path.endswith(".py"):
        from curator.core.codehash import source_digest

        d = source_digest(path)
    else:
        from curator.core.identity import content_hash

        d = content_hash(path)
        d = None if d == "unreadable" else d[:16]
    if d is not None:
        _DIGESTS[key] = d
    return d


def changed(used: dict[str, Any] | None, work_dir: str = "") -> dict[str, str]:
    """``{path: how}`` for each recorded input that is no longer what it was (``how``:
    ``content``, or ``gone``; an environment variable: ``value``). A file with the same stat
    is the same file; one with another stat is compared by digest."""
    out: dict[str, str] = {}
    key: list[bytes | None] = []
    for path, was in (used or {}).items():
        if not isinstance(was, dict):
            continue
        if path.startswith(ENV):
            name = path[len(ENV) :]
            if not keyed_variable(name):  # recorded before it was known to decide nothing
                continue
            if name in os.environ and not key:  # read once, when a value needs it
                key = [_env_key(work_dir)]
            if _env_value(name, key[0] if key else None) != was.get("env"):
                out[path] = "value"
            continue
        if path == CWD:
            if was.get("cwd") != os.getcwd():
                out[path] = "another one"
            continue
        if "listing" in was:
            now = listing(path)
            if now is None and was.get("host", HOST) == HOST:
                out[path] = "gone"
            elif now is not None and now["listing"] != was["listing"]:
                out[path] = "files added or removed"
            continue
        try:
            st = os.stat(path)
        except OSError:
            if was.get("host", HOST) == HOST:  # else another host's local file: not ours to see
                out[path] = "gone"
            continue
        if not stat.S_ISREG(st.st_mode):  # a record naming a FIFO or device is never read
            out[path] = "not a file"
            continue
        if (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) == (
            was.get("size"),
            was.get("mtime_ns"),
            was.get("ctime_ns"),
            was.get("inode"),
        ):
            continue
        if _digest(path, st) != was.get("digest"):
            out[path] = "content"
    return out


def current(used: dict[str, Any], paths: Iterable[str], work_dir: str = "") -> dict[str, Any]:
    """``used`` with the identity of ``paths`` taken again now (``None``: gone)."""
    now = {p: _identity_now(p, used.get(p)) for p in paths if not p.startswith(ENV)}
    now.update(_env_identities((p[len(ENV) :] for p in paths if p.startswith(ENV)), work_dir))
    return {**used, **now}


def _identity_now(path: str, was: Any) -> dict[str, Any] | None:
    if path == CWD:
        return {"cwd": os.getcwd(), "host": HOST}
    if isinstance(was, dict) and "listing" in was:
        return listing(path)
    return identity(path)


def describe(changes: dict[str, str], limit: int = 3) -> str:
    """``mydata/list.txt (content), ...``: recorded inputs that changed, curator's own files
    named inside the package."""
    names = []
    for p, how in sorted(changes.items())[:limit]:
        shown = os.path.relpath(p, os.path.dirname(ROOT)) if p.startswith(ROOT + os.sep) else p
        if p.startswith(ENV):
            shown = "environment variable " + p[len(ENV) :]
        elif p == CWD:
            shown = "the current directory"
        names.append(f"{shown} ({how})")
    more = len(changes) - limit
    return ", ".join(names) + (f" (+{more} more)" if more > 0 else "")


class UsedState:
    """What a stage's earlier runs read (``used``, kept in its ``_FINGERPRINT``), which of it
    changed since (``changes``), and the stage's *epoch*: a salt of its key that stays the same
    while nothing it read changes and moves when something does, so the stage, and everything
    computed from it, reruns (``now``: ``used`` with the changed inputs taken again)."""

    def __init__(
        self,
        epoch: str = "",
        used: dict[str, Any] | None = None,
        changes: dict[str, str] | None = None,
        work_dir: str = "",
    ) -> None:
        self.used = used or {}
        self.changes = changes or {}
        self.was = epoch
        if self.changes:
            from curator.core.identity import digest

            self.now = current(self.used, self.changes, work_dir)
            now = {p: self.now.get(p) or {} for p in sorted(self.changes)}
            self.epoch = digest({"was": epoch, "now": {p: _value(i) for p, i in now.items()}})
        else:
            self.now = self.used
            self.epoch = epoch

    def reasons(self) -> list[str]:
        """``it read lists/x.txt (content), which changed`` when something did."""
        return [f"what it read changed: {describe(self.changes)}"] if self.changes else []


def _value(ident: dict[str, Any]) -> Any:
    """What an identity's value is: a file's digest, a variable's, a listing's, a folder."""
    for k in ("digest", "env", "listing", "cwd"):
        if k in ident:
            return ident[k]
    return None


#: Beside a global stage's phase result ``<key>.pkl``: what computing it read (JSON).
USED_SUFFIX = ".used.json"


def used_state(fingerprint_file: str) -> UsedState:
    """The :class:`UsedState` of a stage: what its finished runs read (its ``_FINGERPRINT``)
    and what every result kept in its folder read (each shard marker under ``_done/``, each
    phase result's record under ``_phases/``), an interrupted run's among them. Any of it
    changed moves the epoch, so the stage starts afresh: a result is never reused once
    something its computation read (or a sibling's: a value cached in a worker is read once)
    has changed. The work_dir (whose key digests environment variables) is the one holding
    ``fingerprint_file`` (``<work_dir>/stages/<id>/_FINGERPRINT``)."""
    import glob

    import orjson

    def load(path: str) -> Any:
        try:
            with open(path, "rb") as f:
                return orjson.loads(f.read(64 << 20))
        except (OSError, orjson.JSONDecodeError):
            return None

    obj = load(fingerprint_file)
    obj = obj if isinstance(obj, dict) else {}
    used = obj.get("used") if isinstance(obj.get("used"), dict) else {}
    epoch = obj.get("epoch") if isinstance(obj.get("epoch"), str) else ""
    records = [used]
    sdir = os.path.dirname(fingerprint_file)
    for path in sorted(glob.glob(os.path.join(glob.escape(sdir), "_done", "*.json"))):
        marker = load(path)
        if isinstance(marker, dict):  # a fused chain's marker holds its stages' stats too
            for entry in [marker, *(marker.get("group") or [])]:
                stats = entry.get("stats") if isinstance(entry, dict) else None
                if isinstance(stats, dict) and isinstance(stats.get("used"), dict):
                    records.append(stats["used"])
    pattern = os.path.join(glob.escape(sdir), "_phases", "*", "*" + USED_SUFFIX)
    records += [r for r in map(load, sorted(glob.glob(pattern))) if isinstance(r, dict)]
    merged: dict[str, Any] = {}
    changes: dict[str, str] = {}
    work_dir = os.path.dirname(os.path.dirname(sdir))
    for r in records:
        merged.update(r)
        changes.update(changed(r, work_dir))
    return UsedState(epoch, merged, changes, work_dir)
