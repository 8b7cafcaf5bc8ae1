"""What a stage did, as typed records instead of dicts summed by string keys.

:class:`ShardStats` is one stage's work on one shard: what a worker's
:func:`~curator.core.shard_runner.run_shard` returns and a ``_done/<shard>.json`` marker keeps
(its ``"stats"``). :class:`StageStats` is their sum for a stage (:meth:`StageStats.merge`), kept
in ``_SUCCESS.json`` and listed per stage in ``report.json``.

Both are stored as JSON by :meth:`to_json` with the key order of the dicts they replaced, and
read back by :meth:`from_json`, which takes what older curator versions wrote (a missing field
gets its default, an unknown one is ignored), so a work_dir made before them still resumes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from curator.core.stage import Shard
from curator.core.usage import Usage, stage_usage

#: Length histogram bins: bin i counts documents with 2**(i-1) <= len(text) < 2**i (bin 0: empty).
HIST_BINS = 28


def length_bin(n: int) -> int:
    return min(n.bit_length(), HIST_BINS - 1)


def _hist() -> list[int]:
    return [0] * HIST_BINS


def most_first(counts: Mapping[str, Any]) -> dict[str, Any]:
    """``counts`` largest first, ties by name (the order report.json lists them in)."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _dict(v: Any) -> dict[str, Any]:
    return dict(v) if isinstance(v, Mapping) else {}


@dataclass
class ShardStats:
    """One stage's work on one shard (a fused chain: each of its stages has one)."""

    shard: str
    docs_in: int = 0
    bytes_in: int = 0
    docs_out: int = 0
    bytes_out: int = 0
    #: a source's output documents per ``meta.source`` (``None``: not a source)
    sources: dict[str, int] | None = None
    #: the output shard written ("" when streamed into the next stage of a fused chain)
    path: str = ""
    rejected: dict[str, int] = field(default_factory=dict)
    quarantined: dict[str, int] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)
    length_hist: list[int] = field(default_factory=_hist)
    #: removals per ``"<meta.source>\t<reason>"`` (the report's source x rule table)
    rejected_by_source: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    #: reused from an earlier run's marker, not computed now
    resumed: bool = False
    key: str = ""
    #: files written for this shard outside the stage folder (``ctx.wrote``)
    files: list[str] = field(default_factory=list)
    #: CPU seconds, peak RSS and process (host:pid) of the pass (``None``: not measured)
    cpu_s: float | None = None
    peak_rss_mb: float | None = None
    proc: str = ""
    #: what the stage's code read while it ran, ``{path: identity}``
    #: (:mod:`curator.core.tracing`)
    used: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The marker's ``"stats"``, key for key as curator has always written it."""
        out: dict[str, Any] = {"shard": self.shard, "docs_in": self.docs_in,
                               "bytes_in": self.bytes_in, "docs_out": self.docs_out,
                               "bytes_out": self.bytes_out}
        if self.sources is not None:
            out["sources"] = self.sources
        out.update(path=self.path, rejected=self.rejected, quarantined=self.quarantined,
                   counters=self.counters, length_hist=self.length_hist,
                   rejected_by_source=self.rejected_by_source, seconds=self.seconds,
                   resumed=self.resumed, key=self.key, files=self.files)
        if self.cpu_s is not None:
            out.update(cpu_s=self.cpu_s, peak_rss_mb=self.peak_rss_mb, proc=self.proc)
        if self.used:
            out["used"] = self.used
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ShardStats:
        """A marker's ``"stats"``, from this or an older version; ``ValueError`` when a count
        is not a number (a damaged marker: its shard is redone, not summed into the report)."""
        for k in ("docs_in", "bytes_in", "docs_out", "bytes_out", "seconds"):
            v = d.get(k, 0)
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ValueError(f"stats.{k} is not a number: {v!r}")
        if not isinstance(d.get("path") or "", str):
            raise ValueError(f"stats.path is not a path: {d.get('path')!r}")
        return cls(
            shard=str(d.get("shard", "")), docs_in=d.get("docs_in", 0),
            bytes_in=d.get("bytes_in", 0), docs_out=d.get("docs_out", 0),
            bytes_out=d.get("bytes_out", 0),
            sources=_dict(d["sources"]) if "sources" in d else None,
            path=d.get("path") or "", rejected=_dict(d.get("rejected")),
            quarantined=_dict(d.get("quarantined")), counters=_dict(d.get("counters")),
            length_hist=list(d.get("length_hist") or []),
            rejected_by_source=_dict(d.get("rejected_by_source")),
            seconds=d.get("seconds", 0.0), resumed=bool(d.get("resumed")),
            key=d.get("key") or "", files=[f for f in d.get("files") or [] if isinstance(f, str)],
            cpu_s=d.get("cpu_s"), peak_rss_mb=d.get("peak_rss_mb"), proc=d.get("proc") or "",
            used=_dict(d.get("used")))


@dataclass
class StageStats:
    """A stage's work over all its shards (``_SUCCESS.json``'s ``"stats"``, report.json)."""

    docs_in: int = 0
    bytes_in: int = 0
    docs_out: int = 0
    bytes_out: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    quarantined: Counter[str] = field(default_factory=Counter)
    counters: Counter[str] = field(default_factory=Counter)
    rejected_by_source: Counter[str] = field(default_factory=Counter)
    length_hist: list[int] = field(default_factory=_hist)
    #: the shards' own seconds, summed (the stage's wall time is in its result)
    shard_seconds: float = 0.0
    shards_resumed: int = 0
    #: CPU seconds of the work done in this run, and the largest peak RSS among its processes
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0
    #: a source's output documents per ``meta.source`` (``None``: not a source)
    sources: Counter[str] | None = None

    @classmethod
    def of_shard(cls, st: ShardStats) -> StageStats:
        """One shard's stats as a stage total (CPU and memory are the stage's, see
        :func:`~curator.core.usage.stage_usage`: they are not summed here)."""
        return cls(st.docs_in, st.bytes_in, st.docs_out, st.bytes_out, Counter(st.rejected),
                   Counter(st.quarantined), Counter(st.counters), Counter(st.rejected_by_source),
                   list(st.length_hist), st.seconds, int(st.resumed),
                   sources=Counter(st.sources) if st.sources else None)

    @classmethod
    def of_shards(cls, shards: Iterable[ShardStats]) -> StageStats:
        total = cls()
        for st in shards:
            total.merge(cls.of_shard(st))
        return total

    def merge(self, other: StageStats) -> StageStats:
        """Add ``other`` into this record (counts summed, the larger peak RSS); returns it."""
        self.docs_in += other.docs_in
        self.bytes_in += other.bytes_in
        self.docs_out += other.docs_out
        self.bytes_out += other.bytes_out
        for mine, theirs in ((self.rejected, other.rejected),
                             (self.quarantined, other.quarantined),
                             (self.counters, other.counters),
                             (self.rejected_by_source, other.rejected_by_source)):
            mine.update(theirs)
        if len(other.length_hist) > len(self.length_hist):
            self.length_hist += [0] * (len(other.length_hist) - len(self.length_hist))
        for i, c in enumerate(other.length_hist):
            self.length_hist[i] += c
        self.shard_seconds += other.shard_seconds
        self.shards_resumed += other.shards_resumed
        self.cpu_s += other.cpu_s
        self.peak_rss_mb = max(self.peak_rss_mb, other.peak_rss_mb)
        if other.sources:
            if self.sources is None:
                self.sources = Counter()
            self.sources.update(other.sources)
        return self

    def to_json(self) -> dict[str, Any]:
        """The stage's stats as ``_SUCCESS.json`` and report.json hold them: the tallies
        largest first (``counters`` in the order they were added to)."""
        out: dict[str, Any] = {
            "docs_in": self.docs_in, "bytes_in": self.bytes_in, "docs_out": self.docs_out,
            "bytes_out": self.bytes_out, "rejected": dict(self.rejected),
            "quarantined": dict(self.quarantined), "counters": dict(self.counters),
            "rejected_by_source": dict(self.rejected_by_source),
            "length_hist": self.length_hist, "shard_seconds": self.shard_seconds,
            "shards_resumed": self.shards_resumed, "cpu_s": self.cpu_s,
            "peak_rss_mb": self.peak_rss_mb}
        if self.sources:
            out["sources"] = dict(self.sources)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> StageStats:
        """A stage result's ``"stats"``, from this or an older version."""
        d = d or {}
        return cls(d.get("docs_in", 0), d.get("bytes_in", 0), d.get("docs_out", 0),
                   d.get("bytes_out", 0), Counter(_dict(d.get("rejected"))),
                   Counter(_dict(d.get("quarantined"))), Counter(_dict(d.get("counters"))),
                   Counter(_dict(d.get("rejected_by_source"))),
                   list(d.get("length_hist") or _hist()), d.get("shard_seconds", 0.0),
                   d.get("shards_resumed", 0), d.get("cpu_s", 0.0), d.get("peak_rss_mb", 0.0),
                   Counter(_dict(d["sources"])) if d.get("sources") else None)

    def sort_tallies(self) -> None:
        """Order the tallies largest first, ties by name (how they are stored)."""
        for name in ("rejected", "quarantined", "counters", "rejected_by_source"):
            setattr(self, name, Counter(most_first(getattr(self, name))))
        if self.sources:
            self.sources = Counter(most_first(self.sources))

    @property
    def removed(self) -> int:
        return sum(self.rejected.values())

    @property
    def set_aside(self) -> int:
        return sum(self.quarantined.values())


def aggregate(stats: Sequence[ShardStats], inputs: list[Shard] | None,
              outputs: list[Shard] | None = None, usage: Sequence[Usage] = (),
              driver: Usage | None = None) -> StageStats:
    """Sum per-shard stats into per-stage stats; ``cpu_s`` sums the shards done in this run,
    the phase items (``usage``) and the driver's own time, ``peak_rss_mb`` is the largest
    high-water mark among them (:mod:`curator.core.usage`)."""
    agg = StageStats.of_shards(stats)
    if not stats and inputs is not None:  # a global stage that passed shards through
        passed = outputs if outputs is not None else inputs
        agg.docs_in = sum(s.docs for s in inputs)
        agg.bytes_in = sum(s.bytes for s in inputs)
        agg.docs_out = sum(s.docs for s in passed)
        agg.bytes_out = sum(s.bytes for s in passed)
    agg.sort_tallies()
    agg.shard_seconds = round(agg.shard_seconds, 3)
    ran = [Usage(st.cpu_s, st.peak_rss_mb or 0.0, st.proc) for st in stats
           if not st.resumed and st.cpu_s is not None]
    used = stage_usage([*usage, *ran], driver)
    agg.cpu_s, agg.peak_rss_mb = used["cpu_s"], used["peak_rss_mb"]
    return agg
