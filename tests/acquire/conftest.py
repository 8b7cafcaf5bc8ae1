"""Fixtures of the acquire tests: a real HTTP mirror and a way to run pipelines in-process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

sys.path.insert(0, os.path.dirname(__file__))

from helpers_acquire import Mirror


@pytest.fixture
def mirror(tmp_path: Any) -> Iterator[Mirror]:
    root = tmp_path / "mirror"
    root.mkdir()
    m = Mirror(str(root))
    yield m
    m.close()


def run_pipeline(work_dir: str, stages: list[dict[str, Any]],
                 executor: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run a pipeline given as a stage list in this process; return the run summary."""
    from curator.core import pipeline as pl
    from curator.core.executors import make_executor
    from curator.core.runner import Runner

    text = yaml.safe_dump({"name": "t", "work_dir": work_dir,
                           "executor": executor or {"type": "local"}, "stages": stages})
    pipe = pl.loads(text)
    with make_executor(pipe.config.executor) as ex:
        return Runner(pipe, ex).run()


def read_output(summary: dict[str, Any], stage_id: str) -> list[Any]:
    import orjson

    from curator.io.shards import read_shard

    path = os.path.join(summary["work_dir"], "stages", stage_id, "_SUCCESS.json")
    with open(path, "rb") as f:
        done = orjson.loads(f.read())
    return [d for s in done["shards"] for d in read_shard(s["path"])]


def read_side(work_dir: str, kind: str, stage_id: str) -> list[dict[str, Any]]:
    """Records of work_dir/<kind>/<stage_id>/ (kind: quarantine or rejected)."""
    from curator.io.shards import read_records

    d = os.path.join(work_dir, kind, stage_id)
    if not os.path.isdir(d):
        return []
    return [r for f in sorted(os.listdir(d)) for r in read_records(os.path.join(d, f))]


def stage_stats(summary: dict[str, Any], stage_id: str) -> dict[str, Any]:
    return next(s for s in summary["stages"] if s["id"] == stage_id)
