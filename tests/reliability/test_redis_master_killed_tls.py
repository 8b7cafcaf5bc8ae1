"""A master of a TLS + password Redis Cluster killed while fuzzy dedup runs: the one error
line names the master (``host:port``) and the real cause, and never blames TLS, whether the
master died with a claim in flight (the connection drops: an EOF inside TLS) or before the
next one (the reconnection is refused).

The run is frozen by failure injection right after its first claim batch (or its first shard's
claim); the master is then stopped (SIGSTOP) so that the next batch sent to it stays in flight
(its bytes wait, unread, in the master's socket), and killed once they are there."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from tests.dedup import helpers_dedup as hd

FUZZY = "{shingle: word, ngram: 5, threshold: 0.7"
SECRET = "pw-tls-kill-9fQ"
ENV = "CURATOR_TEST_REDIS_PASSWORD"


def _unread_bytes(port: int) -> int:
    """Bytes received but not yet read by whoever holds a TCP connection on local ``port``
    (``/proc/net/tcp``: the rx_queue of established sockets)."""
    total = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                local, state, queues = cols[1], cols[3], cols[4]
                if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                    total += int(queues.split(":")[1], 16)
    return total


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory):
    tls = hd.make_tls_files(tmp_path_factory.mktemp("tls"))
    c = hd.RedisCluster(tmp_path_factory.mktemp("redis-tls-kill"), password=SECRET, tls=tls)
    yield c
    c.close()


@pytest.mark.parametrize("when", ["claim in flight", "between claims"])
def test_killed_tls_master_is_named_with_the_real_cause(tmp_path: Path, tls_cluster, when):
    cluster = tls_cluster
    # claims go to the nodes in the order of their names: the last one is still to be sent
    # when the run stops after its first batch (on a connection opened by the task's check)
    down = int(max(cluster.nodes).rsplit(":", 1)[1])
    hd.make_corpus(tmp_path / "c", n_base=90, seed=21, shards=6)
    nodes = ", ".join(f"'{n}'" for n in cluster.nodes)
    y = hd.write_pipeline(
        tmp_path / "r.yaml",
        tmp_path / "w",
        f"{tmp_path}/c/part*.jsonl",
        f"  - fuzzy_dedup: {FUZZY}, backend: redis, redis: {{nodes: [{nodes}], "
        f"password_env: {ENV}, tls: {{enabled: true, ca_file: '{cluster.tls.ca}'}}}}}}\n",
    )
    env = dict(os.environ, PYTHONPATH=str(hd.REPO), **{ENV: SECRET})
    in_flight = when == "claim in flight"
    run = hd.start_frozen_run(
        tmp_path, ["run", str(y)], env, after="_claim_batch" if in_flight else "claim"
    )
    master = cluster.procs.pop(down)
    try:
        if in_flight:
            master.send_signal(signal.SIGSTOP)
            os.killpg(run.pid, signal.SIGCONT)
            hd.wait_until(
                lambda: _unread_bytes(down) > 0,
                timeout=60,
                what="a claim waiting in the stopped master's socket",
            )
            master.kill()
        else:
            master.kill()
            master.wait(timeout=10)
            os.killpg(run.pid, signal.SIGCONT)
        master.wait(timeout=10)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        if master.poll() is None:
            master.kill()
            master.wait()
        cluster.start_node(down)  # empty, same slots (nodes.conf): the next case starts clean
        cluster.wait_ok()
    assert run.returncode == 1, err
    errors = [x for x in err.splitlines() if x.startswith("curator: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    line = errors[0]
    cause = "connection reset" if in_flight else "connection refused"
    assert f"redis node 127.0.0.1:{down} is down or unreachable: {cause}" in line, line
    assert "TLS" not in line, line
    assert SECRET not in out + err
    assert not (tmp_path / "w" / "stages" / "fuzzy_dedup" / "_SUCCESS.json").exists()
