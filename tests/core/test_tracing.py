"""What a stage's code opened and imported while it ran is recorded (an audit hook in every
worker process) and checked by the next run: a data file a custom stage reads without
declaring it, a module it imports by a computed name, under the local, Dask and MPI executors;
`curator status` names the input that changed. And a model folder's symlinked subfolder is
part of the folder's identity. Real processes, real files, real symlinks."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from curator.core.stage import DirPath, Filter, StageParams
from tests.helpers import BIN, cli_env

DYN = """
import importlib
import os

from curator import filter

HERE = os.path.dirname(__file__)


@filter
def dyn(doc) -> bool:
    with open(os.path.join(HERE, "mydata", "lim.txt")) as f:  # read, never declared
        n = int(f.read())
    scale = importlib.import_module("scale_" + "by").SCALE  # a computed name
    return len(doc.text) < n * scale
"""


def setup(tmp_path: Path) -> Path:
    import random

    mods = tmp_path / "mods"
    (mods / "mydata").mkdir(parents=True)
    (mods / "mydata" / "lim.txt").write_text("200")
    (mods / "scale_by.py").write_text("SCALE = 1\n")
    (mods / "dyn.py").write_text(DYN)
    rnd = random.Random(3)
    data = tmp_path / "data"
    data.mkdir()
    for part in range(2):
        with open(data / f"in{part}.jsonl", "w") as f:
            for i in range(150):
                f.write(
                    json.dumps({"id": f"{part}-{i}", "text": "x" * rnd.randint(50, 1000)}) + "\n"
                )
    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nprogress: off\nstages:\n"
        "  - read_jsonl: {paths: 'data/*.jsonl'}\n  - dyn:dyn: {}\n"
        "  - write_jsonl: {path: out}\n"
    )
    return mods


def curator(tmp_path: Path, *args: str, mpi: int = 0) -> str:
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(tmp_path / "mods")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = [sys.executable, "-m", "curator", *args]
    if mpi:
        cmd = [str(BIN / "mpiexec"), "-n", str(mpi), *cmd]
    p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout + p.stderr


def kept(tmp_path: Path, wd: str = "w") -> int:
    n = 0
    for p in (tmp_path / wd / "out").glob("*.jsonl.gz"):
        with gzip.open(p, "rt") as f:
            n += sum(1 for _ in f)
    return n


def line(status: str, stage: str) -> str:
    return next(ln for ln in status.splitlines() if ln.startswith(stage + " "))


def test_a_file_and_a_module_the_stage_used_rerun_it_when_they_change(tmp_path):
    mods = setup(tmp_path)
    curator(tmp_path, "run", "p.yaml")
    first = kept(tmp_path)
    recorded = json.loads((tmp_path / "w" / "stages" / "dyn" / "_FINGERPRINT").read_text())
    assert str(mods / "mydata" / "lim.txt") in recorded["used"]
    assert str(mods / "scale_by.py") in recorded["used"]
    os.utime(mods / "mydata" / "lim.txt")  # another mtime and ctime, the same bytes
    assert "nothing to do" in curator(tmp_path, "status", "p.yaml")

    (mods / "mydata" / "lim.txt").write_text("900")  # the file it read
    st = curator(tmp_path, "status", "p.yaml")
    assert "stale" in line(st, "dyn") and "mydata/lim.txt (content)" in line(st, "dyn"), st
    assert "stale" in line(st, "write_jsonl"), st
    log = curator(tmp_path, "run", "p.yaml")
    assert "[dyn] rerunning: what it read changed" in log, log
    second = kept(tmp_path)
    assert second > first
    curator(tmp_path, "run", "p.yaml", "--work-dir", "fresh")
    assert kept(tmp_path, "fresh") == second

    (mods / "scale_by.py").write_text("# a comment changes nothing\nSCALE = 1\n")
    assert "nothing to do" in curator(tmp_path, "status", "p.yaml")
    (mods / "scale_by.py").write_text("SCALE = 0\n")  # the module it imported by name
    st = curator(tmp_path, "status", "p.yaml")
    assert "scale_by.py (content)" in line(st, "dyn"), st
    curator(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) == 0


@pytest.mark.parametrize("executor", ["dask", "mpi"])
def test_workers_of_other_executors_record_what_they_read(tmp_path, executor):
    """Under Dask and MPI the tasks run in worker processes: each records its own reads."""
    mods = setup(tmp_path)
    how = ("--executor", executor) + (("--workers", "2") if executor == "dask" else ())
    mpi = 2 if executor == "mpi" else 0
    curator(tmp_path, "run", "p.yaml", *how, mpi=mpi)
    first = kept(tmp_path)
    recorded = json.loads((tmp_path / "w" / "stages" / "dyn" / "_FINGERPRINT").read_text())
    assert {str(mods / "mydata" / "lim.txt"), str(mods / "scale_by.py")} <= set(recorded["used"])
    (mods / "mydata" / "lim.txt").write_text("900")
    log = curator(tmp_path, "run", "p.yaml", *how, mpi=mpi)
    assert "[dyn] rerunning: what it read changed" in log, log
    assert kept(tmp_path) > first


class UsesModel(Filter):
    name = "uses_model"

    class Params(StageParams):
        model: DirPath

    def check(self, doc):
        return None


def swap_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A model folder whose ``1_Pooling`` is a symlink into a cache, as the HF hub lays out."""
    cache = tmp_path / "cache"
    for kind in ("mean", "max"):
        (cache / kind).mkdir(parents=True)
        (cache / kind / "config.json").write_text(
            json.dumps(
                {
                    "pooling_mode_mean_tokens": kind == "mean",
                    "pooling_mode_max_tokens": kind == "max",
                }
            )
        )
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "1_Pooling").symlink_to(cache / "mean", target_is_directory=True)
    (model / "loop").symlink_to(model, target_is_directory=True)  # a link back up: no loop
    return model, cache


def test_a_symlinked_subfolder_of_a_model_folder_is_part_of_its_identity(tmp_path):
    """Swapping ``1_Pooling`` (mean -> max) left semantic_dedup done and its cached vectors
    reused: the folder was walked without following links."""
    from curator.core.stage_state import param_files
    from curator.models.embed import folder_key

    model, cache = swap_folder(tmp_path)
    stage = UsesModel.from_params({"model": str(model)})
    before, key = param_files(stage), folder_key(str(model))
    assert str(model / "1_Pooling" / "config.json") in before
    (model / "1_Pooling").unlink()
    (model / "1_Pooling").symlink_to(cache / "max", target_is_directory=True)
    assert param_files(stage) != before
    assert folder_key(str(model)) != key
