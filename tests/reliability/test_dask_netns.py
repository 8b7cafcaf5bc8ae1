"""A Dask cluster over mutual TLS across hosts (network namespaces on one machine): scheduler,
two workers and the ``curator run`` client each on a host of its own, started with the
commands of docs/cluster.md as written there. Undisturbed, through a 10 s outage of the
scheduler's node, and with a worker's node lost for good, the run gives the bytes of a local
run. The scheduler's node lost for longer than ``executor.peer_timeout_s`` (a 60 s or a 300 s
outage look the same until then), or the scheduler killed, ends the run with one line naming
the scheduler instead of a 69-line traceback; the supervised workers come back, and the rerun
gives the same bytes. Nothing listens beyond the TLS ports the recipe opens."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import helpers_dasknet as hd
from tests import helpers_netns as nn
from tests.core.helpers_core import make_corpus, tree_digest
from tests.helpers import run_cli

D = hd.DEADLINE_S
PIPE = """\
name: dasknet
work_dir: {wd}
progress: off
executor:
  type: dask
  scheduler_file: {sched}
  peer_timeout_s: {deadline}
  tls: {{ca_file: {certs}/ca.pem, cert: {certs}/client.pem, key: {certs}/client.key}}
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl", shard_size_mb: 0.02}}
  - tests.core.helpers_core:hold: {{folder: "{hold}"}}
  - tests.core.helpers_core:AboveMedian: {{}}
  - fuzzy_dedup: {{threshold: 0.8}}
  - write_jsonl: {{path: out}}
"""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("dasknet-data")
    for i in range(4):
        make_corpus(str(d / f"p{i}.jsonl"), 60, seed=20 + i)
    return d


@pytest.fixture(scope="module")
def local_out(tmp_path_factory, corpus) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("dasknet-local")
    (tmp / "hold").mkdir()
    (tmp / "hold" / "release").touch()
    p = tmp / "p.yaml"
    p.write_text(
        PIPE.format(wd=tmp / "w", sched="x", deadline=D, certs="x", data=corpus, hold=tmp / "hold")
    )
    run_cli("run", str(p), "--executor", "local")
    return tree_digest(tmp / "w" / "out")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[hd.Cluster]:
    nn.require()
    with hd.cluster(tmp_path_factory.mktemp("dasknet")) as c:
        yield c


def _pipeline(c: hd.Cluster, corpus: Path, name: str) -> tuple[Path, Path, Path]:
    wd, hold = c.tmp / f"w-{name}", c.tmp / f"hold-{name}"
    hold.mkdir()
    p = c.tmp / f"{name}.yaml"
    p.write_text(
        PIPE.format(wd=wd, sched=c.sched_file, deadline=D, certs=c.certs, data=corpus, hold=hold)
    )
    return p, wd, hold


def _held(c: hd.Cluster, hold: Path, proc: subprocess.Popen) -> None:
    """Until both workers are inside a shard (each wrote its held-<host>-<pid> file)."""
    deadline = time.monotonic() + 120
    while {f.name.split("-")[1] for f in hold.glob("held-*")} != {"w1", "w2"}:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the workers never started their shards"
        time.sleep(0.05)


def _one_line(proc: subprocess.Popen, within: float) -> tuple[str, float]:
    """The client's last line once it has ended, and how long that took; it must end within
    ``within`` seconds, non-zero, with no traceback."""
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"curator still running {within} s later: {err[-2000:]}") from None
    took = time.monotonic() - t0
    assert proc.returncode != 0, err[-2000:]
    assert "Traceback" not in err and "Cancelled" not in err, err[-3000:]
    lines = err.strip().splitlines()
    assert [x for x in lines if "error" in x.lower()] == lines[-1:], err[-3000:]
    return lines[-1], took


def test_recipe_across_hosts_matches_local_and_opens_only_its_tls_ports(cluster, corpus, local_out):
    p, wd, hold = _pipeline(cluster, corpus, "plain")
    (hold / "release").touch()
    r = cluster.client(str(p))
    assert r.returncode == 0, r.stderr[-3000:]
    assert tree_digest(wd / "out") == local_out
    # every listening socket is on loopback, or a TLS port of the recipe on the host's address
    net = cluster.net
    expect = {
        "sched": {f"{net.addr('sched')}:8786"},
        "w1": {f"{net.addr('w1')}:9000", f"{net.addr('w1')}:9100"},
        "w2": {f"{net.addr('w2')}:9000", f"{net.addr('w2')}:9100"},
    }
    for host, tls_ports in expect.items():
        socks = hd.listening(net, host)
        assert {s for s in socks if not s.startswith("127.0.0.1:")} == tls_ports, (host, socks)
    # the printed dashboard URL answers, on the node it names (through the SSH tunnel beyond)
    line = next(x for x in r.stderr.splitlines() if "dashboard " in x)
    url = re.search(r"dashboard (\S+)", line)[1]
    assert f"on the scheduler's node {net.addr('sched')} only" in line, line
    get = (
        "import sys, urllib.request\nprint(urllib.request.urlopen(sys.argv[1], timeout=10).status)"
    )
    assert net.run("sched", [hd.sys.executable, "-c", get, url]).stdout.strip() == "200"


def test_a_10s_outage_of_the_schedulers_node_recovers_identically(cluster, corpus, local_out):
    cluster.wait_workers(2)
    p, wd, hold = _pipeline(cluster, corpus, "short")
    proc = cluster.client_popen(str(p))
    _held(cluster, hold, proc)
    cluster.net.link_down("sched")
    (hold / "release").touch()
    time.sleep(10)  # the outage itself, not a wait for something to happen
    cluster.net.link_up("sched")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert tree_digest(wd / "out") == local_out


def test_a_workers_node_lost_for_good_leaves_the_run_to_the_other_worker(
    cluster, corpus, local_out
):
    """w1 cut off for longer than the deadline: the scheduler drops it at Dask's TCP deadline
    (the recipe's DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP) and w2 reruns its shards."""
    cluster.wait_workers(2)
    p, wd, hold = _pipeline(cluster, corpus, "worker-lost")
    proc = cluster.client_popen(str(p))
    _held(cluster, hold, proc)
    cluster.net.link_down("w1")
    (hold / "release").touch()
    try:
        _, err = proc.communicate(timeout=D + 120)
    finally:
        cluster.net.link_up("w1")
    assert proc.returncode == 0, err[-3000:]
    assert tree_digest(wd / "out") == local_out


def test_the_schedulers_node_lost_ends_the_run_with_one_line_then_workers_return(
    cluster, corpus, local_out
):
    cluster.wait_workers(2)
    p, wd, hold = _pipeline(cluster, corpus, "sched-lost")
    proc = cluster.client_popen(str(p))
    _held(cluster, hold, proc)
    cluster.net.link_down("sched")
    (hold / "release").touch()
    try:
        line, took = _one_line(proc, D + 40)
    finally:
        cluster.net.link_up("sched")
    addr = cluster.net.addr("sched")
    assert line.startswith(
        f"curator: error: dask: lost the connection to the scheduler tls://{addr}:8786: "
    ), line
    assert f"executor.peer_timeout_s ({D} s)" in line
    assert took < D + 20, took
    # the workers ended with their connection; their supervisor loop brings them back, and
    # the rerun of the same command finishes with the same bytes
    cluster.wait_workers(2, timeout=180)
    (hold / "release").touch()
    r = cluster.client(str(p))
    assert r.returncode == 0, r.stderr[-3000:]
    assert tree_digest(wd / "out") == local_out


def test_a_short_outage_of_a_workers_node_recovers_identically(cluster, corpus, local_out):
    """w1 cut off for 5 s while it holds a shard (well under the deadline): the scheduler keeps
    it, its shard finishes once the link is back, and the run gives the local bytes."""
    cluster.wait_workers(2)
    p, wd, hold = _pipeline(cluster, corpus, "worker-short")
    proc = cluster.client_popen(str(p))
    _held(cluster, hold, proc)
    cluster.net.link_down("w1")
    try:
        (hold / "release").touch()
        time.sleep(5)  # the outage itself, not a wait for something to happen
    finally:
        cluster.net.link_up("w1")
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=D + 120)
    print(
        f"\nworker outage 5 s: the run ended {time.monotonic() - t0:.1f} s after the link was back"
    )
    assert proc.returncode == 0, err[-3000:]
    assert tree_digest(wd / "out") == local_out


def test_every_workers_node_cut_off_ends_the_run_with_one_line(cluster, corpus):
    """Both workers' nodes cut off for good: the scheduler drops them at the deadline, and with
    no worker left the client ends after executor.no_workers_timeout_s with one line; once the
    links are back the supervised workers rejoin."""
    cluster.wait_workers(2)
    p, _, hold = _pipeline(cluster, corpus, "workers-lost")
    proc = cluster.client_popen(str(p), "--set", "executor.no_workers_timeout_s=5")
    _held(cluster, hold, proc)
    cluster.net.link_down("w1")
    cluster.net.link_down("w2")
    try:
        (hold / "release").touch()
        line, took = _one_line(proc, D + 60)
    finally:
        cluster.net.link_up("w1")
        cluster.net.link_up("w2")
    print(f"\nevery worker cut off: the run ended {took:.1f} s after the links went down")
    addr = cluster.net.addr("sched")
    assert line.startswith(
        f"curator: error: dask: no worker alive for 5 s on the scheduler tls://{addr}:8786"
    ), line
    assert took < D + 30, took
    cluster.wait_workers(2, timeout=180)


def test_the_scheduler_killed_ends_the_run_with_one_line(cluster, corpus):
    """Last in this module: the scheduler does not come back."""
    cluster.wait_workers(2)
    p, _, hold = _pipeline(cluster, corpus, "sched-killed")
    proc = cluster.client_popen(str(p))
    _held(cluster, hold, proc)
    cluster.kill("sched", "dask scheduler")
    line, took = _one_line(proc, 60)
    addr = cluster.net.addr("sched")
    assert line.startswith(
        f"curator: error: dask: lost the connection to the scheduler tls://{addr}:8786: it ended"
    ), line
    assert took < 15, took
