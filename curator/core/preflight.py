"""Checks before any stage of a run starts, on every process that will run tasks: what the
stages declare they need there (:class:`~curator.core.stage.HostNeeds`). A variable missing on
one worker host, or a server given by a loopback address while the workers sit on other hosts,
is one line naming the host now, instead of an error (or a "rerun" that never helps) after
the upstream stages have run for hours."""

from __future__ import annotations

import os
from typing import Any

from curator.base.errors import ConfigError
from curator.core.executors import Executor
from curator.core.pipeline import Pipeline


def process_facts(env_names: list[str]) -> dict[str, Any]:
    """What this process reports: which of ``env_names`` it lacks, and which loopback interface
    it has (the machine's boot id and the network namespace: processes that share both reach
    the same ``127.0.0.1``). Runs on workers: only the standard library."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        import socket

        boot = socket.gethostname()
    try:
        netns = str(os.stat("/proc/self/ns/net").st_ino)
    except OSError:
        netns = ""
    return {"missing": [n for n in env_names if n not in os.environ], "loopback": f"{boot}/{netns}"}


def preflight(pipe: Pipeline, ex: Executor) -> None:
    """Raise one :class:`ConfigError` line for the first need of a stage that some process
    does not meet (every MPI rank calls this and raises the same line)."""
    err = None
    if ex.is_root:
        try:
            for n in pipe.nodes:
                n.stage.driver_check()
        except ConfigError as e:
            err = str(e)
    err = ex.broadcast(err)
    if err:
        raise ConfigError(err)
    needs = [(n.id, h) for n in pipe.nodes if (h := n.stage.host_needs())]
    if not needs:
        return
    names = sorted({var for _, h in needs for var, _ in h.env})
    facts = ex.each_process(process_facts, names)
    for sid, h in needs:
        for var, key in h.env:
            for who, f in facts:
                if var in f["missing"]:
                    raise ConfigError(
                        f"{sid}.{key}: environment variable '{var}' is not set on {who}; it "
                        "must be set wherever the stage's tasks run (for Dask workers: in "
                        "the environment they are started in); nothing ran"
                    )
    driver = facts[0][1]["loopback"]
    elsewhere = [who for who, f in facts[1:] if f["loopback"] != driver]
    for sid, h in needs:
        if h.loopback and elsewhere:
            addr, key = h.loopback[0]
            more = f" and {len(elsewhere) - 2} more" if len(elsewhere) > 2 else ""
            raise ConfigError(
                f"{sid}.{key}: {addr} is a loopback address, but tasks run on other hosts "
                f"({'; '.join(elsewhere[:2])}{more}): each would reach its own local server, "
                "not one shared store; give an address every host reaches; nothing ran"
            )
