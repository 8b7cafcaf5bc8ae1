"""Load a Hugging Face sequence-classification model (a local folder or a hub id) once per
process, on the device and in the dtype asked for, with every way it can be unusable turned
into one line naming the YAML key.

Why the checks: ``AutoModelForSequenceClassification`` silently puts a *random* head on a
folder that holds only an encoder (a sentence-embedding model, say), and ``AutoTokenizer``
returns a tokenizer of five special tokens for a folder without tokenizer files: both give
scores that look fine and mean nothing. A local folder is read with ``local_files_only`` (and
``HF_HUB_OFFLINE``'s meaning), so nothing is downloaded at run time; a hub id is fetched by
transformers into its own cache, the first time only.

torch and transformers are imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import Any, Literal

from curator.base.errors import ConfigError
from curator.models.weights import weights_problem

Device = Literal["auto", "cpu", "cuda"]
DType = Literal["auto", "float32", "bfloat16", "float16"]
Backend = Literal["torch", "onnx", "onnx-int8"]

#: Files of which a local model folder needs at least one to have a tokenizer.
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spm.model", "tokenizer.model",
                   "sentencepiece.bpe.model", "spiece.model")
#: Files of which a local model folder needs at least one to have weights.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")

_LOCK = threading.Lock()
_CACHE: dict[tuple[Any, ...], LoadedModel] = {}


def is_local(model: str) -> bool:
    """A model named by a path that exists here (a folder), not a hub id."""
    return os.path.isdir(model)


def looks_like_path(model: str) -> bool:
    """What a user meant as a path (``./m``, ``/x/m``, ``m/`` ``~/m``), not ``org/name``."""
    return (model.startswith((".", "/", "~")) or model.endswith(("/", os.sep))
            or model.count("/") > 1 or (os.sep != "/" and os.sep in model))


def check_folder(model: str, key: str, head: bool = True) -> dict[str, Any]:
    """The parsed ``config.json`` of a local model folder, after cheap checks that need no
    torch (so ``curator validate`` catches them): a config with a ``model_type``, weights, a
    tokenizer and, with ``head``, a sequence-classification architecture."""
    cfg_path = os.path.join(model, "config.json")
    try:
        with open(cfg_path, "rb") as f:
            cfg = json.loads(f.read(1 << 20))
    except FileNotFoundError:
        raise ConfigError(f"{key}: '{model}' is not a Hugging Face model folder (no "
                          "config.json)") from None
    except (OSError, ValueError) as e:
        raise ConfigError(f"{key}: '{model}/config.json' cannot be read: {e}") from None
    if not isinstance(cfg, dict) or not cfg.get("model_type"):
        raise ConfigError(f"{key}: '{cfg_path}' has no model_type: not a transformers model")
    names = set(os.listdir(model))
    if not names & set(WEIGHT_FILES):
        raise ConfigError(f"{key}: '{model}' has no weights (none of {', '.join(WEIGHT_FILES)})")
    if not names & set(TOKENIZER_FILES):
        raise ConfigError(f"{key}: '{model}' has no tokenizer (none of "
                          f"{', '.join(TOKENIZER_FILES)}); save it with "
                          "tokenizer.save_pretrained() into the same folder")
    why = weights_problem(model)
    if why:
        raise ConfigError(f"{key}: {why}")
    archs = cfg.get("architectures") or []
    if head and not any(str(a).endswith("ForSequenceClassification") for a in archs):
        raise ConfigError(f"{key}: '{model}' is not a sequence-classification model "
                          f"(architectures: {archs or 'none'}); a bare encoder would get a "
                          "random head")
    return cfg


def choose_device(device: Device, key: str) -> str:
    """``cpu`` or ``cuda``: ``auto`` takes CUDA when torch sees a GPU."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"{key}: cuda asked for, but torch sees no GPU "
                          f"(torch {torch.__version__}); use device: auto or cpu")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def choose_dtype(dtype: DType, device: str, key: str) -> Any:
    """The torch dtype: ``auto`` is float32 on CPU (exact; bf16 matmuls are slow on most
    CPUs) and bfloat16 on a GPU that has it, float16 otherwise."""
    import torch

    if dtype == "auto":
        if device == "cpu":
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if dtype == "float16" and device == "cpu":
        raise ConfigError(f"{key}: float16 is for GPUs (slow and inexact on CPU); use "
                          "float32 or bfloat16")
    return getattr(torch, dtype)


def set_threads(threads: int) -> int:
    """Set torch's intra-op threads once per process: ``threads`` if > 0, else
    ``OMP_NUM_THREADS`` when set (Dask's workers set it to 1), else the CPUs this process may
    use divided among the MPI ranks on this host. Returns the number set."""
    import torch

    if threads <= 0:
        env = os.environ.get("OMP_NUM_THREADS", "")
        if env.isdigit() and int(env) > 0:
            threads = int(env)
        else:
            cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                else os.cpu_count() or 1
            local = next((int(v) for k in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                          "MV2_COMM_WORLD_LOCAL_SIZE")
                          if (v := os.environ.get(k, "")).isdigit() and int(v) > 0), 1)
            threads = max(1, cpus // local)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


@dataclass
class LoadedModel:
    """A model ready for inference, and what a stage needs to know about its head."""

    model: Any
    tokenizer: Any
    device: str
    dtype: Any
    #: tokens per text the model takes (its position embeddings / the tokenizer's maximum)
    max_length: int
    #: ``regression`` (one output), ``single_label`` (softmax) or ``multi_label`` (sigmoid)
    kind: str
    #: label names by output index (``id2label``)
    labels: list[str]
    #: ``torch``, or ``onnx`` / ``onnx-int8`` (then ``model`` is None and ``session`` runs)
    backend: str = "torch"
    session: Any = None
    #: the ONNX file ``session`` runs (None for torch)
    onnx_path: str | None = None

    def logits(self, ids: Any, mask: Any, token_types: bool) -> Any:
        """Raw outputs (float32 numpy, one row per text) of a padded batch: ``ids`` and
        ``mask`` int64 numpy arrays. Call under ``torch.inference_mode`` for torch."""
        import numpy as np

        if self.session is not None:
            feed = {"input_ids": ids, "attention_mask": mask}
            return np.asarray(self.session.run(None, feed)[0], dtype=np.float32)
        import torch

        batch = {"input_ids": torch.from_numpy(ids).to(self.device),
                 "attention_mask": torch.from_numpy(mask).to(self.device)}
        if token_types:
            batch["token_type_ids"] = torch.zeros_like(batch["input_ids"])
        return self.model(**batch).logits.float().cpu().numpy()


def _folder_state(model: str) -> tuple[Any, ...]:
    """What tells a changed folder from the one already loaded (new weights, same path)."""
    out = []
    for name in sorted(os.listdir(model)):
        try:
            st = os.stat(os.path.join(model, name))
        except OSError:
            continue
        out.append((name, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def load_classifier(model: str, *, key: str, device: Device = "auto", dtype: DType = "auto",
                    threads: int = 0, prefix: str | None = None, backend: Backend = "torch",
                    cache_dir: str | None = None, own_cache: bool = False) -> LoadedModel:
    """A sequence-classification model and its tokenizer, loaded once per process (and again
    when the folder's files change), in eval mode on ``device``. ``key`` names the model's
    YAML key in errors; ``prefix`` (the stage name) the device, dtype and backend keys.
    ``backend`` ``onnx`` / ``onnx-int8`` runs an ONNX export on CPU (curator.models.onnx_export,
    cached in ``cache_dir``, default ``$CURATOR_CACHE/onnx``; with ``own_cache`` the folder is the
    caller's alone and other exports in it are removed)."""
    local = is_local(model)
    if local:
        check_folder(model, key)
    pre = prefix or key.rsplit(".", 1)[0]
    if backend != "torch":
        if device == "cuda":
            raise ConfigError(f"{pre}.backend: {backend} runs on CPU; use backend: torch on "
                              "a GPU")
        if dtype not in ("auto", "float32"):
            raise ConfigError(f"{pre}.dtype: {dtype} is for backend: torch ({backend} "
                              f"{'is fp32' if backend == 'onnx' else 'quantises to int8'})")
        device, dtype = "cpu", "float32"
    dev = choose_device(device, f"{pre}.device")
    n_threads = set_threads(threads) if dev == "cpu" else 0
    cache_key = (os.path.abspath(model) if local else model, dev, dtype, backend, cache_dir,
                 _folder_state(model) if local else ())
    with _LOCK:
        hit = _CACHE.get(cache_key)
        if hit is not None:
            return hit
        loaded = _load(model, local, key, dev, choose_dtype(dtype, dev, f"{pre}.dtype"))
        if backend != "torch":
            loaded = _to_onnx(loaded, model, local, backend, cache_dir, n_threads)
            if own_cache and cache_dir and loaded.onnx_path:
                from pathlib import Path

                from curator.models.onnx_export import prune_others

                prune_others(cache_dir, Path(loaded.onnx_path))
        for k in [k for k in _CACHE if k[0] == cache_key[0]]:
            del _CACHE[k]  # an older version of the same folder
        _CACHE[cache_key] = loaded
        return loaded


def _to_onnx(m: LoadedModel, model: str, local: bool, backend: str, cache_dir: str | None,
             threads: int) -> LoadedModel:
    """``m`` run by ONNX Runtime: exported (or taken from the cache, keyed on the weights'
    content) and opened; the torch weights are let go."""
    import copy
    from pathlib import Path

    import torch

    from curator.models import onnx_export as ox

    net = m.model
    # a hub model is identified by its revision (transformers records the commit it loaded)
    content = ox.folder_digest(model) if local else \
        f"hub:{model}@{getattr(net.config, '_commit_hash', None) or 'unknown'}"
    types = getattr(net.config, "type_vocab_size", 0) and \
        "token_type_ids" in getattr(m.tokenizer, "model_input_names", ())
    identity = [content, "sequence-classification", bool(types)]
    cache = Path(cache_dir) if cache_dir else ox.default_cache()

    def export(path: Path) -> None:
        eager = copy.deepcopy(net)
        eager.set_attn_implementation("eager")  # plain ops, which the optimiser fuses
        ids = torch.tensor([[m.tokenizer.cls_token_id or 1] + [5] * 14 + [0]] * 2)
        mask = torch.ones_like(ids)
        mask[1, 8:] = 0
        ox.export_traced(_logits_of(eager.eval(), bool(types)), (ids, mask), path,
                         ["input_ids", "attention_mask"], "logits")

    def path() -> Path:
        return ox.cached_export(cache, identity, backend, export, net.config)

    onnx = path()
    session = ox.open_session(onnx, threads or 1, path)
    return LoadedModel(None, m.tokenizer, "cpu", m.dtype, m.max_length, m.kind, m.labels,
                       backend=backend, session=session, onnx_path=str(onnx))


def _logits_module() -> Any:
    import torch

    class Logits(torch.nn.Module):
        """The classifier as (input_ids, attention_mask) -> logits: what is exported."""

        def __init__(self, net: torch.nn.Module, types: bool) -> None:
            super().__init__()
            self.net, self.types = net, types

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Any:
            kw = {"token_type_ids": torch.zeros_like(input_ids)} if self.types else {}
            return self.net(input_ids=input_ids, attention_mask=attention_mask, **kw).logits

    return Logits


def _logits_of(net: Any, types: bool) -> Any:
    """The exportable module around ``net`` (its class is built lazily: torch imports late)."""
    return _logits_module()(net, types)


def _load(model: str, local: bool, key: str, dev: str, torch_dtype: Any) -> LoadedModel:
    import transformers
    from safetensors import SafetensorError
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    where = f"'{model}'"
    verbosity = transformers.logging.get_verbosity()
    bars = transformers.logging.is_progress_bar_enabled()
    transformers.logging.set_verbosity_error()  # the load report: we check it ourselves
    transformers.logging.disable_progress_bar()  # one bar per worker would garble progress
    try:
        tok = AutoTokenizer.from_pretrained(model, local_files_only=local)
        net, info = AutoModelForSequenceClassification.from_pretrained(
            model, local_files_only=local, output_loading_info=True, dtype=torch_dtype,
            use_safetensors=True)  # never a pickle: unpickling runs code
    except (OSError, ValueError, KeyError, SafetensorError) as e:
        hint = "" if local else " (a hub id: is it spelled right, and is the hub reachable?)"
        raise ConfigError(f"{key}: cannot load {where}{hint}: "
                          f"{str(e).splitlines()[0][:300]}") from None
    except RuntimeError as e:  # a head (or layer) whose shape is not the config's
        msg = " ".join(str(e).split())[:300]
        raise ConfigError(f"{key}: {where} has weights whose shapes do not match its "
                          f"config.json (a head of the wrong size?): {msg}") from None
    finally:
        transformers.logging.set_verbosity(verbosity)
        if bars:
            transformers.logging.enable_progress_bar()
    missing = sorted(info.get("missing_keys") or [])
    mismatched = sorted(str(m) for m in info.get("mismatched_keys") or [])
    if missing or mismatched:
        raise ConfigError(f"{key}: {where} lacks trained weights for "
                          f"{', '.join((missing + mismatched)[:4])}: they would be random")
    specials = len(set(tok.all_special_ids))
    if len(tok) <= specials:
        raise ConfigError(f"{key}: {where} has a tokenizer with no vocabulary (only its "
                          f"{specials} special tokens)")
    cfg = net.config
    n = int(cfg.num_labels)
    if n < 1:
        raise ConfigError(f"{key}: {where} has a head with {n} outputs")
    if n == 1:
        kind = "regression"
    elif getattr(cfg, "problem_type", None) == "multi_label_classification":
        kind = "multi_label"
    else:
        kind = "single_label"
    id2label = getattr(cfg, "id2label", None) or {}
    labels = [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(n)]
    limits = [x for x in (getattr(cfg, "max_position_embeddings", None),
                          getattr(tok, "model_max_length", None))
              if isinstance(x, int) and 0 < x < 1_000_000]
    max_length = min(limits) if limits else 512
    # RoBERTa-style position ids start after the padding index: two fewer usable positions
    if getattr(cfg, "model_type", "") in ("roberta", "xlm-roberta", "camembert") and \
            max_length == getattr(cfg, "max_position_embeddings", None):
        max_length -= 2
    net.eval()
    net.to(dev)
    return LoadedModel(net, tok, dev, torch_dtype, max_length, kind, labels)
