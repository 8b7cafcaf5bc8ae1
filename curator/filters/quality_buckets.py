"""``quality_buckets``: combine several quality scores into corpus-wide percentile buckets, as
Nemotron-CC does (Su et al. 2024, section 2.1): each score is turned into an integer 0..19 by
its percentile over the whole corpus, the integers of a document are combined (the maximum, as
Nemotron-CC's ensemble, or the weighted mean), and the result is grouped into ``buckets``
quality levels. The document keeps everything; ``meta[field]`` gets the level (0 = lowest) and
``meta[field + "_score"]`` the combined 0..19 integer, for ``select``, ``fuzzy_dedup``'s
``keep: score`` and per-bucket weights in ``blend``.

Phases (resumable ``ctx.map``):

1. ``sample`` (per shard): the values of each score key, all of them up to
   ``sample_per_shard`` documents, a seeded uniform sample (by id hash) above that, so memory
   is bounded whatever the corpus size;
2. ``edges`` (one task): per key, the ``resolution - 1`` percentile cut points of the pooled
   sample;
3. final pass: ``np.searchsorted`` on the edges per batch of documents.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self

import numpy as np
import xxhash
from pydantic import Field, model_validator

from curator.base.document import Document, meta_value
from curator.core.context import GlobalContext, ShardContext
from curator.core.params import PositiveInt, StageParams
from curator.core.stage import GlobalStage, Shard
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard


@dataclass(frozen=True)
class _Sample:
    """Phase 1 result of one shard: where its sampled values are, and how many."""

    path: str
    docs: int
    values: tuple[tuple[str, int], ...]  # (score key, values sampled)


@dataclass(frozen=True)
class _Edges:
    """Phase 2 result: per score key, the ``resolution - 1`` corpus-wide percentile cut points
    (empty: the key was never seen)."""

    cuts: tuple[tuple[str, tuple[float, ...]], ...]


def _number(v: Any) -> float | None:
    """A score as a float: a number, or a string holding one ("0.73", as some tools write
    them); ``None`` for anything else (missing, null, NaN, "high", a bool)."""
    if isinstance(v, str):
        try:
            v = float(v.strip())
        except ValueError:
            return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if f == f else None  # NaN counts as missing


def _invalid(meta: dict[str, Any], keys: list[str]) -> tuple[str, Any] | None:
    """The first score present with a value that is not a number (``"high"``, ``true``, a
    list): such a document cannot be placed, and putting it in the lowest bucket would hide a
    broken upstream; it is rejected with the key and value instead."""
    for k in keys:
        v = meta_value(meta, k)
        if v is not None and _number(v) is None and not (isinstance(v, float) and v != v):
            return k, v
    return None


def _sample_task(keys: tuple[str, ...], limit: int, seed: int, out_dir: str,
                 shard: tuple[str, str]) -> _Sample:
    name, path = shard
    vals: dict[str, list[float]] = {k: [] for k in keys}
    hashes: list[int] = []
    rows: dict[str, list[int]] = {k: [] for k in keys}
    n = 0
    for doc in read_shard(path):
        h = xxhash.xxh64_intdigest(doc.id.encode("utf-8", "surrogatepass"), seed)
        for k in keys:
            v = _number(meta_value(doc.meta, k))
            if v is not None:
                vals[k].append(v)
                rows[k].append(len(hashes))
        hashes.append(h)
        n += 1
    arrays: dict[str, np.ndarray] = {}
    hs = np.asarray(hashes, dtype=np.uint64)
    for i, k in enumerate(keys):
        v = np.asarray(vals[k], dtype=np.float64)
        if v.size > limit:  # keep the `limit` smallest id hashes: a uniform, seeded sample
            order = np.argsort(hs[np.asarray(rows[k], dtype=np.int64)], kind="stable")[:limit]
            v = v[np.sort(order)]
        arrays[f"k{i}"] = v
    out = os.path.join(out_dir, f"{name}.npz")
    with atomic_open(out, "wb") as f:
        np.savez(f, **arrays)
    return _Sample(out, n, tuple((k, int(arrays[f"k{i}"].size)) for i, k in enumerate(keys)))


def _edges_task(keys: tuple[str, ...], resolution: int, samples: list[_Sample]) -> _Edges:
    out: list[tuple[str, tuple[float, ...]]] = []
    qs = np.arange(1, resolution) / resolution
    for i, k in enumerate(keys):
        parts = []
        for s in samples:
            with np.load(s.path, allow_pickle=False) as z:
                parts.append(z[f"k{i}"])
        v = np.concatenate(parts) if parts else np.zeros(0)
        out.append((k, tuple(np.quantile(v, qs).tolist()) if v.size else ()))
    return _Edges(tuple(out))


class _Assign:
    """Final pass: per document, the percentile integer of each score, combined, bucketed."""

    def __init__(self, stage: QualityBuckets, edges: dict[str, list[float]]) -> None:
        self.stage = stage
        self.edges = {k: np.asarray(e, dtype=np.float64) for k, e in edges.items()}

    def level(self, meta: dict[str, Any]) -> tuple[int, int] | None:
        st = self.stage
        ints: list[float] = []
        ws: list[float] = []
        for k in st.scores:
            v = _number(meta_value(meta, k))
            e = self.edges.get(k)
            if v is None or e is None or not e.size:
                continue
            # side=right: a value equal to a cut point belongs to the upper percentile
            p = int(np.searchsorted(e, v, side="right"))
            if k in st.invert:
                p = st.resolution - 1 - p
            ints.append(p)
            ws.append(st.weights.get(k, 1.0))
        if not ints:
            return None
        if st.combine == "max":
            score = int(max(ints))
        else:
            score = round(float(np.average(ints, weights=ws)))
        return score, min(score * st.buckets // st.resolution, st.buckets - 1)

    def __call__(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        field, keys = self.stage.field, self.stage.scores
        for doc in docs:
            bad = _invalid(doc.meta, keys)
            if bad is not None:
                ctx.reject(doc, "quality_buckets:invalid_score", key=bad[0],
                           value=repr(bad[1])[:80])
                continue
            lv = self.level(doc.meta)
            if lv is None:
                ctx.count("quality_buckets:no_score")
                if self.stage.missing == "drop":
                    ctx.reject(doc, "quality_buckets:no_score")
                    continue
                lv = (0, 0)
            doc.meta[field + "_score"], doc.meta[field] = lv
            ctx.count(f"{field}:{lv[1]}")
            yield doc


class QualityBuckets(GlobalStage):
    """Combine quality scores into corpus-wide percentile buckets (Nemotron-CC) in meta;
    nothing is removed."""

    name = "quality_buckets"

    class Params(StageParams):
        scores: Annotated[list[str], Field(min_length=1)] = ["quality_score"]
        """Meta keys of the scores combined (dotted paths reach nested keys)."""
        invert: list[str] = []
        """Scores where lower is better (e.g. a duplicate ratio)."""
        weights: dict[str, float] = {}
        """Per-score weights for `combine: mean` (default 1)."""
        combine: Literal["max", "mean"] = "max"
        """How the scores' integer levels are combined."""
        resolution: Annotated[int, Field(ge=2, le=1000)] = 20
        """Integer score range (Nemotron-CC: 0..19)."""
        buckets: PositiveInt = 5
        """Quality levels (at most ``resolution``): level = combined * buckets // resolution."""
        field: str = "quality_bucket"
        """Meta key written (and `<field>_score`)."""
        missing: Literal["lowest", "drop"] = "lowest"
        """A document with none of the scores: level 0 (`lowest`) or rejected (`drop`). A score
        present but not a number (`"high"`, `true`) is never level 0: the document is rejected
        `quality_buckets:invalid_score` with the key and value; a numeric string (`"0.73"`)
        counts as its number."""
        sample_per_shard: PositiveInt = 100_000
        """Values per shard sampled for the corpus-wide percentiles."""
        seed: int = 0
        """Seed of that sample."""

        @model_validator(mode="after")
        def _consistent(self) -> Self:
            unknown = sorted((set(self.invert) | set(self.weights)) - set(self.scores))
            if unknown:
                raise ValueError(f"invert/weights: {unknown} are not in scores")
            if self.buckets > self.resolution:
                raise ValueError(f"buckets ({self.buckets}) must be <= resolution "
                                 f"({self.resolution})")
            return self

    def setup(self) -> None:
        self.scores, self.invert = list(self.scores), set(self.invert)
        self.weights = dict(self.weights)

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        keys = tuple(self.scores)
        samples = ctx.map(
            functools.partial(_sample_task, keys, self.sample_per_shard, self.seed,
                              os.path.join(ctx.stage_dir, "samples")),
            [(s.name, s.path) for s in shards], phase="sample", keys=[s.name for s in shards])
        cuts = ctx.map(functools.partial(_edges_task, keys, self.resolution),
                       [samples], phase="edges", keys=["all"])[0].cuts
        edges = {k: list(c) for k, c in cuts}
        sampled = {k: sum(dict(s.values)[k] for s in samples) for k in keys}
        for k in keys:
            ctx.count(f"sampled:{k}", sampled[k])
        out = ctx.write_shards(_Assign(self, edges), shards)
        counts = [0] * self.buckets
        for st in ctx.shard_stats:
            for name, n in st.counters.items():
                if name.startswith(self.field + ":"):
                    counts[int(name.rsplit(":", 1)[1])] += n
        ctx.artifacts["quality_bucket_edges"] = edges
        ctx.artifacts["report_histograms"] = [{
            "title": f"documents per {self.field} (0 = lowest)",
            "labels": [str(i) for i in range(self.buckets)], "counts": counts}]
        ctx.artifacts["report_tables"] = [{
            "title": "score percentiles (corpus-wide cut points)",
            "columns": ["score", "values sampled", "p25", "p50", "p75", "p90"],
            "rows": [[k, sampled[k], *[_pct(edges[k], self.resolution, q)
                                       for q in (0.25, 0.5, 0.75, 0.9)]] for k in keys]}]
        return out


def _pct(edges: list[float], resolution: int, q: float) -> float | str:
    """The cut point nearest percentile ``q`` (edges are at 1/resolution steps)."""
    if not edges:
        return "-"
    i = min(max(round(q * resolution) - 1, 0), len(edges) - 1)
    return round(float(edges[i]), 4)
