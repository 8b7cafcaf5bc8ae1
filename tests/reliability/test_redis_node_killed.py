"""A Redis Cluster node killed *while* fuzzy dedup runs (tests/dedup covers a node that is down
before the stage starts). The run is frozen (SIGSTOP) as soon as the signature phase has
started, one master is killed (SIGKILL) and the cluster left to notice, then the run continues:
it must fail with one line naming the node, mark nothing done and write no output shard. After
the node is back, the rerun keeps the finished signatures, removes exactly what the embedded
backend removes, and deletes its Redis keys."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import redis

from tests.dedup import helpers_dedup as hd
from tests.helpers import run_cli

FUZZY = "{shingle: word, ngram: 5, threshold: 0.7"


def _kill_node(cluster: hd.RedisCluster, port: int) -> None:
    proc = cluster.procs.pop(port)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def test_redis_node_killed_during_fuzzy_dedup(tmp_path, tmp_path_factory):
    cluster = hd.RedisCluster(tmp_path_factory.mktemp("redis-kill"))
    run = None
    try:
        hd.make_corpus(tmp_path / "c", n_base=60, seed=5, shards=6)
        nodes = ", ".join(f"'{n}'" for n in cluster.nodes)
        y = hd.write_pipeline(tmp_path / "r.yaml", tmp_path / "w", f"{tmp_path}/c/part*.jsonl",
                              f"  - fuzzy_dedup: {FUZZY}, backend: redis, "
                              f"redis_nodes: [{nodes}]}}\n")
        sdir = tmp_path / "w" / "stages" / "fuzzy_dedup"
        run = subprocess.Popen([sys.executable, "-m", "curator", "run", str(y)], cwd=hd.REPO,
                               env=dict(os.environ, PYTHONPATH=str(hd.REPO)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
        sig_dir = sdir / "_phases" / "signatures"
        deadline = time.monotonic() + 120
        while not (sig_dir.exists() and any(sig_dir.glob("*.pkl"))):
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.wait(timeout=0.005)
            assert run.returncode is None, run.communicate()
            assert time.monotonic() < deadline
        os.killpg(run.pid, signal.SIGSTOP)  # freeze the run inside the stage
        down = cluster.ports[2]
        _kill_node(cluster, down)
        alive = cluster.ports[0]
        hd.wait_until(lambda: redis.Redis(port=alive).cluster("info")["cluster_state"] == "fail",
                      what="cluster to notice the node is gone")
        os.killpg(run.pid, signal.SIGCONT)
        _out, err = run.communicate(timeout=120)
        assert run.returncode != 0
        last = err.strip().splitlines()[-1]
        assert last.startswith("curator: error:") and f"127.0.0.1:{down}" in last, err
        assert "Traceback" not in err
        assert not (sdir / "_SUCCESS.json").exists()
        assert not (sdir / "data").exists()
        sigs = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sig_dir.glob("*.pkl")}
        assert sigs

        cluster.start_node(down)  # empty (no persistence), same slots from nodes.conf
        cluster.wait_ok()
        run_cli("run", str(y))
        # not redone: the same files (an atomic rewrite would give a new inode)
        assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sigs} == sigs
        ye = hd.write_pipeline(tmp_path / "e.yaml", tmp_path / "we", f"{tmp_path}/c/part*.jsonl",
                               f"  - fuzzy_dedup: {FUZZY}}}\n")
        run_cli("run", str(ye))
        got = hd.rejected(tmp_path / "w", "fuzzy_dedup")
        assert got and got == hd.rejected(tmp_path / "we", "fuzzy_dedup")
        assert cluster.keys("curator:*") == 0
    finally:
        if run is not None and run.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        cluster.close()
