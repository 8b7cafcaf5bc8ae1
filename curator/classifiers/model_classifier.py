"""``model_classifier``: score every document with a Hugging Face sequence-classification model
(a FineWeb-Edu style regression head, or a multi-class head) and keep it by score or label.

Per batch of documents: texts are tokenized (truncated to the model's length or
``max_tokens``), sorted by token count so that each forward pass pads little, run in
``batch_size`` groups under ``torch.inference_mode``, and the outputs are put back in document
order. Scores are what a plain ``model(**tokenizer(text, truncation=True))`` gives
(tests/classifiers/test_model_classifier.py checks 1e-3).

Long documents: only a prefix of ``16 x max_tokens`` characters is tokenized when that provably
gives the same tokens as the whole text (the prefix fills the token budget and the word holding
the last kept token ends before the cut); otherwise, and for tokenizers without offsets or
truncating on the left, the whole text is. A 1 MB page costs a few KB of tokenization.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from curator.base.document import Document
from curator.base.errors import ConfigError, StageError
from curator.core.context import ShardContext
from curator.core.params import NonNegInt, PositiveInt, StageParams
from curator.core.stage import BatchStage, DirPath
from curator.models import hf


@dataclass(frozen=True)
class Preset:
    """A published classifier: its hub id and how its model card turns the output into an
    integer score (``int(round(max(0, min(score, 5))))``, Python's round: half to even)."""

    hub_id: str
    field: str
    #: NVIDIA's cards and NeMo Curator also write a label: high_quality when score >= this
    label_at: float | None = None
    #: NeMo Curator stores the float score clamped to [0, 5]; HuggingFaceFW's card the raw one
    clamp: bool = False
    max_tokens: int = 512


PRESETS: dict[str, Preset] = {
    # FineWeb-Edu (Penedo et al. 2024) keeps int_score >= 3
    "fineweb-edu": Preset("HuggingFaceFW/fineweb-edu-classifier", "edu_score"),
    # Nemotron-CC's ensemble members (Su et al. 2024)
    "fineweb-edu-mixtral": Preset("nvidia/nemocurator-fineweb-mixtral-edu-classifier",
                                  "edu_score_mixtral", label_at=2.5, clamp=True),
    "fineweb-edu-nemotron": Preset("nvidia/nemocurator-fineweb-nemotron-4-edu-classifier",
                                   "edu_score_nemotron", label_at=2.5, clamp=True),
}

#: Characters tokenized per allowed token before the exactness check (English: ~4.5 a token).
PREFIX_CHARS_PER_TOKEN = 16
_SPACE = re.compile(r"\s")


class ModelClassifier(BatchStage):
    """Score documents with a Hugging Face sequence-classification model (a regression score
    or a label and its probability in meta) and keep them by score or label; CPU or GPU."""

    name = "model_classifier"

    class Params(StageParams):
        model: DirPath | None = None
        """A local model folder (every file in it is part of the stage's key: new weights in the
        same folder rerun the stage) or a hub id (downloaded once into transformers' cache)."""
        preset: Literal["fineweb-edu", "fineweb-edu-mixtral", "fineweb-edu-nemotron"] | None = None
        """`fineweb-edu`, `fineweb-edu-mixtral`, `fineweb-edu-nemotron` (below)."""
        field: str | None = None
        """Meta key of the score (regression) or label (classification); default the preset's,
        else ``model_score``."""
        min_score: float | None = None
        """Keep documents whose value is within (inclusive); reasons `model_classifier:min_score`,
        `:max_score` (the score is in the rejected record). Regression: the score (the int score
        with a preset, see `filter_on`); classification: the probability of the predicted label."""
        max_score: float | None = None
        """Keep documents whose value is within (inclusive); reasons `model_classifier:min_score`,
        `:max_score` (the score is in the rejected record). Regression: the score (the int score
        with a preset, see `filter_on`); classification: the probability of the predicted label."""
        labels: Annotated[list[str], Field(min_length=1)] | None = None
        """Classification heads: keep documents whose predicted label is one of these (reason
        `model_classifier:label`)."""
        filter_on: Literal["auto", "score", "int_score"] = "auto"
        """`score`, `int_score` (presets only), `auto`: the int score with a preset (FineWeb-Edu
        keeps `int_score >= 3`), else the score."""
        max_tokens: Annotated[int, Field(ge=2)] | None = None
        """Tokens per document the model sees (truncated at the end, as `tokenizer(text,
        truncation=True)`)."""
        batch_size: PositiveInt | None = None
        """Documents per forward pass (default 32 on CPU, 256 on GPU)."""
        sort_window: PositiveInt = 1024
        """Documents read, tokenized and sorted by length together (memory: this many documents)."""
        device: Literal["auto", "cpu", "cuda"] = "auto"
        """`cpu`, `cuda`, `auto` (CUDA when torch sees a GPU)."""
        dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
        """`float32`, `bfloat16`, `float16`; `auto`: float32 on CPU, bfloat16 on a GPU that has it
        (float16 otherwise)."""
        backend: Literal["torch", "onnx", "onnx-int8"] = "torch"
        """`torch` (exact; fp32 on CPU unless `dtype`), `onnx` (ONNX Runtime on CPU, fp32:
        scores within 1e-3 of torch's), `onnx-int8` (int8 weights: faster on CPU, scores
        drift; docs/models.md gives the measured drift). ONNX exports are cached in
        `<work_dir>/cache/<stage id>/onnx`, keyed on the weights' content."""
        threads: NonNegInt = 0
        """Torch threads on CPU; `0`: `OMP_NUM_THREADS` when set (Dask workers set 1), else this
        process's CPUs divided by the MPI ranks on the host."""
        all_scores: bool = False
        """Classification: also every label's probability in `meta[field + "_probs"]`."""

        @model_validator(mode="after")
        def _ranges(self) -> Any:
            if self.min_score is not None and self.max_score is not None \
                    and self.min_score > self.max_score:
                raise ValueError(f"min_score {self.min_score:g} > max_score {self.max_score:g}")
            if self.backend != "torch" and self.device == "cuda":
                raise ValueError(f"backend: {self.backend} runs on CPU; use backend: torch on "
                                 "a GPU")
            if self.backend != "torch" and self.dtype not in ("auto", "float32"):
                raise ValueError(f"dtype: {self.dtype} is for backend: torch ({self.backend} "
                                 "sets its own precision)")
            if self.filter_on == "int_score" and self.preset is None:
                raise ValueError("filter_on: int_score needs a preset (its model card's rule)")
            return self

    def setup(self) -> None:
        key = f"{self.name}.model"
        p = PRESETS[self.preset] if self.preset else None
        if not self.model and p is None:
            raise ConfigError(f"{key}: name a model folder or hub id, or set preset "
                              f"({', '.join(PRESETS)})")
        model = self.model or (p.hub_id if p else "")
        if hf.is_local(model):
            hf.check_folder(model, key)
            model = os.path.abspath(model)
        elif hf.looks_like_path(model) or os.path.exists(model):
            raise ConfigError(f"{key}: model folder '{model}' not found")
        self.model, self._preset = model, p
        self.field = self.field or (p.field if p else "model_score")
        self.filter_int = self.filter_on == "int_score" or (self.filter_on == "auto"
                                                            and p is not None)
        self.max_tokens = self.max_tokens or (p.max_tokens if p else None)
        # BatchStage's batch_size is how many documents are sorted together
        self.inference_batch, self.batch_size = self.batch_size, self.sort_window

    def loaded(self, cache_dir: str | None = None, own_cache: bool = False) -> hf.LoadedModel:
        """The model, loaded once per process (again when its folder's files change), and
        checked against this stage's parameters. ``cache_dir``: where ONNX exports are kept
        (default ``$CURATOR_CACHE/onnx``); ``own_cache``: it is this stage's own folder
        (older exports in it are removed)."""
        m = hf.load_classifier(self.model, key=f"{self.name}.model", device=self.device,
                               dtype=self.dtype, threads=self.threads, prefix=self.name,
                               backend=self.backend, cache_dir=cache_dir, own_cache=own_cache)
        if self._preset is not None and m.kind != "regression":
            raise ConfigError(f"{self.name}.preset: {self.preset} expects a regression head "
                              f"(1 output); '{self.model}' has {len(m.labels)} ({m.kind})")
        if self.labels is not None:
            if m.kind == "regression":
                raise ConfigError(f"{self.name}.labels: '{self.model}' has a regression head "
                                  "(one score, no labels); use min_score / max_score")
            unknown = sorted(set(self.labels) - set(m.labels))
            if unknown:
                raise ConfigError(f"{self.name}.labels: {unknown} not among the model's labels "
                                  f"{m.labels}")
        return m

    def token_limit(self, m: hf.LoadedModel) -> int:
        return min(self.max_tokens, m.max_length) if self.max_tokens else m.max_length

    def encode(self, m: hf.LoadedModel, texts: list[str]) -> list[list[int]]:
        """Token ids of each text as ``tokenizer(text, truncation=True, max_length=limit)``
        gives them, tokenizing a prefix of a long text when that is provably the same."""
        tok, limit = m.tokenizer, self.token_limit(m)
        cut = PREFIX_CHARS_PER_TOKEN * limit
        exact_prefix = bool(getattr(tok, "is_fast", False)) and \
            getattr(tok, "truncation_side", "right") == "right"
        heads = [t[:cut] for t in texts] if exact_prefix else texts
        enc = tok(heads, truncation=True, max_length=limit,
                  return_offsets_mapping=exact_prefix, return_attention_mask=False,
                  return_token_type_ids=False)
        ids: list[list[int]] = enc["input_ids"]
        if exact_prefix:
            redo = [i for i, t in enumerate(texts) if len(t) > cut and not _prefix_ok(
                heads[i], ids[i], enc["offset_mapping"][i], limit)]
            if redo:
                full = tok([texts[i] for i in redo], truncation=True, max_length=limit,
                           return_attention_mask=False, return_token_type_ids=False)
                for i, row in zip(redo, full["input_ids"]):
                    ids[i] = row
        return ids

    def predict(self, texts: list[str], cache_dir: str | None = None, own_cache: bool = False
                ) -> tuple[np.ndarray, hf.LoadedModel]:
        """Raw outputs (logits, float32), one row per text, in text order."""
        import torch

        m = self.loaded(cache_dir, own_cache)
        ids = self.encode(m, texts)
        n = len(ids)
        out = np.empty((n, len(m.labels)), dtype=np.float32)
        if not n:
            return out, m
        bs = self.inference_batch or (32 if m.device == "cpu" else 256)
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
        order = np.argsort(lengths, kind="stable")
        pad = m.tokenizer.pad_token_id
        pad = 0 if pad is None else pad
        wants_types = "token_type_ids" in getattr(m.tokenizer, "model_input_names", ())
        with torch.inference_mode():
            for start in range(0, n, bs):
                idx = order[start:start + bs]
                width = int(lengths[idx].max())
                arr = np.full((len(idx), width), pad, dtype=np.int64)
                mask = np.zeros((len(idx), width), dtype=np.int64)
                for r, i in enumerate(idx.tolist()):
                    row = ids[i]
                    arr[r, :len(row)] = row
                    mask[r, :len(row)] = 1
                out[idx] = m.logits(arr, mask, wants_types)
        return out, m

    # -- the stage ----------------------------------------------------------------------------
    def process_batch(self, docs: list[Document], ctx: ShardContext) -> Iterable[Document]:
        cache = os.path.join(ctx.work_dir, "cache", ctx.stage_id, "onnx") \
            if ctx is not None and self.backend != "torch" else None
        raw, m = self.predict([d.text for d in docs], cache, own_cache=cache is not None)
        bad = ~np.isfinite(raw).all(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise StageError(f"{self.name}: model '{self.model}' gave a non-finite score "
                             f"({raw[i].tolist()}) for document '{docs[i].id}' "
                             f"({int(bad.sum())} of {len(docs)} in this batch; dtype "
                             f"{m.dtype}): the model or its weights are broken")
        f = self.field
        p = self._preset
        if m.kind == "regression":
            scores = raw[:, 0].astype(np.float64)
            ints = np.clip(scores, 0, 5).round().astype(np.int64) if p else None  # half-even
            stored = np.clip(scores, 0, 5) if p is not None and p.clamp else scores
            value = ints if self.filter_int and ints is not None else scores
            for i, doc in enumerate(docs):
                doc.meta[f] = round(float(stored[i]), 6)
                if ints is not None:
                    doc.meta[f + "_int"] = int(ints[i])
                if p is not None and p.label_at is not None:
                    doc.meta[f + "_label"] = ("high_quality" if scores[i] >= p.label_at
                                              else "low_quality")
            yield from self._keep(docs, value, None, ctx)
            return
        if m.kind == "multi_label":
            probs = 1.0 / (1.0 + np.exp(-raw.astype(np.float64)))
        else:
            z = raw.astype(np.float64)
            z = np.exp(z - z.max(axis=1, keepdims=True))
            probs = z / z.sum(axis=1, keepdims=True)
        top = probs.argmax(axis=1)
        top_p = probs[np.arange(len(docs)), top]
        names = [m.labels[j] for j in top.tolist()]
        for i, doc in enumerate(docs):
            doc.meta[f] = names[i]
            doc.meta[f + "_prob"] = round(float(top_p[i]), 6)
            if self.all_scores:
                doc.meta[f + "_probs"] = {lab: round(float(v), 6)
                                          for lab, v in zip(m.labels, probs[i].tolist())}
        yield from self._keep(docs, top_p, names, ctx)

    def _keep(self, docs: list[Document], value: np.ndarray, names: list[str] | None,
              ctx: ShardContext) -> Iterable[Document]:
        lo, hi, labels = self.min_score, self.max_score, self.labels
        if lo is None and hi is None and labels is None:
            yield from docs  # annotate only
            return
        allowed = set(labels) if labels is not None else None
        for i, doc in enumerate(docs):
            v = float(value[i])
            if allowed is not None and names is not None and names[i] not in allowed:
                ctx.reject(doc, f"{self.name}:label", label=names[i])
            elif lo is not None and v < lo:
                ctx.reject(doc, f"{self.name}:min_score", score=v)
            elif hi is not None and v > hi:
                ctx.reject(doc, f"{self.name}:max_score", score=v)
            else:
                yield doc


def _prefix_ok(head: str, ids: list[int], offsets: list[tuple[int, int]], limit: int) -> bool:
    """Whether the tokens of ``head`` (a cut text) are those of the whole text: the prefix
    filled the token budget, and the word holding the last kept token ends (at a whitespace)
    before the cut, so no kept token depends on what follows (true of whitespace-splitting
    pre-tokenizers: BERT's WordPiece, byte-level BPE, SentencePiece's metaspace)."""
    if len(ids) < limit:
        return False
    end = max((e for _, e in offsets), default=0)
    return _SPACE.search(head, end) is not None
