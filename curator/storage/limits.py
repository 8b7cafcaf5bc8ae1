"""Bounded reading: no reader holds more than ``max_doc_mb`` of one document in memory.

A hostile or broken input (a gzip bomb, a 1 GB JSONL line, a 300 MB Wikipedia page) is
noticed while it streams, before it is materialised: the reader skips it and quarantines it
with reason :data:`TOO_LARGE`, naming the file and the byte offset; its neighbours are kept.
The cap is the pipeline's ``max_doc_mb`` (default :data:`DEFAULT_MAX_DOC_MB`), which a reader
may override with its own ``max_doc_mb`` parameter.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import IO, Any

#: Default of the pipeline-wide ``max_doc_mb``.
DEFAULT_MAX_DOC_MB = 32.0
#: Quarantine reason (and report row) of a record over the cap.
TOO_LARGE = "too_large"
_CHUNK = 1 << 20


def mb_to_bytes(mb: float) -> int:
    return int(mb * 1024 * 1024)


class TooLarge(Exception):
    """A record grew past the cap while it was being read (it was not kept)."""

    def __init__(self, seen: int, cap: int) -> None:
        super().__init__(f"more than {cap} bytes (read {seen} before stopping)")
        self.seen, self.cap = seen, cap


def read_capped(fh: IO[bytes], cap: int) -> bytes:
    """All of ``fh``, or :class:`TooLarge` as soon as more than ``cap`` bytes come out (at most
    ``cap`` + one chunk is ever held)."""
    parts: list[bytes] = []
    n = 0
    while True:
        b = fh.read(min(_CHUNK, cap + 1 - n) if n <= cap else _CHUNK)
        if not b:
            return b"".join(parts)
        n += len(b)
        if n > cap:
            raise TooLarge(n, cap)
        parts.append(b)


def skip_rest(fh: IO[bytes], limit: int | None = None) -> int:
    """Read ``fh`` to its end (or ``limit`` bytes) in chunks, keeping nothing; bytes read."""
    n = 0
    while limit is None or n < limit:
        b = fh.read(_CHUNK if limit is None else min(_CHUNK, limit - n))
        if not b:
            break
        n += len(b)
    return n


def line_reader(fh: Any) -> Any:
    """A file object whose ``readline(limit)`` is bounded: fsspec's remote files read until
    the newline whatever the limit, so they get a standard buffer in front."""
    try:
        from fsspec.spec import AbstractBufferedFile
    except ImportError:  # pragma: no cover
        return fh
    if isinstance(fh, AbstractBufferedFile):
        return io.BufferedReader(fh, _CHUNK)  # type: ignore[arg-type]
    return fh


def iter_capped_lines(fh: Any, cap: int, start: int = 0, end: int | None = None
                      ) -> Iterator[tuple[int, bytes | None, int]]:
    """``(offset, line, length)`` for each line of ``fh`` (from offset ``start``; stop at the
    first line starting at or after ``end``). A line of more than ``cap`` bytes (newline not
    counted) comes back as ``line=None`` after being skipped in chunks up to the next newline,
    never held whole.

    Reads chunks of up to 1 MB and splits them itself: a compressed stream then inflates in
    large steps (``readline`` on a gzip or bz2 file goes through an 8 KB buffer, several times
    slower to skip a 1 GB line)."""
    pos = start
    if end is not None and pos >= end:
        return
    parts: list[bytes] = []  # the current line's bytes so far (at most cap + 1 in all)
    have = 0
    skipping = False
    # read1: a truncated or corrupt compressed stream raises only after what was decoded
    # before the damage came out (those lines are kept)
    read = getattr(fh, "read1", fh.read)
    while True:
        chunk = read(_CHUNK)
        if not chunk:
            if skipping:
                yield pos, None, have
            elif have:
                yield pos, b"".join(parts), have
            return
        i = 0
        n = len(chunk)
        while i < n:
            j = chunk.find(b"\n", i)
            if j < 0:
                have += n - i
                if skipping:
                    pass
                elif have > cap:
                    skipping, parts = True, []
                else:
                    parts.append(chunk[i:] if i else chunk)
                break
            length = have + j + 1 - i
            if skipping or length - 1 > cap:
                yield pos, None, length
            elif parts:
                parts.append(chunk[i: j + 1])
                yield pos, b"".join(parts), length
            else:
                yield pos, chunk[i: j + 1], length
            pos += length
            parts, have, skipping = [], 0, False
            i = j + 1
            if end is not None and pos >= end:
                return
