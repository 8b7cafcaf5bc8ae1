"""A Redis Cluster master's network lost while fuzzy_dedup claims its buckets, on simulated
hosts (tests/helpers_netns.py): three TLS + password masters started with docs/dedup.md's
multi-host recipe, ``curator run`` on a fourth host, the master's bridge port taken down once
the run reaches its bucket step (the run is frozen with SIGSTOP at that point, so the fault
lands there on every run). An outage shorter than ``executor.peer_timeout_s`` (during which the
other masters declare the cluster down) only pauses the run: same output as the embedded
backend's. A longer one ends the run at the deadline with one line naming the master and the
cause; once the link is back the same command finishes, reusing the signatures already made,
with the same output and no key left."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import helpers_netns as nn
from tests.core.helpers_core import BIN, tree_digest
from tests.dedup.helpers_dedup import REPO, make_corpus, rejected
from tests.helpers import cli_env, run_cli

DOC = REPO / "docs" / "dedup.md"
PASSWORD = "link-down-pw-4Kd"
NODES = ("redis-a", "redis-b", "redis-c")
#: the outage the run rides out (longer than the recipe's cluster-node-timeout of 5 s, so the
#: other masters mark redis-b failed and answer CLUSTERDOWN until it is back), and its deadline
SHORT_S, SHORT_DEADLINE_S = 8, 40
#: the deadline of the run whose master stays cut off
LONG_DEADLINE_S = 12

pytestmark = pytest.mark.slow


def recipe(name: str) -> str:
    m = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```\w*\n(.*?)\n```", DOC.read_text(), re.S)
    assert m, f"docs/dedup.md has no recipe block '{name}'"
    return m.group(1)


@dataclass
class Net:
    net: nn.Hosts
    tmp: Path
    env: dict[str, str]
    certs: Path

    def cli(self, *args: str) -> list[str]:
        c = self.certs
        return ["redis-cli", "--tls", "--cacert", f"{c}/ca.pem", "--cert", f"{c}/client.pem",
                "--key", f"{c}/client.key", *args]  # fmt: skip

    def ask(self, node: str, *cmd: str) -> str:
        """A redis-cli command to ``node``, from the client's host."""
        return self.net.run(
            "cur",
            self.cli("-h", self.net.addr(node), "-p", "6379", *cmd),
            check=False,
            env=self.env | {"REDISCLI_AUTH": PASSWORD},
            timeout=30,
        ).stdout.strip()

    def until(self, what: str, ok: callable, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not ok():
            assert time.monotonic() < deadline, what
            time.sleep(0.1)


def _bash(net: nn.Hosts, host: str, script: str, env: dict[str, str], cwd: Path) -> None:
    p = net.run(
        host, ["bash", "-euo", "pipefail", "-c", script], check=False, env=env, cwd=cwd, timeout=120
    )
    assert p.returncode == 0, f"on {host}:\n{script}\n{p.stdout}\n{p.stderr}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Net]:
    nn.require()
    tmp = tmp_path_factory.mktemp("redis-link")
    certs = tmp / "certs"
    with nn.Hosts([*NODES, "cur"]) as net:
        env = cli_env() | {"CERTS": str(certs), "REDIS_PASSWORD": PASSWORD}
        env |= {f"ADDR_{n[-1].upper()}": net.addr(n) for n in NODES}
        c = Net(net, tmp, env, certs)
        _bash(net, "cur", recipe("redis-certs"), env, tmp)
        for n in NODES:
            node_env = env | {"NODE": n, "ADDR": net.addr(n), "DATA": str(tmp / f"data-{n}")}
            _bash(net, n, recipe("redis-node"), node_env, tmp)
        for n in NODES:
            c.until(f"redis on {n} never answered", lambda n=n: c.ask(n, "ping") == "PONG")
        _bash(net, "cur", recipe("redis-create"), env, tmp)
        c.until(
            "the cluster never got ok",
            lambda: "cluster_state:ok" in c.ask("redis-a", "cluster", "info"),
        )
        yield c


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("redis-link-data")
    make_corpus(d, n_base=90, seed=41, shards=4)
    return d


def _pipeline(tmp: Path, name: str, corpus: Path, backend: str, deadline: float) -> Path:
    stage = recipe("redis-stage") if backend == "redis" else (
        "- fuzzy_dedup: {shingle: word, ngram: 5, threshold: 0.7}"
    )  # fmt: skip
    stage = "\n".join("  " + x for x in stage.splitlines())
    y = tmp / f"{name}.yaml"
    y.write_text(
        f"name: {name}\nwork_dir: {tmp / name}\nprogress: 'off'\nreport: false\n"
        f"executor: {{type: local, peer_timeout_s: {deadline}}}\nstages:\n"
        f"  - read_jsonl: {{paths: '{corpus}/part*.jsonl'}}\n{stage}\n"
        "  - write_jsonl: {path: out}\n"
    )
    return y


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory, corpus) -> tuple[dict[str, str], set[str]]:
    """What the embedded backend writes and removes (the Redis backend removes the same)."""
    tmp = tmp_path_factory.mktemp("redis-link-embedded")
    run_cli("run", str(_pipeline(tmp, "embedded", corpus, "embedded", 120)))
    removed = set(rejected(tmp / "embedded", "fuzzy_dedup"))
    assert len(removed) > 20
    return tree_digest(tmp / "embedded" / "out"), removed


def _start_frozen_at_the_bucket_step(c: Net, y: Path) -> subprocess.Popen:
    """``curator run y`` on the client host, stopped (SIGSTOP) once its signatures are made
    and it is about to claim buckets (it writes ``redis/offsets.npz`` just before)."""
    wd = c.tmp / y.stem
    p = c.net.popen(
        "cur",
        [str(BIN / "curator"), "run", str(y)],
        env=c.env,
        cwd=c.tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(wd.glob("stages/*/redis/offsets.npz")):
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "the run never reached its bucket step"
            time.sleep(0.01)
        os.killpg(p.pid, signal.SIGSTOP)
    except BaseException:
        _ended(p)
        raise
    return p


def _signatures(wd: Path) -> dict[str, tuple[int, int]]:
    return {
        f.name: (f.stat().st_ino, f.stat().st_mtime_ns)
        for f in wd.glob("stages/*/_phases/signatures/*.pkl")
    }


def _ended(p: subprocess.Popen) -> None:
    """Whatever happened in the test, the run is not left stopped or running."""
    if p.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.communicate()


def _finish(p: subprocess.Popen, timeout: float) -> tuple[str, float]:
    t0 = time.monotonic()
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
        raise AssertionError(f"curator still running {timeout} s later: {err[-2000:]}") from None
    return err, time.monotonic() - t0


def test_a_short_outage_of_a_masters_node_only_pauses_the_run(cluster, corpus, undisturbed):
    y = _pipeline(cluster.tmp, "short", corpus, "redis", SHORT_DEADLINE_S)
    p = _start_frozen_at_the_bucket_step(cluster, y)
    try:
        try:
            cluster.net.link_down("redis-b")
            os.killpg(p.pid, signal.SIGCONT)
            time.sleep(SHORT_S)  # the outage itself, not a wait for something to happen
        finally:
            cluster.net.link_up("redis-b")
            os.killpg(p.pid, signal.SIGCONT)
        t0 = time.monotonic()  # (measured for docs/cluster.md: when the masters say "ok" again)
        cluster.until(
            "no cluster_state:ok", lambda: "state:ok" in cluster.ask("redis-a", "cluster", "info")
        )
        ok = time.monotonic() - t0
        err, after = _finish(p, SHORT_DEADLINE_S + 60)
    finally:
        _ended(p)
    print(
        f"\nshort outage ({SHORT_S} s): cluster_state ok {ok:.1f} s and the run ended "
        f"{ok + after:.1f} s after the link was back"
    )
    assert p.returncode == 0, err[-3000:]
    assert PASSWORD not in err
    assert tree_digest(cluster.tmp / "short" / "out") == undisturbed[0]
    assert set(rejected(cluster.tmp / "short", "fuzzy_dedup")) == undisturbed[1]


def test_a_master_cut_off_past_the_deadline_is_one_line_and_the_rerun_resumes(
    cluster, corpus, undisturbed
):
    y = _pipeline(cluster.tmp, "long", corpus, "redis", LONG_DEADLINE_S)
    wd = cluster.tmp / "long"
    p = _start_frozen_at_the_bucket_step(cluster, y)
    sigs = _signatures(wd)
    assert len(sigs) == 4
    try:
        cluster.net.link_down("redis-b")
        os.killpg(p.pid, signal.SIGCONT)
        err, took = _finish(p, LONG_DEADLINE_S + 60)
    finally:
        cluster.net.link_up("redis-b")
        _ended(p)
    print(f"\nlong outage: the run ended {took:.1f} s after the link went down")
    assert p.returncode == 1, err[-3000:]
    assert "Traceback" not in err and PASSWORD not in err, err[-3000:]
    lines = err.strip().splitlines()
    assert [x for x in lines if "error" in x.lower()] == lines[-1:], err[-3000:]
    named = re.match(
        r"curator: error: redis node (\S+) is down or unreachable: timed out", lines[-1]
    )
    assert named and named[1] in ("redis-b:6379", f"{cluster.net.addr('redis-b')}:6379"), lines[-1]
    assert "TLS" not in lines[-1] and f"peer_timeout_s = {LONG_DEADLINE_S}" in lines[-1], lines[-1]
    assert LONG_DEADLINE_S <= took < LONG_DEADLINE_S + 12, took  # the deadline plus one try
    # the link is back: the same command finishes without making the signatures again, with
    # the undisturbed output, and leaves no key
    t0 = time.monotonic()
    r = cluster.net.run(
        "cur",
        [str(BIN / "curator"), "run", str(y)],
        check=False,
        env=cluster.env,
        cwd=cluster.tmp,
        timeout=300,
    )
    print(f"rerun after the link came back: {time.monotonic() - t0:.1f} s")
    assert r.returncode == 0, r.stderr[-3000:]
    assert _signatures(wd) == sigs
    assert tree_digest(wd / "out") == undisturbed[0]
    assert set(rejected(wd, "fuzzy_dedup")) == undisturbed[1]
    assert sum(int(cluster.ask(n, "dbsize") or -1) for n in NODES) == 0
