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

Megatron splits *each prefix* by the ``split`` string (its sequences ``[round(b*n),
round(e*n))`` per split) and its dataset builder loops forever when a split it is asked for
holds no token of some prefix (``949,50,1`` gives a 120-document source no test sequence).
So the split written is one that leaves no requested split of any prefix empty: the default
is ``949,50,1`` where that holds and the nearest larger valid/test shares where it does not;
a ``split`` given that does not hold is refused, naming the source.
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Annotated, Any

import numpy as np
from pydantic import Field, model_validator

from curator.base.errors import ConfigError
from curator.core.context import GlobalContext
from curator.core.params import PositiveInt, StageParams
from curator.core.stage import GlobalStage, OutputFile, Shard
from curator.storage.atomic import write_json
from curator.tokenize.megatron import Index, read_index
from curator.tokenize.megatron_shards import BUCKET_SEP

_SPLIT = re.compile(r"^\s*\d+(\.\d+)?\s*(,\s*\d+(\.\d+)?\s*){0,2}$")
#: The split written when none is given, where it leaves no split of any prefix empty.
DEFAULT_SPLIT = "949,50,1"
#: Valid/test shares (per mille) tried, in order, when the default leaves a split empty.
_FALLBACK_TEST = (2, 3, 5, 10, 20, 30, 50, 100, 150, 200, 250, 333)
#: Epochs above which a source gets a warning: repeated tokens are worth about as much as new
#: ones up to ~4 epochs and quickly less after (Muennighoff et al. 2023, "Scaling
#: Data-Constrained Language Models").
EPOCHS_WARN = 4.0
SPLIT_NAMES = ("train", "valid", "test")


def split_matrix(split: str) -> list[tuple[float, float] | None]:
    """Megatron's split bookends for ``split`` (``parse_and_normalize_split`` then
    ``convert_split_vector_to_split_matrix`` of megatron-core, the same float arithmetic, so
    writing a blend needs no megatron-core); ``None``: a split with no share."""
    vec = [float(x) for x in re.findall(r"[.0-9]+", split)]
    vec += [0.0] * (3 - len(vec))
    w = np.array(vec[:3], dtype=np.float64)
    shares = (w / np.sum(w)).tolist()
    ends = [0.0]
    for x in shares:
        ends.append(ends[-1] + x)
    return [(a, b) if b > a else None for a, b in itertools.pairwise(ends)]


def empty_splits(indexes: dict[str, Index], split: str) -> list[tuple[str, str, int]]:
    """``(prefix, split name, sequences)`` for every split with a share that holds no token
    of that prefix, as megatron-core's ``BlendedMegatronDatasetBuilder`` cuts it (GPT
    datasets are split by sequence: ``int(round(bookend * float(n)))``)."""
    matrix = split_matrix(split)
    out = []
    for prefix, idx in indexes.items():
        n = len(idx.lengths)
        cum = np.concatenate(([0], np.cumsum(idx.lengths, dtype=np.int64)))
        for name, be in zip(SPLIT_NAMES, matrix, strict=True):
            if be is None:
                continue
            beg, end = round(be[0] * float(n)), round(be[1] * float(n))
            if end <= beg or cum[end] - cum[beg] <= 0:
                out.append((prefix, name, n))
    return out


def choose_split(indexes: dict[str, Index]) -> str | None:
    """:data:`DEFAULT_SPLIT` if it leaves no split of any prefix empty, else the first of
    larger valid/test shares that does (``None``: a prefix is too small for any)."""
    for t in (1, *_FALLBACK_TEST):
        v = max(50, t)
        split = DEFAULT_SPLIT if t == 1 else f"{1000 - v - t},{v},{t}"
        if not empty_splits(indexes, split):
            return split
    return None


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
        split: Annotated[str, Field(pattern=_SPLIT.pattern)] | None = None
        """Train/valid/test split string, as Megatron's `--split`; unset: `949,50,1` where it
        gives every source at least one sequence in each split, else the smallest larger
        valid/test shares that do (logged). A split that leaves a source without a sequence in
        a split with a share is refused (megatron-core's dataset builder loops forever on it)."""
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
        self.split = self.split.replace(" ", "") if self.split else None
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
        split = self._split(data_prefix, rows, ctx)
        for r in rows:
            if r["epochs"] is not None and r["epochs"] > EPOCHS_WARN and r["weight"] > 0:
                ctx.log(f"[{ctx.stage_id}] warning: source '{r['source']}' is given "
                        f"{r['epochs']:.1f} epochs (its {r['tokens']:,} tokens repeated to make "
                        f"{r['weight']:.1%} of the training tokens); beyond about 4 epochs "
                        "repeated tokens add little (Muennighoff et al. 2023): lower its "
                        "weight, or set its epochs")
                ctx.count("sources_over_4_epochs")
        out = {"data_prefix": data_prefix, "split": split,
               "tokenizer": ctx.artifact("tokenizer", None), "sources": rows,
               "seq_length_hint": self.seq_length_hint}
        path = ctx.output_path(self.output)
        if ctx.is_root:
            write_json(path, out)
        ctx.artifacts.update({
            "blend": os.path.abspath(path), "data_prefix": data_prefix, "split": split,
            "report_tables": [{
                "title": "blend",
                "columns": ["source", "documents", "tokens", "weight", "epochs", "prefixes"],
                "rows": [[r["source"], r["documents"], r["tokens"], r["weight"], r["epochs"],
                          len(r["prefixes"])] for r in rows]}],
        })
        return ctx.passthrough(shards)

    def _split(self, data_prefix: list[Any], rows: list[dict[str, Any]],
               ctx: GlobalContext) -> str:
        """The split to write: never one that leaves a split of a blended prefix empty."""
        source = {p: r["source"] for r in rows for p in r["prefixes"]}
        indexes = {p: read_index(p + ".idx") for p in data_prefix[1::2]}
        if self.split is not None:
            bad = empty_splits(indexes, self.split)
            if bad:
                prefix, name, n = bad[0]
                raise ConfigError(
                    f"blend.split '{self.split}' leaves the {name} split of source "
                    f"'{source.get(prefix, prefix)}' empty ({n} sequences in {prefix}), and "
                    "megatron-core's dataset builder then loops forever; leave split unset "
                    f"(curator picks one that fits: {choose_split(indexes) or 'none does'}), "
                    "give it more valid/test share, or '1,0,0' for no valid/test split")
            return self.split
        split = choose_split(indexes)
        if split is None:
            small = min(indexes, key=lambda p: len(indexes[p].lengths))
            raise ConfigError(
                f"blend: source '{source.get(small, small)}' has {len(indexes[small].lengths)} "
                f"sequences in {small}: too few to give train, valid and test one each; give "
                "it more data, weight 0, or set blend.split: '1,0,0' (no valid/test split)")
        if split != DEFAULT_SPLIT:
            prefix, name, n = empty_splits(indexes, DEFAULT_SPLIT)[0]
            ctx.log(f"[{ctx.stage_id}] split {split}: {DEFAULT_SPLIT} would leave the {name} "
                    f"split of source '{source.get(prefix, prefix)}' empty ({n} sequences), "
                    "on which megatron-core's dataset builder loops forever; pass this split "
                    "to Megatron (--split, as blend.json says)")
        return split
