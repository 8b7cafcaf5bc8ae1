"""Redis Cluster across hosts, on simulated hosts (network namespaces on a private bridge,
tests/helpers_netns.py): the multi-host recipe of docs/dedup.md, run as written there (its
blocks are read from the page), gives three TLS + password masters on three hosts whose
certificates carry the addresses they announce, and fuzzy_dedup run from a fourth host removes
exactly what the embedded backend removes and leaves no key. And a loopback ``redis.nodes``
(the default) with the Dask workers on another host is one line before any stage runs, where
it used to run, fill the workers' own local servers and fail at the end."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests import helpers_netns as nn
from tests.core.helpers_core import BIN
from tests.dedup.helpers_dedup import REPO, make_corpus, rejected
from tests.helpers import cli_env, run_cli

DOC = REPO / "docs" / "dedup.md"
PASSWORD = "multi-host-pw-7Rq"
NODES = ("redis-a", "redis-b", "redis-c")


@pytest.fixture(autouse=True)
def _need_netns() -> None:
    nn.require()


def recipe(name: str) -> str:
    """The code block under ``<!-- recipe: name -->`` in docs/dedup.md."""
    m = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```\w*\n(.*?)\n```", DOC.read_text(), re.S)
    assert m, f"docs/dedup.md has no recipe block '{name}'"
    return m.group(1)


def _bash(net: nn.Hosts, host: str, script: str, env: dict[str, str], cwd: Path) -> str:
    p = net.run(
        host, ["bash", "-euo", "pipefail", "-c", script], check=False, env=env, cwd=cwd, timeout=120
    )
    assert p.returncode == 0, f"on {host}:\n{script}\n{p.stdout}\n{p.stderr}"
    return p.stdout


def _cli(certs: Path) -> list[str]:
    return [
        "redis-cli",
        "--tls",
        "--cacert",
        str(certs / "ca.pem"),
        "--cert",
        str(certs / "client.pem"),
        "--key",
        str(certs / "client.key"),
    ]


def _header(wd: Path, inputs: str, executor: str = "{type: local}") -> str:
    return (
        f"name: multi-host\nwork_dir: {wd}\nexecutor: {executor}\nprogress: 'off'\n"
        f"report: false\nstages:\n  - read_jsonl: {{paths: '{inputs}'}}\n"
    )


def test_documented_multi_host_recipe_removes_what_embedded_removes(tmp_path):
    make_corpus(tmp_path / "c", n_base=90, seed=31, shards=4)
    inputs = f"{tmp_path}/c/part*.jsonl"
    certs = tmp_path / "certs"
    with nn.Hosts([*NODES, "cur"]) as net:
        env = cli_env() | {"CERTS": str(certs), "REDIS_PASSWORD": PASSWORD}
        env |= {f"ADDR_{n[-1].upper()}": net.addr(n) for n in NODES}
        _bash(net, "cur", recipe("redis-certs"), env, tmp_path)
        for n in NODES:
            _bash(
                net,
                n,
                recipe("redis-node"),
                env | {"NODE": n, "ADDR": net.addr(n), "DATA": str(tmp_path / f"data-{n}")},
                tmp_path,
            )
        for n in NODES:  # each server answers (on its address, with TLS and the password)
            deadline = time.monotonic() + 60
            while (
                net.run(
                    "cur",
                    [*_cli(certs), "-h", net.addr(n), "-p", "6379", "ping"],
                    check=False,
                    env=env | {"REDISCLI_AUTH": PASSWORD},
                ).stdout.strip()
                != "PONG"
            ):
                assert time.monotonic() < deadline, f"redis on {n} never answered"
                time.sleep(0.1)
        _bash(net, "cur", recipe("redis-create"), env, tmp_path)

        def cluster_ok() -> bool:
            info = net.run(
                "cur",
                [*_cli(certs), "-h", net.addr("redis-a"), "-p", "6379", "cluster", "info"],
                check=False,
                env=env | {"REDISCLI_AUTH": PASSWORD},
            ).stdout
            return "cluster_state:ok" in info

        deadline = time.monotonic() + 60
        while not cluster_ok():
            assert time.monotonic() < deadline, "the cluster never reached cluster_state:ok"
            time.sleep(0.1)
        # the certificates are the recipe's: every node's carries its name and its address
        from cryptography import x509

        for n in NODES:
            c = x509.load_pem_x509_certificate((certs / f"{n}.pem").read_bytes())
            san = c.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            assert [str(v.value) for v in san] == [n, net.addr(n)]

        stage = "\n".join("    " + x for x in recipe("redis-stage").splitlines())
        y = tmp_path / "redis.yaml"
        y.write_text(_header(tmp_path / "w", inputs) + stage.replace("    - ", "  - ", 1) + "\n")
        p = net.run(
            "cur",
            [str(BIN / "curator"), "run", str(y)],
            check=False,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr
        assert PASSWORD not in p.stdout + p.stderr
        left = sum(
            int(
                net.run(
                    "cur",
                    [*_cli(certs), "-h", net.addr(n), "-p", "6379", "dbsize"],
                    env=env | {"REDISCLI_AUTH": PASSWORD},
                ).stdout.strip()
            )
            for n in NODES
        )
        assert left == 0
    ye = tmp_path / "embedded.yaml"
    ye.write_text(
        _header(tmp_path / "we", inputs)
        + "  - fuzzy_dedup: {shingle: word, ngram: 5, threshold: 0.7}\n"
    )
    run_cli("run", str(ye))
    got = rejected(tmp_path / "w", "fuzzy_dedup")
    assert len(got) > 20 and got == rejected(tmp_path / "we", "fuzzy_dedup")


def test_loopback_redis_nodes_with_a_worker_on_another_host_is_one_line(tmp_path):
    make_corpus(tmp_path / "c", n_base=30, seed=32, shards=2)
    y = tmp_path / "p.yaml"
    sched_file = tmp_path / "scheduler.json"
    with nn.Hosts(["cur", "work"]) as net:
        y.write_text(
            _header(
                tmp_path / "w",
                f"{tmp_path}/c/part*.jsonl",
                f"{{type: dask, scheduler_file: '{sched_file}'}}",
            )
            + "  - tests.core.helpers_core:min_words: {n: 5}\n"
            + "  - fuzzy_dedup: {backend: redis}\n"
        )  # redis.nodes: its default
        env = cli_env()
        procs = [
            net.popen(
                "cur",
                [
                    str(BIN / "dask"),
                    "scheduler",
                    "--scheduler-file",
                    str(sched_file),
                    "--host",
                    net.addr("cur"),
                    "--port",
                    "0",
                    "--dashboard-address",
                    "127.0.0.1:0",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        ]
        deadline = time.monotonic() + 60
        while not sched_file.exists():
            assert time.monotonic() < deadline, "the scheduler never wrote its file"
            time.sleep(0.05)
        procs.append(
            net.popen(
                "work",
                [
                    str(BIN / "dask"),
                    "worker",
                    "--scheduler-file",
                    str(sched_file),
                    "--host",
                    net.addr("work"),
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        wait = (
            "from distributed import Client; import sys; "
            "c = Client(scheduler_file=sys.argv[1], timeout='60s'); "
            "c.wait_for_workers(1, timeout=120); "
            "print(*c.scheduler_info(n_workers=-1)['workers'])"
        )
        worker = net.run(
            "cur", [str(BIN / "python"), "-c", wait, str(sched_file)], env=env, timeout=180
        ).stdout.split()[0]
        p = net.run(
            "cur",
            [str(BIN / "curator"), "run", str(y)],
            check=False,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        for proc in procs:
            proc.kill()
            proc.wait()
    assert p.returncode != 0
    errs = [x for x in p.stderr.splitlines() if x.startswith("curator: error:")]
    assert len(errs) == 1 and "Traceback" not in p.stderr, p.stderr
    assert (
        f"fuzzy_dedup.redis.nodes: 127.0.0.1:7000 is a loopback address, but tasks run on "
        f"other hosts (host {net.addr('work')} (Dask worker {worker}))"
    ) in errs[0], errs
    stages = tmp_path / "w" / "stages"
    assert not stages.exists() or not any(
        p.name in ("_SUCCESS.json", "_done") for p in stages.rglob("*")
    ), os.listdir(stages)


def test_loopback_redis_nodes_with_mpi_ranks_on_two_hosts_is_one_line(tmp_path):
    """The same with MPI: ``mpiexec`` with a hostfile of two hosts (``ip netns exec`` standing
    in for ssh); every rank stops with the line, before any stage runs."""
    make_corpus(tmp_path / "c", n_base=30, seed=33, shards=2)
    y = tmp_path / "p.yaml"
    y.write_text(
        _header(tmp_path / "w", f"{tmp_path}/c/part*.jsonl", "{type: mpi}")
        + "  - fuzzy_dedup: {backend: redis, redis: {nodes: ['localhost:7001']}}\n"
    )
    (tmp_path / "hosts").write_text("n0:1\nn1:1\n")
    with nn.Hosts(["n0", "n1"]) as net:
        ssh = net.ssh_stand_in(tmp_path / "ssh")
        env = cli_env() | {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "eth0"}
        p = net.run(
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
                "2",
                str(BIN / "python"),
                "-m",
                "curator",
                "run",
                str(y),
            ],
            check=False,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
    assert p.returncode != 0
    errs = {x for x in p.stderr.splitlines() if x.startswith("curator: error:")}
    assert len(errs) == 1 and "Traceback" not in p.stderr, p.stderr  # each rank, one line
    assert (
        "fuzzy_dedup.redis.nodes: localhost:7001 is a loopback address, but tasks run on "
        "other hosts (host n1 (MPI rank 1))"
    ) in errs.pop(), p.stderr
    stages = tmp_path / "w" / "stages"
    assert not stages.exists() or not any(
        p.name in ("_SUCCESS.json", "_done") for p in stages.rglob("*")
    )
