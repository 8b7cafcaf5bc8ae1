"""CPU seconds and peak memory of the work a process does, for the run report.

A task (one shard, one phase item, a global stage's driver) is measured with :func:`measure`:
its CPU seconds are the process's user + system time over the task (``getrusage``, so threads
the task starts, e.g. numpy or a tokenizer, count too) and its peak RSS is the process's
high-water mark at the end of the task.

On Linux the high-water mark is reset (``/proc/self/clear_refs``) when a task starts while no
other measured task runs in the process, so it is the peak *during* that task (and any task
that overlapped it in the same process), not since the process started. Where the reset is not
possible (other systems, a restricted ``/proc``) it is the process's peak so far: an upper
bound. Either way the figure is never below the true peak.

A stage's figures (see ``aggregate`` in :mod:`curator.core.runner`): CPU seconds summed over
the tasks that ran in this run (shards reused from an earlier run cost nothing now), peak RSS
the largest of the processes that ran them (workers of a Dask cluster, MPI ranks, the driver).
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class Usage:
    """What one measured task used; ``proc`` names the process (host:pid), so the driver's
    own time is not counted twice when tasks ran inside it (the local executor)."""

    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0
    proc: str = ""

    def as_stats(self) -> dict[str, Any]:
        return {"cpu_s": round(self.cpu_s, 3), "peak_rss_mb": round(self.peak_rss_mb, 1),
                "proc": self.proc}


#: Meters running in this process (a meter dropped by an exception leaves with its frame).
_live: weakref.WeakSet[Meter] = weakref.WeakSet()
_lock = threading.Lock()


def process_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def cpu_seconds() -> float:
    """User + system CPU seconds of this process (all its threads) so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _reset_peak() -> None:
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # "5": reset the peak RSS to the current RSS (Linux >= 4.0), nothing else


def peak_rss_mb() -> float:
    """The process's peak resident memory (MB) since the last reset (or its start)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # bytes on macOS, KB elsewhere
    return kb / (1 << 20) if sys.platform == "darwin" else kb / 1024


class Meter:
    """Starts measuring when made; :meth:`stop` returns the :class:`Usage` (for code where a
    ``with`` block would re-indent a long function; prefer :func:`measure`)."""

    def __init__(self) -> None:
        with _lock:
            if not _live:
                _reset_peak()
            _live.add(self)
        self._c0 = cpu_seconds()

    def stop(self) -> Usage:
        u = Usage(cpu_seconds() - self._c0, peak_rss_mb(), process_id())
        with _lock:
            _live.discard(self)
        return u


@contextlib.contextmanager
def measure() -> Iterator[Usage]:
    """Measure the enclosed work; the yielded :class:`Usage` is filled in on exit."""
    m = Meter()
    u = Usage(proc=process_id())
    try:
        yield u
    finally:
        done = m.stop()
        u.cpu_s, u.peak_rss_mb = done.cpu_s, done.peak_rss_mb


def call_measured(fn: Callable[[Any], Any], item: Any) -> tuple[Any, Usage]:
    """``fn(item)`` and what it used (wrap a function sent to the executor with
    ``functools.partial(call_measured, fn)``)."""
    with measure() as u:
        result = fn(item)
    return result, u


def stage_usage(tasks: list[Usage | dict[str, Any]], driver: Usage | None = None
                ) -> dict[str, float]:
    """A stage's ``cpu_s`` (sum) and ``peak_rss_mb`` (max) from its tasks and its driver; tasks
    that ran inside the driver's process are already in the driver's CPU time."""
    cpu = driver.cpu_s if driver else 0.0
    rss = driver.peak_rss_mb if driver else 0.0
    for t in tasks:
        d = t.as_stats() if isinstance(t, Usage) else t
        if "cpu_s" not in d:
            continue
        if driver is None or d.get("proc") != driver.proc:
            cpu += d["cpu_s"]
        rss = max(rss, d.get("peak_rss_mb", 0.0))
    return {"cpu_s": round(cpu, 3), "peak_rss_mb": round(rss, 1)}
