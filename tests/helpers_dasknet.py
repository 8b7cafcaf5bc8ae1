"""A Dask cluster over mutual TLS across simulated hosts (tests/helpers_netns.py): a scheduler,
workers and the ``curator run`` client each on a host of its own, started with the commands of
docs/cluster.md as written there (host names and paths filled in). Used by
tests/reliability/test_dask_netns.py."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests import helpers_netns as nn
from tests.helpers import BIN, ROOT, cli_env, run_cli

DOC = ROOT / "docs" / "cluster.md"
#: executor.peer_timeout_s and Dask's TCP deadline in these tests (120 s by default): a 10 s
#: outage stays under it, with the seconds of TCP retransmission backoff after it
DEADLINE_S = 20


def recipe(step: str) -> str:
    """The shell text of docs/cluster.md's code block that follows ``step``, prompts removed."""
    doc = DOC.read_text()
    block = doc[doc.index(step) :].split("```", 2)[1]
    lines = [re.sub(r"^\S+\$ ", "", x.strip()) for x in block.strip().splitlines()]
    return "\n".join(lines)


@dataclass
class Cluster:
    net: nn.Hosts
    tmp: Path
    certs: Path
    sched_file: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def log(self, host: str) -> str:
        return (self.tmp / f"{host}.log").read_text(errors="replace")

    def start(self, host: str, script: str) -> None:
        """Run shell ``script`` (a docs recipe) on ``host``, its output in ``<host>.log``."""
        env = cli_env() | {"VENV": str(BIN.parent), "C": str(self.certs), "HOST": host}
        with open(self.tmp / f"{host}.log", "a") as log:
            self.procs[host] = self.net.popen(
                host,
                ["sh", "-c", script],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.tmp / host,
            )

    def client(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """``curator run`` on the client host."""
        return self.net.run(
            "cli",
            [sys.executable, "-m", "curator", "run", *args],
            check=False,
            timeout=timeout,
            env=cli_env(),
            cwd=self.tmp,
        )

    def client_popen(self, *args: str) -> subprocess.Popen:
        return self.net.popen(
            "cli",
            [sys.executable, "-m", "curator", "run", *args],
            env=cli_env(),
            cwd=self.tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def kill(self, host: str, what: str) -> None:
        """SIGKILL the processes on ``host`` whose command line holds ``what``."""
        pids = subprocess.run(
            ["ip", "netns", "pids", self.net.ns(host)], capture_output=True, text=True
        ).stdout.split()
        for pid in pids:
            with contextlib.suppress(OSError):
                if what.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "):
                    os.kill(int(pid), signal.SIGKILL)

    def workers(self) -> int:
        """Workers the scheduler knows, asked from the client host (-1: no answer)."""
        if not self.sched_file.exists():
            return -1
        code = (
            "import sys\nfrom distributed import Client\nfrom distributed.security import "
            "Security\nc=sys.argv[1]\n"
            "s=Security(tls_ca_file=c+'/ca.pem', tls_client_cert=c+'/client.pem', "
            "tls_client_key=c+'/client.key', require_encryption=True)\n"
            "with Client(scheduler_file=sys.argv[2], security=s, timeout='20s') as cl:\n"
            "    print(len(cl.scheduler_info(n_workers=-1)['workers']))\n"
        )
        p = self.net.run(
            "cli",
            [sys.executable, "-c", code, str(self.certs), str(self.sched_file)],
            check=False,
            timeout=60,
            env=cli_env(),
        )
        return int(p.stdout.strip()) if p.returncode == 0 else -1

    def wait_workers(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.workers() < n:
            assert time.monotonic() < deadline, f"{n} workers never joined:\n" + "\n".join(
                f"--- {h}\n{self.log(h)[-1500:]}" for h in self.procs
            )
            time.sleep(0.5)


def fill(script: str, tmp: Path, net: nn.Hosts) -> str:
    """A docs recipe with this test's paths and host addresses: /shared is ``tmp``, node01 is
    the scheduler's host, node02 and node03 the workers'."""
    hosts = {"node01": "sched", "node02": "w1", "node03": "w2"}
    for doc_name, host in hosts.items():
        script = script.replace(f"$C/{doc_name}.", f"$C/{host}.")
    script = script.replace("C=~/curator-certs", "").replace("/shared/", f"{tmp}/")
    script = script.replace("10.0.0.1", net.addr("sched"))
    # the tests' deadline, and a supervisor that restarts at once
    script = script.replace("TIMEOUTS__TCP=120s", f"TIMEOUTS__TCP={DEADLINE_S}s")
    return script.replace("sleep 10", "sleep 1")


@contextlib.contextmanager
def cluster(tmp: Path) -> Iterator[Cluster]:
    """Scheduler on ``sched``, a supervised worker on ``w1`` and one on ``w2`` (the recipe's
    worker command for node02, with each host's own address and certificate), the client
    host ``cli``."""
    certs = tmp / "certs"
    run_cli("tls-certs", str(certs), "--hosts", "sched,w1,w2")
    with nn.Hosts(["sched", "w1", "w2", "cli"]) as net:
        for h in net.names:
            (tmp / h).mkdir()
        c = Cluster(net, tmp, certs, tmp / "scheduler.json")
        c.start("sched", fill(recipe("2. **Scheduler**"), tmp, net))
        worker = recipe("Keep workers running")
        for w in ("w1", "w2"):
            script = fill(worker, tmp, net).replace("10.0.0.2", net.addr(w))
            script = script.replace("$C/w1.", f"$C/{w}.").replace("--nworkers 16", "--nworkers 1")
            c.start(w, script)
        try:
            c.wait_workers(2)
            yield c
        finally:
            for p in c.procs.values():
                p.kill()
            for p in c.procs.values():
                p.wait()


def listening(net: nn.Hosts, host: str) -> list[str]:
    """``address:port`` of every TCP socket listening on ``host``."""
    out = net.run(host, ["ss", "-ltnH"]).stdout
    return sorted(line.split()[3] for line in out.splitlines() if line.strip())


__all__ = ["Cluster", "cluster", "listening", "recipe", "shlex"]
