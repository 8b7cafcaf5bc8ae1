"""MPI ranks on different hosts (network namespaces on one machine, tests/helpers_netns.py),
started as on a plain SSH cluster: Hydra's ``mpiexec`` with a hostfile, ``ip netns exec``
standing in for ssh. Undisturbed, and through a 10 s outage of a rank's node, the run gives the
bytes of a local run; a node cut off for longer than ``executor.peer_timeout_s`` (the 60 s and
300 s outages, and a partition, all look the same until the deadline) ends every rank at the
deadline with one line naming the lost host, instead of hanging for ever."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import helpers_netns as nn
from tests.core.helpers_core import BIN, make_corpus, tree_digest
from tests.helpers import cli_env, run_cli

PIPE = """\
name: mpinet
work_dir: {wd}
progress: off
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl", shard_size_mb: 0.02}}
  - tests.core.helpers_core:hold: {{folder: "{hold}"}}
  - tests.core.helpers_core:AboveMedian: {{}}
  - fuzzy_dedup: {{threshold: 0.8}}
  - write_jsonl: {{path: out}}
"""
#: the deadline in these tests (120 s by default): a 10 s outage stays under it, with the
#: seconds TCP's retransmission backoff adds after the link is back
DEADLINE_S = 20
#: the deadline where the outage outlasts it (the test waits only this long)
LOST_S = 8

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _need_netns() -> None:
    nn.require()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("mpinet-data")
    for i in range(4):
        make_corpus(str(d / f"p{i}.jsonl"), 60, seed=10 + i)
    return d


def _pipeline(tmp: Path, corpus: Path, name: str) -> tuple[Path, Path, Path]:
    wd, hold = tmp / f"w-{name}", tmp / f"hold-{name}"
    hold.mkdir()
    p = tmp / f"{name}.yaml"
    p.write_text(PIPE.format(wd=wd, data=corpus, hold=hold))
    return p, wd, hold


@pytest.fixture(scope="module")
def local_out(tmp_path_factory, corpus) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("mpinet-local")
    p, wd, hold = _pipeline(tmp, corpus, "local")
    (hold / "release").touch()
    run_cli("run", str(p))
    return tree_digest(wd / "out")


def _mpiexec(net: nn.Hosts, tmp: Path, pipeline: Path, timeout_s: float) -> subprocess.Popen:
    """``mpiexec -f hosts`` on host n0, one rank on n0 and one on n1, as a user starts it on a
    plain SSH cluster (docs/cluster.md), with the deadline set to ``timeout_s``. Its output
    goes to ``tmp/mpiexec.out|err``: a proxy on a cut-off host keeps those open after mpiexec
    has ended, as an ssh client would."""
    hostfile = tmp / "hosts"
    hostfile.write_text("n0:1\nn1:1\n")
    ssh = net.ssh_stand_in(tmp / "ssh")
    # one machine: force MPI over TCP on the bridge (UCX would use shared memory)
    env = cli_env() | {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "eth0"}
    with open(tmp / "mpiexec.out", "w") as out, open(tmp / "mpiexec.err", "w") as err:
        return net.popen(
            "n0",
            [
                str(BIN / "mpiexec"),
                "-launcher",
                "ssh",
                "-launcher-exec",
                str(ssh),
                "-f",
                str(hostfile),
                "-n",
                "2",
                sys.executable,
                "-m",
                "curator",
                "run",
                str(pipeline),
                "--executor",
                "mpi",
                "--set",
                f"executor.peer_timeout_s={timeout_s}",
            ],
            env=env,
            stdout=out,
            stderr=err,
            cwd=tmp,
        )


def _ended(proc: subprocess.Popen, tmp: Path, timeout: float) -> tuple[int, str]:
    """mpiexec's exit status and stderr once it ends; fails the test if it has not ended
    within ``timeout`` seconds."""
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(
            f"mpiexec still running after {timeout} s: {(tmp / 'mpiexec.err').read_text()[-2000:]}"
        ) from None
    return rc, (tmp / "mpiexec.err").read_text()


def _curator_pids(net: nn.Hosts, host: str) -> list[int]:
    """PIDs of curator ranks still alive on ``host``."""
    pids = subprocess.run(
        ["ip", "netns", "pids", net.ns(host)], capture_output=True, text=True
    ).stdout.split()
    alive = []
    for pid in pids:
        try:
            if b"curator" in Path(f"/proc/{pid}/cmdline").read_bytes():
                alive.append(int(pid))
        except OSError:
            pass
    return alive


def _wait_held(hold: Path, proc: subprocess.Popen, n: int = 2) -> None:
    """Until every rank is inside the run (each has written its held-* file)."""
    deadline = time.monotonic() + 120
    while len(list(hold.glob("held-*"))) < n:
        if proc.poll() is not None:
            raise AssertionError(f"mpiexec ended early: {proc.communicate()}")
        assert time.monotonic() < deadline, "the ranks never started their shards"
        time.sleep(0.05)
    hosts = {f.name.split("-")[1] for f in hold.glob("held-*")}
    assert hosts == {"n0", "n1"}, hosts  # one rank on each host


def test_mpi_ranks_on_two_hosts_match_a_local_run(tmp_path, corpus, local_out):
    p, wd, hold = _pipeline(tmp_path, corpus, "mpi")
    (hold / "release").touch()
    with nn.Hosts(["n0", "n1"]) as net:
        proc = _mpiexec(net, tmp_path, p, DEADLINE_S)
        rc, err = _ended(proc, tmp_path, 300)
    assert rc == 0, err[-3000:]
    assert tree_digest(wd / "out") == local_out
    assert "Traceback" not in err


def test_a_10s_outage_of_a_ranks_node_recovers_identically(tmp_path, corpus, local_out):
    p, wd, hold = _pipeline(tmp_path, corpus, "short")
    with nn.Hosts(["n0", "n1"]) as net:
        proc = _mpiexec(net, tmp_path, p, DEADLINE_S)
        _wait_held(hold, proc)
        net.link_down("n1")
        (hold / "release").touch()
        time.sleep(10)  # the outage itself, not a wait for something to happen
        net.link_up("n1")
        rc, err = _ended(proc, tmp_path, 300)
    assert rc == 0, err[-3000:]
    assert tree_digest(wd / "out") == local_out


@pytest.mark.parametrize("cut", ["n1", "n0", "partition"])
def test_a_node_lost_for_longer_than_the_deadline_ends_every_rank_with_one_line(
    tmp_path, corpus, cut
):
    """Rank 1's node, or rank 0's (where mpiexec runs), cut off for good (a 60 s or 300 s
    outage is the same until the deadline), or the two hosts partitioned: every rank ends
    within the deadline (plus a few beats), exit 1, one line naming the host. On the old code
    the ranks waited in a collective for ever."""
    p, _, hold = _pipeline(tmp_path, corpus, f"lost-{cut}")
    with nn.Hosts(["n0", "n1"]) as net:
        proc = _mpiexec(net, tmp_path, p, LOST_S)
        _wait_held(hold, proc)
        if cut == "partition":
            net.partition(["n0"], ["n1"])
        else:
            net.link_down(cut)
        (hold / "release").touch()
        t0 = time.monotonic()
        rc, err = _ended(proc, tmp_path, LOST_S + 40)
        took = time.monotonic() - t0
        # rank 1, on the side away from mpiexec, stops itself too (it cannot reach mpiexec)
        far = "n1"
        deadline = time.monotonic() + 30
        while _curator_pids(net, far) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _curator_pids(net, far), f"a rank on {far} outlived the deadline"
    assert rc != 0
    lines = err.strip().splitlines()
    # the run's own start lines, then one error line: no traceback, no MPI library noise
    assert [x for x in lines if "error" in x.lower() or "abort" in x.lower()] == lines[-1:], err
    assert "Traceback" not in err
    # the line names both ends: with two ranks, rank 0 cannot tell its own cut from its peer's
    assert lines[-1].startswith(
        "curator: error: MPI rank 1 on host n1 not heard from by rank 0 on host n0 for 8 s"
    ), lines[-1]
    assert "executor.peer_timeout_s" in lines[-1]
    assert LOST_S - 1 < took < LOST_S + 30, took


def test_a_password_variable_missing_on_one_ranks_host_is_one_line_naming_it(tmp_path, corpus):
    """Rank 0 has the Redis password variable, rank 1 (on another host) does not: mpiexec's
    MPMD form gives each rank its own environment (``-env`` for rank 0 alone, the variable not
    in mpiexec's own). Every rank stops before any stage runs with one line naming rank 1's
    host and the variable, the password in no output, mpiexec ends (no rank left waiting)."""
    var, secret = "CURATOR_NETNS_REDIS_PW", "mpmd-secret-8Hq"
    p = tmp_path / "p.yaml"
    with nn.Hosts(["n0", "n1"]) as net:
        p.write_text(
            f"name: mpipw\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
            f'  - read_jsonl: {{paths: "{corpus}/*.jsonl"}}\n'
            "  - fuzzy_dedup: {backend: redis, redis: "
            f"{{nodes: ['{net.addr('n0')}:7000'], password_env: {var}}}}}\n"
        )
        (tmp_path / "hosts").write_text("n0:1\nn1:1\n")
        ssh = net.ssh_stand_in(tmp_path / "ssh")
        env = cli_env() | {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "eth0"}
        env.pop(var, None)
        run = [sys.executable, "-m", "curator", "run", str(p), "--executor", "mpi"]
        t0 = time.monotonic()
        r = net.run(
            "n0",
            [
                str(BIN / "mpiexec"),
                "-launcher",
                "ssh",
                "-launcher-exec",
                str(ssh),
                "-f",
                str(tmp_path / "hosts"),
                "-n",
                "1",
                "-env",
                var,
                secret,
                *run,
                ":",
                "-n",
                "1",
                *run,
            ],
            check=False,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        took = time.monotonic() - t0
    assert r.returncode != 0
    assert secret not in r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    errs = {x for x in r.stderr.splitlines() if x.startswith("curator: error:")}
    assert errs == {
        f"curator: error: fuzzy_dedup.redis.password_env: environment variable '{var}' is not "
        "set on host n1 (MPI rank 1); it must be set wherever the stage's tasks run (for Dask "
        "workers: in the environment they are started in); nothing ran"
    }, r.stderr[-3000:]
    assert not (tmp_path / "w" / "stages").exists() or not any(
        f.name in ("_SUCCESS.json", "_done") for f in (tmp_path / "w" / "stages").rglob("*")
    )
    print(f"\nmissing variable on rank 1: mpiexec ended after {took:.1f} s")
