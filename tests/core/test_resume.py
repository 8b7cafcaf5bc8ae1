"""Resume: a run killed with SIGKILL mid-stage, rerun, gives the same output as an uninterrupted
run, redoes no finished shard and duplicates nothing; changed parameters rerun downstream only.
crash_once is checkpointed (``checkpoint: true``), so each stage here is its own pass; fused
chains are tested in test_fusion.py."""

from __future__ import annotations

import gzip
import json
import signal

from curator.storage.shards import read_records
from tests.core.helpers_core import make_corpus, tree_digest
from tests.helpers import run_cli

PIPE = """\
name: resume
work_dir: {wd}
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl", shard_size_mb: 0.004}}
  - tests.core.helpers_core:TagShard: {{}}
  - tests.core.helpers_core:crash_once: {{shard_suffix: "{suffix}", marker: "{marker}"}}
    checkpoint: true
  - tests.core.helpers_core:min_words: {{n: 5}}
  - tests.core.helpers_core:AboveMedian: {{}}
  - write_jsonl: {{path: out}}
"""


def out_ids(wd):
    ids = []
    for p in sorted((wd / "out").glob("*.jsonl.gz")):
        with gzip.open(p, "rt") as f:
            ids += [json.loads(line)["id"] for line in f]
    return ids


def report(wd):
    return {s["id"]: s for s in json.loads((wd / "report.json").read_text())["stages"]}


def test_sigkill_mid_stage_then_resume(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 300, seed=1)
    marker = tmp_path / "crashed"
    (tmp_path / "p.yaml").write_text(PIPE.format(
        wd=tmp_path / "w", data=data, suffix="00004", marker=marker))

    # baseline: same pipeline, marker present, so it never crashes
    marker.write_text("x")
    run_cli("run", "p.yaml", "--work-dir", str(tmp_path / "base"), cwd=tmp_path)
    marker.unlink()
    base_ids = out_ids(tmp_path / "base")
    assert len(base_ids) > 50

    res = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    assert res.returncode == -signal.SIGKILL  # killed inside the crash_once stage
    wd = tmp_path / "w"
    done = sorted(p.name for p in (wd / "stages" / "crash_once" / "_done").glob("*.json"))
    assert done == [f"read_jsonl-0000{i}.json" for i in range(4)]
    assert not (wd / "stages" / "crash_once" / "_SUCCESS.json").exists()
    assert not (wd / "out").exists()

    run_cli("run", "p.yaml", cwd=tmp_path)
    assert out_ids(wd) == base_ids
    assert len(set(out_ids(wd))) == len(base_ids)
    assert tree_digest(wd / "out") == tree_digest(tmp_path / "base" / "out")
    rep = report(wd)
    assert rep["read_jsonl"]["skipped"] and rep["tag_shard"]["skipped"]
    assert rep["crash_once"]["shards_resumed"] == 4  # finished shards were not redone
    assert rep["crash_once"]["shards"] > 4


def test_changed_parameters_rerun_stage_and_downstream_only(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 200, seed=2)
    marker = tmp_path / "m"
    marker.write_text("x")
    (tmp_path / "p.yaml").write_text(PIPE.format(
        wd=tmp_path / "w", data=data, suffix="x", marker=marker))
    run_cli("run", "p.yaml", cwd=tmp_path)
    first = report(tmp_path / "w")
    run_cli("run", "p.yaml", "--set", "stages.min_words.n=20", cwd=tmp_path)
    rep = report(tmp_path / "w")
    assert [rep[s]["skipped"] for s in rep] == [True, True, True, False, False, False]
    assert rep["min_words"]["docs_out"] < first["min_words"]["docs_out"]
    # rejected documents of the rerun stage were replaced, not appended to
    rejected = sum(1 for p in (tmp_path / "w" / "rejected" / "min_words").glob("*.zst")
                   for _ in read_records(str(p)))
    assert rejected == rep["min_words"]["docs_in"] - rep["min_words"]["docs_out"]


def test_global_phase_results_are_reused_after_a_crash(tmp_path):
    """Phase results of a global stage are saved per key, so a crash after phase 1 does not
    redo it: we delete the final outputs of the stage and check phase 1 is not recomputed."""
    from curator.core import pipeline as pl
    from curator.core.executors import LocalExecutor
    from curator.core.runner import Runner

    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 100, seed=3)
    text = (f"name: g\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
            f"  - read_jsonl: {{paths: {data}/a.jsonl, shard_size_mb: 0.004}}\n"
            "  - tests.core.helpers_core:AboveMedian: {}\n")
    pipe = pl.loads(text)
    Runner(pipe, LocalExecutor()).run()
    sdir = tmp_path / "w" / "stages" / "above_median"
    phase_files = sorted((sdir / "_phases" / "lengths").glob("*.pkl"))
    assert len(phase_files) >= 2
    # the same files, not rewritten: an atomic rewrite would give a new inode
    stamps = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in phase_files}
    (sdir / "_SUCCESS.json").unlink()  # as if killed before the stage finished
    for p in (sdir / "_done").glob("*.json"):
        p.unlink()
    summary = Runner(pl.loads(text), LocalExecutor()).run()
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in phase_files} == stamps
    assert summary["stages"][1]["artifacts"]["median"] > 0
