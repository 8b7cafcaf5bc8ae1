from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))  # helpers_core: stages the tests (and their workers) import


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)])
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("CURATOR_DEBUG", None)
    return env


def run_cli(*args: str, cwd: Path, check: bool = True, mpi: int = 0,
            timeout: float = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "curator", *args]
    if mpi:
        cmd = [str(BIN / "mpiexec"), "-n", str(mpi), *cmd]
    p = subprocess.run(cmd, cwd=cwd, env=cli_env(), capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p
