"""ONNX exports of torch models, cached by content, shared by the sentence encoders
(``curator.models.fast_encoder``) and ``model_classifier`` (``curator.models.hf``).

An export is filed under a digest of what defines it (the model folder's bytes, the backend,
torch's and ONNX Runtime's versions, ``EXPORT_RECIPE``): new weights in the same folder give a
new file. It is written in a temporary folder beside its final name and renamed (atomic: a
reader sees no file or a whole one), with a ``.sha256`` file of its bytes beside it; a cached
file whose bytes do not match (a disk fault, a truncated copy, a planted file) is never run:
it is exported again.

``onnx``: the traced graph fused by ONNX Runtime's transformer optimiser (attention, LayerNorm,
GELU) where the model type is one it knows, fp32. ``onnx-int8``: the fused graph with its
MatMul weights quantised to int8 per channel (dynamic quantisation: activations quantised per
batch).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from curator.base.files import files_under

ONNX_BACKENDS = ("onnx", "onnx-int8")
#: Bump when the export recipe changes (cached exports are then redone).
EXPORT_RECIPE = 4  # 4: int8 weights in 7 bits (reduce_range)
#: A temporary export folder this old was left by a killed process (an export takes minutes).
STALE_EXPORT_S = 6 * 3600
#: Model types whose graphs ONNX Runtime's transformer optimiser fuses.
_FUSABLE = {"bert", "roberta", "distilbert", "xlm-roberta", "mpnet", "electra"}


def default_cache() -> Path:
    """``$CURATOR_CACHE/onnx``, else ``~/.cache/curator/onnx``."""
    root = os.environ.get("CURATOR_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "curator"
    return base / "onnx"


def folder_digest(folder: str | os.PathLike[str]) -> str:
    """sha256 over the names and contents of the files that define the model (not its dot
    files nor ONNX files that may have been written into it)."""
    folder = Path(folder)
    h = hashlib.sha256()
    for p in sorted(map(Path, files_under(folder))):  # through symlinked subfolders
        if not p.name.startswith(".") and p.suffix != ".onnx":
            h.update(str(p.relative_to(folder)).encode())
            with p.open("rb") as f:
                for chunk in iter(lambda f=f: f.read(1 << 20), b""):
                    h.update(chunk)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def export_key(identity: Sequence[Any], backend: str) -> str:
    """The file stem of an export: ``identity`` (content digest and what else changes the
    graph) plus the backend and the versions of the libraries that write it."""
    import onnxruntime as ort
    import torch

    parts = [*identity, backend, torch.__version__, ort.__version__, EXPORT_RECIPE]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:24]


def _valid(target: Path) -> bool:
    """Whether ``target`` is a whole export: its bytes match the digest written with it."""
    sidecar = target.with_name(target.name + ".sha256")
    try:
        want = sidecar.read_text().strip()
    except OSError:
        return False
    return target.is_file() and file_sha256(target) == want


def cached_export(cache_dir: str | os.PathLike[str], identity: Sequence[Any], backend: str,
                  export_fp32: Callable[[Path], None], config: Any) -> Path:
    """The path of the ``backend`` export of a model, exporting it now unless a valid one is
    cached. ``export_fp32(path)`` writes the plain traced graph; ``config`` (the transformers
    config) tells the optimiser the model type, heads and hidden size."""
    if backend not in ONNX_BACKENDS:
        raise ValueError(f"backend {backend!r}: expected one of {', '.join(ONNX_BACKENDS)}")
    cache = Path(cache_dir)
    target = cache / f"{export_key(identity, backend)}.{backend}.onnx"
    if _valid(target):
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".export-") as tmp:
        fp32 = Path(tmp) / "model.onnx"
        export_fp32(fp32)
        final = Path(tmp) / "fused.onnx"
        optimize(fp32, final, config)
        if backend == "onnx-int8":
            quantized = Path(tmp) / "int8.onnx"
            quantize_int8(final, quantized)
            final = quantized
        digest = Path(tmp) / "model.sha256"
        digest.write_text(file_sha256(final) + "\n")
        # the digest first: a reader that sees the new file with an old digest exports again
        os.replace(digest, target.with_name(target.name + ".sha256"))
        os.replace(final, target)  # atomic: a reader sees no file or a whole one
    return target


#: The names cached_export writes (export_key's 24 hex digits, the backend, the digest beside):
#: prune_others removes nothing else, even in a folder curator owns.
_BACKEND_ALT = "|".join(re.escape(b) for b in ONNX_BACKENDS)
_EXPORT_NAME = re.compile(r"^[0-9a-f]{24}\.(?:" + _BACKEND_ALT + r")\.onnx(?:\.sha256)?$")


def prune_others(cache_dir: str | os.PathLike[str], keep: Path) -> int:
    """Remove the exports in ``cache_dir`` other than ``keep`` (and their digests, and
    temporary export folders older than ``STALE_EXPORT_S``): for a
    folder one stage owns, where older weights' exports would otherwise pile up (a BERT-base
    export is ~0.4 GB). Returns how many files went. Never call it on a shared cache."""
    import time

    removed = 0
    for p in Path(cache_dir).iterdir():
        if p.is_file() and _EXPORT_NAME.match(p.name) and \
                p.name not in (keep.name, keep.name + ".sha256"):
            p.unlink(missing_ok=True)
            removed += 1
        elif p.is_dir() and p.name.startswith(".export-") and \
                time.time() - p.stat().st_mtime > STALE_EXPORT_S:
            shutil.rmtree(p, ignore_errors=True)  # left by a killed process
            removed += 1
    return removed


def export_traced(module: Any, inputs: tuple[Any, ...], path: Path,
                  input_names: list[str], output_name: str) -> None:
    """``torch.onnx.export`` with the TorchScript tracer, batch and sequence axes dynamic."""
    import torch

    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "seq"} for n in input_names}
    axes[output_name] = {0: "batch"}
    with warnings.catch_warnings():  # tracer chatter about shapes, one-off, not the user's
        warnings.simplefilter("ignore")
        torch.onnx.export(module, inputs, str(path), input_names=input_names,
                          output_names=[output_name], dynamic_axes=axes, opset_version=17,
                          dynamo=False)


def optimize(src: Path, dst: Path, config: Any) -> None:
    """Fuse attention, LayerNorm and GELU with ONNX Runtime's transformer optimiser where the
    model type is one it knows (BERT family); otherwise keep the graph as exported."""
    model_type = getattr(config, "model_type", "")
    if model_type not in _FUSABLE:
        shutil.copyfile(src, dst)
        return
    from onnxruntime.transformers.optimizer import optimize_model

    opt_type = model_type if model_type in ("bert", "distilbert") else "bert"
    optimized = optimize_model(str(src), model_type=opt_type,
                               num_heads=int(getattr(config, "num_attention_heads", 0)),
                               hidden_size=int(getattr(config, "hidden_size", 0)),
                               opt_level=1, use_gpu=False)
    optimized.save_model_to_file(str(dst))


def quantize_int8(src: Path, dst: Path) -> None:
    """Dynamic int8 quantisation of the MatMul weights, per output channel. Quantising the
    fused Attention too was faster but moved sentence vectors to cosine ~0.98: left fp32.

    ``reduce_range``: weights in 7 bits. On x86 CPUs with AVX2 but no VNNI, ONNX Runtime's
    u8 x s8 kernel (``vpmaddubsw``) saturates sums of two 8-bit products at int16, and the
    scores came out wrong without a word: on a 2-core AVX2 machine the fitted demo classifier
    drifted by 0.76 on its 0-5 scale on average and 64% of its integer scores moved (7 bits:
    0.0034 and none). all-MiniLM-L6-v2's minimum cosine to sentence-transformers over 201
    pages there is the same either way (0.9862 with 8 bits, 0.9864 with 7). Unsigned weights
    (u8 x u8) also avoid the saturation but drifted a random tiny classifier by 1.35 score std.
    The file is the same on every machine, and a cached export may run on another CPU than the
    one that wrote it, so the 7 bits are not chosen per machine."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"], reduce_range=True,
                     # the fused graph's contrib ops defeat shape inference: say fp32 outright
                     extra_options={"DefaultTensorType": 1})


def open_session(path: Path, threads: int, reexport: Callable[[], Path]) -> Any:
    """An ONNX Runtime CPU session on ``path`` (``threads`` intra-op threads that do not spin:
    idle workers spinning burn CPU the run's other processes need). A file ONNX Runtime cannot
    read is removed and ``reexport()`` called once."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = max(1, int(threads))
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), sess_options=opts,
                                    providers=["CPUExecutionProvider"])
    except Exception:  # any load failure of a cached file means: export it again
        path.unlink(missing_ok=True)
        return ort.InferenceSession(str(reexport()), sess_options=opts,
                                    providers=["CPUExecutionProvider"])
