"""Outputs and inputs as other tools' users call them: datatrove's own writers feed curator's
readers, and ``datasets.load_dataset`` reads a multi-source output folder in one call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner


def run(tmp_path: Path, stages: str) -> dict:
    text = f"name: clients\nwork_dir: {tmp_path / 'w'}\nprogress: log\nstages:\n{stages}"
    return Runner(pl.loads(text), LocalExecutor()).run()


def _datatrove_docs():
    from datatrove.data import Document

    return [Document(text=f"document {i} " * 5, id=f"d{i}",
                     metadata={"source": "web" if i % 2 else "wiki", "url": f"http://x/{i}"})
            for i in range(6)]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_datatrove_default_output_nests_metadata_that_becomes_curators_fields(tmp_path, fmt):
    from datatrove.pipeline.writers import JsonlWriter, ParquetWriter

    folder = tmp_path / "dt"
    writer = (JsonlWriter(str(folder), compression=None) if fmt == "jsonl"
              else ParquetWriter(str(folder)))
    with writer as w:
        for d in _datatrove_docs():
            w.write(d)
    ext = "jsonl" if fmt == "jsonl" else "parquet"
    run(tmp_path, f"  - read_{fmt}: {{paths: '{folder}/*.{ext}'}}\n"
                  "  - write_jsonl: {path: out, compression: none}\n")
    got = [json.loads(line) for p in sorted((tmp_path / "w" / "out").glob("*.jsonl"))
           for line in p.read_text().splitlines()]
    assert sorted((r["id"], r["source"], r["url"]) for r in got) == sorted(
        (f"d{i}", "web" if i % 2 else "wiki", f"http://x/{i}") for i in range(6))
    assert all("metadata" not in r for r in got)


def test_metadata_field_null_keeps_the_object_as_one_field(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "t", "metadata": {"source": "x"}}) + "\n")
    run(tmp_path, f"  - read_jsonl: {{paths: '{src}', metadata_field: null}}\n"
                  "  - write_jsonl: {path: out, compression: none}\n")
    (rec,) = [json.loads(x) for x in (tmp_path / "w" / "out").glob("*.jsonl").__next__()
              .read_text().splitlines()]
    assert rec["metadata"] == {"source": "x"} and rec["source"] == "read_jsonl"
