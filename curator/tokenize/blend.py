"""``blend``: turn per-source token counts and user weights (or epochs) into what a
Megatron-Core trainer consumes: the ``data_prefix`` list ``[w1, prefix1, w2, prefix2, ...]``
and the train/valid/test ``split`` string, written to ``blend.json`` with a per-source table.

* ``weights`` (relative, any scale): source s gets that share of the training tokens; its
  epochs are ``share * total_tokens / tokens_s`` (``total_tokens`` defaults to the corpus).
* ``epochs``: source s is seen that many times, so its share is proportional to
  ``epochs_s * tokens_s``.
* neither: natural mixture (share proportional to tokens, one epoch each).

A source with several prefixes spreads its weight over them in proportion to their tokens,
so the trainer samples every document of a source with the same probability.
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any

from pydantic import Field, model_validator

from curator.core.context import GlobalContext, write_json
from curator.core.errors import ConfigError
from curator.core.params import PositiveInt, StageParams
from curator.core.stage import GlobalStage, OutputFile, Shard
from curator.tokenize.megatron import read_index
from curator.tokenize.megatron_shards import BUCKET_SEP

_SPLIT = re.compile(r"^\s*\d+(\.\d+)?\s*(,\s*\d+(\.\d+)?\s*){0,2}$")


def split_group(group: str) -> tuple[str, str | None]:
    """(source, quality bucket or None) of a ``megatron_shards`` group (``web@q3``)."""
    src, sep, b = group.rpartition(BUCKET_SEP)
    if sep and src and (b.isdigit() or b == "none"):
        return src, b
    return group, None


def compute_blend(tokens: dict[str, int], prefix_tokens: dict[str, list[tuple[str, int]]],
                  weights: dict[str, float] | None = None, epochs: dict[str, float] | None = None,
                  total_tokens: int | None = None,
                  bucket_weights: dict[str, float] | None = None,
                  ) -> tuple[list[Any], list[dict[str, Any]]]:
    """The ``data_prefix`` list and one row per group (weight = normalised share).

    Groups are sources, or (source, quality bucket) pairs when ``megatron_shards`` split them
    by ``bucket_field``; then ``bucket_weights`` (bucket -> factor, default 1) scales how often
    a bucket is sampled relative to the others of its source: its share of the source's weight
    is proportional to ``tokens x factor``, so factor 2 means seen twice as often (Nemotron-CC
    repeats its high-quality buckets), 0 leaves the bucket out."""
    if weights and epochs:
        raise ConfigError("blend: give weights or epochs, not both")
    src_of = {g: split_group(g)[0] for g in tokens}
    sources = sorted(set(src_of.values()))
    given = weights or epochs
    if given:
        unknown = sorted(set(given) - set(sources))
        if unknown:
            raise ConfigError(f"blend: unknown source(s) {unknown}; sources are {sources}")
        bad = [s for s, v in given.items() if v < 0]
        if bad:
            raise ConfigError(f"blend: negative weight or epochs for {bad}")
    if bucket_weights and any(v < 0 for v in bucket_weights.values()):
        raise ConfigError("blend: negative bucket weight")
    factor = {g: float((bucket_weights or {}).get(split_group(g)[1] or "", 1.0))
              for g in tokens}
    scaled = {g: tokens[g] * factor[g] for g in tokens}
    per_src = {s: sum(v for g, v in scaled.items() if src_of[g] == s) for s in sources}
    if weights:
        raw = {g: float(weights.get(src_of[g], 0.0)) * scaled[g] / per_src[src_of[g]]
               if per_src[src_of[g]] else 0.0 for g in tokens}
    elif epochs:
        raw = {g: float(epochs.get(src_of[g], 0.0)) * scaled[g] for g in tokens}
    else:
        raw = dict(scaled)
    raw = {g: v for g, v in raw.items() if v > 0 and tokens[g] > 0}
    norm = sum(raw.values())
    if norm <= 0:
        raise ConfigError("blend: every source has zero weight or zero tokens")
    budget = total_tokens
    if budget is None and epochs:
        budget = round(sum(float(epochs.get(src_of[g], 0.0)) * scaled[g] for g in tokens))
    if budget is None:  # train on as many tokens as the corpus holds
        budget = sum(tokens.values())
    data_prefix: list[Any] = []
    rows = []
    for g in sorted(tokens):
        share = raw.get(g, 0.0) / norm
        ep = share * budget / tokens[g] if tokens[g] else None
        plist = prefix_tokens.get(g, [])
        if share > 0:
            ptot = sum(t for _, t in plist) or 1
            for p, t in plist:
                if t > 0:
                    data_prefix += [round(share * t / ptot, 10), p]
        row = {"source": g, "prefixes": [p for p, _ in plist], "tokens": tokens[g],
               "weight": round(share, 10), "epochs": round(ep, 6) if ep is not None else None}
        if split_group(g)[1] is not None:
            row["bucket"] = split_group(g)[1]
        rows.append(row)
    return data_prefix, rows


class Blend(GlobalStage):
    """Write blend.json: Megatron data_prefix weights, split string and tokens/epochs per source."""

    name = "blend"

    class Params(StageParams):
        weights: dict[str, float] | None = None
        """Sampling weight per source (default: by tokens)."""
        epochs: dict[str, float] | None = None
        """`{source: epochs}` (not with `weights`)."""
        total_tokens: PositiveInt | None = None
        """Training budget in tokens, for the epochs column (default: the corpus size, or what
        `epochs` implies)."""
        split: Annotated[str, Field(pattern=_SPLIT.pattern)] = "949,50,1"
        """Train/valid/test split string."""
        output: OutputFile = "blend.json"
        """Where to write the blend (relative: under the stage folder's parent)."""
        seq_length_hint: PositiveInt | None = None
        """Copied into `blend.json` for the trainer."""
        bucket_weights: dict[int | str, float] | None = None
        """`{bucket: factor}` for groups written with `megatron_shards.bucket_field` (default factor
        1): within a source, a bucket's share is proportional to tokens x factor, so 2 = sampled
        twice as often per token (Nemotron-CC repeats its best buckets), 0 = left out;
        `weights`/`epochs` stay per source."""

        @model_validator(mode="after")
        def _one_of(self) -> Any:
            if self.weights and self.epochs:
                raise ValueError("give weights or epochs, not both")
            return self

    def setup(self) -> None:
        self.split = self.split.replace(" ", "")
        self.bucket_weights = {str(k): float(v)  # type: ignore[assignment]
                               for k, v in (self.bucket_weights or {}).items()}

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        prefixes: dict[str, list[str]] = ctx.artifact("prefixes")
        # token counts straight from the written indexes, so the blend matches the files
        prefix_tokens = {s: [(p, read_index(p + ".idx").tokens) for p in ps]
                         for s, ps in prefixes.items()}
        docs = {s: sum(read_index(p + ".idx").documents for p in ps)
                for s, ps in prefixes.items()}
        tokens = {s: sum(t for _, t in pt) for s, pt in prefix_tokens.items()}
        data_prefix, rows = compute_blend(tokens, prefix_tokens, self.weights, self.epochs,
                                          self.total_tokens, self.bucket_weights)
        for r in rows:
            r["documents"] = docs[r["source"]]
        out = {"data_prefix": data_prefix, "split": self.split,
               "tokenizer": ctx.artifact("tokenizer", None), "sources": rows,
               "seq_length_hint": self.seq_length_hint}
        path = ctx.output_path(self.output)
        if ctx.is_root:
            write_json(path, out)
        ctx.artifacts.update({
            "blend": os.path.abspath(path), "data_prefix": data_prefix, "split": self.split,
            "report_tables": [{
                "title": "blend",
                "columns": ["source", "documents", "tokens", "weight", "epochs", "prefixes"],
                "rows": [[r["source"], r["documents"], r["tokens"], r["weight"], r["epochs"],
                          len(r["prefixes"])] for r in rows]}],
        })
        return ctx.passthrough(shards)
