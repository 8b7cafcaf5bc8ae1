"""Hostile input files for the readers: JSON nested past what can be written, Parquet schemas
nested past what pyarrow reads, Hugging Face datasets naming files outside their folder. Each
costs its record or file (quarantined with where it was), never the run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner
from curator.storage.shards import read_records


def _run(tmp: Path, stages: list[dict]) -> dict:
    text = yaml.safe_dump(
        {"name": "hostile", "work_dir": str(tmp / "w"), "progress": "log", "stages": stages}
    )
    return Runner(pl.loads(text), LocalExecutor()).run()


def _side(tmp: Path, kind: str, stage: str) -> list[dict]:
    return [r for f in sorted((tmp / "w" / kind / stage).glob("*")) for r in read_records(str(f))]


def _nested(levels: int) -> str:
    """JSON text of ``levels`` nested lists."""
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("levels", [255, 1000, 100_000])
def test_deeply_nested_json_is_quarantined_with_its_line(tmp_path: Path, levels: int) -> None:
    """255 to 1,024 levels: orjson read the record and could not write it, so the shard (and
    every rerun) stopped with ``TypeError: Recursion limit reached`` naming no file. Deeper,
    it was "invalid JSON". Now any depth past 200 is quarantined with file and line, and a
    record exactly 200 deep is kept and written everywhere (shard, output, rejected)."""
    lines = [
        json.dumps({"id": "a", "text": "first document here"}),
        '{"id": "deep", "text": "x", "m": ' + _nested(levels) + "}",
        '{"id": "edge", "text": "two words", "m": ' + _nested(199) + "}",
        json.dumps({"id": "b", "text": "last document here"}),
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    summary = _run(
        tmp_path,
        [
            {"read_jsonl": {"paths": str(tmp_path / "in.jsonl")}},
            {"word_count_filter": {"min_words": 3}},
            {"write_jsonl": {"path": "out", "compression": "none"}},
        ],
    )
    [q] = _side(tmp_path, "quarantine", "read_jsonl")
    assert (q["reason"], q["file"], q["line"]) == (
        "nested deeper than 200 levels",
        str(tmp_path / "in.jsonl"),
        2,
    )
    out = [
        json.loads(x)
        for f in sorted((tmp_path / "w" / "out").glob("*.jsonl"))
        for x in f.read_text().splitlines()
    ]
    assert [r["id"] for r in out] == ["a", "b"]
    [rejected] = _side(tmp_path, "rejected", "word_count_filter")
    assert rejected["id"] == "edge" and json.dumps(rejected["meta"]["m"]) == (_nested(199))
    assert summary["stages"][0]["quarantined"] == {"nested deeper than 200 levels": 1}


def test_a_parquet_schema_nested_past_pyarrows_limit_is_quarantined_per_file(
    tmp_path: Path,
) -> None:
    """pyarrow refuses a schema deeper than 100 levels (50 nested lists) with an OSError,
    which stopped the listing with a 34-line traceback. The file is quarantined with one
    reason; the next file is read."""
    t = pa.int64()
    for _ in range(60):
        t = pa.list_(t)
    value: object = 1
    for _ in range(60):
        value = [value]
    pq.write_table(
        pa.table({"id": ["deep"], "text": ["x"], "m": pa.array([value], t)}),
        str(tmp_path / "a.parquet"),
    )
    pq.write_table(pa.table({"id": ["ok"], "text": ["fine"]}), str(tmp_path / "b.parquet"))
    summary = _run(tmp_path, [{"read_parquet": {"paths": str(tmp_path / "*.parquet")}}])
    st = summary["stages"][0]
    assert st["docs_out"] == 1 and st["quarantined"] == {"Parquet schema nested too deep": 1}
    [q] = _side(tmp_path, "quarantine", "read_parquet")
    assert q["file"] == str(tmp_path / "a.parquet") and "too deeply nested" in q["detail"]


def test_read_hf_reads_only_files_inside_the_dataset_folder(tmp_path: Path) -> None:
    """A ``state.json`` whose ``_data_files`` name an absolute path or ``../``, and a data file
    that is a symlink leading out of the folder: each used to be read (its documents came
    out). Now each is quarantined, never opened (nor hashed for the shard's key); the
    dataset's own file is read."""
    outside = tmp_path / "secret"
    datasets.Dataset.from_list([{"id": "s", "text": "secret text"}]).save_to_disk(str(outside))
    [secret_file] = [f for f in os.listdir(outside) if f.endswith(".arrow")]
    ds = tmp_path / "ds"
    datasets.Dataset.from_list([{"id": "own", "text": "own text"}]).save_to_disk(str(ds))
    os.symlink(outside / secret_file, ds / "link.arrow")
    state = json.loads((ds / "state.json").read_text())
    own = state["_data_files"][0]["filename"]
    state["_data_files"] = [
        {"filename": own},
        {"filename": str(outside / secret_file)},
        {"filename": f"../secret/{secret_file}"},
        {"filename": "link.arrow"},
    ]
    (ds / "state.json").write_text(json.dumps(state))
    summary = _run(tmp_path, [{"id": "hf", "read_hf": {"path": str(ds)}}])
    docs = [r["id"] for r in _side(tmp_path, "stages", "hf/data")]
    assert docs == ["own"]
    st = summary["stages"][0]
    assert st["quarantined"] == {"file outside the dataset folder": 3}
    files = {q["file"] for q in _side(tmp_path, "quarantine", "hf")}
    assert files == {
        str(outside / secret_file),
        f"{ds}/../secret/{secret_file}",
        str(ds / "link.arrow"),
    }


def test_read_hf_parquet_layout_refuses_a_symlink_out(tmp_path: Path) -> None:
    """The hub's Parquet layout: a ``data/train-*.parquet`` symlink to a file elsewhere is
    quarantined, not read."""
    pq.write_table(pa.table({"id": ["s"], "text": ["secret"]}), str(tmp_path / "s.parquet"))
    d = tmp_path / "hub" / "data"
    d.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["own"], "text": ["own"]}), str(d / "train-0.parquet"))
    os.symlink(tmp_path / "s.parquet", d / "train-1.parquet")
    summary = _run(tmp_path, [{"id": "hf", "read_hf": {"path": str(tmp_path / "hub")}}])
    assert [r["id"] for r in _side(tmp_path, "stages", "hf/data")] == ["own"]
    assert summary["stages"][0]["quarantined"] == {"file outside the dataset folder": 1}


def test_read_hf_keeps_the_rows_before_a_cut_in_an_arrow_file(tmp_path: Path) -> None:
    """A ``save_to_disk`` Arrow file cut short (a copy that stopped): its record batches
    before the cut are read, the rest is one quarantine record naming the file and the row
    it stopped at. Used to fail the run (`OSError: Expected to be able to read ... bytes for
    message body`)."""
    rows = [{"id": str(i), "text": f"text {i}"} for i in range(3000)]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "ds"))  # batches of 1,000
    [f] = (tmp_path / "ds").glob("*.arrow")
    f.write_bytes(f.read_bytes()[: f.stat().st_size * 6 // 10])
    summary = _run(tmp_path, [{"id": "hf", "read_hf": {"path": str(tmp_path / "ds")}}])
    ids = [r["id"] for r in _side(tmp_path, "stages", "hf/data")]
    assert ids == [str(i) for i in range(len(ids))] and 1000 <= len(ids) < 3000
    [q] = _side(tmp_path, "quarantine", "hf")
    assert (q["reason"], q["file"], q["row"]) == ("truncated or damaged Arrow file", str(f),
                                                  len(ids))
    assert summary["stages"][0]["docs_out"] == len(ids)
