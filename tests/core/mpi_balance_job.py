"""Run under mpiexec by test_mpi_balance.py: one heavy item and many light ones through
``MPIExecutor.map``; each rank writes which items it took, how long each ran and when it
finished."""

from __future__ import annotations

import hashlib
import json
import sys
import time

from curator.core.executors import MPIExecutor

BLOCK = b"x" * (1 << 20)


def work(item: tuple[int, int]) -> tuple[int, str]:
    """Real CPU work: ``rounds`` SHA-256 passes over 1 MiB."""
    idx, rounds = item
    h = hashlib.sha256()
    for _ in range(rounds):
        h.update(BLOCK)
    return idx, h.hexdigest()[:8]


def main() -> None:
    out, schedule, heavy, light, n_light = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    ex = MPIExecutor(schedule=schedule)
    items = [(0, heavy)] + [(i, light) for i in range(1, n_light + 1)]
    spans: dict[int, float] = {}

    def timed(item: tuple[int, int]) -> tuple[int, str]:
        t = time.perf_counter()
        r = work(item)
        spans[item[0]] = time.perf_counter() - t
        return r

    ex.comm.Barrier()
    results = ex.map(timed, items)
    finished = time.time()
    with open(f"{out}.{ex.rank}.json", "w") as f:
        json.dump({"taken": ex.last_taken, "spans": spans, "finished": finished,
                   "results": results}, f)


if __name__ == "__main__":
    main()
