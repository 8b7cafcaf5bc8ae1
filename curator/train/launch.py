"""Launching: in-process for one CPU rank, local rank processes around a loopback-only store
for several on this machine, and an sbatch script (``torchrun``, an argument list, never a
shell string) for Slurm clusters.

Every launch writes the resolved :class:`TrainConfig` to ``<save>/train_config.json`` and the
ranks read it back, so all ranks, and a later resume, see the same settings.
"""

from __future__ import annotations

import os
import queue
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from curator.base.errors import ConfigError, CuratorError
from curator.train.config import TrainConfig


def config_path(cfg: TrainConfig) -> str:
    return os.path.join(os.path.abspath(cfg.save), "train_config.json")


def torchrun_command(config_file: str, *, nproc_per_node: int, nnodes: int = 1,
                     rdzv_endpoint: str | None = None, python: str = sys.executable,
                     standalone: bool | None = None) -> list[str]:
    """``python -m torch.distributed.run ... -m curator.train.worker CONFIG`` as a list."""
    cmd = [python, "-m", "torch.distributed.run", f"--nproc-per-node={nproc_per_node}",
           f"--nnodes={nnodes}"]
    if standalone if standalone is not None else nnodes == 1 and not rdzv_endpoint:
        cmd.append("--standalone")
    else:
        cmd += ["--rdzv-backend=c10d", f"--rdzv-endpoint={rdzv_endpoint or '$MASTER_ADDR:29500'}",
                "--rdzv-id=$SLURM_JOB_ID"]
    return cmd + ["-m", "curator.train.worker", config_file]


def run_local_ranks(cfg: TrainConfig, nproc_per_node: int,
                    log: Callable[[str], None] | None = None) -> None:
    """Run training as ``nproc_per_node`` rank processes of this machine; raise if any fails.

    Not ``torchrun --standalone``: its rendezvous and worker stores listen on every interface
    (a TCPStore server binds the wildcard address whatever host it is given), unauthenticated,
    and the c10d rendezvous unpickles what its store holds, so anyone on the network could run
    code in the agent. Here the one store the ranks share is served from a socket bound to
    127.0.0.1 (``master_listen_fd``), and gloo/NCCL are kept on the loopback interface unless
    the environment names another."""
    import torch.distributed as dist

    path = config_path(cfg)
    cfg.save_json(path)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    # the store takes the socket over (and closes it when it goes)
    store = dist.TCPStore("127.0.0.1", port, is_master=True, master_listen_fd=sock.detach(),
                          wait_for_workers=False)
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", str(max(1, cfg.num_threads or 1)))
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    env.setdefault("NCCL_SOCKET_IFNAME", "lo")
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(nproc_per_node),
               LOCAL_WORLD_SIZE=str(nproc_per_node), GROUP_RANK="0", ROLE_RANK="0",
               TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RESTART_COUNT="0")
    cmd = [sys.executable, "-m", "curator.train.worker", path]
    if log:
        log(f"train: {nproc_per_node} rank(s) of " + " ".join(shlex.quote(c) for c in cmd))
    procs = [subprocess.Popen(cmd, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))  # noqa: S603 - this venv's python, no shell
             for r in range(nproc_per_node)]
    ended: queue.Queue[tuple[int, int]] = queue.Queue()
    for r, p in enumerate(procs):
        threading.Thread(target=lambda r=r, p=p: ended.put((r, p.wait())), daemon=True).start()
    failed: tuple[int, int] | None = None
    try:
        for _ in procs:
            rank, rc = ended.get()
            if rc:  # one rank failed: the others would wait for it for ever
                failed = (rank, rc)
                break
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            p.wait()
        del store
    if failed:
        raise CuratorError(f"train: rank {failed[0]} exited with status {failed[1]} (see the "
                           "rank logs above); rerun the same command to resume from the last "
                           "checkpoint")


#: Placeholders for the two arguments that must expand on the node, written out literally.
_RDZV = {"--rdzv-endpoint=@MASTER@:29500": '--rdzv-endpoint="$MASTER_ADDR":29500',
         "--rdzv-id=$SLURM_JOB_ID": '--rdzv-id="$SLURM_JOB_ID"'}


def _sbatch_value(name: str, value: str) -> str:
    """A ``#SBATCH`` option value: quoted like a shell word (sbatch strips the quotes), and
    never a newline, which would end the comment and start a shell command."""
    if "\n" in value or "\r" in value:
        raise ConfigError(f"train --sbatch: {name} contains a line break: {value!r}")
    return shlex.quote(value)


def sbatch_script(cfg: TrainConfig, *, nodes: int, gpus_per_node: int,
                  job_name: str = "curator-train",
                  partition: str | None = None, time_limit: str = "04:00:00",
                  python: str = "python", extra: list[str] | None = None) -> str:
    """A Slurm batch script: one ``torchrun`` per node, rendezvous on the first node.

    Every argument that comes from the user (paths, partition, time) is quoted with
    :func:`shlex.quote`: a ``$(...)`` or backquote in a folder name stays text."""
    path = config_path(cfg)
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={_sbatch_value('job name', job_name)}",
        f"#SBATCH --nodes={int(nodes)}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={int(gpus_per_node)}",
        f"#SBATCH --time={_sbatch_value('time', time_limit)}",
        "#SBATCH --exclusive",
        "#SBATCH --output="
        + _sbatch_value("save", os.path.join(os.path.abspath(cfg.save), "slurm-%j.out")),
    ]
    if partition:
        lines.append(f"#SBATCH --partition={_sbatch_value('partition', partition)}")
    for x in extra or []:
        if "\n" in x or "\r" in x:
            raise ConfigError(f"train --sbatch: an #SBATCH option contains a line break: {x!r}")
        lines.append(f"#SBATCH {x}")
    cmd = torchrun_command(path, nproc_per_node=gpus_per_node, nnodes=nodes,
                           rdzv_endpoint="@MASTER@:29500", python=python, standalone=False)
    # $MASTER_ADDR and $SLURM_JOB_ID must expand on the node: those two arguments are ours and
    # written out literally; everything else is quoted
    quoted = " ".join(_RDZV[c] if c in _RDZV else shlex.quote(c) for c in cmd)
    lines += [
        "set -euo pipefail",
        'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "export CUDA_DEVICE_MAX_CONNECTIONS=1",
        f"srun --kill-on-bad-exit=1 {quoted}",
        "",
    ]
    return "\n".join(lines)


def write_sbatch(cfg: TrainConfig, out: str, **kw: Any) -> str:
    text = sbatch_script(cfg, **kw)  # (refuses bad values before anything is written)
    cfg.save_json(config_path(cfg))
    from curator.storage.atomic import atomic_open

    with atomic_open(out, "w") as f:
        f.write(text)
    # chmod +x: execute where the file may be read (atomic_open wrote it per the umask)
    mode = os.stat(out).st_mode
    os.chmod(out, mode | ((mode & 0o444) >> 2))
    return out
