"""Helpers shared by every test family: run the ``curator`` command line as a user does.

Imported as ``tests.helpers`` (the repository root is pytest's ``pythonpath``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
#: The virtualenv's bin folder (``mpiexec`` from the mpich wheel, console scripts).
BIN = Path(sys.executable).parent


def unavailable(reason: str) -> NoReturn:
    """A component this test needs is missing: a failure under CI (``CI`` set to 1/true/yes,
    which must install or allow everything), a skip on a developer's machine."""
    import pytest

    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI must provide this: {reason}")
    pytest.skip(reason, allow_module_level=True)


def require(module: str) -> Any:
    """``import module``, or :func:`unavailable` (a failure under CI, where scripts/setup.sh
    installs every extra; a skip elsewhere), also at a test module's top."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        unavailable(f"python package {module} ({e})")


def cli_env() -> dict[str, str]:
    """The environment of a ``curator`` command: this checkout's package and the tests' stage
    modules (``tests.core.helpers_core:min_words``) importable, also by Dask workers and MPI
    ranks, the virtualenv's tools on PATH, no ``CURATOR_DEBUG`` (one-line errors
    as a user sees them)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("CURATOR_DEBUG", None)
    return env


def run_cli(*args: str, cwd: Path | str = ROOT, check: bool = True, mpi: int = 0,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m curator *args`` in ``cwd`` (under ``mpiexec -n mpi`` when ``mpi``); with
    ``check`` a non-zero exit fails the test with the command's output."""
    cmd = [sys.executable, "-m", "curator", *args]
    if mpi:
        cmd = [str(BIN / "mpiexec"), "-n", str(mpi), *cmd]
    p = subprocess.run(cmd, cwd=cwd, env=cli_env(), capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def train_two_cpu_ranks(blend: str, save: Path | str, iters: int,
                        env: dict[str, str]) -> subprocess.CompletedProcess:
    """``curator train`` with two local CPU ranks (micro-batch 4, one thread each) in ``env``;
    the caller checks the exit status and output."""
    return subprocess.run(
        [sys.executable, "-m", "curator", "train", "--blend", blend, "--save", str(save),
         "--train-iters", str(iters), "--micro-batch-size", "4", "--num-threads", "1",
         "--nproc-per-node", "2", "--device", "cpu"],
        capture_output=True, text=True, env=env, timeout=300)


def stop_process_groups(procs: list[subprocess.Popen], grace: float = 30) -> None:
    """SIGTERM the process group of each of ``procs`` (started with ``start_new_session``),
    wait ``grace`` seconds for each, then SIGKILL what is left: a test's own servers never
    outlive it."""
    import contextlib
    import signal

    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def stage_error(kind: str, params: dict) -> str:
    """The one-line error a pipeline with stage ``kind: params`` gets at validation (after a
    ``read_jsonl`` source unless ``kind`` is a source), as ``curator validate`` prints it:
    ``p.yaml:5: stages[1].<kind>.<key>: ...``. Fails the test when the pipeline is valid."""
    import json

    from curator.base.errors import ConfigError
    from curator.core import pipeline as pl
    from curator.core.registry import resolve

    stages = [] if resolve(kind).kind == "source" else [{"read_jsonl": {"paths": "x.jsonl"}}]
    text = json.dumps({"name": "t", "work_dir": "w", "stages": [*stages, {kind: params}]})
    try:
        pl.loads(text, "p.yaml")
    except ConfigError as e:
        return str(e)
    raise AssertionError(f"{kind}: {params} was accepted")


def built_once(factory: Any, name: str, build: Callable[[Path], T]) -> T:
    """``build(folder)`` once per test run, not once per xdist worker: a session fixture whose
    product is files (a trained checkpoint, a tokenized blend) is made by the first worker
    that asks, under a lock in the run's shared temp folder, and its JSON result is read by
    the others. Without xdist it is simply built. ``factory`` is ``tmp_path_factory``."""
    import fcntl
    import json
    import shutil
    import tempfile

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build(factory.mktemp(name))
    root = factory.getbasetemp().parent  # this run's folder, above each worker's own
    done = root / f"built-once-{name}.json"
    with open(root / f"built-once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return json.loads(done.read_text())
        folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root))
        try:
            result = build(folder)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        done.write_text(json.dumps(result))
        return result
