"""What ``fuzzy_dedup`` (redis backend) needs on every process that runs its tasks is checked
before any stage runs: the password variable named in ``redis.password_env``, on the driver
and on each Dask worker. One line names the host (and worker) that lacks it, and no upstream
stage has run. It used to fail only when fuzzy_dedup started, after the upstream stages, and,
for a worker, with a line that did not say which host lacked the variable.

(A loopback ``redis.nodes`` with workers on other hosts needs other hosts: it is tested with
network namespaces in ``tests/dedup/test_redis_multi_host.py``.)"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.core.helpers_core import BIN, make_corpus
from tests.helpers import cli_env

ENV = "CURATOR_TEST_PREFLIGHT_PASSWORD"


def _pipeline(tmp: Path) -> Path:
    make_corpus(str(tmp / "a.jsonl"), 60, seed=3)
    y = tmp / "p.yaml"
    y.write_text(
        "name: preflight\nwork_dir: w\nreport: false\nprogress: 'off'\nstages:\n"
        "  - read_jsonl: {paths: a.jsonl}\n"
        "  - tests.core.helpers_core:min_words: {n: 5}\n"
        "  - fuzzy_dedup: {backend: redis, redis: {nodes: ['127.0.0.1:1'], "
        f"password_env: {ENV}}}}}\n"
    )
    return y


def _nothing_ran(tmp: Path) -> None:
    stages = tmp / "w" / "stages"
    done = (
        [p for p in stages.rglob("*") if p.name in ("_SUCCESS.json", "_done")]
        if stages.exists()
        else []
    )
    assert done == [], done


def _error_line(stderr: str) -> str:
    errs = [x for x in stderr.splitlines() if x.startswith("curator: error:")]
    assert len(errs) == 1 and "Traceback" not in stderr, stderr
    return errs[0]


def test_missing_password_variable_on_the_driver_stops_before_any_stage(tmp_path):
    y = _pipeline(tmp_path)
    env = cli_env()
    env.pop(ENV, None)
    p = subprocess.run(
        [sys.executable, "-m", "curator", "run", str(y)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode != 0
    line = _error_line(p.stderr)
    assert (
        f"fuzzy_dedup.redis.password_env: environment variable '{ENV}' is not set on host "
        f"{socket.gethostname()} (this process"
    ) in line, line
    _nothing_ran(tmp_path)


def _start(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    cwd.mkdir()
    return subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_missing_password_variable_on_a_dask_worker_names_it(tmp_path):
    """The driver has the variable; one of two workers was started without it."""
    y = _pipeline(tmp_path)
    sched_file = tmp_path / "scheduler.json"
    env = cli_env()
    env[ENV] = "the-password"
    without = dict(env)
    del without[ENV]
    procs = [
        _start(
            [
                str(BIN / "dask"),
                "scheduler",
                "--scheduler-file",
                str(sched_file),
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--dashboard-address",
                ":0",
            ],
            tmp_path / "s",
            env,
        )
    ]
    try:
        for i, wenv in enumerate((env, without)):
            procs.append(
                _start(
                    [
                        str(BIN / "dask"),
                        "worker",
                        "--scheduler-file",
                        str(sched_file),
                        "--nthreads",
                        "1",
                        "--host",
                        "127.0.0.1",
                        "--name",
                        f"w{i}",
                        "--no-dashboard",
                    ],
                    tmp_path / f"wk{i}",
                    wenv,
                )
            )
        from distributed import Client

        with Client(scheduler_file=str(sched_file), timeout="60s") as c:
            c.wait_for_workers(2, timeout=120)
            bare = [
                a
                for a, w in c.scheduler_info(n_workers=-1)["workers"].items()
                if w.get("name") == "w1"
            ]
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "curator",
                "run",
                str(y),
                "--executor",
                "dask",
                "--set",
                f"executor.scheduler_file={sched_file}",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert p.returncode != 0
    line = _error_line(p.stderr)
    assert (
        f"fuzzy_dedup.redis.password_env: environment variable '{ENV}' is not set on host "
        f"127.0.0.1 (Dask worker {bare[0]})"
    ) in line, line
    assert "the-password" not in p.stdout + p.stderr
    _nothing_ran(tmp_path)
