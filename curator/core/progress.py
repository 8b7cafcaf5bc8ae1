"""Progress per stage: a one-line bar on a terminal, plain log lines otherwise (CI, files).

Inside a long shard (a 2 GB WARC is one shard, minutes of work) the worker reading it writes a
small heartbeat file, ``stages/<id>/_progress/<shard>.json`` (documents and UTF-8 bytes read so
far, when it started), at most every :data:`HEARTBEAT_S` seconds; the driver reads those files
every few seconds and shows the shards in flight with their documents, bytes and rate. Files
work the same for every executor (local, Dask workers, MPI ranks share the work_dir) and cost
one small write every couple of seconds per shard.

A global stage's phases (``ctx.map(fn, items, phase=...)``) get a line of their own,
``[<stage>:<phase>] 3/7 tasks, ...``; a mapped function reports the documents it has handled
with :func:`step` (and their number up front with :func:`expect`), which writes the same
heartbeat files under ``stages/<id>/_progress/<phase>/``, so a single long task (a shard
through a sentence encoder) shows its documents, rate and ETA while it runs. A phase none of
whose tasks counts documents (a k-means fit, a merge of hash groups) shows tasks only: its
line never claims "0 docs" for work that is not counted in documents.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from curator.storage import nofollow, read_position

#: How often a worker rewrites its shard's heartbeat file (seconds; ``CURATOR_HEARTBEAT_S``).
HEARTBEAT_S = float(os.environ.get("CURATOR_HEARTBEAT_S") or 2.0)
#: How often the driver redraws the bar (terminal) or prints a line (otherwise), in seconds;
#: ``CURATOR_PROGRESS_S`` sets the line interval (0: every phase, however short, has a line).
BAR_S = 1.0
LINE_S = 10.0
#: A heartbeat older than this is a shard that stopped (a killed worker): not shown.
STALE_S = 60.0
#: A global stage's phase shorter than this (or than the line interval) prints no line in log
#: mode (its bar still shows).
PHASE_QUIET_S = 2.0
#: The shortest wait of the thread that prints in-flight lines (``CURATOR_PROGRESS_S=0``).
WATCH_MIN_S = 0.01


def heartbeat_path(work_dir: str, stage_id: str, shard: str) -> str:
    return os.path.join(work_dir, "stages", stage_id, "_progress", f"{shard}.json")


#: The heartbeats of the shards this process is reading now (heartbeat path -> beat), for
#: the Dask dashboard: :func:`dask_worker_metrics` turns them into columns of its Workers page.
LIVE: dict[str, dict[str, Any]] = {}


def heartbeat(docs: Iterator[Any], path: str, every: float | None = None) -> Iterator[Any]:
    """Pass ``docs`` on, writing ``{"docs", "bytes", "started", "at"}`` (and ``"fraction"``,
    the share of the input file read, where its size is known) to ``path`` (atomically)
    every ``every`` seconds while they flow; the file is removed when the shard ends. The
    per-document cost is a count and a length; the clock is read every 32 documents."""
    every = HEARTBEAT_S if every is None else every
    n = b = 0
    clock = time.time
    started = last = clock()
    wrote = False
    pos, hidden = read_position.watch()
    try:
        for d in docs:
            n += 1
            t = d.text
            b += len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass"))
            if not n & 31:
                now = clock()
                if now - last >= every:
                    last = now
                    beat: dict[str, Any] = {"docs": n, "bytes": b, "started": started,
                                            "at": now}
                    frac = pos.fraction()
                    if frac is not None:
                        beat["fraction"] = round(frac, 4)
                    LIVE[path] = beat
                    wrote = _write_beat(path, beat) or wrote
            yield d
    finally:
        read_position.unwatch(pos, hidden)
        LIVE.pop(path, None)
        if wrote:
            with contextlib.suppress(OSError):
                nofollow.unlink(path)


def shard_eta(beat: dict[str, Any], now: float | None = None) -> float | None:
    """Seconds left for one shard from the share of its input read so far (``None``: the
    input's size is unknown, or too little is read to tell). ``now`` (the clock of the
    process that wrote the beat) instead of the beat's time: a shard stuck on one document
    shows a growing ETA rather than a frozen one."""
    frac = beat.get("fraction")
    if not isinstance(frac, (int, float)) or frac < 0.001:
        return None
    spent = (float(beat.get("at", 0)) if now is None else now) - float(beat.get("started", 0))
    return max(spent, 0.0) * (1.0 - frac) / frac


def _shard_label(path: str) -> str:
    """``stage/shard`` from ``<work_dir>/stages/<stage>/_progress/<shard>.json``, and
    ``stage:phase/item`` from ``.../_progress/<phase>/<item>.json`` (a global stage's phase)."""
    name = os.path.basename(path)[: -len(".json")]
    folder = os.path.dirname(path)
    if os.path.basename(folder) == "_progress":
        return f"{os.path.basename(os.path.dirname(folder))}/{name}"
    stage = os.path.basename(os.path.dirname(os.path.dirname(folder)))
    return f"{stage}:{os.path.basename(folder)}/{name}"


# -- progress inside a task of a global stage's phase --------------------------------------------

_item = threading.local()


class _ItemMeter:
    """What one phase task has done, written as a heartbeat every ``every`` seconds by a
    small thread while it runs: the documents it counted with :func:`step`, else those it
    read through :func:`curator.storage.shards.read_shard` (so a task that only reads
    shards needs no call), and its share done (:func:`expect`, else the share of the file
    read). A task that did neither counts no documents (:meth:`docs_counted` is None)."""

    def __init__(self, path: str, every: float) -> None:
        self.path, self.every = path, every
        self.docs = 0
        #: :func:`step` or :func:`expect` was called: the task counts its own units
        self.stepped = False
        self.total: int | None = None
        self.started = time.time()
        self.wrote = False
        self.pos: read_position.ReadPosition | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="curator-item-beat",
                                        daemon=True)

    def counted(self) -> int:
        if self.docs or self.total is not None or self.pos is None:
            return self.docs
        return self.pos.docs

    def docs_counted(self) -> int | None:
        """The documents this task handled, or None if it counts none (no :func:`step`, no
        document read through ``read_shard``)."""
        if self.stepped or (self.pos is not None and self.pos.docs):
            return self.counted()
        return None

    def beat(self, now: float) -> None:
        beat: dict[str, Any] = {"bytes": 0, "started": self.started, "at": now}
        docs = self.docs_counted()
        if docs is not None:  # no "docs" key: the line shows this task without a count
            beat["docs"] = docs
        frac = (min(self.docs / self.total, 1.0) if self.total
                else self.pos.fraction() if self.pos is not None else None)
        if frac is not None:
            beat["fraction"] = round(frac, 4)
        LIVE[self.path] = beat
        self.wrote = _write_beat(self.path, beat) or self.wrote

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self.beat(time.time())


def step(n: int = 1) -> None:
    """Count ``n`` documents (or other units) handled by the phase task running in this
    thread (the driver's line and the Dask dashboard show them while the task runs). A
    no-op outside a phase task, so a mapped function can call it wherever it runs."""
    m: _ItemMeter | None = getattr(_item, "meter", None)
    if m is not None:
        m.docs += n
        m.stepped = True


def stepper() -> Callable[[int], None]:
    """:func:`step` bound to the phase task running in this thread, callable from any thread:
    for documents a library pulls on threads of its own (a tokenizer trainer reading its
    texts from Rust threads, where :func:`step` would find no task)."""
    m: _ItemMeter | None = getattr(_item, "meter", None)
    if m is None:
        return lambda n=1: None

    def count(n: int = 1) -> None:
        m.docs += n
        m.stepped = True

    count(0)  # the task counts documents from now on, even before its first
    return count


def expect(total: int) -> None:
    """How many units the running phase task will :func:`step` through (its share done and
    ETA follow); without it, the share of the shard file being read is shown."""
    m: _ItemMeter | None = getattr(_item, "meter", None)
    if m is not None:
        m.total = max(int(total), 0)
        m.stepped = True


@contextlib.contextmanager
def item_beats(path: str, every: float | None = None) -> Iterator[_ItemMeter]:
    """Meter the phase task run inside it (in this thread); its heartbeat file is removed
    when the task ends."""
    m = _ItemMeter(path, max(HEARTBEAT_S if every is None else every, 0.01))
    prev = getattr(_item, "meter", None)
    _item.meter = m
    m.pos, hidden = read_position.watch()
    m._thread.start()
    try:
        yield m
    finally:
        m._stop.set()
        m._thread.join()
        read_position.unwatch(m.pos, hidden)
        _item.meter = prev
        if not m.docs:
            m.docs = m.counted()
        LIVE.pop(path, None)
        if m.wrote:
            with contextlib.suppress(OSError):
                os.unlink(path)


def live_summary() -> dict[str, Any]:
    """What this process reads now, summed over its shards in flight: the values of the
    ``curator_*`` worker metrics on the Dask dashboard."""
    beats = list(LIVE.items())  # a copy: shard threads add and remove entries meanwhile
    now = time.time()
    shards = []
    for path, beat in sorted(beats):
        text = _shard_label(path)
        frac = beat.get("fraction")
        if isinstance(frac, (int, float)):
            left = shard_eta(beat, now)
            text += f" {frac:.0%}" + (f" ETA {format_seconds(left)}" if left is not None else "")
        shards.append(text)
    rate = sum(int(b.get("docs", 0)) / max(float(b["at"]) - float(b["started"]), 1e-3)
               for _, b in beats)
    return {"curator_shard": ", ".join(shards),
            "curator_docs": sum(int(b.get("docs", 0)) for _, b in beats),
            "curator_mb": round(sum(int(b["bytes"]) for _, b in beats) / 1e6, 1),
            "curator_docs_per_s": round(rate)}


def _metric(name: str) -> Any:
    def get(worker: Any) -> Any:
        return live_summary()[name]

    get.__name__ = name
    return get


def dask_worker_metrics() -> dict[str, Any]:
    """``name -> callable(worker)`` for ``Worker.metrics``: each worker's heartbeat to the
    scheduler then carries what its shards in flight have read, and the stock dashboard's
    Workers page (``/workers``) shows them as columns (``curator_shard`` with the share of
    the input file read and its ETA, ``curator_docs``, ``curator_mb``, ``curator_docs_per_s``)."""
    return {name: _metric(name) for name in live_summary()}


def _write_beat(path: str, beat: dict[str, Any]) -> bool:
    """Best effort: progress must never fail a shard (a full disk fails the real writes)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with nofollow.open_file(tmp, "w") as f:
            json.dump(beat, f)
        nofollow.replace(tmp, path)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            nofollow.unlink(tmp)
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
                 stream: Any = None, live_dir: str | None = None, unit: str = "shards",
                 docs_of: Callable[[Any], int | None] | None = None, min_s: float = 0.0) -> None:
        #: the name shown (and the Dask task keys': ``curator:<stage_id>``)
        self.stage_id = stage_id
        self.unit = unit
        #: documents a finished item handled, from its result (default: a shard's stats);
        #: None: the item counts no documents
        self.docs_of = docs_of or _docs_in
        #: show documents: a shard stage always; a phase once a task has counted some
        self._always_docs = docs_of is None
        self._counted = False
        #: log mode: no line before this many seconds, none at all for a shorter run (a phase
        #: that takes a moment is not worth a line)
        self.min_s = min_s
        self._lines = 0
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
        #: the heartbeats read last (shard -> beat): their input fractions refine the ETA
        self._beats: dict[str, dict[str, Any]] = {}

    def start(self, total: int) -> None:
        self.total, self.done, self.docs = total, 0, 0
        self._counted = False
        self._beats = {}
        self.t0 = time.perf_counter()
        if self.min_s:
            self._last_log = self.t0  # the first line after line_s, not at the first item
        if self.mode != "off" and total and (self.live_dir or self.min_s):
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, name="curator-progress",
                                            daemon=True)
            self._thread.start()

    def __call__(self, stats: Any) -> None:
        with self._lock:
            self.done += 1
            self._beats = {}  # the finished shard may be among them: read afresh next time
            n = self.docs_of(stats)
            if n is not None:
                self.docs += n
                self._counted = True
            if self.mode == "off":
                return
            now = time.perf_counter()
            if self.mode == "bar":
                self._draw(now)
            elif self.done == self.total:
                if self._lines or now - self.t0 >= self.min_s:
                    self._line(now)
            elif now - self._last_log >= 5:
                self._line(now)

    def _inflight(self) -> tuple[int, int, float, str]:
        """(documents, bytes, docs/s) of the shards in flight, and the busiest one's name
        (with the share of its input read and its ETA where the input's size is known)."""
        beats = read_beats(self.live_dir) if self.live_dir else {}
        self._beats = beats
        if any("docs" in b for b in beats.values()):
            self._counted = True
        docs = sum(int(b.get("docs", 0)) for b in beats.values())
        size = sum(int(b.get("bytes", 0)) for b in beats.values())
        rate = sum(int(b.get("docs", 0)) / max(float(b["at"]) - float(b["started"]), 1e-3)
                   for b in beats.values())
        name = max(beats, key=lambda k: int(beats[k].get("bytes", 0))) if beats else ""
        frac = beats[name].get("fraction") if name else None
        if isinstance(frac, (int, float)):
            left = shard_eta(beats[name])
            name += f" {frac:.0%}" + (f", ETA {format_seconds(left)}" if left is not None
                                      else "")
        return docs, size, rate, name

    def _live_text(self) -> str:
        docs, size, rate, name = self._inflight()
        if not name:
            return ""
        if not self._shows_docs():
            return f"; in flight: {name}"
        return (f"; in flight: {docs:,} docs, " + (f"{_mb(size)}, " if size else "")
                + f"{rate:,.0f} docs/s" + (f" ({name})" if name else ""))

    def _shows_docs(self) -> bool:
        """Whether the line has documents: a shard stage's always, a phase's once any of
        its tasks (finished or in flight) counted some."""
        return self._always_docs or self._counted

    def _draw(self, now: float) -> None:
        rate = self.docs / max(now - self.t0, 1e-9)
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        live = self._live_text()
        docs = f"{rate:,.0f} docs/s  " if self._shows_docs() else ""
        self.stream.write(
            f"\r[{self.stage_id}] |{'#' * filled}{'.' * (width - filled)}| "
            f"{self.done}/{self.total} {self.unit}  {docs}ETA {self.eta(now)}"
            f"{live}\033[K")
        self.stream.flush()

    def _line(self, now: float, live: str = "") -> None:
        self._last_log = now
        self._lines += 1
        rate = self.docs / max(now - self.t0, 1e-9)
        docs = f"{self.docs} docs, {rate:,.0f} docs/s, " if self._shows_docs() else ""
        self.stream.write(f"[{self.stage_id}] {self.done}/{self.total} {self.unit}, "
                          f"{docs}ETA {self.eta(now)}{live}\n")
        self.stream.flush()

    def _watch(self) -> None:
        """Between item completions: redraw the bar every second, or print a line every
        ``line_s`` seconds, with what the items in flight have done so far. A shard stage's
        line comes only with news (a shard moved on); a phase's every ``line_s`` seconds,
        so a long task with nothing to count still shows it is alive."""
        every = BAR_S if self.mode == "bar" else max(min(self.line_s, BAR_S), WATCH_MIN_S)
        while not self._stop.wait(every):
            with self._lock:
                now = time.perf_counter()
                if self.done >= self.total:
                    return
                if self.mode == "bar":
                    self._draw(now)
                elif now - self._last_log >= self.line_s and now - self.t0 >= self.min_s:
                    live = self._live_text()
                    if self.min_s or (live and live != self._last_live):
                        self._last_live = live
                        self._line(now, live)

    def eta(self, now: float | None = None) -> str:
        """Time left for this stage, from the mean time per shard so far (shards are cut to
        similar sizes, and the MPI queue and Dask keep every worker busy). Shards in flight
        count with the share of their input read, so one long shard has an ETA before it
        ends (a 2 GB WARC read 30% in 3 minutes: 7 minutes left)."""
        if self.done >= self.total:
            return "0s"
        part = sum(float(b["fraction"]) for b in self._beats.values()
                   if isinstance(b.get("fraction"), (int, float)))
        done = self.done + min(part, self.total - self.done)
        if done < 1e-3:
            return "?"
        now = time.perf_counter() if now is None else now
        left = (now - self.t0) / done * (self.total - done)
        return format_seconds(left)

    def finish(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.live_dir and self.mode != "off":  # heartbeats of killed workers, the folder
            with contextlib.suppress(OSError):
                nofollow.rmtree(self.live_dir)
        if self.mode == "bar" and self.total:
            # a phase over in a moment leaves no line behind: its bar is wiped
            short = self.min_s and time.perf_counter() - self.t0 < self.min_s
            self.stream.write("\r\033[K" if short else "\n")
            self.stream.flush()

    def phase(self, label: str, unit: str = "tasks",
              docs_of: Callable[[Any], int | None] | None = None) -> Progress:
        """A line of its own for one phase of this (global) stage, shown as
        ``[<label>]``, in the same mode, with its heartbeats under ``_progress/<phase>``;
        ``docs_of`` (None: the phase counts no documents) reads a finished task's count."""
        phase = label.rpartition(":")[2]
        live = os.path.join(self.live_dir, phase) if self.live_dir and phase != label else None
        p = Progress(label, enabled=self.mode != "off", mode=self.mode, stream=self.stream,
                     live_dir=live, unit=unit, docs_of=docs_of or _no_docs,
                     min_s=min(PHASE_QUIET_S, self.line_s))
        p.line_s = self.line_s
        return p


def _no_docs(_result: Any) -> None:
    return None


def _docs_in(stats: Any) -> int:
    """Documents a finished shard read: its stats (a fused group: its first stage's)."""
    if isinstance(stats, list) and stats:
        stats = stats[0]
    if isinstance(stats, dict):
        return int(stats.get("docs_in", 0) or 0)
    n = getattr(stats, "docs_in", None)
    return n if isinstance(n, int) else 0


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
