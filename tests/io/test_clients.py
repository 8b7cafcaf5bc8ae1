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

    return [
        Document(
            text=f"document {i} " * 5,
            id=f"d{i}",
            metadata={"source": "web" if i % 2 else "wiki", "url": f"http://x/{i}"},
        )
        for i in range(6)
    ]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_datatrove_default_output_nests_metadata_that_becomes_curators_fields(tmp_path, fmt):
    from datatrove.pipeline.writers import JsonlWriter, ParquetWriter

    folder = tmp_path / "dt"
    writer = (
        JsonlWriter(str(folder), compression=None) if fmt == "jsonl" else ParquetWriter(str(folder))
    )
    with writer as w:
        for d in _datatrove_docs():
            w.write(d)
    ext = "jsonl" if fmt == "jsonl" else "parquet"
    run(
        tmp_path,
        f"  - read_{fmt}: {{paths: '{folder}/*.{ext}'}}\n"
        "  - write_jsonl: {path: out, compression: none}\n",
    )
    got = [
        json.loads(line)
        for p in sorted((tmp_path / "w" / "out").glob("*.jsonl"))
        for line in p.read_text().splitlines()
    ]
    assert sorted((r["id"], r["source"], r["url"]) for r in got) == sorted(
        (f"d{i}", "web" if i % 2 else "wiki", f"http://x/{i}") for i in range(6)
    )
    assert all("metadata" not in r for r in got)


def test_metadata_field_null_keeps_the_object_as_one_field(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "t", "metadata": {"source": "x"}}) + "\n")
    run(
        tmp_path,
        f"  - read_jsonl: {{paths: '{src}', metadata_field: null}}\n"
        "  - write_jsonl: {path: out, compression: none}\n",
    )
    (rec,) = [
        json.loads(x)
        for x in (tmp_path / "w" / "out").glob("*.jsonl").__next__().read_text().splitlines()
    ]
    assert rec["metadata"] == {"source": "x"} and rec["source"] == "read_jsonl"


def _sources(tmp_path: Path) -> str:
    """Three sources whose documents carry different metadata, the way a real multi-source
    run's do: a web source (url, a nested warc header, integer and float scores), a wiki
    (title, a list of categories), and records with a field that is a number in one and
    a word in another."""
    web = [
        {
            "id": f"w{i}",
            "text": f"web page {i} " * 4,
            "url": f"http://x/{i}",
            "warc": {"date": "2024", "length": 100 + i},
            "score": i,
        }
        for i in range(5)
    ]
    web[3]["score"] = 0.5
    wiki = [
        {
            "id": f"k{i}",
            "text": f"wiki article {i} " * 4,
            "title": f"T{i}",
            "categories": [f"c{i}"] if i else [],
        }
        for i in range(4)
    ]
    odd = [
        {"id": "o1", "text": "odd one " * 4, "rank": 1},
        {"id": "o2", "text": "odd two " * 4, "rank": "many", "warc": {"lang": "en"}},
    ]
    stages = ""
    for name, recs in (("web", web), ("wiki", wiki), ("odd", odd)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        stages += f"  - {{id: {name}, read_jsonl: {{paths: '{tmp_path}/{name}.jsonl'}}}}\n"
    return stages


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_datasets_loads_a_multi_source_output_folder_in_one_call(tmp_path, fmt, monkeypatch):
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    writer = (
        "write_jsonl: {path: out, compression: gzip}"
        if fmt == "json"
        else "write_parquet: {path: out}"
    )
    # the sources in reverse name order: the first file by name ('odd') lacks most columns
    run(tmp_path, _sources(tmp_path) + f"  - {{id: out, inputs: [wiki, web, odd], {writer}}}\n")
    files = sorted((tmp_path / "w" / "out").iterdir())
    assert len(files) == 3
    ds = datasets.load_dataset(
        fmt,
        data_files=str(tmp_path / "w" / "out" / "*"),
        split="train",
        cache_dir=str(tmp_path / "cache"),
    )
    rows = {r["id"]: r for r in ds}
    assert len(rows) == 11 and len(ds) == 11  # every document once
    assert rows["w1"]["url"] == "http://x/1" and rows["k1"]["url"] is None
    assert rows["w3"]["score"] == 0.5 and rows["w2"]["score"] == 2.0
    assert rows["w0"]["warc"] == {"date": "2024", "length": 100, "lang": None}
    assert rows["o2"]["warc"] == {"date": None, "length": None, "lang": "en"}
    assert rows["k1"]["categories"] == ["c1"] and rows["k0"]["categories"] == []
    assert json.loads(rows["o2"]["rank"]) == "many" and json.loads(rows["o1"]["rank"]) == 1
    assert {r["source"] for r in rows.values()} == {"web", "wiki", "odd"}


def test_a_rerun_reuses_the_surveys_and_a_new_column_rewrites_every_file(tmp_path):
    stages = (
        _sources(tmp_path) + "  - {id: out, inputs: [web, wiki, odd], write_jsonl: "
        "{path: out, compression: none}}\n"
    )
    run(tmp_path, stages)
    again = run(tmp_path, stages)
    assert next(s for s in again["stages"] if s["id"] == "out").get("skipped")
    with open(tmp_path / "wiki.jsonl", "a") as f:
        f.write(json.dumps({"id": "k9", "text": "new", "editor": "me"}) + "\n")
    run(tmp_path, stages)
    recs = [
        json.loads(x)
        for p in sorted((tmp_path / "w" / "out").glob("*.jsonl"))
        for x in p.read_text().splitlines()
    ]
    assert len(recs) == 12 and all("editor" in r for r in recs)
    assert len({tuple(r) for r in recs}) == 1  # one column order everywhere


def test_status_says_an_unchanged_shard_of_a_writer_redoes_if_the_new_input_changes_the_plan(
        tmp_path):
    """One source changed: `curator status` cannot know the new survey yet, so for the
    unchanged sources' shards it names the condition instead of "its upstream shard
    changed"; the run then redoes all three (the new record is the wiki's smallest, so the
    rows written first change)."""
    from tests.helpers import run_cli

    stages = (
        _sources(tmp_path) + "  - {id: out, inputs: [web, wiki, odd], write_jsonl: "
        "{path: out, compression: none}}\n"
    )
    run(tmp_path, stages)
    y = tmp_path / "p.yaml"
    y.write_text(f"name: clients\nwork_dir: {tmp_path / 'w'}\nprogress: log\nstages:\n{stages}")
    with open(tmp_path / "wiki.jsonl", "a") as f:
        f.write(json.dumps({"id": "k9", "text": "new", "title": "t", "categories": []}) + "\n")
    line = next(x for x in run_cli("status", str(y), cwd=tmp_path).stdout.splitlines()
                if x.startswith("out "))
    assert "1 to 3 of 3 shards to redo" in line, line  # wiki's for sure, the others maybe
    assert "if what the new input shards hold changes the plan of every file" in line, line
    assert "web-00000: its upstream shard changed" not in line, line
    rep = run(tmp_path, stages)
    out = next(s for s in rep["stages"] if s["id"] == "out")
    assert out["shards_resumed"] == 0 and out["docs_out"] == 12, out
