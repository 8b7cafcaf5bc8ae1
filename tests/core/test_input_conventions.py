"""Input conventions of the file readers: BOM, the id rule, duplicate ids, the source rule,
the size cap on JSONL lines, and source counts that add up."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.id_hashes import count_duplicate_ids
from curator.core.report import RunReport, StageReport, render_html
from curator.core.runner import _stage_line
from curator.core.stats import StageStats
from curator.storage.shards import read_records


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths in the YAML below are under tmp_path


def run(tmp_path: Path, stages: str, logs: list[str] | None = None, **cfg) -> dict:
    from curator.core.runner import Runner

    extra = "".join(f"{k}: {v}\n" for k, v in cfg.items())
    text = f"name: conv\nwork_dir: {tmp_path / 'w'}\nprogress: off\n{extra}stages:\n{stages}"
    return Runner(pl.loads(text), LocalExecutor(), log=logs.append if logs is not None
                  else None).run()


def stage(summary: dict, sid: str) -> dict:
    return next(s for s in summary["stages"] if s["id"] == sid)


def out_docs(tmp_path: Path, sid: str) -> list[dict]:
    d = tmp_path / "w" / "stages" / sid / "data"
    return [r for p in sorted(d.glob("*")) for r in read_records(str(p))]


def side(tmp_path: Path, kind: str, sid: str) -> list[dict]:
    d = tmp_path / "w" / kind / sid
    return [r for p in sorted(d.glob("*")) for r in read_records(str(p))] if d.exists() else []


def test_bom_at_start_of_jsonl_does_not_quarantine_the_first_record(tmp_path):
    lines = b'{"id": "a", "text": "first"}\n{"id": "b", "text": "second"}\n'
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + lines)
    (tmp_path / "bom2.jsonl.gz").write_bytes(gzip.compress(b"\xef\xbb\xbf" + lines.replace(
        b'"a"', b'"c"').replace(b'"b"', b'"d"')))
    s = run(tmp_path, "  - read_jsonl: {paths: 'bom*'}\n")
    assert sorted(d["id"] for d in out_docs(tmp_path, "read_jsonl")) == ["a", "b", "c", "d"]
    assert stage(s, "read_jsonl")["quarantined"] == {}
    # byte-range shards too: the BOM is only dropped at offset 0, other offsets still count it
    s = run(tmp_path, "  - read_jsonl: {paths: bom.jsonl, shard_size_mb: 0.00002}\n")
    docs = out_docs(tmp_path, "read_jsonl")
    assert [d["id"] for d in docs] == ["a", "b"] and stage(s, "read_jsonl")["shards"] > 1


def test_id_rule_numbers_null_and_duplicates_are_counted(tmp_path):
    recs = [{"id": 1, "text": "number one"}, {"id": "1", "text": "string one"},
            {"id": None, "text": "null id"}, {"text": "no id"}, {"id": 2.5, "text": "float"},
            {"id": {"x": 1}, "text": "object id"}, {"id": True, "text": "bool id"}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    # the same ids again in a second file of the same source: counted across shards
    (tmp_path / "b.jsonl").write_text(json.dumps({"id": "2.5", "text": "again"}) + "\n")
    logs: list[str] = []
    s = run(tmp_path, "  - read_jsonl: {paths: '*.jsonl'}\n", logs)
    ids = [d["id"] for d in out_docs(tmp_path, "read_jsonl")]
    off_null = len(json.dumps(recs[0])) + len(json.dumps(recs[1])) + 2
    off_none = off_null + len(json.dumps(recs[2])) + 1
    assert ids == ["1", "1", f"a.jsonl:{off_null}", f"a.jsonl:{off_none}", "2.5", "2.5"]
    st = stage(s, "read_jsonl")
    assert st["counters"]["duplicate_ids"] == 2
    assert sorted(r["reason"] for r in side(tmp_path, "quarantine", "read_jsonl")) == [
        "field 'id' is a bool, not a string or a number",
        "field 'id' is a dict, not a string or a number"]
    assert any("2 document(s) have an id seen before" in m for m in logs)
    html = render_html(RunReport.from_json(s))
    assert '<table class="input-checks">' in html and "<td>2</td>" in html


def test_a_numeric_id_over_64_bits_keeps_its_digits(tmp_path):
    """orjson reads an integer over 64 bits as a float: the ids 123456789012345678901234 and
    ...235 both became "1.2345678901234568e+22" (counted as duplicates, the output's ids
    wrong). They are their digits now, as the id rule says; 2**64 - 1 was always exact."""
    big = 123456789012345678901234
    lines = [f'{{"id": {big}, "text": "a"}}', f'{{"id": {big + 1}, "text": "b"}}',
             f'{{"id": {-2 ** 64 - 1}, "text": "c"}}', f'{{"id": {2 ** 64 - 1}, "text": "d"}}',
             '{"id": 1e300, "text": "e"}']
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    s = run(tmp_path, "  - read_jsonl: {paths: a.jsonl}\n")
    assert [d["id"] for d in out_docs(tmp_path, "read_jsonl")] == [
        str(big), str(big + 1), str(-2 ** 64 - 1), str(2 ** 64 - 1), "1e+300"]
    assert "duplicate_ids" not in stage(s, "read_jsonl")["counters"]


def test_ids_rewrite_makes_ids_unique_by_source_file_and_offset(tmp_path):
    for sub in ("x", "y"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "part.jsonl").write_text(
            '{"id": 7, "text": "same id"}\n{"id": 7, "text": "same id again"}\n')
    s = run(tmp_path, f"  - read_jsonl: {{paths: '{tmp_path}/*/part.jsonl', ids: rewrite, "
                      "source: web}\n")
    docs = out_docs(tmp_path, "read_jsonl")
    assert [d["id"] for d in docs] == ["web/x/part.jsonl:0", "web/x/part.jsonl:29",
                                       "web/y/part.jsonl:0", "web/y/part.jsonl:29"]
    assert {d["meta"]["original_id"] for d in docs} == {"7"}
    assert "duplicate_ids" not in stage(s, "read_jsonl")["counters"]
    # Parquet: the same parameter, ids by file, row group and row
    pq.write_table(pa.table({"id": [1, 1, 2], "text": ["a b", "c d", "e f"]}),
                   tmp_path / "t.parquet", row_group_size=2)
    s = run(tmp_path, f"  - read_parquet: {{paths: '{tmp_path}/t.parquet'}}\n"
                      f"  - id: rw\n    read_parquet: {{paths: '{tmp_path}/t.parquet', "
                      "ids: rewrite}\n")
    assert stage(s, "read_parquet")["counters"]["duplicate_ids"] == 1
    assert [d["id"] for d in out_docs(tmp_path, "rw")] == [
        "rw/t.parquet:0:0", "rw/t.parquet:0:1", "rw/t.parquet:1:2"]


def test_explicit_source_wins_over_the_records_source_field(tmp_path):
    (tmp_path / "in.jsonl").write_text(
        '{"id": "a", "text": "x", "source": "books"}\n{"id": "b", "text": "y"}\n')
    s = run(tmp_path, "  - read_jsonl: {paths: in.jsonl, source: web}\n"
                      "  - id: own\n    read_jsonl: {paths: in.jsonl}\n")
    docs = out_docs(tmp_path, "read_jsonl")
    assert [d["meta"]["source"] for d in docs] == ["web", "web"]
    assert docs[0]["meta"]["original_source"] == "books"
    st = stage(s, "read_jsonl")
    assert st["counters"]["source_overridden"] == 1 and st["sources"] == {"web": 2}
    # without the parameter the record's own field is kept, the stage id fills the gap
    assert [d["meta"]["source"] for d in out_docs(tmp_path, "own")] == ["books", "own"]
    assert stage(s, "own")["sources"] == {"books": 1, "own": 1}
    html = render_html(RunReport.from_json(s))
    assert '<table class="sources">' in html and "<td>books</td>" in html


@pytest.mark.parametrize("name", ["big.jsonl", "big.jsonl.gz", "big.jsonl.zst"])
def test_line_over_max_doc_mb_is_skipped_and_its_neighbours_kept(tmp_path, name):
    from curator.storage.atomic import open_compressed_write

    big = "w" * (3 * 1024 * 1024)
    with open_compressed_write(str(tmp_path / name)) as f:
        f.write(b'{"id": "before", "text": "kept"}\n')
        f.write(json.dumps({"id": "big", "text": big}).encode() + b"\n")
        f.write(b'{"id": "after", "text": "kept too"}\n')
    s = run(tmp_path, f"  - read_jsonl: {{paths: {name}}}\n", max_doc_mb=1)
    assert [d["id"] for d in out_docs(tmp_path, "read_jsonl")] == ["before", "after"]
    [q] = side(tmp_path, "quarantine", "read_jsonl")
    first = len(b'{"id": "before", "text": "kept"}\n')
    assert q["reason"] == "too_large" and q["offset"] == first and q["line"] == 2
    assert q["file"].endswith(name) and q["record"] == ""  # nothing of it was kept
    st = stage(s, "read_jsonl")
    assert (st["docs_in"], st["docs_out"]) == (3, 2)
    # the stage's own parameter overrides the run-wide cap
    run(tmp_path, f"  - read_jsonl: {{paths: {name}, max_doc_mb: 4}}\n", max_doc_mb=1)
    assert len(out_docs(tmp_path, "read_jsonl")) == 3


def test_too_large_line_in_a_byte_range_shard(tmp_path):
    big = "w" * (2 * 1024 * 1024)
    lines = [json.dumps({"id": f"d{i}", "text": big if i == 3 else f"doc {i}"}) + "\n"
             for i in range(8)]
    (tmp_path / "r.jsonl").write_text("".join(lines))
    s = run(tmp_path, "  - read_jsonl: {paths: r.jsonl, shard_size_mb: 0.5, max_doc_mb: 1}\n")
    assert stage(s, "read_jsonl")["shards"] > 2
    assert [d["id"] for d in out_docs(tmp_path, "read_jsonl")] == [
        f"d{i}" for i in range(8) if i != 3]
    [q] = side(tmp_path, "quarantine", "read_jsonl")
    assert q["reason"] == "too_large" and q["offset"] == sum(len(x) for x in lines[:3])


def test_source_counts_add_up(tmp_path):
    """'288 -> 288 docs (2 removed)': a source's in = out + removed + quarantined."""
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "ok"}\nnot json\n'
                                       '{"id": "b", "text": "fine"}\n')
    logs: list[str] = []
    s = run(tmp_path, "  - read_jsonl: {paths: in.jsonl}\n", logs)
    st = stage(s, "read_jsonl")
    assert (st["docs_in"], st["docs_out"], sum(st["quarantined"].values())) == (3, 2, 1)
    assert any(m.startswith("[read_jsonl] 3 -> 2 docs (0 removed, 1 quarantined)")
               for m in logs)
    line = _stage_line("src", StageStats.from_json(
        {"docs_in": 290, "docs_out": 288, "rejected": {"short": 2}, "quarantined": {}}), 1.0)
    assert line.startswith("[src] 290 -> 288 docs (2 removed)")


def test_count_duplicate_ids_in_bounded_batches(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    a = np.sort(rng.integers(0, 2**63, 5000, dtype=np.uint64) * 2)
    b = np.sort(np.concatenate([a[:300], rng.integers(0, 2**63, 700, dtype=np.uint64) * 2 + 1]))
    paths = []
    for i, arr in enumerate((a, b, a[:10])):
        p = tmp_path / f"{i}.u64"
        p.write_bytes(arr.astype("<u8").tobytes())
        paths.append(str(p))
    expected = 300 + 10
    assert count_duplicate_ids(paths) == expected
    assert count_duplicate_ids(paths, batch=97) == expected  # many hash ranges


def test_report_input_checks_count_every_too_large_reason():
    from curator.core.report import input_checks

    stages = [{"id": "web", "stage": "read_warc", "counters": {"duplicate_ids": 4},
               "quarantined": {"page too large: 20971520 bytes > 10485760": 1, "too_large": 2,
                               "record inflates to more than 67108864 bytes": 1,
                               "empty page": 5}},
              {"id": "clean", "stage": "read_warc", "counters": {"tokens": 9},
               "quarantined": {"empty page": 1}}]
    assert input_checks([StageReport.from_json(s) for s in stages]) == [["web", 4, 4, 0]]


def test_stage_line_says_what_a_source_skipped_when_it_kept_less_than_half() -> None:
    counters = {"records_read": 30, "skipped:response: no HTML content type": 29,
                "skipped:warcinfo record: not a page": 1}
    agg = StageStats.from_json({"docs_in": 1, "docs_out": 1, "counters": counters})
    assert _stage_line("web", agg, 1.0) == (
        "[web] 1 -> 1 docs (0 removed) in 1.00s; kept 1 of 30 candidate records: 29 responses "
        "skipped: no HTML content type, 1 warcinfo record skipped: not a page")
    agg.docs_out = 15  # half kept: the line stays short
    assert _stage_line("web", agg, 1.0) == "[web] 1 -> 15 docs (0 removed) in 1.00s"
    # nothing that could be a page, nothing kept: still said
    agg = StageStats.from_json({"counters": {"skipped:request: not a page": 2}})
    assert _stage_line("web", agg, 1.0).endswith(
        "kept 0 of 0 candidate records: 2 requests skipped: not a page")
