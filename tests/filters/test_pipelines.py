from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from curator.storage.shards import read_shard
from tests.filters.helpers_filters import ROOT
from tests.helpers import run_cli


def _report(work: Path) -> dict:
    return {s["id"]: s for s in json.loads((work / "report.json").read_text())["stages"]}


def test_shipped_fineweb_like_pipeline_runs(tmp) -> None:
    work = tmp / "fw"
    p = run_cli("run", str(ROOT / "pipelines" / "fineweb-like.yaml"), "--work-dir", str(work),
                cwd=ROOT)
    assert "qa: 6 docs" in p.stderr
    rep = _report(work)
    kinds = {json.loads(x)["id"]: json.loads(x)["kind"] for x in
             (ROOT / "data/sample/filters/crawl.jsonl").read_text().splitlines()}
    out = [json.loads(x) for f in sorted((work / "output").glob("*.jsonl"))
           for x in f.read_text().splitlines()]
    assert out and {kinds[d["id"]] for d in out} == {"prose"}
    assert all(d["language"] == "en" for d in out)
    assert sum(1 for d in out if d.get("decontaminated") is not None) == 6
    assert rep["language_id"]["rejected"]["language_id:other_language"] >= 5


def test_shipped_nemo_like_pipeline_runs_and_resumes(tmp) -> None:
    work = tmp / "nemo"
    args = ("run", str(ROOT / "pipelines" / "nemo-like.yaml"), "--work-dir", str(work))
    run_cli(*args, cwd=ROOT)
    rep = _report(work)
    assert rep["quality_model"]["artifacts"]["quality_metrics"]["recall"] >= 0.9
    out = [d for s in json.loads((work / "stages/write_jsonl/_SUCCESS.json").read_text())
           ["shards"] for d in read_shard(s["path"])]
    assert out and all("quality_score" in d.meta and "signals" in d.meta for d in out)
    again = run_cli(*args, cwd=ROOT)
    assert "[decontaminate] done earlier, skipped" in again.stderr


def test_decontaminate_under_mpi_ranks(tmp) -> None:
    work = tmp / "mpi"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [str(Path(sys.executable).parent / "mpiexec"), "-n", "2", sys.executable, "-m",
           "curator", "run", str(ROOT / "pipelines" / "fineweb-like.yaml"), "--work-dir",
           str(work), "--executor", "mpi"]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    local = tmp / "local"
    run_cli("run", str(ROOT / "pipelines" / "fineweb-like.yaml"), "--work-dir", str(local),
            cwd=ROOT)
    a, b = _report(work), _report(local)
    for sid in ("language_id", "gopher_quality", "decontaminate"):
        assert a[sid]["docs_out"] == b[sid]["docs_out"]
        assert a[sid]["rejected"] == b[sid]["rejected"]
    assert a["decontaminate"]["artifacts"]["decontamination"] == \
        b["decontaminate"]["artifacts"]["decontamination"]
