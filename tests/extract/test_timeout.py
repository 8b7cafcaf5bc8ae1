"""The per-page time limit holds when the extractor swallows its first interrupt (a broad
``except`` in trafilatura, or an interrupt that lands in a weakref callback, which Python
reports as "Exception ignored in ..." and drops)."""

from __future__ import annotations

import threading
import time

import pytest

from curator.extract.timeout import REFIRE_S, ExtractTimeout, time_limit

SPIN_S = 20.0  # how long the swallowing block would run on its own


def _swallow_once_then_spin() -> tuple[int, float]:
    """A block that catches the first ExtractTimeout and carries on; returns how many it
    caught before one got through, and the seconds it took."""
    caught = 0
    t0 = time.monotonic()
    try:
        with time_limit(0.2):
            while time.monotonic() - t0 < SPIN_S:
                try:
                    while time.monotonic() - t0 < SPIN_S:
                        pass
                except ExtractTimeout:
                    if caught:
                        raise
                    caught += 1
    except ExtractTimeout:
        pass
    return caught, time.monotonic() - t0


@pytest.mark.parametrize("where", ["main thread (SIGALRM)", "other thread (watchdog)"])
def test_a_swallowed_interrupt_comes_again(where: str) -> None:
    if where.startswith("main"):
        caught, took = _swallow_once_then_spin()
    else:
        out: list[tuple[int, float]] = []
        t = threading.Thread(target=lambda: out.append(_swallow_once_then_spin()))
        t.start()
        t.join()
        caught, took = out[0]
    assert caught == 1  # the first interrupt was swallowed
    # the second came REFIRE_S later, not when the block would have ended by itself
    assert took < 0.2 + 10 * REFIRE_S < SPIN_S


def test_a_block_that_ends_in_time_is_left_alone() -> None:
    t0 = time.monotonic()
    with time_limit(0.5):
        while time.monotonic() - t0 < 0.05:
            pass
    x = 0
    for i in range(2_000_000):  # well past the deadline: no late interrupt lands here
        x += i
    assert x > 0


PROFILED_AFTER_TIMEOUT = """
import sys, threading, time
from curator.extract.timeout import ExtractTimeout, time_limit

def late():
    try:
        with time_limit(0.05):
            while True:
                pass
    except ExtractTimeout:
        pass

def ended_as_it_fired():
    try:
        with time_limit(0.05):
            time.sleep(0.3)  # one C call: the interrupt is still pending when it returns
    except ExtractTimeout:
        pass

for target in (late, ended_as_it_fired):
    t = threading.Thread(target=target)
    t.start()
    t.join()
sys.setprofile(lambda *a: None)
print(sum(abs(i) for i in range(1000)))
sys.setprofile(None)
"""


def test_a_timed_out_thread_leaves_no_pending_interrupt_behind() -> None:
    # Clearing a pending interrupt with PyThreadState_SetAsyncExc(tid, NULL) left CPython 3.11's
    # interpreter-wide flag set: the next call under sys.setprofile then spun forever.
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", PROFILED_AFTER_TIMEOUT], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "499500"
