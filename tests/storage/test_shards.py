"""curator.storage.shards: the internal shard format (zstd JSON lines of id, text, meta) reads
back the documents written, in order, and a write error names its file."""

from __future__ import annotations

import errno

import numpy as np
import pytest
import zstandard

from curator.base.document import Document
from curator.storage import read_position
from curator.storage.shards import RecordWriter, read_records, read_shard, record_writer


def test_documents_read_back_in_order(tmp_path):
    path = str(tmp_path / "s.jsonl.zst")
    docs = [Document(id=f"d{i}", text=f"text {i} \u00e9\u4e2d", meta={"n": i, "tags": ["a"]})
            for i in range(5)]
    with record_writer(path) as w:
        for d in docs:
            w.write_doc(d)
    assert w.count == 5 and w.bytes > 0
    got = list(read_shard(path))
    assert [(d.id, d.text, d.meta) for d in got] == [(d.id, d.text, d.meta) for d in docs]
    with open(path, "rb") as f:  # really zstd
        assert zstandard.ZstdDecompressor().stream_reader(f).read().count(b"\n") == 5


def test_numpy_values_are_written_as_numbers(tmp_path):
    path = str(tmp_path / "s.jsonl.zst")
    with record_writer(path) as w:
        w.write({"id": "x", "text": "", "meta": {"v": np.float32(0.5), "a": np.arange(2)}})
    assert list(read_records(path)) == [{"id": "x", "text": "", "meta": {"v": 0.5, "a": [0, 1]}}]


def test_reading_counts_documents_for_progress(tmp_path):
    path = str(tmp_path / "s.jsonl.zst")
    with record_writer(path) as w:
        for i in range(3):
            w.write({"id": str(i), "text": "t", "meta": {}})
    pos, prev = read_position.watch()
    try:
        assert len(list(read_shard(path))) == 3
    finally:
        read_position.unwatch(pos, prev)
    assert pos.docs == 3


class _Full:
    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_write_error_names_the_file():
    w = RecordWriter(_Full(), "/data/out/part-1.jsonl.zst")
    with pytest.raises(OSError) as e:
        w.write({"id": "x"})
    assert e.value.filename == "/data/out/part-1.jsonl.zst" and w.count == 0
