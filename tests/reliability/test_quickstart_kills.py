"""The whole quickstart run SIGKILLed at several points, then rerun.

First test: one work_dir is killed five times in a row (mid source stage, inside fuzzy dedup's
signature phase, between two curated output shards, during tokenizer training, inside the
Megatron tokenize phase), each restart resuming the previous one, and a final rerun finishes.
The test process only watches the work_dir for a marker file and kills the whole process group:
no hook in product code.

Checked against an uninterrupted run of the same pipeline:
- final outputs (curated JSONL, Megatron .bin/.idx/.ids, blend.json) are byte-identical and the
  output folders hold no half-written file left by a killed writer;
- the curated document ids are the same multiset, with no id twice (nothing lost or duplicated);
- per-stage document counts and rejection reasons are the same;
- every completion marker, phase result or published shard on disk after a kill is still the
  very same file (inode and mtime) at the end, so finished work was not redone, and the report
  marks the stages finished before the last kill as skipped.

Second test: the quickstart on a Dask LocalCluster with every worker SIGKILLed mid-stage.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.helpers_core import quickstart_outputs
from tests.helpers import cli_env

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "pipelines" / "quickstart.yaml"

# (what is interrupted, a file whose appearance means the run is there)
KILL_POINTS = [
    ("web source, after its first shard", "stages/web/_done/web-00000.json"),
    ("fuzzy_dedup signatures phase", "stages/fuzzy_dedup/_phases/signatures/web-00001.pkl"),
    ("writing the curated JSONL", "stages/curated/_done/web-00001.json"),
    ("tokenizer training", "stages/tokenizer/_phases/sample/arxiv-00001.pkl"),
    ("megatron tokenize phase", "stages/megatron/_phases/tokenize/wiki-00000.pkl"),
]


def _cmd(wd: Path) -> list[str]:
    return [sys.executable, "-m", "curator", "run", str(QUICKSTART), "--work-dir", str(wd)]


def _run(wd: Path, log: Path) -> None:
    with open(log, "w") as f:
        p = subprocess.run(_cmd(wd), cwd=ROOT, env=cli_env(), stdout=f, stderr=subprocess.STDOUT,
                           timeout=300)
    assert p.returncode == 0, log.read_text()[-3000:]


def _run_until(wd: Path, marker: str, log: Path, timeout: float = 240) -> None:
    """Start the run and SIGKILL its whole process group once ``marker`` exists."""
    target = wd / marker
    with open(log, "w") as f:
        p = subprocess.Popen(_cmd(wd), cwd=ROOT, env=cli_env(), stdout=f,
                             stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while not target.exists():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=0.005)  # the poll tick; also notices a run that ended
            assert p.returncode is None, (
                f"run ended ({p.returncode}) before {marker} appeared:\n"
                + log.read_text()[-3000:])
            assert time.monotonic() < deadline, f"{marker} did not appear in {timeout}s"
        os.killpg(p.pid, signal.SIGKILL)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    assert p.returncode == -signal.SIGKILL


def _finished_work(wd: Path) -> dict[str, tuple[int, int]]:
    """Every completion marker, saved phase result and published shard (atomic writes: a file
    under its final name is complete): path -> (inode, mtime_ns)."""
    out = {}
    for pat in ("stages/*/_SUCCESS.json", "stages/*/_done/*.json", "stages/*/_phases/*/*.pkl",
                "stages/*/data/*.jsonl.zst", "curated/*.jsonl.gz"):
        for p in wd.glob(pat):
            st = p.stat()
            out[p.relative_to(wd).as_posix()] = (st.st_ino, st.st_mtime_ns)
    return out


def _curated_ids(wd: Path) -> list[str]:
    ids = []
    for p in sorted(wd.glob("curated/*.jsonl.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as f:
            ids += [json.loads(line)["id"] for line in f]
    return ids


def _stage_counts(wd: Path) -> dict[str, tuple]:
    rep = json.loads((wd / "report.json").read_text())
    return {s["id"]: (s["docs_in"], s["docs_out"], s["rejected"], s["quarantined"])
            for s in rep["stages"]}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    """One uninterrupted quickstart run."""
    wd = tmp_path_factory.mktemp("quickstart-base") / "w"
    _run(wd, wd.parent / "log.txt")
    return wd


@pytest.mark.slow
def test_quickstart_killed_at_five_points_then_rerun_is_identical(baseline, tmp_path):
    wd = tmp_path / "w"
    finished: dict[str, tuple[int, int]] = {}
    for i, (_what, marker) in enumerate(KILL_POINTS):
        _run_until(wd, marker, tmp_path / f"kill{i}.txt")
        now = _finished_work(wd)
        # whatever was finished before this kill survived it untouched
        assert {k: now.get(k) for k in finished} == finished, f"redone before kill {i}"
        finished = now
    last_done = {k.split("/")[1] for k in finished if k.endswith("_SUCCESS.json")}
    interrupted = "megatron"
    assert interrupted not in last_done  # the last kill did land inside that stage
    phase_files = [k for k in finished if k.startswith(f"stages/{interrupted}/_phases/")]
    assert phase_files

    _run(wd, tmp_path / "final.txt")

    # finished work was not redone: the very same files, and the report says so
    end = _finished_work(wd)
    assert {k: end.get(k) for k in finished} == finished
    rep = {s["id"]: s for s in json.loads((wd / "report.json").read_text())["stages"]}
    assert {sid for sid, s in rep.items() if s["skipped"]} == last_done
    log = (tmp_path / "final.txt").read_text()
    for sid in last_done:
        assert f"[{sid}] done earlier, skipped" in log

    # same result as the uninterrupted run
    for folder in ("curated", "megatron"):
        assert sorted(p.name for p in (wd / folder).iterdir()) == sorted(
            p.name for p in (baseline / folder).iterdir())
    assert quickstart_outputs(wd) == quickstart_outputs(baseline)
    ids, base_ids = _curated_ids(wd), _curated_ids(baseline)
    assert len(ids) == len(set(ids)) and sorted(ids) == sorted(base_ids)
    assert _stage_counts(wd) == _stage_counts(baseline)



def _dask_workers(pid: int) -> list[int]:
    """The LocalCluster's worker processes: children of the run spawned by multiprocessing."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid and b"spawn_main" in (d / "cmdline").read_bytes():
                out.append(int(d.name))
    return out


@pytest.mark.slow
def test_quickstart_on_dask_survives_its_workers_being_killed(baseline, tmp_path):
    """Every Dask worker SIGKILLed while the Wikipedia source shard (about 4 s) runs: the
    nannies restart them, the scheduler reruns the lost task, and the run finishes with the
    uninterrupted run's outputs."""
    wd = tmp_path / "w"
    log = tmp_path / "dask.txt"
    with open(log, "w") as f:
        p = subprocess.Popen([*_cmd(wd), "--executor", "dask", "--workers", "2"], cwd=ROOT,
                             env=cli_env(), stdout=f, stderr=subprocess.STDOUT,
                             start_new_session=True)
    try:
        target = wd / "stages" / "wiki" / "_FINGERPRINT"
        deadline = time.monotonic() + 240
        while not target.exists():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=0.005)
            assert p.returncode is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline
        victims = _dask_workers(p.pid)
        assert len(victims) == 2
        for v in victims:
            os.kill(v, signal.SIGKILL)
        assert not (wd / "stages" / "wiki" / "_SUCCESS.json").exists()  # killed mid-stage
        assert p.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert log.read_text().count("Restarting worker") >= 2  # both nannies saw their death
    assert quickstart_outputs(wd) == quickstart_outputs(baseline)
    ids = _curated_ids(wd)
    assert len(ids) == len(set(ids)) and sorted(ids) == sorted(_curated_ids(baseline))
    assert _stage_counts(wd) == _stage_counts(baseline)


@pytest.mark.slow
def test_readme_quick_start_counts_are_what_a_run_prints(baseline):
    """The log the README shows for the quick start: every line's counts are the run's."""
    import re

    readme = (ROOT / "README.md").read_text()
    block = readme.split("The log of a fresh run looks like this", 1)[1].split("```")[1]
    shown = re.findall(r"^\[(\w+)\] (\d+) -> (\d+) docs \((\d+) removed(.*?)\) in", block, re.M)
    assert len(shown) >= 8, block
    log = (baseline.parent / "log.txt").read_text()
    for sid, n_in, n_out, removed, rest in shown:
        line = re.search(rf"\[{sid}\] (\d+) -> (\d+) docs \((\d+) removed(.*?)\) in", log)
        assert line, (sid, log[-2000:])
        assert line.groups() == (n_in, n_out, removed, rest), (sid, line.group(0))
