"""Run under mpiexec by test_mpi_balance.py: rank 1 is slow (it sleeps, as a rank blocked on
I/O or on a bigger shard would keep the others waiting), rank 0 finishes at once; rank 0 writes
the CPU and wall seconds it spent waiting in ``map``, ``barrier`` and ``broadcast``; then a
dynamic ``map`` in which rank 1's item is slow: rank 0's queue thread waits for its next
request all that time, and each rank writes how often that thread woke up."""

from __future__ import annotations

import json
import sys
import time

from curator.core.executors import MPIExecutor

SLOW_S = 3.0


def work(item: int) -> int:
    if item == 1:
        time.sleep(SLOW_S)
    return item * 10


def main() -> None:
    out = sys.argv[1]
    ex = MPIExecutor(schedule="static")  # item 0 on rank 0, item 1 on rank 1
    ex.barrier()
    spent: dict[str, tuple[float, float]] = {}

    def measure(name: str, fn: object) -> object:
        c, w = time.process_time(), time.perf_counter()
        r = fn()  # type: ignore[operator]
        spent[name] = (time.process_time() - c, time.perf_counter() - w)
        return r

    results = measure("map", lambda: ex.map(work, [0, 1]))
    if ex.rank == 1:
        time.sleep(SLOW_S)
    measure("barrier", ex.barrier)
    if ex.rank == 0:
        time.sleep(SLOW_S)
    value = measure("broadcast", lambda: ex.broadcast("plan" if ex.rank == 0 else None))
    queue = MPIExecutor()  # dynamic: rank 0 answers requests from a thread

    def slow_on_rank_1(item: int) -> int:
        # rank 0's items take a moment so that rank 1's request comes before they are gone
        time.sleep(SLOW_S if queue.rank == 1 else 0.1)
        return item * 10

    queued = measure("queue", lambda: queue.map(slow_on_rank_1, list(range(6))))
    with open(f"{out}.{ex.rank}.json", "w") as f:
        json.dump({"results": results, "value": value, "spent": spent, "queued": queued,
                   "schedule": queue.schedule, "polls": queue.last_polls,
                   "taken": queue.last_taken}, f)


if __name__ == "__main__":
    main()
