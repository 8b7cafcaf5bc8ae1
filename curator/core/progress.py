"""Progress per stage: a one-line bar on a terminal, plain log lines otherwise (CI, files).

Inside a long shard (a 2 GB WARC is one shard, minutes of work) the worker reading it writes a
small heartbeat file, ``stages/<id>/_progress/<shard>.json`` (documents and UTF-8 bytes read so
far, when it started), at most every :data:`HEARTBEAT_S` seconds; the driver reads those files
every few seconds and shows the shards in flight with their documents, bytes and rate. Files
work the same for every executor (local, Dask workers, MPI ranks share the work_dir) and cost
one small write every couple of seconds per shard.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

#: How often a worker rewrites its shard's heartbeat file (seconds; ``CURATOR_HEARTBEAT_S``).
HEARTBEAT_S = float(os.environ.get("CURATOR_HEARTBEAT_S") or 2.0)
#: How often the driver redraws the bar (terminal) or prints a line (otherwise), in seconds;
#: ``CURATOR_PROGRESS_S`` sets the line interval.
BAR_S = 1.0
LINE_S = 10.0
#: A heartbeat older than this is a shard that stopped (a killed worker): not shown.
STALE_S = 60.0


def heartbeat_path(work_dir: str, stage_id: str, shard: str) -> str:
    return os.path.join(work_dir, "stages", stage_id, "_progress", f"{shard}.json")


def heartbeat(docs: Iterator[Any], path: str, every: float | None = None) -> Iterator[Any]:
    """Pass ``docs`` on, writing ``{"docs", "bytes", "started", "at"}`` to ``path`` (atomically)
    every ``every`` seconds while they flow; the file is removed when the shard ends."""
    every = HEARTBEAT_S if every is None else every
    n = b = 0
    clock = time.time
    started = last = clock()
    wrote = False
    try:
        for d in docs:
            n += 1
            t = d.text
            b += len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass"))
            if not n & 31:
                now = clock()
                if now - last >= every:
                    last = now
                    wrote = _write_beat(path, {"docs": n, "bytes": b, "started": started,
                                               "at": now}) or wrote
            yield d
    finally:
        if wrote:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _write_beat(path: str, beat: dict[str, Any]) -> bool:
    """Best effort: progress must never fail a shard (a full disk fails the real writes)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(beat, f)
        os.replace(tmp, path)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False


def read_beats(folder: str, now: float | None = None) -> dict[str, dict[str, Any]]:
    """Shard -> its latest heartbeat, for the shards in flight (stale ones left out)."""
    now = time.time() if now is None else now
    out: dict[str, dict[str, Any]] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(folder, name)) as f:
                beat = json.load(f)
        except (OSError, ValueError):
            continue  # being replaced, or removed as the shard ended
        if isinstance(beat, dict) and now - float(beat.get("at", 0)) < STALE_S:
            out[name[: -len(".json")]] = beat
    return out


def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB" if b < 1e9 else f"{b / 1e9:,.2f} GB"


class Progress:
    """Counts finished shards and documents; called with each shard's stats as it finishes."""

    def __init__(self, stage_id: str, *, enabled: bool = True, mode: str = "auto",
                 stream: Any = None, live_dir: str | None = None) -> None:
        self.stage_id = stage_id
        #: the folder of the heartbeat files of this stage's shards (``None``: no live view)
        self.live_dir = live_dir
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "bar" if getattr(self.stream, "isatty", lambda: False)() else "log"
        self.mode = mode if enabled else "off"
        self.total = 0
        self.done = 0
        self.docs = 0
        self.t0 = time.perf_counter()
        self._last_log = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.line_s = float(os.environ.get("CURATOR_PROGRESS_S") or LINE_S)
        self._last_live = ""

    def start(self, total: int) -> None:
        self.total, self.done, self.docs = total, 0, 0
        self.t0 = time.perf_counter()
        if self.live_dir and self.mode != "off" and total:
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, name="curator-progress",
                                            daemon=True)
            self._thread.start()

    def __call__(self, stats: Any) -> None:
        with self._lock:
            self.done += 1
            if isinstance(stats, list) and stats:  # a fused group: what its first stage read
                stats = stats[0]
            if isinstance(stats, dict):
                self.docs += int(stats.get("docs_in", 0) or 0)
            elif isinstance(getattr(stats, "docs_in", None), int):  # a ShardStats
                self.docs += stats.docs_in
            if self.mode == "off":
                return
            now = time.perf_counter()
            if self.mode == "bar":
                self._draw(now)
            elif now - self._last_log >= 5 or self.done == self.total:
                self._line(now)

    def _inflight(self) -> tuple[int, int, float, str]:
        """(documents, bytes, docs/s) of the shards in flight, and the busiest one's name."""
        beats = read_beats(self.live_dir) if self.live_dir else {}
        docs = sum(int(b.get("docs", 0)) for b in beats.values())
        size = sum(int(b.get("bytes", 0)) for b in beats.values())
        rate = sum(int(b.get("docs", 0)) / max(float(b["at"]) - float(b["started"]), 1e-3)
                   for b in beats.values())
        name = max(beats, key=lambda k: int(beats[k].get("bytes", 0))) if beats else ""
        return docs, size, rate, name

    def _live_text(self) -> str:
        docs, size, rate, name = self._inflight()
        if not name:
            return ""
        return (f"; in flight: {docs:,} docs, {_mb(size)}, {rate:,.0f} docs/s"
                + (f" ({name})" if name else ""))

    def _draw(self, now: float) -> None:
        rate = self.docs / max(now - self.t0, 1e-9)
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        self.stream.write(
            f"\r[{self.stage_id}] |{'#' * filled}{'.' * (width - filled)}| "
            f"{self.done}/{self.total} shards  {rate:,.0f} docs/s  ETA {self.eta(now)}"
            f"{self._live_text()}\033[K")
        self.stream.flush()

    def _line(self, now: float, live: str = "") -> None:
        self._last_log = now
        rate = self.docs / max(now - self.t0, 1e-9)
        self.stream.write(f"[{self.stage_id}] {self.done}/{self.total} shards, "
                          f"{self.docs} docs, {rate:,.0f} docs/s, ETA {self.eta(now)}{live}\n")
        self.stream.flush()

    def _watch(self) -> None:
        """Between shard completions: redraw the bar every second, or print a line every
        ``line_s`` seconds, with what the shards in flight have read so far."""
        every = BAR_S if self.mode == "bar" else self.line_s
        while not self._stop.wait(every):
            with self._lock:
                now = time.perf_counter()
                if self.done >= self.total:
                    return
                if self.mode == "bar":
                    self._draw(now)
                elif now - self._last_log >= self.line_s:
                    live = self._live_text()
                    if live and live != self._last_live:  # only news: a shard moved on
                        self._last_live = live
                        self._line(now, live)

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
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.live_dir and self.mode != "off":  # heartbeats of killed workers, the folder
            import shutil

            shutil.rmtree(self.live_dir, ignore_errors=True)
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
