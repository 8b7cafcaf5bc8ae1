"""Every Dask worker of an external cluster killed (nanny and worker, as when their machines
go): the run stops with one line naming the scheduler after ``executor.no_workers_timeout_s``
instead of waiting for ever with no message (issue 23)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import cli_env
from helpers_core import BIN


def _start(cmd: list[str], cwd: Path) -> subprocess.Popen:
    cwd.mkdir()
    return subprocess.Popen(cmd, cwd=cwd, env=cli_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _stop(p: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def _open_when_read(fifo: Path, run: subprocess.Popen) -> int:
    """The write end of ``fifo``, opened once a reader (the gate stage) has it open; fails if
    the run ends first."""
    deadline = time.monotonic() + 120
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            if run.poll() is not None:
                raise AssertionError(f"the run ended first:\n{run.communicate()[1]}") from None
            if time.monotonic() > deadline:
                raise AssertionError("the stage never reached the gate") from None
            time.sleep(0.05)


def test_all_workers_killed_is_one_line_after_the_timeout(tmp_path):
    sched_file = tmp_path / "scheduler.json"
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"id": str(i), "text": f"document {i}"}) + "\n" for i in range(20)))
    (tmp_path / "p.yaml").write_text(
        "name: lost\nwork_dir: w\nstages:\n  - read_jsonl: {paths: in.jsonl}\n"
        f"  - helpers_core:gate: {{fifo: '{fifo}'}}\n"
        "  - write_jsonl: {path: out, compression: none}\n")
    sched = _start([str(BIN / "dask"), "scheduler", "--scheduler-file", str(sched_file),
                    "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0"],
                   tmp_path / "s")
    worker = None
    run = None
    try:
        worker = _start([str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file),
                         "--nworkers", "1", "--nthreads", "1", "--host", "127.0.0.1"],
                        tmp_path / "wk")
        from distributed import Client

        with Client(scheduler_file=str(sched_file), timeout="60s") as c:
            c.wait_for_workers(1, timeout=120)
        run = subprocess.Popen(
            [sys.executable, "-m", "curator", "run", "p.yaml", "--executor", "dask",
             "--set", f"executor.scheduler_file={sched_file}",
             "--set", "executor.no_workers_timeout_s=5"],
            cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        gate = _open_when_read(fifo, run)  # the worker is inside the stage, at the gate
        _stop(worker)  # nanny and worker: nothing restarts it
        os.close(gate)
        killed = time.monotonic()
        try:
            _, err = run.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            run.kill()
            _, err = run.communicate()
            raise AssertionError(
                f"the client still waits 90 s after its workers died:\n{err}") from None
        waited = time.monotonic() - killed
    finally:
        if run is not None and run.poll() is None:
            run.kill()
        for p in (worker, sched):
            if p is not None:
                _stop(p)
    assert run.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("curator: error: ") and "no worker alive for 5 s" in last, err
    assert "tcp://127.0.0.1:" in last and "Traceback" not in err
    assert 5 <= waited < 60
    assert not (tmp_path / "w" / "out").exists() or not any((tmp_path / "w" / "out").iterdir())
