"""The Dask cluster ``--executor dask`` starts is not an open door: another account of the
machine cannot connect to its scheduler and run code as the run's user, and every port its
processes listen on (scheduler, workers, nannies, dashboard and the workers' HTTP servers)
is on loopback. A real curator run held at a gate, a real other user (``setpriv``)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.core.helpers_core import make_corpus
from tests.helpers import cli_env, stop_process_groups
from tests.security.helpers_security import other_user

ATTACK = r"""
import json, os, sys
from distributed import Client
from distributed.security import Security

addr = sys.argv[1]
port = addr.rsplit(":", 1)[1]
out = {"uid": os.getuid()}
for name, target, sec in (("plain", f"tcp://127.0.0.1:{port}", None),
                          ("own_tls", f"tls://127.0.0.1:{port}", Security.temporary())):
    try:
        c = Client(target, security=sec, timeout=5)
        out[name] = f"ran as uid {list(c.run(os.getuid).values())}"
        c.close()
    except Exception as e:
        out[name] = f"refused: {type(e).__name__}"
print(json.dumps(out), flush=True)
"""


def _tree(root: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = set(), [root]
    while todo:
        p = todo.pop()
        out.add(p)
        todo += kids.get(p, [])
    return out


def _listening(pids: set[int]) -> list[str]:
    """``address:port`` of every TCP socket the processes ``pids`` listen on."""
    ss = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    out = []
    for line in ss.splitlines():
        found = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if found & pids:
            out.append(line.split()[3])
    return out


def test_another_user_cannot_run_code_on_the_local_cluster(tmp_path):
    uid, gid = other_user()
    make_corpus(str(tmp_path / "in.jsonl"), 20, seed=3)
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    (tmp_path / "p.yaml").write_text(
        f"name: t\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
        f"  - read_jsonl: {{paths: ['{tmp_path / 'in.jsonl'}']}}\n"
        f"  - tests.core.helpers_core:gate: {{fifo: '{fifo}'}}\n")
    run = subprocess.Popen([sys.executable, "-m", "curator", "run", "p.yaml", "--executor",
                            "dask", "--workers", "1"], cwd=tmp_path, env=cli_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    lines: list[str] = []
    try:
        assert run.stdout is not None
        address = None
        for line in run.stdout:  # the run names its scheduler when the cluster is up
            lines.append(line)
            m = re.search(r"dask scheduler (\S+);", line)
            if m:
                address = m.group(1)
                break
        assert address, "".join(lines)
        rest = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)
        rest.start()
        # a worker is inside the gate now or soon; the cluster is complete either way
        home = tmp_path / "other-home"
        home.mkdir()
        os.chown(home, uid, gid)
        env = {"PATH": os.environ["PATH"], "HOME": str(home),
               "DASK_TEMPORARY_DIRECTORY": str(home)}
        attack = subprocess.run(
            ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--",
             sys.executable, "-c", ATTACK, address],
            capture_output=True, text=True, env=env, cwd=str(home), timeout=120)
        assert attack.returncode == 0, attack.stderr
        got = json.loads(attack.stdout.strip().splitlines()[-1])
        assert got["uid"] == uid
        assert got["plain"].startswith("refused"), got
        assert got["own_tls"].startswith("refused"), got
        listening = _listening(_tree(run.pid))
        assert len(listening) >= 4, listening  # scheduler, dashboard, worker, nanny, ...
        assert all(a.startswith("127.0.0.1:") for a in listening), listening
        with open(fifo, "w") as f:
            f.write("go")
        assert run.wait(timeout=180) == 0, "".join(lines)
        rest.join(timeout=30)
    finally:
        if run.poll() is None:
            stop_process_groups([run])
    assert address.startswith("tls://127.0.0.1:")


def test_a_local_dashboard_beyond_loopback_is_refused(tmp_path):
    from curator.base.errors import ConfigError
    from curator.core.executors import DaskExecutor

    for addr in (":8787", "0.0.0.0:0", "192.0.2.1:8787"):
        with pytest.raises(ConfigError, match="dashboard has no authentication"):
            DaskExecutor(workers=1, dashboard_address=addr)


def _recipe(step: str) -> list[str]:
    """The command of docs/cluster.md's mutual-TLS recipe whose block follows ``step``."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cluster.md").read_text()
    block = doc[doc.index(step):].split("```", 2)[1]
    lines = [x.split("$ ", 1)[-1] for x in block.strip().splitlines()
             if not re.match(r"(\S+\$ )?(C=|export )", x.strip())]
    return shlex.split(" ".join(x.rstrip("\\").strip() for x in lines))


def test_the_documented_recipe_serves_nothing_beyond_its_host(tmp_path):
    """docs/cluster.md's scheduler and worker commands, run as written (host 127.0.0.1, this
    machine's certificates): every socket they listen on is on their host. Without
    ``--dashboard-address 127.0.0.1:0`` the worker's HTTP server listened on 0.0.0.0."""
    from tests.helpers import BIN, run_cli

    certs = tmp_path / "certs"
    run_cli("tls-certs", str(certs), "--hosts", "127.0.0.1")
    sched = tmp_path / "scheduler.json"
    subst = {"$VENV/bin/dask": str(BIN / "dask"), "/shared/scheduler.json": str(sched),
             "10.0.0.1": "127.0.0.1", "10.0.0.2": "127.0.0.1", "8786": "0",
             "127.0.0.1:8787": "127.0.0.1:0", "9000:9015": "0",
             "9100:9115": "0"}  # free ports: tests run side by side

    def fill(args: list[str]) -> list[str]:
        out = []
        for a in args:
            a = re.sub(r"\$C/node0\d", f"{certs}/127.0.0.1", a).replace("$C", str(certs))
            out.append(subst.get(a, a))
        return out

    scheduler = fill(_recipe("2. **Scheduler**"))
    worker = fill(_recipe("3. **Workers**"))
    worker[worker.index("--nworkers") + 1] = "1"
    assert "dask" in scheduler[0] and scheduler[1] == "scheduler" and worker[1] == "worker"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(subprocess.Popen(scheduler, cwd=tmp_path, env=cli_env(),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))
        wdir = tmp_path / "worker"
        wdir.mkdir()
        procs.append(subprocess.Popen([*worker, "--local-directory", str(wdir)], cwd=wdir,
                                      env=cli_env(), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))
        from distributed import Client
        from distributed.security import Security

        sec = Security(tls_ca_file=str(certs / "ca.pem"),
                       tls_client_cert=str(certs / "client.pem"),
                       tls_client_key=str(certs / "client.key"), require_encryption=True)
        with Client(scheduler_file=str(sched), timeout="60s", security=sec) as c:
            c.wait_for_workers(1, timeout=120)
            pids = set().union(*(_tree(p.pid) for p in procs))
            listening = _listening(pids)
        # scheduler: comm + HTTP; worker: nanny, worker comm, worker HTTP
        assert len(listening) >= 5, listening
        assert all(a.startswith("127.0.0.1:") for a in listening), listening
    finally:
        stop_process_groups(procs)
