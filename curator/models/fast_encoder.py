"""Faster sentence-transformers encoders for CPU: the same vectors as
``SentenceTransformer(model).encode`` (its tokenisation, ``max_seq_length``, pooling and
normalisation), computed with less work.

Backends (``load_fast_encoder(model, backend=...)``):

``fast``
    torch fp32, the model's own weights. Texts are tokenised once, sorted by *token* length and
    batched so that each batch is padded only to its own longest text (sentence-transformers sorts
    by character length, so a batch can still carry long padding). Exact: cosine >= 0.9999 to
    sentence-transformers' vectors.
``fast-bf16``
    as ``fast`` with the weights and activations in bfloat16 (pooling in fp32). On CPUs with
    AMX or AVX512-BF16 (Sapphire Rapids and later, Zen 4) 2.9x sentence-transformers'
    documents per CPU-second at cosine 0.9999 (1.8x on a loaded machine); on older CPUs
    bfloat16 is emulated and slower than fp32: use ``onnx-int8`` there.
``onnx``
    the same graph exported to ONNX (pooling and normalisation inside it), fused by ONNX Runtime's
    transformer optimiser and run by ONNX Runtime on CPU. fp32, cosine >= 0.9999.
``onnx-int8``
    the ``onnx`` graph with its MatMul weights quantised to int8 (dynamic quantisation,
    activations quantised per batch). Minimum cosine to sentence-transformers' vectors 0.990 on
    real articles, 1.4-1.7x its documents per CPU-second (bench/bench_semantic.py,
    docs/performance.md).

Exported ONNX files are cached under ``cache_dir`` (default ``$CURATOR_CACHE/onnx`` or
``~/.cache/curator/onnx``), keyed by a digest of the model folder's files, the backend and the
library versions, and written atomically, so a changed model re-exports and two processes
exporting at once both end with a whole file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from curator.models.onnx_export import (
    cached_export,
    default_cache,
    export_traced,
    folder_digest,
    open_session,
)

BACKENDS = ("fast", "fast-bf16", "onnx", "onnx-int8")


@dataclass(frozen=True)
class SentenceModelSpec:
    """What sentence-transformers does around the transformer, read from the loaded model."""

    folder: Path
    pooling: str  # "mean" | "cls" | "max" | "mean_sqrt_len"
    normalize: bool
    max_seq_length: int


def resolve_model_folder(model: str | os.PathLike[str]) -> Path:
    """A local folder as is; a hub id through the local Hugging Face cache (downloads only if
    the id is not cached, which a local folder never needs)."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(str(model)))


def load_sentence_model(folder: Path, max_seq_length: int | None = None) -> tuple[Any, Any]:
    """The SentenceTransformer itself (CPU): its modules, tokenizer and max_seq_length are what
    the fast backends follow, so they agree with whatever sentence-transformers version reads
    the folder."""
    from sentence_transformers import SentenceTransformer

    from curator.models.weights import weights_problem

    why = weights_problem(str(folder))
    if why:
        raise ValueError(why)
    st = SentenceTransformer(str(folder), device="cpu",
                             model_kwargs={"use_safetensors": True})  # never a pickle
    if max_seq_length is not None:
        st.max_seq_length = int(max_seq_length)
    return st, read_spec(st, folder)


def read_spec(st: Any, folder: Path) -> SentenceModelSpec:
    """Only Transformer -> Pooling [-> Normalize] pipelines are accepted: another module (Dense,
    a custom one) would change the vectors, and a wrong vector is worse than an error."""
    mods = list(st)
    names = [type(m).__name__ for m in mods]
    if not names or names[0] != "Transformer" or len(names) < 2 or names[1] != "Pooling":
        raise ValueError(
            f"{folder}: modules {names} are not supported by the fast backends "
            "(Transformer, Pooling, optionally Normalize; use backend 'torch')"
        )
    if names[2:] not in ([], ["Normalize"]):
        other = [n for n in names[2:] if n != "Normalize"] or names[2:]
        raise ValueError(
            f"{folder}: module {other[0]!r} after the pooling is not supported by "
            "the fast backends (use backend 'torch')"
        )
    pooling = _pooling_mode(mods[1], folder)
    seq = st.max_seq_length or getattr(mods[0].auto_model.config, "max_position_embeddings", 512)
    return SentenceModelSpec(folder, pooling, len(names) == 3, int(seq))


def _pooling_mode(pool: Any, folder: Path) -> str:
    mode = getattr(pool, "pooling_mode", None)  # sentence-transformers >= 6: one name
    if mode is None:  # older: one flag per mode
        flags = {
            "cls": "pooling_mode_cls_token",
            "mean": "pooling_mode_mean_tokens",
            "max": "pooling_mode_max_tokens",
            "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
            "weightedmean": "pooling_mode_weightedmean_tokens",
            "lasttoken": "pooling_mode_lasttoken",
        }
        on = [k for k, attr in flags.items() if getattr(pool, attr, False)]
        mode = on[0] if len(on) == 1 else tuple(on)
    if isinstance(mode, (list, tuple)) and len(mode) == 1:
        mode = mode[0]
    known = {"cls": "cls", "mean": "mean", "max": "max", "mean_sqrt_len_tokens": "mean_sqrt_len"}
    if not isinstance(mode, str) or mode not in known:
        raise ValueError(f"{folder}: pooling {mode!r} is not supported by the fast backends")
    return known[mode]


class _Tokens:
    """Texts tokenised once: ids without padding, so batches can be cut by length."""

    def __init__(self, tokenizer: Any, spec: SentenceModelSpec, texts: Sequence[str]) -> None:
        enc = tokenizer(
            [str(t) for t in texts],
            padding=False,
            truncation="longest_first",
            max_length=spec.max_seq_length,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        self.ids: list[list[int]] = enc["input_ids"]
        self.lengths = np.fromiter((len(x) for x in self.ids), dtype=np.int64, count=len(self.ids))
        self.pad_id = int(tokenizer.pad_token_id or 0)

    def batches(self, batch_size: int) -> list[np.ndarray]:
        """Indices of the texts in each batch, longest first (a too-large batch fails early)."""
        order = np.argsort(-self.lengths, kind="stable")
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]

    def pad(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        width = int(self.lengths[idx].max()) if len(idx) else 0
        ids = np.full((len(idx), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        for row, i in enumerate(idx):
            n = int(self.lengths[i])
            ids[row, :n] = self.ids[i]
            mask[row, :n] = 1
        return ids, mask


def _pool_module(pooling: str, normalize: bool) -> Any:
    import torch

    class Pool(torch.nn.Module):
        """Transformer + pooling + normalisation as one module (what is exported to ONNX)."""

        def __init__(self, transformer: torch.nn.Module) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            kwargs: dict[str, torch.Tensor] = {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
            }
            if getattr(self.transformer.config, "type_vocab_size", 0):
                kwargs["token_type_ids"] = torch.zeros_like(input_ids)
            hidden = self.transformer(**kwargs)[0].float()  # pool in fp32 whatever ran
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            if pooling == "cls":
                out = hidden[:, 0]
            elif pooling == "max":
                out = hidden.masked_fill(mask == 0, -1e9).max(dim=1).values
            else:
                summed = (hidden * mask).sum(dim=1)
                count = mask.sum(dim=1).clamp(min=1e-9)
                out = summed / (count if pooling == "mean" else count.sqrt())
            if normalize:
                out = torch.nn.functional.normalize(out, p=2, dim=1)
            return out

    return Pool


class FastEncoder:
    """An Encoder (``dim``, ``encode(texts) -> float32 (n, dim)``) over one of the backends."""

    def __init__(
        self,
        st: Any,
        spec: SentenceModelSpec,
        backend: str,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        threads: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
        if batch_size < 1:
            raise ValueError(f"batch_size {batch_size}: must be >= 1")
        self.spec = spec
        self.backend = backend
        self.batch_size = batch_size
        self._transformer = st[0].auto_model.eval()
        self.tokenizer = st.tokenizer
        affinity = getattr(os, "sched_getaffinity", None)
        self._threads = threads or (len(affinity(0)) if affinity else os.cpu_count() or 1)
        if backend in ("fast", "fast-bf16"):
            self._init_torch(device)
        else:
            if device not in ("cpu", "auto"):
                raise ValueError(f"device {device!r}: the onnx backends run on CPU (use 'fast')")
            self._init_onnx(Path(cache_dir) if cache_dir else default_cache())
            self._transformer = None  # exported: the torch weights need not stay in memory

    # -- torch -----------------------------------------------------------------------------
    def _torch_module(self, attn: str | None = None) -> Any:
        import copy

        transformer = self._transformer
        if attn is not None:
            transformer = copy.deepcopy(transformer)
            transformer.set_attn_implementation(attn)
        module = _pool_module(self.spec.pooling, self.spec.normalize)(transformer)
        return module.eval()

    def _init_torch(self, device: str) -> None:
        import torch

        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        self._module = self._torch_module().to(device)
        if self.backend == "fast-bf16":
            self._module = self._module.to(torch.bfloat16)
        with torch.inference_mode():
            self.dim = int(self._run_torch(*_dummy(self.tokenizer)).shape[1])

    def _run_torch(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            out = self._module(
                torch.from_numpy(ids).to(self.device), torch.from_numpy(mask).to(self.device)
            )
        return out.float().cpu().numpy()

    # -- onnx ------------------------------------------------------------------------------
    def _init_onnx(self, cache_dir: Path) -> None:
        path = self._onnx_file(cache_dir)
        self._session = open_session(path, self._threads, lambda: self._onnx_file(cache_dir))
        self.device = "cpu"
        self.dim = int(self._run_onnx(*_dummy(self.tokenizer)).shape[1])

    def _run_onnx(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        out = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return np.asarray(out, dtype=np.float32)

    def _onnx_file(self, cache_dir: Path) -> Path:
        identity = [folder_digest(self.spec.folder), "sentence", self.spec.pooling,
                    self.spec.normalize]
        return cached_export(cache_dir, identity, self.backend, self._export,
                             self._transformer.config)

    def _export(self, path: Path) -> None:
        import torch

        module = self._torch_module("eager")  # plain ops, which the optimiser fuses
        ids, mask = _dummy(self.tokenizer, rows=2, width=16)
        export_traced(module, (torch.from_numpy(ids), torch.from_numpy(mask)), path,
                      ["input_ids", "attention_mask"], "embedding")

    # -- the Encoder API -------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings in the order of ``texts``; float32 (n, dim)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not len(texts):
            return out
        tokens = _Tokens(self.tokenizer, self.spec, texts)
        run = self._run_onnx if self.backend.startswith("onnx") else self._run_torch
        for idx in tokens.batches(self.batch_size):
            out[idx] = run(*tokens.pad(idx))
        return out


def _dummy(tokenizer: Any, rows: int = 1, width: int = 4) -> tuple[np.ndarray, np.ndarray]:
    enc = tokenizer(
        ["hello world"] * rows,
        padding="max_length",
        max_length=width,
        truncation=True,
        return_tensors="np",
    )
    return enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64)


def load_fast_encoder(
    model: str | os.PathLike[str],
    backend: str = "fast",
    device: str = "cpu",
    batch_size: int = 32,
    max_seq_length: int | None = None,
    *,
    threads: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> FastEncoder:
    """Load ``model`` (a sentence-transformers folder or hub id) for one of ``BACKENDS``."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    st, spec = load_sentence_model(resolve_model_folder(model), max_seq_length)
    return FastEncoder(
        st,
        spec,
        backend,
        device=device,
        batch_size=batch_size,
        threads=threads,
        cache_dir=cache_dir,
    )
