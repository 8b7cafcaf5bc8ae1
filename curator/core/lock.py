"""One run per work_dir: an OS-level lock on ``<work_dir>/.lock``.

``flock`` is released by the kernel when the holder dies (even on SIGKILL), so a lock left by a
dead run is simply taken over; the file's content (host, PID, start time) is only there to name
the holder in the error a second run gets. Held by the process that drives the run: the only
process with the local executor, the client with Dask, rank 0 with MPI.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sys
import time
import uuid
from typing import IO, Any

import orjson

from curator.core.errors import CuratorError

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
        try:
            os.makedirs(self.work_dir, exist_ok=True)
            fh = open(self.path, "a+b")  # noqa: SIM115 - kept open while the run lasts
        except OSError as e:
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
                "argv": sys.argv[:8]}
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
