"""Many machines, as far as one machine can show it: the quickstart through a Dask scheduler and
workers started as separate processes (sharing only a scheduler file and the work_dir, each in
its own working directory), and through ``mpiexec`` with a hostfile. Both give the same bytes."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.helpers_core import BIN, quickstart_outputs
from tests.helpers import cli_env, stop_process_groups

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "pipelines" / "quickstart.yaml"


@contextlib.contextmanager
def dask_cluster(tmp: Path, workers: int = 2) -> Iterator[Path]:
    """``dask scheduler`` and ``dask worker`` processes, as an operator would start them on
    separate machines; yields the scheduler file."""
    sched_file = tmp / "scheduler.json"
    procs: list[subprocess.Popen] = []
    env = cli_env()
    try:
        sdir = tmp / "scheduler-host"
        sdir.mkdir()
        procs.append(subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--scheduler-file", str(sched_file),
             "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0"],
            cwd=sdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True))
        for i in range(workers):
            wdir = tmp / f"worker-host-{i}"
            wdir.mkdir()
            procs.append(subprocess.Popen(
                [str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file),
                 "--nworkers", "1", "--nthreads", "1", "--host", "127.0.0.1",
                 "--local-directory", str(wdir)],
                cwd=wdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        from distributed import Client

        # the scheduler file appears when the scheduler listens; then wait for the workers
        with Client(scheduler_file=str(sched_file), timeout="60s") as c:
            c.wait_for_workers(workers, timeout=120)
        yield sched_file
    finally:
        stop_process_groups(procs)


@pytest.fixture(scope="module")
def dask_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("dask-procs")
    wd = tmp / "w"
    with dask_cluster(tmp) as sched_file:
        p = subprocess.run(
            [sys.executable, "-m", "curator", "run", str(QUICKSTART), "--work-dir", str(wd),
             "--executor", "dask", "--set", f"executor.scheduler_file={sched_file}"],
            cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=400)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "dask scheduler tcp://127.0.0.1:" in p.stderr
    return wd


@pytest.mark.slow
def test_quickstart_on_separate_dask_processes(dask_run):
    import json

    rep = json.loads((dask_run / "report.json").read_text())
    assert rep["executor"] == {"type": "dask", "workers": 2}
    assert not any(s["skipped"] for s in rep["stages"])  # a fresh run: every stage ran
    assert {s["id"] for s in rep["stages"]} >= {"web", "wiki", "arxiv", "fuzzy_dedup", "train"}
    assert (dask_run / "megatron").is_dir() and list((dask_run / "curated").glob("*"))


@pytest.mark.slow
def test_quickstart_mpi_hostfile_matches_dask(dask_run, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{socket.gethostname()}:2\n")
    wd = tmp_path / "w"
    p = subprocess.run(
        [str(BIN / "mpiexec"), "-f", str(hostfile), "-n", "2", sys.executable, "-m", "curator",
         "run", str(QUICKSTART), "--work-dir", str(wd), "--executor", "mpi"],
        cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=400)
    assert p.returncode == 0, p.stderr[-3000:]
    assert quickstart_outputs(wd) == quickstart_outputs(dask_run)


def test_slurm_curation_script_runs_the_pipeline_on_mpi_ranks(tmp_path):
    """scripts/slurm-curate.sbatch as Slurm would run it (outside Slurm: SLURM_NTASKS ranks
    started locally by the same mpiexec); every path in it is quoted."""
    import json

    from tests.core.helpers_core import make_corpus

    make_corpus(str(tmp_path / "a.jsonl"), 200, seed=1)
    (tmp_path / "p.yaml").write_text(
        "name: s\nwork_dir: w\nstages:\n"
        "  - read_jsonl: {paths: a.jsonl, shard_size_mb: 0.005}\n"
        "  - tests.core.helpers_core:min_words: {n: 5}\n"
        "  - write_jsonl: {path: out}\n")
    env = cli_env() | {"SLURM_NTASKS": "2", "SLURM_SUBMIT_DIR": str(tmp_path),
                       "CURATOR_VENV": str(BIN.parent)}
    p = subprocess.run(["bash", str(ROOT / "scripts" / "slurm-curate.sbatch"), "p.yaml"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    assert rep["executor"] == {"type": "mpi", "workers": 2}
    assert rep["stages"][0]["docs_in"] == 200 and list((tmp_path / "w" / "out").glob("*"))
