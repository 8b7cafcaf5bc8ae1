"""Bad input at the core: each case names its expected outcome."""

from __future__ import annotations

import json

import pytest

from curator.storage.shards import read_records
from tests.helpers import run_cli


def run(tmp_path, stages: str, check=True, top: str = ""):
    (tmp_path / "p.yaml").write_text(f"name: bad\nwork_dir: w\n{top}stages:\n{stages}")
    return run_cli("run", "p.yaml", cwd=tmp_path, check=check)


def report(tmp_path):
    return {s["id"]: s for s in json.loads((tmp_path / "w/report.json").read_text())["stages"]}


def test_empty_file_gives_zero_documents_not_an_error(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "empty.jsonl.gz").write_bytes(b"")
    run(tmp_path, "  - read_jsonl: {paths: 'empty.jsonl*'}\n  - write_jsonl: {path: out}\n")
    rep = report(tmp_path)
    assert rep["read_jsonl"]["docs_out"] == 0 and rep["write_jsonl"]["shards"] == 2


def test_empty_corpus_flows_through_global_stages(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "one two"}\n')
    run(tmp_path, "  - read_jsonl: {paths: in.jsonl}\n"
                  "  - tests.core.helpers_core:min_words: {n: 100}\n"
                  "  - tests.core.helpers_core:AboveMedian: {}\n  - write_jsonl: {path: out}\n")
    rep = report(tmp_path)
    assert rep["min_words"]["docs_out"] == 0
    assert rep["above_median"]["docs_in"] == 0 and rep["above_median"]["artifacts"]["median"] == 0
    assert rep["write_jsonl"]["docs_out"] == 0


@pytest.mark.slow
def test_fifty_megabyte_document_is_processed_whole(tmp_path):
    """Above the default cap (32 MB) it is quarantined too_large; a raised run-wide
    ``max_doc_mb`` keeps it whole."""
    big = "word " * (10 * 1024 * 1024)  # 50 MiB of text in one JSONL line
    with open(tmp_path / "in.jsonl", "w") as f:
        f.write(json.dumps({"id": "small", "text": "tiny doc"}) + "\n")
        f.write(json.dumps({"id": "huge", "text": big}) + "\n")
    stages = "  - read_jsonl: {paths: in.jsonl}\n  - tests.core.helpers_core:min_words: {n: 2}\n"
    run(tmp_path, stages)
    rep = report(tmp_path)
    assert rep["min_words"]["docs_out"] == 1
    assert rep["read_jsonl"]["quarantined"] == {"too_large": 1}
    run(tmp_path, stages, top="max_doc_mb: 64\n")
    rep = report(tmp_path)
    assert rep["min_words"]["docs_out"] == 2
    assert rep["min_words"]["bytes_out"] == len(big) + len("tiny doc")
    [path] = (tmp_path / "w/stages/min_words/data").glob("*")
    docs = list(read_records(str(path)))
    assert docs[1]["text"] == big


def test_binary_junk_is_quarantined(tmp_path):
    (tmp_path / "junk.jsonl").write_bytes(bytes(range(256)) * 40 + b"\n"
                                          + b'{"id": "ok", "text": "fine"}\n')
    run(tmp_path, "  - read_jsonl: {paths: junk.jsonl}\n")
    rep = report(tmp_path)
    assert rep["read_jsonl"]["docs_out"] == 1
    assert sum(rep["read_jsonl"]["quarantined"].values()) >= 1
