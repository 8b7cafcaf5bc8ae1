"""Every Dask worker of an external cluster killed (nanny and worker, as when their machines
go): the run stops with one line naming the scheduler after ``executor.no_workers_timeout_s``
instead of waiting for ever with no message."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.core.helpers_core import BIN
from tests.helpers import cli_env


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
        f"  - tests.core.helpers_core:gate: {{fifo: '{fifo}'}}\n"
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


def test_a_killed_workers_temporary_is_removed_by_the_run(tmp_path):
    """Two ``dask worker --no-nanny`` processes; the one that meets document 300 (a late
    shard) SIGKILLs itself mid-write, the other redoes the shard. That survivor had listed the
    folder (once per process) before the dead one's temporary appeared, so publishing the shard
    never removed it: ``*.tmp-<host>-<pid>-*`` stayed for good. The runner now removes dead
    writers' temporaries from the stage's folders when the stage is done."""
    from tests.core.helpers_core import make_corpus

    recs = make_corpus(str(tmp_path / "a.jsonl"), 400, seed=5)
    marker = tmp_path / "crashed"
    (tmp_path / "p.yaml").write_text(
        "name: temps\nwork_dir: w\nstages:\n"
        "  - read_jsonl: {paths: a.jsonl, shard_size_mb: 0.004}\n"
        "  - tests.core.helpers_core:crash_on_id: "
        f"{{id: '{recs[300]['id']}', marker: '{marker}'}}\n"
        "  - write_jsonl: {path: out, compression: none}\n")
    sched_file = tmp_path / "scheduler.json"
    procs = [_start([str(BIN / "dask"), "scheduler", "--scheduler-file", str(sched_file),
                     "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0"],
                    tmp_path / "s")]
    try:
        for i in range(2):
            procs.append(_start([str(BIN / "dask"), "worker", "--scheduler-file",
                                 str(sched_file), "--no-nanny", "--nthreads", "1",
                                 "--host", "127.0.0.1"], tmp_path / f"wk{i}"))
        from distributed import Client

        with Client(scheduler_file=str(sched_file), timeout="60s") as c:
            c.wait_for_workers(2, timeout=120)
        p = subprocess.run(
            [sys.executable, "-m", "curator", "run", "p.yaml", "--executor", "dask",
             "--set", f"executor.scheduler_file={sched_file}"],
            cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=300)
    finally:
        for proc in procs:
            _stop(proc)
    assert p.returncode == 0, p.stderr[-3000:]
    assert marker.read_text() == "crashed"
    left = [str(x.relative_to(tmp_path)) for x in (tmp_path / "w").rglob("*")
            if ".tmp-" in x.name]
    assert left == []
    out = [x for f in sorted((tmp_path / "w" / "out").glob("*.jsonl"))
           for x in f.read_text().splitlines()]
    assert len(out) == 400


def test_a_killed_but_unreaped_writer_counts_as_dead(tmp_path):
    """A writer SIGKILLed under a parent that has not waited for it yet is a zombie: it will
    never write again, so its temporary is removed when the file is published (it used to
    count as alive and stay)."""
    from curator.storage.atomic import atomic_open, remove_dead_temps

    root = str(Path(__file__).resolve().parents[2])
    target = tmp_path / "out" / "s-00001.jsonl"
    code = (f"import os, signal, sys; sys.path.insert(0, {root!r}); "
            "from curator.storage.atomic import atomic_open\n"
            f"with atomic_open({str(target)!r}) as f:\n"
            "    f.write(b'partial'); f.flush(); os.kill(os.getpid(), signal.SIGKILL)\n")
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 60
        while Path(f"/proc/{p.pid}/stat").read_bytes().split(b") ")[-1][:1] != b"Z":
            assert time.monotonic() < deadline, "the writer never died"
            time.sleep(0.02)
        [left] = os.listdir(target.parent)
        assert f"-{p.pid}-" in left
        assert remove_dead_temps([str(tmp_path)], recursive=True) == 1
        assert os.listdir(target.parent) == []
        with atomic_open(str(target)) as f:
            f.write(b"complete")
    finally:
        p.wait()
    assert target.read_bytes() == b"complete"
