"""The internal shard format between stages: zstd-compressed JSONL of ``{"id","text","meta"}``.

JSONL keeps shards streamable and greppable; zstd keeps them small and fast. Writers are
atomic, so a shard file that exists is complete.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import IO, Any

import orjson

from curator.base.document import Document
from curator.storage import read_position
from curator.storage.atomic import open_compressed_read, open_compressed_write

SHARD_SUFFIX = ".jsonl.zst"


def dumps(rec: Any) -> bytes:
    return orjson.dumps(rec, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"


class RecordWriter:
    """Writes JSON records, one a line, to an atomic (compressed) file; counts them."""

    def __init__(self, fh: IO[bytes], path: str | None = None) -> None:
        self._fh = fh
        self.path = path
        self.count = 0
        self.bytes = 0

    def write(self, rec: Any) -> None:
        line = dumps(rec)
        try:
            self._fh.write(line)
        except OSError as e:
            # write() errors name no file; several writers are open at once (a shard's
            # output, each step's rejected/ and quarantine/ files), so name this one here,
            # before the error crosses another writer's block that would name its own
            if e.filename is None and self.path is not None:
                e.filename = self.path
            raise
        self.count += 1
        self.bytes += len(line)

    def write_doc(self, doc: Document) -> None:
        self.write(doc.to_record())


@contextlib.contextmanager
def record_writer(path: str) -> Iterator[RecordWriter]:
    with open_compressed_write(path) as fh:
        yield RecordWriter(fh, path)


def read_records(path: str, track: bool = False) -> Iterator[dict[str, Any]]:
    with open_compressed_read(path, track=track) as fh:
        for line in fh:
            if line.strip():
                yield orjson.loads(line)


def read_shard(path: str) -> Iterator[Document]:
    """Documents of an internal shard file, in order (its read position and the documents
    read show in progress)."""
    count = read_position.count_doc
    for rec in read_records(path, track=True):
        count()
        yield Document.from_record(rec)
