"""Documents in and out: JSONL (plain, gzip, zstd), Parquet, fsspec (memory://, http://),
byte-range shards, atomic writes and quarantine of malformed input."""

from __future__ import annotations

import bz2
import gzip
import http.server
import json
import os
import threading
from pathlib import Path

import fsspec
import pytest
import zstandard

from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_records

RECS = [{"id": f"r{i}", "text": f"document number {i} " * (i % 7 + 1), "lang": "en", "n": i}
        for i in range(40)]


def write(path: Path, recs, extra_lines=()):
    data = "".join(json.dumps(r) + "\n" for r in recs) + "".join(extra_lines)
    raw = data.encode()
    if path.name.endswith(".gz"):
        raw = gzip.compress(raw)
    elif path.name.endswith(".zst"):
        raw = zstandard.ZstdCompressor().compress(raw)
    elif path.name.endswith(".bz2"):
        raw = bz2.compress(raw)
    path.write_bytes(raw)


def run(tmp_path, stages: str, **cfg) -> dict:
    extra = "".join(f"{k}: {v}\n" for k, v in cfg.items())
    text = f"name: io\nwork_dir: {tmp_path / 'w'}\nprogress: log\n{extra}stages:\n{stages}"
    return Runner(pl.loads(text), LocalExecutor()).run()


def read_out(path: Path) -> list[dict]:
    out = []
    for p in sorted(path.glob("*")):
        with fsspec.open(str(p), "rt", compression="infer") as f:
            out += [json.loads(x) for x in f]
    return out


@pytest.mark.parametrize("ext", [".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.bz2"])
def test_jsonl_round_trip_all_compressions(tmp_path, ext):
    write(tmp_path / f"in{ext}", RECS)
    run(tmp_path, f"  - read_jsonl: {{paths: '{tmp_path}/in{ext}'}}\n"
                  "  - write_jsonl: {path: out, compression: zstd}\n")
    got = read_out(tmp_path / "w" / "out")
    assert [r["id"] for r in got] == [r["id"] for r in RECS]
    assert got[5] == {**RECS[5], "source": "read_jsonl"}  # metadata kept beside id/text


def test_byte_range_shards_cover_every_line_once(tmp_path):
    write(tmp_path / "big.jsonl", RECS * 5)
    s = run(tmp_path, f"  - read_jsonl: {{paths: '{tmp_path}/big.jsonl', shard_size_mb: 0.001}}\n")
    assert s["stages"][0]["shards"] > 5
    docs = [r for p in sorted((tmp_path / "w/stages/read_jsonl/data").glob("*"))
            for r in read_records(str(p))]
    assert [d["id"] for d in docs] == [r["id"] for r in RECS * 5]


def test_parquet_round_trip(tmp_path):
    write(tmp_path / "in.jsonl", RECS)
    run(tmp_path, f"  - read_jsonl: {{paths: '{tmp_path}/in.jsonl'}}\n"
                  "  - write_parquet: {path: pq, row_group_size: 7}\n")
    import pyarrow.parquet as pq

    table = pq.read_table(next((tmp_path / "w" / "pq").glob("*.parquet")))
    assert table.column("id").to_pylist() == [r["id"] for r in RECS]
    (tmp_path / "w2").mkdir()
    text = (f"name: io2\nwork_dir: {tmp_path / 'w2'}\nstages:\n"
            f"  - read_parquet: {{paths: '{tmp_path}/w/pq/*.parquet', row_groups_per_shard: 2}}\n"
            "  - write_jsonl: {path: out, compression: none}\n")
    s = Runner(pl.loads(text), LocalExecutor()).run()
    assert s["stages"][0]["shards"] == 3  # 6 row groups of 7 rows, two per shard
    got = read_out(tmp_path / "w2" / "out")
    assert [(r["id"], r["text"], r["n"]) for r in got] == [(r["id"], r["text"], r["n"])
                                                           for r in RECS]


def test_memory_filesystem_and_atomic_write(tmp_path):
    with atomic_open("memory://bucket/in.jsonl", "wb") as f:
        f.write("".join(json.dumps(r) + "\n" for r in RECS).encode())
    fs = fsspec.filesystem("memory")
    assert fs.exists("/bucket/in.jsonl")
    run(tmp_path, "  - read_jsonl: {paths: 'memory://bucket/*.jsonl'}\n"
                  "  - write_jsonl: {path: 'memory://bucket/out', compression: gzip}\n")
    with fs.open("/bucket/out/read_jsonl-00000.jsonl.gz", "rb") as f:
        got = [json.loads(x) for x in gzip.decompress(f.read()).splitlines()]
    assert len(got) == len(RECS)
    assert not [p for p in fs.find("/bucket") if ".tmp-" in p]


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "x.jsonl"
    with pytest.raises(RuntimeError), atomic_open(str(target), "wb") as f:
        f.write(b"half")
        raise RuntimeError("disk died")
    assert list(tmp_path.iterdir()) == []


def test_http_source(tmp_path):
    write(tmp_path / "served.jsonl.gz", RECS)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path), **kw)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_port}/served.jsonl.gz"
        s = run(tmp_path, f"  - read_jsonl: {{paths: '{url}'}}\n")
        assert s["stages"][0]["docs_out"] == len(RECS)
    finally:
        srv.shutdown()


def test_malformed_lines_are_quarantined_and_the_rest_processed(tmp_path):
    bad = ['{"id": "x1", "text": \n', '[1, 2]\n', '{"id": "x2"}\n', '{"id": "x3", "text": 5}\n']
    write(tmp_path / "in.jsonl", RECS[:10], bad)
    (tmp_path / "in2.jsonl").write_bytes(b'{"id": "nu", "text": "caf\xe9"}\n'
                                         + json.dumps(RECS[10]).encode() + b"\n")
    s = run(tmp_path, f"  - read_jsonl: {{paths: '{tmp_path}/in*.jsonl'}}\n")
    st = s["stages"][0]
    assert st["docs_out"] == 11
    assert sum(st["quarantined"].values()) == 5
    qdir = tmp_path / "w" / "quarantine" / "read_jsonl"
    q = [r for p in sorted(qdir.glob("*")) for r in read_records(str(p))]
    assert {r["line"] for r in q if r["file"].endswith("in.jsonl")} == {11, 12, 13, 14}
    reasons = " | ".join(r["reason"] + r.get("detail", "") for r in q)
    assert "invalid JSON" in reasons and "field 'text' is missing" in reasons
    assert "record is a list" in reasons and "utf-8" in reasons.lower()


def test_truncated_gzip_keeps_documents_before_the_cut(tmp_path):
    raw = gzip.compress("".join(json.dumps(r) + "\n" for r in RECS).encode())
    (tmp_path / "cut.jsonl.gz").write_bytes(raw[: len(raw) * 2 // 3])
    s = run(tmp_path, f"  - read_jsonl: {{paths: '{tmp_path}/cut.jsonl.gz'}}\n")
    st = s["stages"][0]
    assert 0 < st["docs_out"] < len(RECS)
    [(reason, n)] = st["quarantined"].items()
    assert n == 1 and reason == "truncated or corrupt compressed file"


def test_missing_input_is_one_line_error(tmp_path):
    from curator.base.errors import InputError

    with pytest.raises(InputError, match=r"read_jsonl.paths: '.*nothing\*.jsonl' matches no file"):
        run(tmp_path, f"  - read_jsonl: {{paths: '{tmp_path}/nothing*.jsonl'}}\n")


@pytest.mark.parametrize("reader", ["read_jsonl", "read_parquet"])
def test_a_folder_or_a_name_that_is_not_utf8_is_one_line_naming_it(tmp_path, reader):
    """A glob that matches a folder (``*.jsonl`` matching ``old.jsonl/``), and a file whose
    name has a byte that is not UTF-8: one line naming it, exit 1. The folder was quarantined
    as a "truncated or corrupt compressed file" by read_jsonl and a traceback in read_parquet;
    the name was a traceback (``str is not valid UTF-8``) while the shard keys were hashed."""
    from tests.helpers import run_cli

    data = tmp_path / "data"
    data.mkdir()
    write(data / "good.jsonl", RECS[:3])
    (data / "old.jsonl").mkdir()
    yml = tmp_path / "p.yaml"
    yml.write_text(f"name: p\nwork_dir: {tmp_path / 'w'}\nstages:\n"
                   f"  - {reader}: {{paths: '{data}/*.jsonl'}}\n")
    r = run_cli("run", str(yml), check=False)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1:] == [
        f"curator: error: {reader}.paths: '{data}/old.jsonl' is a folder, not a file; give its "
        f"files (a glob such as '{data}/old.jsonl/*')"]
    (data / "old.jsonl").rmdir()
    os.rename(data / "good.jsonl", os.fsencode(data) + b"/caf\xe9.jsonl")
    r = run_cli("run", str(yml), check=False)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1:] == [
        f"curator: error: {reader}.paths: file name '{data}/caf\\xe9.jsonl' is not valid UTF-8 "
        "(curator keeps file names in JSON markers and records); rename it"]


def test_damaged_parquet_files_are_quarantined_and_the_rest_read(tmp_path):
    """A file that is not Parquet (random bytes, 0 bytes) and one whose second row group's
    pages are damaged: each quarantined with its file (and row group), every other row read.
    Both used to stop the run: the first with an ArrowInvalid traceback while listing, the
    second with "stage 'read_parquet' failed on shard ...: OSError: Couldn't deserialize
    thrift"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.Table.from_pylist(RECS[:10]), d / "a.parquet")
    pq.write_table(pa.Table.from_pylist(RECS[10:40]), d / "b.parquet", row_group_size=10,
                   compression="none")
    raw = bytearray((d / "b.parquet").read_bytes())
    start = pq.ParquetFile(d / "b.parquet").metadata.row_group(1).column(0).data_page_offset
    raw[start:start + 8] = b"\xff" * 8  # the page header of row group 1's first column
    (d / "b.parquet").write_bytes(raw)
    (d / "c.parquet").write_bytes(bytes(range(256)) * 4)
    (d / "d.parquet").write_bytes(b"")
    s = run(tmp_path, f"  - read_parquet: {{paths: '{d}/*.parquet'}}\n")
    st = s["stages"][0]
    assert st["quarantined"] == {"corrupt Parquet row group": 1,
                                 "not a Parquet file or its footer is damaged": 2}
    q = [r for p in sorted((tmp_path / "w" / "quarantine" / "read_parquet").glob("*"))
         for r in read_records(str(p))]
    assert sorted((Path(r["file"]).name, r.get("row_group")) for r in q) == [
        ("b.parquet", 1), ("c.parquet", None), ("d.parquet", None)]
    got = [r["id"] for p in sorted((tmp_path / "w" / "stages" / "read_parquet" / "data").glob("*"))
           for r in read_records(str(p))]
    assert got == [r["id"] for r in RECS[:20] + RECS[30:40]]


def test_write_parquet_codec_is_checked_before_anything_runs(tmp_path):
    """A misspelt codec is a one-line error from validation, naming the key and line; it used
    to pass ``curator validate`` and fail the first shard of the run (``ArrowException:
    Unsupported compression: zstdd``). pyarrow's names are taken in any case."""
    from curator.base.errors import ConfigError

    write(tmp_path / "in.jsonl", RECS[:5])
    head = f"name: io\nwork_dir: {tmp_path / 'w'}\nstages:\n" \
           f"  - read_jsonl: {{paths: '{tmp_path}/in.jsonl'}}\n"
    with pytest.raises(ConfigError) as e:
        pl.loads(head + "  - write_parquet: {path: out, compression: zstdd}\n", source="p.yaml")
    assert str(e.value) == (
        "p.yaml:5: stages[1].write_parquet.compression: Input should be 'none', 'snappy', "
        "'gzip', 'brotli', 'lz4', 'lz4_raw' or 'zstd' (got 'zstdd')")
    run(tmp_path, "  - read_jsonl: {paths: '" + str(tmp_path) + "/in.jsonl'}\n"
                  "  - write_parquet: {path: out, compression: SNAPPY}\n")
    import pyarrow.parquet as pq

    f = tmp_path / "w" / "out" / "read_jsonl-00000.parquet"
    assert pq.ParquetFile(f).metadata.row_group(0).column(0).compression == "SNAPPY"
    assert pq.read_table(f).column("id").to_pylist() == [r["id"] for r in RECS[:5]]


def test_write_parquet_keeps_fields_the_first_document_lacks_and_mixed_types(tmp_path):
    """Metadata a shard's first document does not have (``lang`` only on the second) used to
    be dropped for every document, silently (``pa.Table.from_pylist`` takes the first record's
    keys); a field holding ``1`` in one document and ``"many"`` in the next, or an integer over
    int64, failed the run (``ArrowInvalid: Could not convert 'many'``). Every field is a
    column; one whose values no single Arrow type holds keeps each value's JSON text."""
    import pyarrow.parquet as pq

    recs = [{"id": "a", "text": "one"},
            {"id": "b", "text": "two", "lang": "de", "score": 0.5, "n": 1, "big": 2 ** 64 - 1},
            {"id": "c", "text": "three", "n": "many", "tags": ["x"], "big": 1}]
    write(tmp_path / "in.jsonl", recs)
    run(tmp_path, f"  - read_jsonl: {{paths: '{tmp_path}/in.jsonl', source: s}}\n"
                  "  - write_parquet: {path: pq}\n")
    t = pq.read_table(tmp_path / "w" / "pq" / "read_jsonl-00000.parquet")
    assert t.column_names == ["id", "text", "source", "lang", "score", "n", "big", "tags"]
    assert t.to_pylist() == [
        {"id": "a", "text": "one", "source": "s", "lang": None, "score": None, "n": None,
         "big": None, "tags": None},
        {"id": "b", "text": "two", "source": "s", "lang": "de", "score": 0.5, "n": "1",
         "big": str(2 ** 64 - 1), "tags": None},
        {"id": "c", "text": "three", "source": "s", "lang": None, "score": None, "n": '"many"',
         "big": "1", "tags": ["x"]}]


def test_flat_output_keeps_a_records_own_id_and_text_columns(tmp_path):
    """Read with ``id_field``/``text_field`` naming other columns, a record's own ``id`` and
    ``text`` columns are metadata; flat JSONL and Parquet output used to drop them silently
    (the document's id and text took their place). They are written as ``meta_id`` and
    ``meta_text`` (``meta_meta_text`` when ``meta_text`` is taken)."""
    import pyarrow.parquet as pq

    recs = [{"doc_id": "d1", "content": "the text", "id": "a", "text": "a column", "n": 1},
            {"doc_id": "d2", "content": "more", "text": "b column", "meta_text": "taken"}]
    write(tmp_path / "in.jsonl", recs)
    run(tmp_path, f"  - read_jsonl: {{paths: '{tmp_path}/in.jsonl', id_field: doc_id, "
                  "text_field: content, source: s}\n"
                  "  - write_jsonl: {path: out, compression: none}\n"
                  "  - write_parquet: {path: pq}\n    inputs: read_jsonl\n")
    want = [{"id": "d1", "text": "the text", "meta_id": "a", "meta_text": "a column", "n": 1,
             "source": "s"},
            {"id": "d2", "text": "more", "meta_meta_text": "b column", "meta_text": "taken",
             "source": "s"}]
    got = read_out(tmp_path / "w" / "out")
    assert [{k: v for k, v in r.items() if v is not None} for r in got] == want
    assert len({tuple(r) for r in got}) == 1  # every record has every column (docs/io.md)
    rows = pq.read_table(tmp_path / "w" / "pq" / "read_jsonl-00000.parquet").to_pylist()
    assert [{k: v for k, v in r.items() if v is not None} for r in rows] == want


def test_a_file_matched_by_several_paths_is_read_once(tmp_path):
    """``paths: [data/*.jsonl, data/a.jsonl]`` (also ``data/../data/a.jsonl`` or a symlink to
    it) used to read ``a.jsonl`` once per entry: its documents twice or three times in the
    output, with only a duplicate-id warning."""
    data = tmp_path / "data"
    data.mkdir()
    write(data / "a.jsonl", RECS[:3])
    write(data / "b.jsonl", RECS[3:5])
    (tmp_path / "link.jsonl").symlink_to(data / "a.jsonl")
    s = run(tmp_path, f"  - read_jsonl: {{paths: ['{data}/*.jsonl', '{data}/a.jsonl', "
                      f"'{data}/../data/a.jsonl', '{tmp_path}/link.jsonl']}}\n"
                      "  - write_jsonl: {path: out, compression: none}\n")
    assert [r["id"] for r in read_out(tmp_path / "w" / "out")] == [r["id"] for r in RECS[:5]]
    assert "duplicate_ids" not in s["stages"][0]["counters"]
