"""Atomic writes: a file appears under its final name complete, or not at all.

Local paths use a temporary sibling plus ``os.replace``; other fsspec filesystems write a
temporary key and move it. Compression is picked from the file name, with deterministic
headers (gzip mtime 0) so the same documents always give the same bytes.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import re
import socket
import uuid
from collections.abc import Iterator
from typing import IO, Any, NewType

import fsspec
import orjson

from curator.storage import nofollow, read_position

ZSTD_LEVEL = 3
GZIP_LEVEL = 6  # zlib's default; level 9 costs ~3x the time for ~2% smaller files


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def local_path(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def compression_of(path: str) -> str | None:
    p = path.lower()
    if p.endswith(".gz"):
        return "gzip"
    if p.endswith(".zst") or p.endswith(".zstd"):
        return "zstd"
    if p.endswith(".bz2"):
        return "bz2"
    return None


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open ``path`` for writing; the file is only published when the block exits cleanly."""
    if "w" not in mode:
        raise ValueError("atomic_open is for writing")
    tmp = f"{path}{_tmp_suffix()}"
    if is_local(path):
        lp = local_path(path)
        # the temporary is new (O_EXCL) and every folder above it is reached without following
        # a symlink below the work_dir or output folder (storage/nofollow.py)
        with nofollow.parent(lp) as (dfd, name):
            tname = os.path.basename(local_path(tmp))
            nofollow.check_not_link(dfd, name, lp)
            f = os.fdopen(nofollow.open_fd(dfd, tname, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                                           lp), mode)
            try:
                yield f
                f.flush()
                os.fsync(f.fileno())
                f.close()
                nofollow.check_not_link(dfd, name, lp)
                os.replace(tname, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException as e:
                with contextlib.suppress(OSError):  # closing flushes, which fails again on ENOSPC
                    f.close()
                with contextlib.suppress(OSError):
                    os.unlink(tname, dir_fd=dfd)
                if isinstance(e, OSError) and e.errno is not None and e.filename is None:
                    e.filename = lp  # write()/fsync() errors name no file: say which one
                raise
            _remove_stale_temps(lp, dfd)
    else:
        fs, _, (rpath,) = fsspec.get_fs_token_paths(path)
        rtmp = f"{rpath}{_tmp_suffix()}"
        f = fs.open(rtmp, mode)
        try:
            yield f
            f.close()
            fs.mv(rtmp, rpath)
        except BaseException:
            with contextlib.suppress(Exception):
                f.close()
                fs.rm(rtmp)
            raise


def write_json(path: str, obj: Any) -> None:
    """``obj`` as one line of JSON in ``path``, published atomically (markers, keys, tallies:
    a reader sees the old file or the new one, never half of one)."""
    with atomic_open(path, "wb") as f:
        f.write(orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")


#: A JSON document handed on whole, as the file that holds it (``model_config.json``): a
#: phase result may carry one through unread; what a later phase reads by key is a typed
#: field instead (tests/core/test_phase_results.py holds phase results to this).
JsonDoc = NewType("JsonDoc", dict[str, Any])


def _host_tag() -> str:
    return hashlib.sha1(socket.gethostname().encode(), usedforsecurity=False).hexdigest()[:8]


_HOST = _host_tag()
#: The run whose work this process does (:func:`set_run_id`), "" outside a run.
_RUN = ""


def set_run_id(run_id: str) -> None:
    """Name the run whose files this process writes from now on: its temporaries carry the id,
    so the next run of the work_dir can remove them wherever they were written, whether or not
    their writer's host is still there to say that the writer died."""
    global _RUN
    if run_id and not re.fullmatch(r"[0-9a-f]{12}", run_id):
        raise ValueError(f"run id must be 12 hex digits, not {run_id!r}")
    _RUN = run_id


def current_run_id() -> str:
    return _RUN


def _tmp_suffix() -> str:
    """``.tmp-r<run>-<host>-<pid>-<random>`` (``r<run>-`` only inside a run): the run, the
    writer's host and PID are in the name, so cleanup can tell a dead writer's leftover from
    a live writer's file in progress."""
    run = f"r{_RUN}-" if _RUN else ""
    return f".tmp-{run}{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def temp_path(path: str) -> str:
    """A temporary name beside ``path`` for a writer that publishes it with ``os.replace``."""
    return f"{path}{_tmp_suffix()}"


#: What :func:`atomic_open` appends to a file's name for its temporary (a regex); groups: run
#: id (absent outside a run and in earlier versions), host tag, PID.
TMP_SUFFIX = r"\.tmp-(?:r([0-9a-f]{12})-)?([0-9a-f]{8})-(\d+)-[0-9a-f]{8}"
_TMP_NAME = re.compile(r"(.+)" + TMP_SUFFIX)
# Per process: folder -> final file name -> temporaries of it found when the folder was first
# written to. One listing per folder, not one per file (folders may hold 100k shards).
_STALE: dict[str, dict[str, list[tuple[str, int]]]] = {}


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host. A zombie (killed, not yet reaped by its
    parent: a worker SIGKILLed under a parent that has not waited for it) writes nothing any
    more, so it counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read(4096)  # one line: pid, (comm of at most 16 bytes), state, ...
    except OSError:  # no /proc (macOS), or it just went
        return True
    # "pid (comm) S ...": the state follows the last ')' (comm may hold spaces and parens)
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] not in (b"Z", b"X")


def _remove_stale_temps(lp: str, dfd: int) -> None:
    """Drop temporaries of ``lp`` left by writers that died mid-write (SIGKILL, a node lost).
    Only temporaries of this very file written on this host by a process that no longer
    exists are touched: never a live writer's file in progress (two runs, or two attempts of
    one task), never one from another host whose liveness cannot be checked from here."""
    d, name = os.path.split(lp)
    d = d or "."
    stale = _STALE.get(d)
    if stale is None:
        if len(_STALE) > 4096:
            _STALE.clear()
        stale = _STALE[d] = {}
        with contextlib.suppress(OSError), os.scandir(dfd) as it:
            for e in it:
                m = _TMP_NAME.fullmatch(e.name)
                if m and m.group(3) == _HOST:
                    stale.setdefault(m.group(1), []).append((e.name, int(m.group(4))))
    for t, pid in stale.pop(name, ()):
        if pid != os.getpid() and not pid_alive(pid):
            with contextlib.suppress(OSError):
                os.unlink(t, dir_fd=dfd)


def dead_temp(name: str, run_id: str, anywhere: bool = False) -> bool:
    """Whether ``name`` is a temporary whose writer is gone: one of another run than
    ``run_id`` (written on any host), or one written on this host by a process that no longer
    exists. ``anywhere``: every temporary that does not carry ``run_id``, also those without a
    run id (only for the holder of the work_dir's lock, under which no other run writes)."""
    m = _TMP_NAME.fullmatch(name)
    if m is None:
        return False
    run, host, pid = m.group(2), m.group(3), int(m.group(4))
    if run_id and run != run_id and (run or anywhere):
        return True
    return host == _HOST and pid != os.getpid() and not pid_alive(pid)


def temp_run_id(name: str) -> str | None:
    """The run id a temporary's name carries ("" for none), or None if it is no temporary."""
    m = _TMP_NAME.fullmatch(name)
    return None if m is None else (m.group(2) or "")


def temps(folders: list[str]) -> Iterator[tuple[str, str, int]]:
    """(folder, name, bytes) of every temporary under ``folders`` (local ones, recursively)."""
    for top in folders:
        if not is_local(top):
            continue
        for d, _, names in os.walk(local_path(top)):
            for n in names:
                if _TMP_NAME.fullmatch(n):
                    with contextlib.suppress(OSError):
                        yield d, n, os.lstat(os.path.join(d, n)).st_size


def remove_dead_temps(folders: list[str], recursive: bool = False) -> int:
    """Remove the temporaries in ``folders`` (and below, with ``recursive``) written on this
    host by processes that no longer exist; the number removed. The runner calls this when a
    stage has finished, on every host that ran it: a Dask worker killed mid-write leaves its
    temporary, and the worker that redoes the task may have listed the folder (see
    :func:`_remove_stale_temps`) before that temporary appeared. Other runs' temporaries are
    left to :func:`remove_temps_of_dead_runs`: a run may share its Dask workers with another
    one that is alive."""
    removed = 0
    for top in folders:
        if not is_local(top):
            continue
        for dfd, n in _temp_names(top, recursive):
            if dead_temp(n, ""):
                with contextlib.suppress(OSError):
                    os.unlink(n, dir_fd=dfd)
                    removed += 1
    return removed


def _temp_names(top: str, recursive: bool) -> Iterator[tuple[int, str]]:
    """(folder descriptor, name) of the temporaries in ``top`` (and below, with
    ``recursive``), reached without following a symlink (:mod:`curator.storage.nofollow`)."""
    try:
        tfd = nofollow.open_dir(local_path(top))
    except OSError:
        return
    try:
        walk = os.fwalk(".", dir_fd=tfd) if recursive else [(".", None, _names(tfd), tfd)]
        for _, _, names, dfd in walk:
            for n in names:
                if _TMP_NAME.fullmatch(n):
                    yield dfd, n
    finally:
        os.close(tfd)


def remove_temps_of_dead_runs(folders: list[str], run_id: str) -> tuple[int, int]:
    """For the holder of a work_dir's lock, as its run ``run_id`` starts: remove every
    temporary under ``folders`` that is not the run's own (no other run can be writing there),
    whichever host wrote it; returns how many and their bytes."""
    removed = size = 0
    for top in folders:
        if not is_local(top):
            continue
        for dfd, n in _temp_names(top, True):
            if dead_temp(n, run_id, anywhere=True):
                with contextlib.suppress(OSError):
                    nbytes = os.stat(n, dir_fd=dfd, follow_symlinks=False).st_size
                    os.unlink(n, dir_fd=dfd)
                    removed += 1
                    size += nbytes
    return removed, size


def _names(d: int) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


@contextlib.contextmanager
def open_compressed_write(path: str) -> Iterator[IO[bytes]]:
    """Atomic binary writer that compresses according to the file name."""
    comp = compression_of(path)
    with atomic_open(path, "wb") as raw:
        if comp == "gzip":
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                               compresslevel=GZIP_LEVEL) as gz:
                yield gz  # type: ignore[misc]
        elif comp == "zstd":
            import zstandard

            with zstandard.ZstdCompressor(level=ZSTD_LEVEL).stream_writer(
                raw, closefd=False
            ) as zw:
                yield zw  # type: ignore[misc]
        elif comp == "bz2":
            import bz2

            with bz2.BZ2File(raw, "wb") as bz:
                yield bz  # type: ignore[misc]
        else:
            yield raw


@contextlib.contextmanager
def open_compressed_read(path: str, storage_options: dict[str, Any] | None = None,
                         track: bool = False) -> Iterator[IO[bytes]]:
    """Binary reader through fsspec that decompresses according to the file name. ``track``:
    the file is a shard's input, whose compressed position shows in progress
    (:mod:`curator.storage.read_position`)."""
    comp = compression_of(path)
    with fsspec.open(path, "rb", **(storage_options or {})) as raw:
        if track:
            read_position.track(raw)
        if comp == "gzip":
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield gz  # type: ignore[misc]
        elif comp == "zstd":
            import zstandard

            yield io.BufferedReader(_ZstdReader(raw, zstandard), 1 << 20)
        elif comp == "bz2":
            import bz2

            with bz2.BZ2File(raw, "rb") as bz:
                yield bz  # type: ignore[misc]
        else:
            yield raw


class _ZstdReader(io.RawIOBase):
    """Frame-by-frame zstd decoding that raises ``ZstdError`` when the file ends inside a
    frame: zstandard's ``stream_reader`` just stops there, silently dropping the rest of a
    truncated file (readers quarantine the error and keep what came before)."""

    def __init__(self, raw: IO[bytes], zstandard: Any) -> None:
        self._raw, self._zstd = raw, zstandard
        self._dctx = zstandard.ZstdDecompressor()
        self._d = self._dctx.decompressobj()
        self._started = False  # bytes of the current frame were fed
        self._buf = memoryview(b"")
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf and not self._done:
            chunk = self._raw.read(1 << 20)
            if not chunk:
                self._done = True
                if self._started:
                    raise self._zstd.ZstdError("truncated zstd stream: the file ends inside a "
                                               "frame")
                break
            out = []
            while chunk:
                self._started = True
                out.append(self._d.decompress(chunk))
                if not self._d.eof:
                    break
                chunk = self._d.unused_data
                self._d = self._dctx.decompressobj()
                self._started = False
            self._buf = memoryview(b"".join(out))
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n
