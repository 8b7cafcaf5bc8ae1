"""MPI ranks take shards from a shared queue: one huge shard keeps one rank busy while the
others drain the rest, so ranks finish within one shard's time of each other (real mpiexec)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from curator.core.executors import MPIExecutor
from tests.core.helpers_core import BIN
from tests.helpers import cli_env

HERE = Path(__file__).resolve().parent


def _run(tmp_path: Path, schedule: str, heavy: int, light: int, n_light: int) -> list[dict]:
    out = tmp_path / schedule
    cmd = [str(BIN / "mpiexec"), "-n", "2", sys.executable, str(HERE / "mpi_balance_job.py"),
           str(out), schedule, str(heavy), str(light), str(n_light)]
    subprocess.run(cmd, env=cli_env(), check=True, timeout=300, capture_output=True)
    return [json.loads(Path(f"{out}.{r}.json").read_text()) for r in range(2)]


def test_skewed_shards_balance_across_ranks(tmp_path):
    heavy, light, n_light = 1200, 40, 40  # the heavy shard is ~30 light ones
    ranks = _run(tmp_path, "dynamic", heavy, light, n_light)
    # every item ran exactly once, results come back in item order on every rank
    taken = sorted(i for r in ranks for i in r["taken"])
    assert taken == list(range(n_light + 1))
    assert ranks[0]["results"] == ranks[1]["results"]
    assert [r[0] for r in ranks[0]["results"]] == list(range(n_light + 1))
    # the rank with the heavy shard took few light ones; the other drained the queue
    big = 0 if 0 in ranks[0]["taken"] else 1
    assert len(ranks[big]["taken"]) < len(ranks[1 - big]["taken"])
    # whoever finished last was busy with its last item when the other finished: the gap is
    # at most that one item's time (plus the queue's poll latency and process noise)
    last = max(ranks, key=lambda r: r["finished"])
    first = min(ranks, key=lambda r: r["finished"])
    last_item = last["taken"][-1]
    gap = last["finished"] - first["finished"]
    assert gap <= last["spans"][str(last_item)] + 0.25, (gap, last["spans"][str(last_item)])


def test_static_schedule_still_available(tmp_path):
    ranks = _run(tmp_path, "static", 4, 2, 9)
    assert ranks[0]["taken"] == [0, 2, 4, 6, 8] and ranks[1]["taken"] == [1, 3, 5, 7, 9]
    assert ranks[0]["results"] == ranks[1]["results"]


def test_a_rank_waiting_for_a_slow_one_sleeps_instead_of_spinning(tmp_path):
    """MPICH's blocking collectives busy-poll: the rank that finished first used to burn a
    core (CPU seconds about equal to the wait) until the slowest rank arrived."""
    out = tmp_path / "wait"
    cmd = [str(BIN / "mpiexec"), "-n", "2", sys.executable, str(HERE / "mpi_wait_job.py"),
           str(out)]
    subprocess.run(cmd, env=cli_env(), check=True, timeout=120, capture_output=True)
    ranks = [json.loads(Path(f"{out}.{r}.json").read_text()) for r in range(2)]
    assert ranks[0]["results"] == ranks[1]["results"] == [0, 10]
    assert ranks[0]["value"] == ranks[1]["value"] == "plan"
    # the waiting rank: rank 0 in map and barrier, rank 1 in broadcast
    for rank, name in ((0, "map"), (0, "barrier"), (1, "broadcast")):
        cpu, wall = ranks[rank]["spent"][name]
        assert wall >= 2.5, (name, wall)  # it did wait for the slow rank
        assert cpu < 0.3, (name, cpu, wall)  # ... asleep
    # the queue: every item once, the same results on both ranks
    assert ranks[0]["queued"] == ranks[1]["queued"] == [i * 10 for i in range(6)]
    assert sorted(ranks[0]["taken"] + ranks[1]["taken"]) == list(range(6))
    assert ranks[0]["schedule"] == "dynamic" and ranks[1]["taken"]
    # rank 0's queue thread polled for requests while rank 1 worked (>= 3 s): backing off
    # to poll_max_s (20 ms; 2 ms the first ~40 ms, then 5% of the wait) it woke ~50 times a
    # second, not ~500 (a fixed 2 ms poll)
    wall = ranks[0]["spent"]["queue"][1]
    assert wall >= 2.5, wall
    assert ranks[0]["polls"] <= wall / MPIExecutor.poll_max_s + 100, (ranks[0]["polls"], wall)
    assert ranks[0]["polls"] > 10  # it did poll all along (late sleeps on a loaded machine: fewer)
