"""Sentence encoders: texts -> float32 vectors, one row per text.

``torch``: the vectors ``SentenceTransformer(model).encode`` gives (its pooling,
``max_seq_length`` and ``Normalize`` module), by calling it. ``static``: a model2vec static
model distilled from the same model (token vectors averaged: ~100x cheaper on CPU, good enough
to find *candidate* near-duplicates for the full model to confirm); distilled once and kept in
``cache_dir``, keyed by the teacher folder's content. ``onnx`` / ``onnx-int8`` / ``fast``:
``curator.models.fast_encoder`` (ONNX Runtime and friends), imported only when asked for.

Nothing here downloads anything when ``model`` is a local folder; torch, sentence-transformers
and model2vec are imported on first use (``curator validate`` stays fast).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from curator.base.files import files_under
from curator.models.weights import weights_problem

#: Backends this module serves itself; the others go to ``curator.models.fast_encoder``.
BACKENDS = ("torch", "static")
FAST_BACKENDS = ("onnx", "onnx-int8", "fast", "fast-bf16")
#: Bump when the distillation recipe changes (cached static models are then redone).
STATIC_RECIPE = 1


class NotAModel(ValueError):
    """``model`` names no usable sentence-embedding model (the message says why)."""


@runtime_checkable
class Encoder(Protocol):
    """Anything that turns texts into one float32 row each (``(len(texts), dim)``)."""

    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; other values unchanged."""
    if device != "auto":
        return device
    try:
        import torch
    except ImportError:  # pragma: no cover - the models extra brings torch
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def check_model_folder(path: str) -> str | None:
    """Why the local folder ``path`` cannot be a sentence-embedding model, or None. Cheap (file
    names only): the full check is loading it."""
    if not os.path.isdir(path):
        return f"'{path}' is not a folder"
    names = set(os.listdir(path))
    if not names & {"config.json", "modules.json"}:
        return f"'{path}' has no config.json or modules.json (not a Hugging Face model folder)"
    if "modules.json" not in names and not names & {
            "tokenizer.json", "vocab.txt", "tokenizer_config.json", "spiece.model",
            "sentencepiece.bpe.model", "vocab.json"}:
        return f"'{path}' has no tokenizer (tokenizer.json, vocab.txt, ...)"
    return weights_problem(path)


def folder_key(path: str) -> str:
    """A digest of every file under ``path`` (relative name, size, xxh3-128 of its bytes): the
    identity a cached derivative of the folder (a distilled static model) is filed under. A
    hub id (no such folder) is its own key."""
    import hashlib

    import xxhash

    h = hashlib.sha256()
    if not os.path.isdir(path):
        h.update(f"hub:{path}".encode())
        return h.hexdigest()[:16]
    for full in files_under(path):  # through symlinked subfolders (1_Pooling -> cache)
        x = xxhash.xxh3_128()
        with open(full, "rb") as fh:
            while block := fh.read(1 << 20):
                x.update(block)
        h.update(f"{os.path.relpath(full, path)}\0{os.path.getsize(full)}\0"
                 f"{x.hexdigest()}\n".encode())
    return h.hexdigest()[:16]


class TorchEncoder:
    """``SentenceTransformer(model).encode`` itself (float32 numpy rows)."""

    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 32,
                 max_seq_length: int | None = None) -> None:
        local = os.path.isdir(model)
        if local:
            why = check_model_folder(model)
            if why:
                raise NotAModel(why)
        device = resolve_device(device)
        if device != "cpu":
            # On a GPU the model waits for the tokenizer: with one core it embedded 2,100-2,700
            # documents/s on an H200, with the idle cores 3,600-4,900 (docs/models.md). On CPU
            # the cores are the model's, so there the tokenizer stays on one (_quiet).
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
        with _quiet():
            from safetensors import SafetensorError
            from sentence_transformers import SentenceTransformer

            try:
                self.model = SentenceTransformer(model, device=device, local_files_only=local,
                                                 model_kwargs={"use_safetensors": True})
            except (OSError, ValueError, KeyError, TypeError, RuntimeError,
                    SafetensorError) as e:
                raise NotAModel(f"'{model}' could not be loaded as a sentence-embedding model "
                                f"({type(e).__name__}: {str(e).splitlines()[0][:200]})") from None
        if device == "cpu":
            # one process per core under Dask and MPI: torch's default of every core in each
            # oversubscribes them (on a busy 2-core machine, 4 documents/s instead of 13)
            from curator.models.hf import set_threads

            set_threads(0)
        if max_seq_length is not None:
            self.model.max_seq_length = max_seq_length
        get_dim = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            raise NotAModel(f"'{model}' gives no fixed-size sentence embedding")
        self.dim = int(dim)
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.empty((0, self.dim), dtype=np.float32)
        if self.model.device.type == "cpu":
            out = self.model.encode(list(texts), batch_size=self.batch_size,
                                    convert_to_numpy=True, show_progress_bar=False)
            return np.asarray(out, dtype=np.float32)
        # On a GPU the batches stay there and come back in one copy: a copy per batch waits for
        # the GPU each time, so tokenizing the next batch (CPU) never overlaps this one's forward
        # pass. Same values (sentence-transformers' own numpy path is this .float().cpu()).
        out = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_tensor=True,
                                show_progress_bar=False)
        return out.float().cpu().numpy()


class StaticEncoder:
    """A model2vec static model (mean of distilled token vectors), float32 rows."""

    def __init__(self, folder: str, *, batch_size: int = 1024,
                 max_seq_length: int | None = None) -> None:
        from model2vec import StaticModel

        why = weights_problem(folder)
        if why:
            raise NotAModel(why)
        self.model = StaticModel.from_pretrained(folder)
        self.dim = int(self.model.dim)
        self.batch_size = max(batch_size, 256)
        self.max_length = max_seq_length or 512

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.empty((0, self.dim), dtype=np.float32)
        out = self.model.encode(list(texts), batch_size=self.batch_size,
                                max_length=self.max_length, use_multiprocessing=False,
                                show_progress_bar=False)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)


_DISTILL_LOCK = threading.Lock()


def static_model_path(model: str, cache_dir: str) -> str:
    """Where the static model distilled from ``model`` lives in ``cache_dir``."""
    return os.path.join(cache_dir, f"static-r{STATIC_RECIPE}-{folder_key(model)}")


def distill_static(model: str, cache_dir: str, *, device: str = "cpu") -> str:
    """The folder of the static model distilled from ``model`` (distilled now unless already
    in ``cache_dir``). Written to a temporary name and renamed, so a half-written model is
    never used; concurrent distillers agree (the first rename wins)."""
    dest = static_model_path(model, cache_dir)
    if os.path.isfile(os.path.join(dest, "config.json")):
        return dest
    if os.path.isdir(model):
        why = check_model_folder(model)
        if why:
            raise NotAModel(why)
    with _DISTILL_LOCK, _quiet():
        try:
            from model2vec.distill import distill
        except ImportError as e:
            raise NotAModel(f"the static backend needs model2vec's distill extra ({e})") from None
        try:
            static = distill(model_name=model, device=resolve_device(device))
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as e:
            raise NotAModel(f"'{model}' could not be distilled into a static model "
                            f"({type(e).__name__}: {str(e).splitlines()[0][:200]})") from None
        tmp = f"{dest}.tmp-{os.getpid()}-{threading.get_ident()}"
        static.save_pretrained(tmp)
        try:
            os.rename(tmp, dest)
        except OSError:  # another process got there first: theirs is as good
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def load_encoder(model: str, *, backend: str = "torch", device: str = "cpu",
                 batch_size: int = 32, max_seq_length: int | None = None,
                 cache_dir: str | None = None) -> Encoder:
    """An :class:`Encoder` for ``model`` (a local folder or a hub id).

    ``backend``: ``torch`` (sentence-transformers itself), ``static`` (a model2vec model
    distilled from ``model``, kept in ``cache_dir``, default ``~/.cache/curator``), or one of
    ``onnx`` / ``onnx-int8`` / ``fast`` / ``fast-bf16`` (``curator.models.fast_encoder``; its
    ONNX exports are kept in ``cache_dir`` too). Raises
    :class:`NotAModel` when ``model`` cannot be such a model."""
    if backend == "torch":
        return TorchEncoder(model, device=device, batch_size=batch_size,
                            max_seq_length=max_seq_length)
    if backend == "static":
        cache = cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "curator")
        return StaticEncoder(distill_static(model, cache, device=device),
                             batch_size=batch_size, max_seq_length=max_seq_length)
    if backend in FAST_BACKENDS:
        try:
            from curator.models.fast_encoder import (  # type: ignore[import-not-found,unused-ignore]
                load_fast_encoder,
            )
        except ImportError as e:
            raise ValueError(f"backend '{backend}' needs curator.models.fast_encoder, which "
                             f"is not available here ({e})") from None
        enc: Encoder = load_fast_encoder(model, backend=backend, device=device,
                                         batch_size=batch_size, max_seq_length=max_seq_length,
                                         cache_dir=cache_dir)
        return enc
    raise ValueError(f"unknown encoder backend '{backend}' (one of: "
                     f"{', '.join(BACKENDS + FAST_BACKENDS)})")


@contextlib.contextmanager
def _quiet() -> Any:
    """Silence the progress bars and banners of model libraries (they write to stderr)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    old = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        if old is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = old
