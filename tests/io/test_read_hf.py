"""``read_hf``: save_to_disk folders, the hub's Parquet layout, streaming
through ``datasets`` -- all offline, on local folders; the same rows as ``datasets`` reads."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from curator.core import pipeline as pl
from curator.core.executors import make_executor
from curator.core.runner import Runner
from curator.storage.shards import read_shard
from tests.helpers import ROOT, run_cli

ROWS = [{"id": f"r{i}", "content": f"Row {i} text " + "word " * (i % 7), "lang": "en",
         "score": i / 10} for i in range(50)]


def _run(tmp: Path, params: dict[str, Any], work: str = "work") -> tuple[Runner, dict]:
    cfg = {"name": "hf", "work_dir": str(tmp / work), "executor": {"type": "local"},
           "stages": [{"id": "hf", "read_hf": params}]}
    (tmp / "p.yaml").write_text(yaml.safe_dump(cfg))
    pipe = pl.load(str(tmp / "p.yaml"))
    with make_executor(pipe.config.executor) as ex:
        runner = Runner(pipe, ex)
        return runner, runner.run()


def _docs(runner: Runner) -> list:
    return [d for s in runner.results["hf"]["shards"] for d in read_shard(s["path"])]


def _as_rows(docs: list) -> list[dict]:
    return [{"id": d.id, "content": d.text, "lang": d.meta["lang"], "score": d.meta["score"]}
            for d in docs]


def test_save_to_disk_folder_equals_datasets(tmp_path: Path) -> None:
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "ds"), num_shards=3)
    runner, _ = _run(tmp_path, {"path": str(tmp_path / "ds"), "text_field": "content"})
    assert len(runner.results["hf"]["shards"]) == 3  # one shard per Arrow file
    ref = list(datasets.load_from_disk(str(tmp_path / "ds")))
    assert _as_rows(_docs(runner)) == ref
    assert {d.meta["source"] for d in _docs(runner)} == {"hf"}


def test_dataset_dict_picks_the_split(tmp_path: Path) -> None:
    dd = datasets.DatasetDict({"train": datasets.Dataset.from_list(ROWS[:40]),
                               "validation": datasets.Dataset.from_list(ROWS[40:])})
    dd.save_to_disk(str(tmp_path / "dd"))
    runner, _ = _run(tmp_path, {"path": str(tmp_path / "dd"), "split": "validation",
                                "text_field": "content"})
    assert [d.id for d in _docs(runner)] == [r["id"] for r in ROWS[40:]]
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump({"name": "b", "work_dir": str(tmp_path / "wb"), "stages": [
        {"read_hf": {"path": str(tmp_path / "dd"), "split": "tset"}}]}))
    r = run_cli("run", str(p), check=False)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == (
        f"curator: error: read_hf.path: '{tmp_path / 'dd'}' has no split 'tset' "
        "(splits: train, validation)")


@pytest.mark.parametrize("layout", ["data/{split}-{i:05d}-of-00002.parquet",
                                    "default/{split}/{i:04d}.parquet"])
def test_hub_parquet_layout_by_row_groups(tmp_path: Path, layout: str) -> None:
    for i, part in enumerate((ROWS[:30], ROWS[30:])):
        f = tmp_path / "hub" / layout.format(split="train", i=i)
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(part), str(f), row_group_size=10)
    other = tmp_path / "hub" / layout.format(split="test", i=0)
    other.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(ROWS[:5]), str(other))
    runner, _ = _run(tmp_path, {"path": str(tmp_path / "hub"), "text_field": "content",
                                "row_groups_per_shard": 2})
    assert len(runner.results["hf"]["shards"]) == 2 + 1  # 3 and 2 row groups, 2 per shard
    files = sorted(str(p) for p in (tmp_path / "hub").rglob("train*.parquet")) or sorted(
        str(p) for p in (tmp_path / "hub" / "default" / "train").glob("*.parquet"))
    ref = list(datasets.load_dataset("parquet", data_files=files, split="train"))
    assert _as_rows(_docs(runner)) == ref


def test_rerun_resumes_and_rereads_only_a_changed_file(tmp_path: Path) -> None:
    for i, part in enumerate((ROWS[:25], ROWS[25:])):
        f = tmp_path / "hub" / "data" / f"train-{i:05d}-of-00002.parquet"
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(part), str(f))
    params = {"path": str(tmp_path / "hub"), "text_field": "content"}
    _run(tmp_path, params)
    _, again = _run(tmp_path, params)
    assert again["stages"][0]["skipped"]
    pq.write_table(pa.Table.from_pylist(ROWS[25:30]),
                   str(tmp_path / "hub" / "data" / "train-00001-of-00002.parquet"))
    runner, third = _run(tmp_path, params)
    assert third["stages"][0]["shards_resumed"] == 1 and len(_docs(runner)) == 30


def test_streaming_through_datasets_offline(tmp_path: Path, monkeypatch) -> None:
    """streaming: true goes through datasets.load_dataset(..., streaming=True); a local folder
    stands in for a hub id (no network in tests: HF_DATASETS_OFFLINE)."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for i, part in enumerate((ROWS[:20], ROWS[20:])):
        f = tmp_path / "hub" / "data" / f"train-{i:05d}-of-00002.parquet"
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(part), str(f))
    runner, _ = _run(tmp_path, {"path": str(tmp_path / "hub"), "text_field": "content",
                                "streaming": True})
    assert len(runner.results["hf"]["shards"]) == 2  # the streaming dataset's two files
    assert sorted(r["id"] for r in _as_rows(_docs(runner))) == sorted(r["id"] for r in ROWS)


def test_missing_text_field_is_quarantined_and_not_a_folder_is_one_line(tmp_path: Path) -> None:
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "ds"))
    _, summary = _run(tmp_path, {"path": str(tmp_path / "ds")})  # no 'text' column
    st = summary["stages"][0]
    assert st["docs_out"] == 0 and sum(st["quarantined"].values()) == 50
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump({"name": "b", "work_dir": str(tmp_path / "wb"), "stages": [
        {"read_hf": {"path": str(tmp_path / "nothing")}}]}))
    r = run_cli("run", str(p), check=False)
    assert r.returncode == 1 and "is not a folder" in r.stderr.strip().splitlines()[-1]


def test_hf_example_pipeline_runs_from_the_readme(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "data" / "sample" / "hf", tmp_path / "data" / "sample" / "hf")
    shutil.copytree(ROOT / "pipelines", tmp_path / "pipelines")
    r = run_cli("run", "pipelines/hf-example.yaml", cwd=tmp_path)
    assert "done in" in r.stderr
    out = sorted((tmp_path / "work" / "hf-example" / "hf_out").glob("*.jsonl"))
    assert len(out) == 6 and os.path.getsize(out[0]) > 0
    assert "curator run pipelines/hf-example.yaml" in (ROOT / "README.md").read_text()


def test_an_unreachable_hub_id_is_one_line(tmp_path: Path) -> None:
    """Offline (as in every test): a hub id fails with one line naming it, both ways."""
    import subprocess
    import sys

    from tests.helpers import cli_env

    env = {**cli_env(), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    for streaming, expect in ((False, "curator: error: read_hf.path: 'nobody/nothing' is no "
                                      "local folder, and hf://datasets/nobody/nothing was not "
                                      "found or the hub cannot be reached"),
                              (True, "curator: error: read_hf: datasets could not stream "
                                     "'nobody/nothing' (name None, split train): ")):
        (tmp_path / "p.yaml").write_text(yaml.safe_dump({
            "name": "h", "work_dir": str(tmp_path / f"w{streaming}"),
            "stages": [{"read_hf": {"path": "nobody/nothing", "streaming": streaming}}]}))
        r = subprocess.run([sys.executable, "-m", "curator", "run", "p.yaml"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.strip().splitlines()[-1].startswith(expect), r.stderr


def test_a_file_that_is_not_parquet_in_a_hub_folder_is_quarantined(tmp_path: Path) -> None:
    """One ``data/train-*.parquet`` of random bytes (a download cut short, another format):
    quarantined with its file, the other file read. Used to stop the run with an ArrowInvalid
    traceback ("Parquet magic bytes not found in footer") while the shards were listed."""
    d = tmp_path / "hub" / "data"
    d.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(ROWS[:20]), str(d / "train-00000-of-00002.parquet"))
    (d / "train-00001-of-00002.parquet").write_bytes(bytes(range(256)) * 2)
    runner, summary = _run(tmp_path, {"path": str(tmp_path / "hub"), "text_field": "content"})
    assert _as_rows(_docs(runner)) == ROWS[:20]
    assert summary["stages"][0]["quarantined"] == {
        "not a Parquet file or its footer is damaged": 1}


def test_a_damaged_row_group_in_a_hub_folder_is_quarantined(tmp_path: Path) -> None:
    """Damaged pages in one row group (the footer intact) failed the run ("stage 'hf' failed
    on shard ...: OSError: Couldn't deserialize thrift"); that row group is now quarantined
    with its file and number, the other rows read."""
    f = tmp_path / "hub" / "data" / "train-00000-of-00001.parquet"
    f.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(ROWS[:30]), str(f), row_group_size=10,
                   compression="none")
    raw = bytearray(f.read_bytes())
    start = pq.ParquetFile(str(f)).metadata.row_group(1).column(0).data_page_offset
    raw[start:start + 8] = b"\xff" * 8
    f.write_bytes(raw)
    runner, summary = _run(tmp_path, {"path": str(tmp_path / "hub"), "text_field": "content"})
    assert _as_rows(_docs(runner)) == ROWS[:10] + ROWS[20:30]
    assert summary["stages"][0]["quarantined"] == {"corrupt Parquet row group": 1}
