"""How far the reader of the current shard is through its input file, for a per-shard ETA.

A streaming shard's document count is unknown until it ends, but its input file's size is
known: the position of the raw (compressed) file handle over its size, asked for only when a
progress heartbeat is written (every couple of seconds, never per document), gives the
fraction read. Readers announce the handle they read with :func:`track`; it is a no-op unless
a heartbeat in the same thread is watching (:func:`watch`), so other files opened during a
shard (a stage's word list) never count. The latest tracked file of a shard wins: a shard of
several files shows the fraction of the one being read.
"""

from __future__ import annotations

import os
import threading
from typing import Any

_local = threading.local()


class ReadPosition:
    """The raw handle a shard's source reads and the byte range ``[start, end)`` it covers."""

    __slots__ = ("docs", "end", "fh", "start")

    def __init__(self) -> None:
        self.fh: Any = None
        self.start = 0
        self.end = 0
        #: documents read so far through :func:`count_doc` (a global stage's phase task)
        self.docs = 0

    def fraction(self) -> float | None:
        """Bytes of the range read so far over its length (0..1); ``None`` when unknown (no
        tracked file, a size of 0, or the file already closed)."""
        fh = self.fh
        if fh is None or self.end <= self.start:
            return None
        try:
            pos = fh.tell()
        except (OSError, ValueError, AttributeError):  # closed, or a stream without a position
            return None
        return min(max((pos - self.start) / (self.end - self.start), 0.0), 1.0)


def watch() -> tuple[ReadPosition, ReadPosition | None]:
    """Start watching what this thread reads; returns the new position and the one it hides
    (give both back to :func:`unwatch`)."""
    pos = ReadPosition()
    prev = getattr(_local, "pos", None)
    _local.pos = pos
    return pos, prev


def unwatch(pos: ReadPosition, prev: ReadPosition | None) -> None:
    if getattr(_local, "pos", None) is pos:  # a generator closed from another thread: leave it
        _local.pos = prev


def track(fh: Any, end: int | None = None, start: int = 0) -> None:
    """Announce that the current shard reads ``fh`` (the raw, still compressed handle) up to
    byte ``end`` (default: the file's size) from ``start``. Costs nothing when not watched."""
    pos = getattr(_local, "pos", None)
    if pos is None:
        return
    if end is None:
        end = size_of(fh)
    pos.fh, pos.start, pos.end = fh, start, end or 0


def count_doc() -> None:
    """One more document read by this thread's watched reader (nothing when not watched)."""
    pos = getattr(_local, "pos", None)
    if pos is not None:
        pos.docs += 1


def size_of(fh: Any) -> int:
    """A file handle's size without moving it: fsspec's ``size``, else ``fstat``; 0 if neither."""
    size = getattr(fh, "size", None)
    if isinstance(size, int):
        return size
    try:
        return os.fstat(fh.fileno()).st_size
    except (OSError, ValueError, AttributeError, TypeError):
        f = getattr(fh, "f", None)  # fsspec's LocalFileOpener wraps the real file
        if f is not None and f is not fh:
            return size_of(f)
        return 0
