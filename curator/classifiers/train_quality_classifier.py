"""``train_quality_classifier``: train a fastText quality model (hq reference sources vs crawl
text); its phases call the fastText helpers of :mod:`curator.classifiers.quality`."""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from curator.base.document import Document, meta_value
from curator.classifiers.quality import (
    DEFAULT_BUCKET,
    DEFAULT_DIM,
    HQ,
    LQ,
    MIN_AUC,
    TrainedModel,
    check_auc,
    holdout_unit,
    normalize,
    train_from_parts,
)
from curator.core.context import GlobalContext
from curator.core.params import (
    NonNegInt,
    PositiveFloat,
    PositiveInt,
    Ratio,
    StageParams,
)
from curator.core.stage import GlobalStage, Shard
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard


class TrainQualityClassifier(GlobalStage):
    """Train a fastText quality classifier: positive_sources (e.g. Wikipedia) vs crawl text,
    or a teacher's score (``labels_from`` >= ``threshold``); publishes the ``quality_model``
    artifact and held-out ROC AUC, precision, recall (and Spearman with the teacher); stops
    when the AUC is below ``min_auc``."""

    name = "train_quality_classifier"

    class Params(StageParams):
        positive_sources: list[str] | None = None
        """Source names of the high-quality reference (a read stage's id or ``source``)."""
        negative_sources: list[str] | None = None
        """Source names of the other label; null: every other source."""
        labels_from: str | None = None
        """Instead of sources: a meta key holding a teacher's score (``model_classifier``'s
        ``field``, e.g. ``edu_score``); documents scoring >= ``threshold`` are the positives."""
        threshold: float | None = None
        """With ``labels_from``: the teacher score from which a document is a positive (3 on
        FineWeb-Edu's 0-5 scale)."""
        holdout: Annotated[float, Field(ge=0, lt=1)] = 0.1
        """Held-out share of the documents (by a hash of the id), for the metrics."""
        max_docs_per_label: PositiveInt = 200_000
        """Training documents per label at most."""
        balance: bool = True
        """Down-sample the larger label to the size of the smaller."""
        min_words: NonNegInt = 5
        """Documents with fewer words are skipped."""
        max_chars: PositiveInt = 20_000
        """Characters of each document used."""
        epoch: PositiveInt = 5
        """FastText training epochs."""
        lr: PositiveFloat = 0.5
        """FastText learning rate."""
        dim: PositiveInt = DEFAULT_DIM
        """FastText vector size."""
        word_ngrams: PositiveInt = 2
        """FastText word n-gram length; `>= 2` also avoids fastText's "Encountered NaN" on
        small data."""
        min_count: PositiveInt = 1
        """FastText: words seen fewer times are ignored."""
        bucket: PositiveInt = DEFAULT_BUCKET
        """FastText hash rows for word bigrams. fastText's own default, 2,000,000, made every model
        ~512 MB at `dim: 64` (a 190-document quickstart model was 518 MB)."""
        quantize: bool = False
        """Product-quantize the model (`.ftz`, about 5x smaller again) at about 10x the training
        time."""
        seed: int = 0
        """Seed of the holdout split, the balancing sample and training."""
        output: Literal["negatives", "all"] | None = None
        """Shards passed on: only those without positive documents (the crawl), or `"all"`;
        default `negatives` with positive_sources, `all` with labels_from."""
        min_auc: Ratio = MIN_AUC
        """Stop when the held-out ROC AUC is below this (0.5 = chance); `0` accepts any model."""

        @model_validator(mode="after")
        def _labels(self) -> Any:
            if self.labels_from is not None:
                if self.positive_sources or self.negative_sources:
                    raise ValueError("set labels_from or positive_sources/negative_sources, "
                                     "not both")
                if self.threshold is None:
                    raise ValueError("threshold: labels_from needs the teacher score from "
                                     "which a document is a positive (3 for FineWeb-Edu's 0-5 "
                                     "scale)")
            elif not self.positive_sources:
                raise ValueError("positive_sources: name at least one source (a read stage's "
                                 "id or 'source' parameter), or set labels_from to learn from "
                                 "a teacher's score")
            elif self.threshold is not None:
                raise ValueError("threshold: only with labels_from")
            return self

    def setup(self) -> None:
        self.positive_sources = frozenset(self.positive_sources or ())
        self.negative_sources = frozenset(self.negative_sources) \
            if self.negative_sources else None
        self.output = self.output or ("all" if self.labels_from is not None else "negatives")

    def teacher_score(self, doc: Document) -> float | None:
        """The teacher's score of ``doc`` (``labels_from``), ``None`` when it has none."""
        v = meta_value(doc.meta, self.labels_from) if self.labels_from else None
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return None  # missing, not a number, NaN or inf: no label rather than a guess
        return float(v)

    def label(self, doc: Document) -> str | None:
        if self.labels_from is not None:
            v = self.teacher_score(doc)
            if v is None:
                return None
            return HQ if self.threshold is not None and v >= self.threshold else LQ
        src = doc.meta.get("source")
        if src in self.positive_sources:
            return HQ
        if self.negative_sources is None or src in self.negative_sources:
            return LQ
        return None

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        out_dir = ctx.artifact_dir
        parts = ctx.map(_Sample(self, os.path.join(out_dir, "parts")), shards, phase="sample",
                        keys=[s.name for s in shards])
        from curator.filters.decontaminate import verify_file

        for p in parts:  # resumed phases: their files must still be there, complete
            verify_file(p.train, p.train_bytes, ctx.stage_id)
            verify_file(p.holdout, p.holdout_bytes, ctx.stage_id)
            if p.teacher is not None:
                verify_file(p.teacher, p.teacher_bytes, ctx.stage_id)
        (result,) = ctx.map(_Train(self, out_dir), [parts], phase="train", keys=["model"])
        verify_file(result.model, result.model_bytes, ctx.stage_id)
        m = result.metrics
        if self.labels_from is not None:
            what = f"{self.labels_from} >= {self.threshold:g} vs below"
        else:
            neg = sorted(self.negative_sources) if self.negative_sources \
                else "every other source"
            what = f"positive_sources {sorted(self.positive_sources)} vs {neg}"
        check_auc(m, self.min_auc, self.holdout, f"stage '{ctx.stage_id}'",
                  "train_quality_classifier.holdout", what)
        ctx.artifacts["quality_model"] = result.model
        ctx.artifacts["quality_metrics"] = m.to_json()
        cols = ["train hq", "train lq", "held-out docs", "ROC AUC", "precision", "recall",
                "f1", "accuracy", "model MB"]
        row = [m.train_hq, m.train_lq, m.holdout_docs, m.auc, m.precision, m.recall, m.f1,
               m.accuracy, round(result.model_bytes / 1e6, 2)]
        if self.labels_from is not None:  # agreement with the teacher's ranking
            cols.insert(4, f"Spearman vs {self.labels_from}")
            row.insert(4, m.spearman)
        ctx.artifacts["report_tables"] = [{
            "title": "Quality classifier (held-out, hq label)", "columns": cols, "rows": [row]}]
        ctx.count("quality_train:model_bytes", result.model_bytes)
        labels = [f"{i / 10:.1f}-{(i + 1) / 10:.1f}" for i in range(10)]
        ctx.artifacts["report_histograms"] = [
            {"title": f"held-out P(hq) of {name} documents", "series": name, "labels": labels,
             "counts": list(hist or (0,) * 10)}
            for hist, name in ((m.score_hist_hq, "high-quality"), (m.score_hist_lq, "other"))]
        for p in parts:
            ctx.count("quality_train:hq_docs", p.hq)
            ctx.count("quality_train:lq_docs", p.lq)
        if self.output == "all":
            return ctx.passthrough(shards)
        # Pass on the shards that hold documents to filter (those with no positive docs).
        return ctx.passthrough([s for s, p in zip(shards, parts) if p.hq == 0])


@dataclass(frozen=True, kw_only=True)
class SampledShard:
    """A ``sample`` phase result: one shard's labelled lines in its train, holdout and (with
    ``labels_from``) teacher files, their sizes, and its documents per label."""

    shard: str
    train: str
    holdout: str
    teacher: str | None
    train_bytes: int
    holdout_bytes: int
    teacher_bytes: int | None
    hq: int
    lq: int
    skipped: int


class _Sample:
    """Phase 1: write one shard's labelled, normalized lines into train / holdout files."""

    def __init__(self, stage: TrainQualityClassifier, out_dir: str) -> None:
        self.stage, self.out_dir = stage, out_dir

    def __call__(self, shard: Shard) -> SampledShard:
        st = self.stage
        counts = {"hq": 0, "lq": 0, "skipped": 0}
        kinds = ("train", "holdout", "teacher") if st.labels_from else ("train", "holdout")
        paths = {k: os.path.join(self.out_dir, f"{shard.name}.{k}.txt") for k in kinds}
        with contextlib.ExitStack() as stack:
            files = {k: stack.enter_context(atomic_open(v, "wb")) for k, v in paths.items()}
            ftr, fho, fte = files["train"], files["holdout"], files.get("teacher")
            for doc in read_shard(shard.path):
                label = st.label(doc)
                text = normalize(doc.text, st.max_chars) if label else ""
                if not label or len(text.split()) < st.min_words:
                    counts["skipped"] += 1
                    continue
                counts["hq" if label == HQ else "lq"] += 1
                line = f"{label} {text}\n".encode()
                if holdout_unit(st.seed, doc.id) < st.holdout:
                    fho.write(line)
                    if fte is not None:  # the teacher's score, line for line
                        fte.write(f"{st.teacher_score(doc)!r}\n".encode())
                else:
                    ftr.write(line)
        teacher = paths.get("teacher")
        return SampledShard(
            shard=shard.name, train=paths["train"], holdout=paths["holdout"], teacher=teacher,
            train_bytes=os.path.getsize(paths["train"]),
            holdout_bytes=os.path.getsize(paths["holdout"]),
            teacher_bytes=os.path.getsize(teacher) if teacher else None, **counts)


class _Train:
    """Phase 2 (one task): balance, shuffle, train, evaluate."""

    def __init__(self, stage: TrainQualityClassifier, out_dir: str) -> None:
        self.stage, self.out_dir = stage, out_dir

    def __call__(self, parts: list[SampledShard]) -> TrainedModel:
        st = self.stage
        return train_from_parts([p.train for p in parts], [p.holdout for p in parts],
                                self.out_dir, epoch=st.epoch, lr=st.lr, dim=st.dim,
                                word_ngrams=st.word_ngrams, min_count=st.min_count,
                                bucket=st.bucket, quantize=st.quantize,
                                seed=st.seed, balance=st.balance,
                                max_docs_per_label=st.max_docs_per_label,
                                teacher_parts=[p.teacher for p in parts if p.teacher]
                                if st.labels_from else None)
