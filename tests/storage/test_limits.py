"""Bounded reading: a record over the cap is noticed while it streams and never held whole."""

from __future__ import annotations

import gzip
import io

import pytest

from curator.storage.limits import TooLarge, iter_capped_lines, read_capped, skip_rest


class CountingReader(io.RawIOBase):
    """A stream of ``size`` bytes that records the largest single read asked of it."""

    def __init__(self, size: int) -> None:
        self.left, self.largest = size, 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.largest = max(self.largest, n)
        self.left -= n
        return b"x" * n


def test_read_capped_stops_one_chunk_past_the_cap() -> None:
    assert read_capped(io.BytesIO(b"a" * 100), 100) == b"a" * 100
    src = CountingReader(1 << 30)
    with pytest.raises(TooLarge) as e:
        read_capped(src, 1000)
    assert e.value.cap == 1000 and e.value.seen <= 1001 + (1 << 20)
    assert src.left > (1 << 29)  # the rest of the gigabyte was never read


def test_skip_rest_reads_to_the_end_or_the_limit() -> None:
    assert skip_rest(io.BytesIO(b"b" * 5000)) == 5000
    assert skip_rest(io.BytesIO(b"b" * 5000), limit=1234) == 1234


def test_a_long_line_in_a_gzip_stream_is_skipped_and_its_neighbours_kept() -> None:
    data = b"first\n" + b"y" * (3 << 20) + b"\nlast\n"
    lines = list(iter_capped_lines(gzip.GzipFile(fileobj=io.BytesIO(gzip.compress(data))), 100))
    long = (3 << 20) + 1
    assert lines == [(0, b"first\n", 6), (6, None, long), (6 + long, b"last\n", 5)]


def test_lines_of_a_byte_range_start_before_its_end() -> None:
    data = b"aa\nbbb\ncccc\n"
    fh = io.BytesIO(data)
    fh.seek(3)
    assert [line for _, line, _ in iter_capped_lines(fh, 100, start=3, end=7)] == [b"bbb\n"]
    assert list(iter_capped_lines(io.BytesIO(b"x\n"), 10, start=5, end=5)) == []
