"""One run per work_dir: an OS-level lock on ``<work_dir>/.lock``.

``flock`` is released by the kernel when the holder dies (even on SIGKILL), so a lock left by a
dead run is simply taken over; the file's content (host, PID, start time) is only there to name
the holder in the error a second run gets. Held by the process that drives the run: the only
process with the local executor, the client with Dask, rank 0 with MPI.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import stat
import sys
import time
import uuid
from typing import IO, Any

import orjson

from curator.base.errors import CuratorError
from curator.base.redact import MASK, redact
from curator.storage import nofollow

LOCK_NAME = ".lock"


class WorkDirBusy(CuratorError):
    """Another live run holds the work_dir."""


class WorkDirLock:
    """Exclusive, non-blocking lock of a work_dir; :meth:`acquire` raises :class:`WorkDirBusy`
    naming the holder when another process has it."""

    def __init__(self, work_dir: str) -> None:
        self.work_dir = os.path.abspath(work_dir)
        self.path = os.path.join(self.work_dir, LOCK_NAME)
        self._fh: IO[bytes] | None = None
        #: the id of the run that holds the lock (new at each :meth:`acquire`): temporaries
        #: its processes write carry it (:func:`curator.storage.atomic.set_run_id`)
        self.run_id = ""

    @property
    def held(self) -> bool:
        return self._fh is not None

    def acquire(self) -> WorkDirLock:
        if self._fh is not None:
            return self
        _check_owner(self.work_dir)
        nofollow.confine(self.work_dir)
        try:
            # never through a symlink (a planted ``.lock -> ~/file`` would be truncated), and
            # private: it names the holder's command line
            fh = nofollow.open_file(self.path, "a+b", perm=0o600)
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:  # truncating would reach
                fh.close()                                        # another name's file
                raise CuratorError(f"{self.path}: not a plain file of its own ({st.st_nlink} "
                                   "hard links); remove it")
            with contextlib.suppress(OSError):
                os.fchmod(fh.fileno(), 0o600)  # one made by an older curator was 0644
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise CuratorError(f"{self.path}: {e.strerror}; remove it (curator follows "
                                   "no symlink inside the work_dir)") from None
            raise CuratorError(f"work_dir '{self.work_dir}' is not writable: "
                               f"{e.strerror}") from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = describe_holder(fh.read())
            fh.close()
            raise WorkDirBusy(f"work_dir {self.work_dir} is in use by another curator run "
                              f"({holder}); wait for it to finish or use another work_dir"
                              ) from None
        except OSError as e:  # a filesystem without locks
            fh.close()
            raise CuratorError(f"{self.path}: cannot lock the work_dir: {e.strerror}") from None
        self.run_id = uuid.uuid4().hex[:12]
        info = {"host": socket.gethostname(), "pid": os.getpid(), "run": self.run_id,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "argv": public_argv(sys.argv[:8])}
        fh.seek(0)
        fh.truncate()
        fh.write(orjson.dumps(info) + b"\n")
        fh.flush()
        self._fh = fh
        return self

    def release(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            with contextlib.suppress(OSError):
                fh.seek(0)
                fh.truncate()  # nobody holds it: no holder to name
            fh.close()  # closing the descriptor drops the flock

    def __enter__(self) -> WorkDirLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _check_owner(work_dir: str) -> None:
    """A work_dir must be the user's (or root's): its owner can rename, replace and plant
    entries in it between runs (markers, stage data that a rerun reuses as they are), so
    another user's folder, even one set up for us, would make them an author of our results."""
    try:
        uid = os.stat(work_dir).st_uid
    except OSError:
        return  # not there yet (made by us) or unreadable (the writability check says so)
    if uid in (os.geteuid(), 0):
        return
    try:
        import pwd

        name = f"{pwd.getpwuid(uid).pw_name}, uid {uid}"
    except (ImportError, KeyError):
        name = f"uid {uid}"
    raise CuratorError(f"work_dir '{work_dir}' belongs to another user ({name}): its owner "
                       "can change what every rerun reads back; use a folder of your own")


def public_argv(argv: list[str]) -> list[str]:
    """``argv`` without the values of ``--set KEY=VALUE`` (they may hold secrets) and with
    URL credentials masked."""
    out: list[str] = []
    after_set = False
    for a in argv:
        opt, eq, val = a.partition("=")
        if after_set and eq:
            a = f"{opt}={MASK}"
        elif eq and len(opt) > 3 and "--set".startswith(opt):  # --set=K=V, or abbreviated
            a = f"{opt}={val.split('=', 1)[0]}={MASK}"
        after_set = len(a) > 2 and "--set".startswith(a)  # argparse takes --s, --se
        out.append(redact(a))
    return out


def describe_holder(raw: bytes) -> str:
    try:
        info = orjson.loads(raw)
        return f"host {info['host']}, PID {info['pid']}, started {info['started']}"
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return "host and PID not yet recorded"


def holder_run_id(raw: bytes) -> str:
    """The run id a lock file's content names ("" when none)."""
    try:
        return str(orjson.loads(raw).get("run") or "")
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return ""
