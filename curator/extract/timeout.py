"""A per-document time limit that works under every executor.

One pathological page (deeply nested tables, megabytes of inline script) can keep an HTML
extractor busy for minutes and stall a whole worker. The limit must work where the extractor
runs: in the main thread (local executor, MPI ranks) *and* in Dask's worker threads, where
``SIGALRM`` cannot be used. So:

* in the main thread of a process: ``setitimer(ITIMER_REAL)`` + ``SIGALRM`` raise
  :class:`ExtractTimeout` at the deadline;
* in any other thread: one watchdog thread per process raises :class:`ExtractTimeout` in the
  late thread with ``PyThreadState_SetAsyncExc``.

Both interrupt Python code (trafilatura, justext, mwparserfromhell and our LaTeX cleaner are
Python around lxml/regex calls). A single long C call (one lxml parse, one resiliparse call) is
interrupted when it returns to Python, so the limit can overshoot by that call's duration.
resiliparse is fast, except that its main-content pass is quadratic in the nesting depth of
``<div>``s (100,000 nested: 6 minutes in one call): such pages do not reach it
(``adapters/resiliparse_text.DEEP_DIVS``). No child process and no
per-document pickling is needed, which keeps the per-document overhead at a few microseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import heapq
import itertools
import signal
import threading
import time
from collections.abc import Iterator


class ExtractTimeout(Exception):
    """The per-document time limit was reached."""


#: After the deadline the interrupt comes again every this many seconds until the block ends:
#: an extractor's broad ``except`` (trafilatura has them), or Python's handling of an
#: exception raised inside a weakref or ``__del__`` callback ("Exception ignored in ..."),
#: can swallow one, and the page would then run to its natural end.
REFIRE_S = 0.5


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`ExtractTimeout` inside the block if it runs longer than ``seconds``
    (``None`` or ``<= 0``: no limit)."""
    if not seconds or seconds <= 0:
        yield
        return
    start = time.monotonic()
    if threading.current_thread() is threading.main_thread() and _can_use_signal():
        with _alarm(seconds):
            yield
    else:
        with _WATCHDOG.guard(seconds):
            yield
    # Extractors catch broad exceptions internally (trafilatura does), which can swallow the
    # interrupt; a block that ran past the limit counts as timed out all the same, so the
    # outcome depends on the elapsed time only, not on where the interrupt landed.
    if time.monotonic() - start > seconds:
        raise ExtractTimeout()


def _can_use_signal() -> bool:
    # Respect a SIGALRM handler someone else installed (pytest-timeout's signal method...).
    cur = signal.getsignal(signal.SIGALRM)
    return cur in (signal.SIG_DFL, signal.SIG_IGN, None, _on_alarm)


def _on_alarm(signum: int, frame: object) -> None:
    raise ExtractTimeout()


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class _Watchdog:
    """One daemon thread per process holding the deadlines of all guarded blocks."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._heap: list[tuple[float, int, int]] = []  # (deadline, token, thread id)
        self._active: dict[int, int] = {}  # token -> thread id
        self._fired: set[int] = set()  # tokens interrupted at least once
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def guard(self, seconds: float) -> Iterator[None]:
        tid = threading.get_ident()
        with self._cv:
            token = next(self._tokens)
            self._active[token] = tid
            heapq.heappush(self._heap, (time.monotonic() + seconds, token, tid))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="curator-timeout",
                                                daemon=True)
                self._thread.start()
            self._cv.notify()
        try:
            yield
        finally:
            fired = self._release(token)
            if fired:
                _consume_pending()

    def _release(self, token: int) -> bool:
        """Drop ``token`` (no interrupt comes for it after this); whether it ever fired.

        An interrupt still pending for this thread can land on any Python call in here: the
        release is retried until it completes, so the watchdog never keeps firing at a thread
        whose block has ended."""
        fired = False
        while True:
            try:
                with self._cv:
                    self._active.pop(token, None)
                    fired = fired or token in self._fired
                    self._fired.discard(token)
                return fired
            except ExtractTimeout:
                continue

    def _loop(self) -> None:
        while True:
            with self._cv:
                while self._heap and self._heap[0][1] not in self._active:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cv.wait(5.0)
                    continue
                deadline, token, tid = self._heap[0]
                now = time.monotonic()
                if now < deadline:
                    self._cv.wait(deadline - now)
                    continue
                heapq.heappop(self._heap)
                self._fired.add(token)
                heapq.heappush(self._heap, (now + REFIRE_S, token, tid))  # until it ends
                _set_async_exc(tid, ExtractTimeout)


def _set_async_exc(tid: int, exc: type[BaseException]) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(exc))


def _noop() -> None:
    """A Python call: the interpreter delivers a pending asynchronous exception on entry."""


def _consume_pending() -> None:
    """Take, in this thread, an interrupt that was still pending when its block ended.

    It is raised and caught here rather than cleared with ``PyThreadState_SetAsyncExc(tid,
    NULL)``: on CPython 3.11 clearing leaves the interpreter's "asynchronous exception pending"
    flag set for good, which sends every thread through the slow path at each check and makes
    the first call under ``sys.setprofile`` (a profiler, a coverage tool) spin forever."""
    try:
        _noop()
    except ExtractTimeout:
        pass


_WATCHDOG = _Watchdog()
