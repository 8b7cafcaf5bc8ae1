"""Helpers of the filters tests: write JSONL, run a pipeline in-process or via the CLI."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

import yaml

from curator.core import pipeline as pl
from curator.core.executors import make_executor
from curator.core.runner import Runner
from curator.storage.shards import read_records, read_shard

ROOT = Path(__file__).resolve().parents[2]


def write_jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


class Run:
    """Result of an in-process pipeline run."""

    def __init__(self, work: Path, runner: Runner, summary: dict[str, Any]) -> None:
        self.work, self.runner, self.summary = work, runner, summary

    def docs(self, stage_id: str | None = None) -> list:
        sid = stage_id or self.runner.pipe.nodes[-1].id
        return [d for s in self.runner.results[sid]["shards"] for d in read_shard(s["path"])]

    def stage(self, stage_id: str) -> dict[str, Any]:
        return next(s for s in self.summary["stages"] if s["id"] == stage_id)

    def rejected(self, stage_id: str) -> list[dict[str, Any]]:
        out = []
        for p in sorted(glob.glob(str(self.work / "rejected" / stage_id / "*.jsonl.zst"))):
            out.extend(read_records(p))
        return out


def run_pipeline(tmp: Path, stages: list[dict[str, Any]], executor: dict | None = None,
                 name: str = "t") -> Run:
    cfg = {"name": name, "work_dir": str(tmp / "work"), "executor": executor or {"type": "local"},
           "stages": stages}
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "pipe.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    pipe = pl.load(str(path))
    with make_executor(pipe.config.executor) as ex:
        runner = Runner(pipe, ex)
        summary = runner.run()
    return Run(tmp / "work", runner, summary)
