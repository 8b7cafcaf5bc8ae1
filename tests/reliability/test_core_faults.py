"""Faults during a run (real processes): a Dask worker killed mid-stage, an MPI rank killed,
the disk filling up while a shard is written, a work_dir that is not writable."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys

import pytest

from tests.core.helpers_core import make_corpus, tree_digest
from tests.helpers import cli_env, run_cli

PIPE = """\
name: faults
work_dir: {wd}
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl", shard_size_mb: 0.004}}
  - tests.core.helpers_core:TagShard: {{}}
  - tests.core.helpers_core:crash_once: {{shard_suffix: "{suffix}", marker: "{marker}"}}
  - tests.core.helpers_core:AboveMedian: {{}}
  - write_jsonl: {{path: out}}
"""


def setup(tmp_path, suffix="00003"):
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 250, seed=7)
    marker = tmp_path / "crashed"
    (tmp_path / "p.yaml").write_text(PIPE.format(wd=tmp_path / "w", data=data, suffix=suffix,
                                                 marker=marker))
    marker.write_text("baseline")
    run_cli("run", "p.yaml", "--work-dir", str(tmp_path / "base"), cwd=tmp_path)
    marker.unlink()
    return marker


@pytest.mark.slow
def test_dask_worker_killed_mid_stage_run_finishes_identically(tmp_path):
    marker = setup(tmp_path)
    # crash_once SIGKILLs the worker process that runs shard 00003; the nanny restarts it and
    # the scheduler reruns the lost task elsewhere.
    res = run_cli("run", "p.yaml", "--executor", "dask", "--workers", "2", cwd=tmp_path)
    assert marker.read_text() == "crashed"
    assert tree_digest(tmp_path / "w" / "out") == tree_digest(tmp_path / "base" / "out")
    assert "done in" in res.stderr


def test_mpi_rank_killed_aborts_then_rerun_resumes(tmp_path):
    marker = setup(tmp_path)
    res = run_cli("run", "p.yaml", "--executor", "mpi", cwd=tmp_path, mpi=2, check=False,
                  timeout=120)
    assert res.returncode != 0
    assert marker.exists()
    assert not (tmp_path / "w" / "stages" / "crash_once" / "_SUCCESS.json").exists()
    res = run_cli("run", "p.yaml", "--executor", "mpi", cwd=tmp_path, mpi=3)
    assert tree_digest(tmp_path / "w" / "out") == tree_digest(tmp_path / "base" / "out")
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    assert rep["stages"][0]["skipped"]  # finished work was kept, with a different rank count


def _small_fs(path) -> bool:
    """A 600 KB filesystem at ``path`` (tmpfs, as root) so writes hit a real ENOSPC."""
    path.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def test_disk_full_while_writing_a_shard(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 4000, seed=8)
    wd = tmp_path / "small"
    mounted = _small_fs(wd)
    (tmp_path / "p.yaml").write_text(
        f"name: full\nwork_dir: {wd}\nstages:\n"
        f"  - read_jsonl: {{paths: '{data}/a.jsonl', shard_size_mb: 0.2}}\n"
        "  - write_jsonl: {path: out, compression: none}\n")
    try:
        cmd = [sys.executable, "-m", "curator", "run", "p.yaml"]
        limit = None if mounted else 600_000  # no mount rights: a per-process file size limit

        def pre():
            if limit:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        res = subprocess.run(cmd, cwd=tmp_path, env=cli_env(), capture_output=True, text=True,
                             timeout=120, preexec_fn=pre)
        assert res.returncode == 1
        err = [x for x in res.stderr.splitlines() if x.startswith("curator: error:")]
        assert len(err) == 1 and "failed on shard" in err[0]
        assert "No space left" in err[0] or "too large" in err[0]
        # no temporary or half-written file is left, and no failed shard is marked done
        leftovers = [p for p in wd.rglob("*") if ".tmp-" in p.name]
        assert leftovers == []
        stage = wd / "stages"
        done = {p.stem for p in stage.rglob("_done/*.json")}
        data_files = {p.name.split(".")[0] for p in stage.rglob("data/*")}
        assert done == data_files
    finally:
        if mounted:
            subprocess.run(["umount", str(wd)], check=False)
    # with room again, the rerun completes from where it stopped
    res = run_cli("run", "p.yaml", cwd=tmp_path)
    rep = json.loads((wd / "report.json").read_text())
    assert rep["stages"][-1]["docs_out"] == 4000


def test_work_dir_not_writable(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "x"}\n')
    (tmp_path / "p.yaml").write_text(
        f"name: ro\nwork_dir: {ro}/w\nstages:\n  - read_jsonl: {{paths: in.jsonl}}\n")
    with contextlib.ExitStack() as stack:
        # root ignores permission bits, so make the folder a read-only mount when we can
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)],
                          capture_output=True).returncode == 0:
            stack.callback(subprocess.run, ["umount", str(ro)], check=False)
        else:
            os.chmod(ro, 0o555)
        res = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1].startswith(
        f"curator: error: work_dir '{ro}/w' is not writable")
