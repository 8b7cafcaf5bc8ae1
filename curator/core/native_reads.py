"""What native code reads while a task records: the files a C, C++ or Rust library opens (a
safetensors reader, pyarrow and its IO threads, fastText) and the environment variables it
reads with ``getenv``, which no audit hook sees.

``_native_reads.c``, built with the package (``setup.py``; optional: without a compiler curator
installs and runs without it), interposes libc's ``open``/``openat``/``fopen`` families and
``getenv``/``secure_getenv``. glibc lets a library replace those only when it is loaded before
the program starts (``LD_PRELOAD``), so the ``curator`` command executes itself once more with
it preloaded (:func:`reexec`); its children inherit it (Dask workers, a stage's subprocesses,
which it leaves alone: it holds no Python symbol and records nothing until curator asks). A
process that imports curator without the command (``curator.run`` from a notebook) runs without
it: :func:`lib` is ``None`` there and tracing sees what the audit hook sees.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import os
import sys

#: ``off``: the ``curator`` command does not preload the library. Set by the command to the
#: library's path when it executes itself with it, so that it does so at most once.
SWITCH = "CURATOR_NATIVE_READS"

_HERE = os.path.dirname(os.path.abspath(__file__))


def library_path() -> str | None:
    """The built library beside this module, if any."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(_HERE, "_native_reads" + suffix)
        if os.path.isfile(path):
            return path
    return None


class Lib:
    """The library's entry points, as this process has it preloaded."""

    def __init__(self, handle: ctypes.CDLL) -> None:
        self.enter = handle.curator_trace_enter
        self.enter.argtypes, self.enter.restype = [ctypes.c_uint64], ctypes.c_uint64
        self.leave = handle.curator_trace_leave
        self.leave.argtypes, self.leave.restype = [ctypes.c_uint64], None
        self.only = handle.curator_trace_only
        self.only.argtypes, self.only.restype = [ctypes.c_uint64], None
        self._drain = handle.curator_trace_drain
        self._drain.argtypes = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_size_t)]
        self._drain.restype = ctypes.c_void_p
        self._free = handle.curator_trace_free
        self._free.argtypes, self._free.restype = [ctypes.c_void_p], None

    def drain(self, token: int) -> list[tuple[str, str]]:
        """``(kind, path or name)`` recorded into ``token``, taken out: ``r`` a file opened
        for reading, ``w`` one opened for writing, ``e`` an environment variable read."""
        size = ctypes.c_size_t()
        block = self._drain(token, ctypes.byref(size))
        if not block:
            return []
        try:
            raw = ctypes.string_at(block, size.value)
        finally:
            self._free(block)
        return [(item[:1].decode(), os.fsdecode(item[1:])) for item in raw.split(b"\0") if item]


_LIB: Lib | None = None
_LOOKED = False


def lib() -> Lib | None:
    """The library when this process runs with it preloaded, else ``None`` (its functions are
    found in the process's global scope only then: loading it now would replace nothing)."""
    global _LIB, _LOOKED
    if not _LOOKED:
        try:
            handle = ctypes.CDLL(None)
            if handle.curator_trace_version() == 1:
                _LIB = Lib(handle)
        except (OSError, AttributeError):
            _LIB = None
        _LOOKED = True
    return _LIB


def unloadable(path: str) -> str | None:
    """Why the dynamic loader could not load the library at ``path`` (unreadable by this
    user, truncated), else ``None``: preloaded, such a library makes the loader print an
    error in this process and in every process it starts."""
    try:
        ctypes.CDLL(path, mode=os.RTLD_LOCAL)  # its calls replace nothing when not preloaded
    except OSError as e:
        return str(e).replace(path + ": ", "")
    return None


_UNLOADABLE: str | None = None


def reexec() -> None:
    """Execute this ``curator`` command again with the library preloaded, once; returns (and
    the command runs untraced by it) when it is off, not built, already loaded, already
    tried, its path cannot be put in ``LD_PRELOAD`` (a space or colon in it), or it cannot
    be loaded."""
    global _UNLOADABLE
    path = library_path()
    if (
        path is None
        or os.environ.get(SWITCH)
        or lib() is not None
        or not sys.executable
        or any(c in path for c in " :\t\n")
        or not getattr(sys, "orig_argv", None)
    ):
        return
    _UNLOADABLE = unloadable(path)
    if _UNLOADABLE is not None:
        return
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(p for p in (path, env.get("LD_PRELOAD", "")) if p)
    env[SWITCH] = path
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        argv = [sys.executable, *sys.orig_argv[1:]]
        os.execve(sys.executable, argv, env)  # noqa: S606 - the command the user ran, again
    except OSError:
        return


def not_traced() -> str | None:
    """Why this process does not see native reads (``None``: it does)."""
    if lib() is not None:
        return None
    if os.environ.get(SWITCH) == "off":
        return f"{SWITCH}=off"
    if library_path() is None:
        return "curator/core/_native_reads.c is not built (no C compiler at install)"
    if _UNLOADABLE is not None:
        return f"{library_path()} cannot be loaded: {_UNLOADABLE}"
    if os.environ.get(SWITCH):
        return "the dynamic loader did not preload it (LD_PRELOAD ignored)"
    return "not run through the `curator` command"

