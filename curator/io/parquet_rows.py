"""Reading Parquet records in batches bounded by bytes, shared by ``read_parquet`` and ``read_hf``.

A row group is the unit a Parquet writer chooses, so its size is the writer's (an attacker's)
choice: 18 KB of zstd can hold 64 texts of 8 MB in one row group, and reading it whole took
1.75 GB. Rows are read instead in batches whose row count comes from a byte budget and the
file's own metadata, never from the row group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any

from curator.core.context import ShardContext

#: Bytes of decoded values one batch should hold (held twice at most: Arrow's batch and its
#: Python rows).
BATCH_BYTES = 64 << 20
#: Rows per batch at most (pyarrow's own default).
MAX_BATCH_ROWS = 65_536
#: Reasons a Parquet file or row group is quarantined.
UNREADABLE = "not a Parquet file or its footer is damaged"
CORRUPT_GROUP = "corrupt Parquet row group"
PAGE_BOMB = "Parquet page too large to decode"
DEEP_SCHEMA = "Parquet schema nested too deep"


def unreadable(ctx: ShardContext, path: str, detail: str) -> None:
    """Quarantine a whole file whose footer or schema could not be read at listing."""
    reason = DEEP_SCHEMA if "too deeply nested" in detail else UNREADABLE
    ctx.quarantine(b"", reason, file=path, detail=detail)


def unreadable_reason(e: BaseException) -> str | None:
    """The quarantine detail of a footer or schema that pyarrow cannot read (not Parquet, cut,
    a schema nested past pyarrow's 100 levels), or None for an error that may pass on a retry
    (a network or disk error, raised by the file object under pyarrow as its own type)."""
    import pyarrow as pa

    if isinstance(e, pa.ArrowInvalid) or (type(e) is OSError and e.errno is None):
        return " ".join(str(e).split())[:300]
    return None


def row_groups(open_file: Callable[[], IO[bytes]]) -> int | str:
    """The number of row groups of a Parquet file, or why it cannot be read (its quarantine
    detail); a retryable error is raised."""
    import pyarrow.parquet as pq

    try:
        with open_file() as fh:
            return pq.ParquetFile(fh).metadata.num_row_groups
    except (ValueError, OSError) as e:  # pa.ArrowInvalid is a ValueError
        why = unreadable_reason(e)
        if why is None:
            raise
        return why


def schema_depth(schema: Any) -> int:
    """How deep a record of an Arrow schema nests (the record itself is level 1)."""

    def depth(t: Any) -> int:
        n = getattr(t, "num_fields", 0)
        return 1 + max((depth(t.field(i).type) for i in range(n)), default=0) if n else 0

    return 1 + max((depth(f.type) for f in schema), default=0)


#: A page (pyarrow decodes one whole) may decompress to more than this only at a ratio of at
#: most :data:`MAX_PAGE_RATIO`: memory stays within a fixed size or a multiple of the bytes
#: read. Legitimate pages hold up to 1,024 values (pyarrow's write batch), so big documents
#: make big pages; text compresses 3 to 20 times.
PAGE_BYTES = 256 << 20
MAX_PAGE_RATIO = 100
_I32, _BINARY, _LIST, _SET, _MAP, _STRUCT = 5, 8, 9, 10, 11, 12


class _Thrift:
    """Just enough of Thrift's compact protocol to read a Parquet page header."""

    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def byte(self) -> int:
        b = self.buf[self.pos]  # IndexError: the header goes on past the bytes read
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = value = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > 64:
            raise ValueError("page header nested too deep")
        if kind in (1, 2):  # booleans live in the field header
            return
        if kind == 3:
            self.pos += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.pos += 8
        elif kind == _BINARY:
            n = self.varint()  # before reading self.pos: varint() moves it
            self.pos += n
        elif kind in (_LIST, _SET):
            head = self.byte()
            n = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(n):
                self.skip(head & 0x0F, depth + 1)
        elif kind == _MAP:
            n = self.varint()
            kv = self.byte() if n else 0
            for _ in range(n):
                self.skip(kv >> 4, depth + 1)
                self.skip(kv & 0x0F, depth + 1)
        elif kind == _STRUCT:
            self.fields(depth + 1)
        else:
            raise ValueError(f"unknown Thrift type {kind}")

    def fields(self, depth: int = 0, want: tuple[int, ...] = ()) -> dict[int, int]:
        """Read a struct; the i32 fields numbered in ``want``."""
        got: dict[int, int] = {}
        fid = 0
        while (head := self.byte()) != 0:
            delta, kind = head >> 4, head & 0x0F
            fid = fid + delta if delta else self.zigzag()
            if kind == _I32 and fid in want:
                got[fid] = self.zigzag()
            else:
                self.skip(kind, depth)
        if self.pos > len(self.buf):
            raise IndexError("cut")
        return got


def _page_headers(fh: IO[bytes], start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """``(offset, uncompressed size, compressed size)`` of each page stored in
    ``[start, end)`` (a column chunk), read from the page headers pyarrow itself follows."""
    pos = start
    while pos < end:
        want = 1 << 12
        while True:
            fh.seek(pos)
            buf = fh.read(want)
            t = _Thrift(buf)
            try:
                got = t.fields(want=(2, 3))
                break
            except IndexError:
                if len(buf) < want or want >= 1 << 24:
                    raise ValueError("page header cut or over 16 MiB") from None
                want *= 8
        if 2 not in got or 3 not in got or got[3] < 0:
            raise ValueError("page header without its sizes")
        yield pos, got[2], got[3]
        pos += t.pos + got[3]


def _page_check(fh: IO[bytes], column: Any, local: bool) -> tuple[str, str] | None:
    """``(reason, detail)`` when a column chunk may not be read (a page that decompresses past
    the limits, page headers that cannot be followed), or None. A remote file's pages are
    followed only where its metadata allows a bomb (a chunk over the limits): each header is
    a request there, and the chunk would be fetched twice."""
    if not local and not (
        column.total_uncompressed_size > PAGE_BYTES
        and column.total_uncompressed_size > MAX_PAGE_RATIO * max(column.total_compressed_size, 1)
    ):
        return None
    start = column.dictionary_page_offset if column.has_dictionary_page else None
    start = column.data_page_offset if start is None else min(start, column.data_page_offset)
    try:
        for offset, size, stored in _page_headers(fh, start, start + column.total_compressed_size):
            if size > PAGE_BYTES and size > MAX_PAGE_RATIO * max(stored, 1):
                return PAGE_BOMB, (
                    f"column {column.path_in_schema}: the page at byte {offset} decompresses "
                    f"to {size} bytes from {stored} (over {PAGE_BYTES >> 20} MiB at more than "
                    f"{MAX_PAGE_RATIO} times its size: a decompression bomb)"
                )
    except ValueError as e:
        return CORRUPT_GROUP, f"column {column.path_in_schema}: {e}"
    return None


def _largest_dictionary_value(fh: IO[bytes], column: Any) -> int | None:
    """A bound on the largest value of a column chunk's dictionary: its page's size."""
    if not column.has_dictionary_page or column.dictionary_page_offset is None:
        return None
    try:
        return next(
            _page_headers(fh, column.dictionary_page_offset, column.dictionary_page_offset + 1)
        )[1]
    except (ValueError, StopIteration):
        return column.total_uncompressed_size


def batch_rows(pf: Any, fh: IO[bytes], group: int) -> int:
    """Rows per batch for ``group`` so that a batch holds about :data:`BATCH_BYTES` of values.

    A column is counted per row at its average (its uncompressed size over the rows) plus,
    when it has a dictionary page, that page's size: any row may hold the dictionary's largest
    value, which the reader expands in every row that refers to it (a 1 KB file can refer to
    one 8 MB value 64 times)."""
    meta = pf.metadata.row_group(group)
    rows = max(meta.num_rows, 1)
    per_row = 0.0
    for i in range(meta.num_columns):
        col = meta.column(i)
        per_row += col.total_uncompressed_size / rows + (_largest_dictionary_value(fh, col) or 0)
    return int(max(1, min(MAX_BATCH_ROWS, BATCH_BYTES // max(per_row, 1))))


def iter_rows(
    pf: Any, fh: IO[bytes], groups: list[int], ctx: ShardContext, path: str, local: bool
) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
    """``(row group, row within it, row within groups, record)`` of ``groups`` of the
    ``pyarrow.parquet.ParquetFile`` ``pf`` read from ``fh``, a bounded batch at a time.

    A row group holding a page bomb is quarantined whole before anything of it is decoded;
    pages that cannot be decoded cost the rest of their row group (a quarantine record
    naming it), not the shard; a remote read error may pass on a retry, so it fails the
    shard."""
    import pyarrow as pa

    first = 0
    for g in groups:
        meta = pf.metadata.row_group(g)
        refused = next(
            filter(None, (_page_check(fh, meta.column(i), local) for i in range(meta.num_columns))),
            None,
        )
        if refused is not None:
            ctx.quarantine(b"", refused[0], file=path, row_group=g, row=first, detail=refused[1])
            first += meta.num_rows
            continue
        size = batch_rows(pf, fh, g)
        k = 0
        try:
            for batch in pf.iter_batches(batch_size=size, row_groups=[g]):
                for rec in batch.to_pylist():
                    yield g, k, first + k, rec
                    k += 1
        except (pa.ArrowInvalid, OSError) as e:
            if not local:
                raise
            ctx.quarantine(
                b"",
                CORRUPT_GROUP,
                file=path,
                row_group=g,
                row=first + k,
                detail=f"{type(e).__name__}: {' '.join(str(e).split())}"[:300],
            )
        first += meta.num_rows
