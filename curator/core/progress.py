"""Progress per stage: a one-line bar on a terminal, plain log lines otherwise (CI, files)."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """Counts finished shards and documents; called with each shard's stats as it finishes."""

    def __init__(self, stage_id: str, *, enabled: bool = True, mode: str = "auto",
                 stream: Any = None) -> None:
        self.stage_id = stage_id
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "bar" if getattr(self.stream, "isatty", lambda: False)() else "log"
        self.mode = mode if enabled else "off"
        self.total = 0
        self.done = 0
        self.docs = 0
        self.t0 = time.perf_counter()
        self._last_log = 0.0

    def start(self, total: int) -> None:
        self.total, self.done, self.docs = total, 0, 0
        self.t0 = time.perf_counter()

    def __call__(self, stats: Any) -> None:
        self.done += 1
        if isinstance(stats, list) and stats:  # a fused group: the documents its first stage read
            stats = stats[0]
        if isinstance(stats, dict):
            self.docs += int(stats.get("docs_in", 0) or 0)
        if self.mode == "off":
            return
        now = time.perf_counter()
        rate = self.docs / max(now - self.t0, 1e-9)
        eta = self.eta(now)
        if self.mode == "bar":
            width = 24
            filled = int(width * self.done / max(self.total, 1))
            self.stream.write(
                f"\r[{self.stage_id}] |{'#' * filled}{'.' * (width - filled)}| "
                f"{self.done}/{self.total} shards  {rate:,.0f} docs/s  ETA {eta}"
            )
            self.stream.flush()
        elif now - self._last_log >= 5 or self.done == self.total:
            self._last_log = now
            self.stream.write(f"[{self.stage_id}] {self.done}/{self.total} shards, "
                              f"{self.docs} docs, {rate:,.0f} docs/s, ETA {eta}\n")
            self.stream.flush()

    def eta(self, now: float | None = None) -> str:
        """Time left for this stage, from the mean time per finished shard so far (shards are
        cut to similar sizes, and the MPI queue and Dask keep every worker busy)."""
        if self.done >= self.total:
            return "0s"
        if not self.done:
            return "?"
        now = time.perf_counter() if now is None else now
        left = (now - self.t0) / self.done * (self.total - self.done)
        return format_seconds(left)

    def finish(self) -> None:
        if self.mode == "bar" and self.total:
            self.stream.write("\n")
            self.stream.flush()


def format_seconds(secs: float) -> str:
    """``42s``, ``7m05s``, ``3h12m``, ``2d04h``: short enough for a progress line."""
    s = round(secs)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
