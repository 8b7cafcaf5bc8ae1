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
