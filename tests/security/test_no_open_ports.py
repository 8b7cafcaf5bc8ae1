"""No port of a curator command is reachable from the network: every socket that a run's
processes listen on is bound to the loopback interface, checked with ``ss`` while they run.

``curator train --nproc-per-node 2`` used ``torchrun --standalone``, whose rendezvous and
worker TCPStores listen on every interface (``*:<port>``) without authentication, and whose c10d
rendezvous unpickles the state it reads from its store: anyone on the network could run code.
The check runs at a deterministic point: a ``sitecustomize`` module (failure injection, on the
ranks' ``PYTHONPATH``) makes rank 0 record ``ss -ltnup`` right after every rank joined the
process group, while the launcher, its store and both ranks are alive."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from tests.helpers import train_two_cpu_ranks

ROOT = Path(__file__).resolve().parents[2]

HOOK = '''
import json
import os
import subprocess
from pathlib import Path

import torch.distributed as dist

_init = dist.init_process_group


def _parent(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _tree(root):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                kids.setdefault(_parent(d), []).append(int(d))
            except (OSError, IndexError):
                pass
    out, todo = set(), [root]
    while todo:
        p = todo.pop()
        out.add(p)
        todo += kids.get(p, [])
    return out


def _recording_init(*a, **k):
    _init(*a, **k)
    dist.barrier()  # every rank's store connection and gloo listener is up
    if dist.get_rank() == 0:
        top = os.getpid()  # the curator process: the highest ancestor given SS_RECORD
        while b"SS_RECORD=" in Path(f"/proc/{_parent(top)}/environ").read_bytes():
            top = _parent(top)
        out = subprocess.run(["ss", "-ltnupH"], capture_output=True, text=True).stdout
        with open(os.environ["SS_RECORD"], "w") as f:
            json.dump({"ss": out, "pids": sorted(_tree(top))}, f)
    dist.barrier()


dist.init_process_group = _recording_init
'''


def test_training_on_several_local_ranks_listens_on_loopback_only(blend_path, tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    record = tmp_path / "ss.txt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(hook)]),
               SS_RECORD=str(record))
    run = train_two_cpu_ranks(blend_path, tmp_path / "ck", 2, env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "ck" / "train_summary.json").exists()
    seen = json.loads(record.read_text())
    pids = set(seen["pids"])
    assert len(pids) >= 3, seen  # curator, two ranks (and torchrun's agent before)
    ours = [line for line in seen["ss"].splitlines()
            if {int(p) for p in re.findall(r"pid=(\d+)", line)} & pids]
    assert ours, seen  # the store the ranks share at least
    local = [x.split()[4] for x in ours]
    assert all(a.startswith(("127.", "[::1]:", "[::ffff:127.")) for a in local), ours
