"""Checkpoint -> Triton model repository.

Layout (``name`` defaults to ``curator_gpt``)::

    <repo>/preprocessing/1/model.py   tokenizer (python backend)    TEXT -> INPUT_IDS
    <repo>/gpt/1/model.onnx           the GPT (ONNX, dynamo export)
    <repo>/gpt/1/model.py             greedy generation over onnxruntime (python backend)
    <repo>/postprocessing/1/model.py  detokenizer (python backend)  OUTPUT_IDS -> TEXT_OUTPUT
    <repo>/<name>/config.pbtxt        the ensemble clients call: TEXT, MAX_NEW_TOKENS -> TEXT_OUTPUT

Greedy decoding loops over the model, which an ensemble cannot express, so the loop lives in the
``gpt`` python model; the ONNX file is exported once at a fixed ``[1, seq_length]`` window
(megatron-core's attention bakes its workspace shape into the trace, so the batch is fixed).
The python backend is the one backend that ``nvidia-pytriton``'s CPU server ships.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from curator.base.errors import ConfigError, InputError
from curator.storage.outputs import check_output_dir, mark_output_dir

OWNER = "export_triton"
#: A model name is one plain folder name of the repository and a quoted string in its
#: config.pbtxt: ``../x`` or ``/x`` would put the ensemble's folder outside the repository, a
#: quote or line break would write other config fields.
MODEL_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"

MODELS_PKG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "triton_models")


def load_gpt(checkpoint: str) -> tuple[Any, dict[str, Any], int]:
    """(eval-mode megatron-core GPTModel on CPU, model_config, iteration) from a checkpoint."""
    from curator.train.gpt import build_model, single_process_group
    from curator.train.trainer import load_model_state

    state, mc, it = load_model_state(checkpoint)
    with single_process_group():
        model = build_model(mc, device="cpu")
    model.load_state_dict(state)
    model.eval()
    return model, mc, it


class LogitsWindow:
    """Wraps ``GPTModel`` as ``input_ids[B, S] -> logits[B, S, V]`` with positions and the
    causal mask built inside, the signature the ONNX graph exposes."""

    @staticmethod
    def build(model: Any) -> Any:
        import torch

        class _W(torch.nn.Module):
            def __init__(self, m: Any) -> None:
                super().__init__()
                self.m = m

            def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
                b, s = input_ids.shape
                pos = torch.arange(s, dtype=torch.long).unsqueeze(0).expand(b, s)
                mask = torch.ones(s, s, dtype=torch.bool).triu(1).view(1, 1, s, s)
                return self.m(input_ids, pos, mask)

        return _W(model).eval()


def torch_greedy(model: Any, ids: list[int], n_new: int, seq_length: int,
                 eod_id: int | None = None) -> list[int]:
    """The in-process reference: greedy decoding with the torch model on the unpadded
    context (no fixed window), to check the served path against."""
    import torch

    from curator.train.gpt import single_process_group

    w = LogitsWindow.build(model)
    ids = list(ids)
    new: list[int] = []
    with torch.no_grad(), single_process_group():
        for _ in range(n_new):
            window = torch.tensor([ids[-seq_length:]], dtype=torch.long)
            nxt = int(w(window)[0, -1].argmax())
            new.append(nxt)
            ids.append(nxt)
            if eod_id is not None and nxt == eod_id:
                break
    return new


def export_onnx(model: Any, seq_length: int, path: str) -> str:
    """ONNX via ``torch.onnx.export(dynamo=True)``, checked against torch with onnxruntime
    before it is moved into place."""
    import onnxruntime as ort
    import torch

    from curator.train.gpt import single_process_group

    w = LogitsWindow.build(model)
    x = torch.randint(0, 100, (1, seq_length), generator=torch.Generator().manual_seed(0))
    # ``path`` lies in the not-yet-published repository folder; weights of a large model go to
    # ``model.onnx.data`` next to it, referenced by that name.
    with single_process_group():
        # eager first: Megatron's global memory buffer then holds real tensors; allocated first
        # while tracing (seen in a Dask worker that had trained before) it holds a FakeTensor
        # that the ONNX writer cannot save
        with torch.no_grad():
            ref = w(x).numpy()
        _zero_megatron_scratch()
        with _exporter_notices_off():
            torch.onnx.export(w, (x,), path, dynamo=True, input_names=["input_ids"],
                              output_names=["logits"], verbose=False)
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"input_ids": x.numpy()})[0]
    err = float(np.abs(got - ref).max())
    if err > 1e-3:
        raise InputError(f"{path}: ONNX export differs from torch by {err:.2e}")
    return path


@contextlib.contextmanager
def _exporter_notices_off() -> Iterator[None]:
    """torch's ONNX exporter logs "torchvision is not installed. Skipping torchvision::nms"
    (four lines: it registers torchvision's operators when it can, and a GPT has none) and its
    pytree code raises a ``FutureWarning`` about ``LeafSpec`` from inside torch: noise in every
    ``export_triton`` run that the user can do nothing about. Both are hidden for the export
    only, and not when the user set warning options (``python -W default``)."""
    if sys.warnoptions:
        yield
        return
    log = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is "
                                    r"deprecated", category=FutureWarning)
            yield
    finally:
        log.setLevel(level)


def _zero_megatron_scratch() -> None:
    """Zero Megatron's global scratch buffers before tracing. Attention passes one, never
    initialised (``torch.empty``), to ``baddbmm(beta=0)``; the exporter saves it as a constant,
    so without this the model file carried 64 KB of whatever memory held, different on every
    export (unused by the computation, but not reproducible and not ours to publish)."""
    from megatron.core import parallel_state

    for t in parallel_state.get_global_memory_buffer().buffer.values():
        t.zero_()


def _python_config(name: str, inputs: list[tuple], outputs: list[tuple], max_batch: int,
                   kind: str, instances: int, delay_us: int) -> str:
    ins = ",\n".join(f'  {{ name: "{n}" data_type: {t} dims: [ {d} ]'
                     + (" optional: true" if opt else "") + " }" for n, t, d, opt in inputs)
    outs = ",\n".join(f'  {{ name: "{n}" data_type: {t} dims: [ {d} ] }}' for n, t, d in outputs)
    return (f'name: "{name}"\nbackend: "python"\nmax_batch_size: {max_batch}\n'
            f"input [\n{ins}\n]\noutput [\n{outs}\n]\n"
            f"dynamic_batching {{ max_queue_delay_microseconds: {delay_us} }}\n"
            f"instance_group [ {{ count: {instances} kind: {kind} }} ]\n")


def _ensemble_config(name: str, max_batch: int) -> str:
    return f'''name: "{name}"
platform: "ensemble"
max_batch_size: {max_batch}
input [
  {{ name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] }},
  {{ name: "MAX_NEW_TOKENS" data_type: TYPE_INT32 dims: [ 1 ] }}
]
output [
  {{ name: "TEXT_OUTPUT" data_type: TYPE_STRING dims: [ 1 ] }},
  {{ name: "OUTPUT_IDS" data_type: TYPE_INT64 dims: [ -1 ] }}
]
ensemble_scheduling {{
  step [
    {{
      model_name: "preprocessing"
      model_version: -1
      input_map {{ key: "TEXT" value: "TEXT" }}
      output_map {{ key: "INPUT_IDS" value: "_input_ids" }}
    }},
    {{
      model_name: "gpt"
      model_version: -1
      input_map {{ key: "INPUT_IDS" value: "_input_ids" }}
      input_map {{ key: "MAX_NEW_TOKENS" value: "MAX_NEW_TOKENS" }}
      output_map {{ key: "OUTPUT_IDS" value: "OUTPUT_IDS" }}
    }},
    {{
      model_name: "postprocessing"
      model_version: -1
      input_map {{ key: "OUTPUT_IDS" value: "OUTPUT_IDS" }}
      output_map {{ key: "TEXT_OUTPUT" value: "TEXT_OUTPUT" }}
    }}
  ]
}}
'''


def export_repository(checkpoint: str, out_dir: str, *, tokenizer: dict[str, Any] | None = None,
                      name: str = "curator_gpt", max_new_tokens: int = 16,
                      max_batch_size: int = 8, instance_kind: str = "KIND_CPU",
                      instances: int = 1, max_queue_delay_us: int = 1000,
                      stop_at_eod: bool = False, work_dir: str | None = None
                      ) -> dict[str, Any]:
    """Write the repository to ``out_dir`` (replaced atomically); returns a summary.

    ``out_dir`` must be new, empty or an earlier export (it carries export_triton's marker):
    anything else (``.``, the work_dir, a folder with the user's files) is refused before any
    work, so replacing the repository never deletes what curator did not write."""
    if instance_kind not in ("KIND_CPU", "KIND_GPU"):
        raise ConfigError(f"export_triton: instance_kind must be KIND_CPU or KIND_GPU "
                          f"(got '{instance_kind}')")
    if not re.fullmatch(MODEL_NAME, name):
        raise ConfigError(f"export_triton: model name {name!r} must be 1-128 letters, digits, "
                          "'_', '.' or '-', not starting with '.' or '-' (it names a folder of "
                          "the repository)")
    if name in ("preprocessing", "gpt", "postprocessing"):
        raise ConfigError(f"export_triton: name '{name}' clashes with a member model")
    out_dir = check_output_dir(out_dir, OWNER, work_dir=work_dir, replaces=True)
    model, mc, it = load_gpt(checkpoint)
    tok = tokenizer or mc.get("tokenizer")
    if not tok or not os.path.exists(tok.get("path", "")):
        raise InputError(f"{checkpoint}: tokenizer file {tok and tok.get('path')!r} not found")
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(out_dir) + ".tmp-", dir=parent)
    try:
        # mkdtemp's 0700 would hide the repository from a server's user; it holds no secret
        os.chmod(tmp, 0o755)  # noqa: S103 - world-readable on purpose (see above)
        summary = _write_repository(tmp, model, mc, it, tok, name, max_new_tokens,
                                    max_batch_size, instance_kind, instances,
                                    max_queue_delay_us, stop_at_eod)
        mark_output_dir(tmp, OWNER)
        check_output_dir(out_dir, OWNER, work_dir=work_dir, replaces=True)  # still ours?
        old = None
        if os.path.lexists(out_dir):
            old = tempfile.mkdtemp(prefix=os.path.basename(out_dir) + ".old-", dir=parent)
            os.replace(out_dir, os.path.join(old, "repo"))
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # made above by this call
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)  # an earlier export (it carried the marker)
    return {"repository": out_dir, **summary}


def _write_repository(tmp: str, model: Any, mc: dict[str, Any], it: int, tok: dict[str, Any],
                      name: str, max_new_tokens: int, max_batch_size: int, instance_kind: str,
                      instances: int, max_queue_delay_us: int, stop_at_eod: bool
                      ) -> dict[str, Any]:
    seq = int(mc["seq_length"])

    tok_file = os.path.basename(tok["path"])
    spec = {"type": tok["type"], "file": tok_file, "eod_id": int(tok["eod_id"])}
    for m in ("preprocessing", "postprocessing"):
        d = os.path.join(tmp, m, "1")
        os.makedirs(d)
        shutil.copy(os.path.join(MODELS_PKG, f"{m}.py"), os.path.join(d, "model.py"))
        shutil.copy(tok["path"], os.path.join(d, tok_file))
        with open(os.path.join(d, "tokenizer_spec.json"), "w") as f:
            json.dump(spec, f)
    gdir = os.path.join(tmp, "gpt", "1")
    os.makedirs(gdir)
    shutil.copy(os.path.join(MODELS_PKG, "gpt.py"), os.path.join(gdir, "model.py"))
    export_onnx(model, seq, os.path.join(gdir, "model.onnx"))
    with open(os.path.join(gdir, "generation.json"), "w") as f:
        json.dump({"seq_length": seq, "eod_id": int(tok["eod_id"]),
                   "max_new_tokens": max_new_tokens, "stop_at_eod": stop_at_eod,
                   "vocab_size": mc["vocab_size"], "checkpoint_iteration": it}, f)

    cfgs = {
        "preprocessing": _python_config(
            "preprocessing", [("TEXT", "TYPE_STRING", "1", False)],
            [("INPUT_IDS", "TYPE_INT64", "-1")], max_batch_size, "KIND_CPU", instances,
            max_queue_delay_us),
        "gpt": _python_config(
            "gpt", [("INPUT_IDS", "TYPE_INT64", "-1", False),
                    ("MAX_NEW_TOKENS", "TYPE_INT32", "1", True)],
            [("OUTPUT_IDS", "TYPE_INT64", "-1")], max_batch_size, instance_kind, instances,
            max_queue_delay_us),
        "postprocessing": _python_config(
            "postprocessing", [("OUTPUT_IDS", "TYPE_INT64", "-1", False)],
            [("TEXT_OUTPUT", "TYPE_STRING", "1")], max_batch_size, "KIND_CPU", instances,
            max_queue_delay_us),
    }
    for m, text in cfgs.items():
        with open(os.path.join(tmp, m, "config.pbtxt"), "w") as f:
            f.write(text)
    os.makedirs(os.path.join(tmp, name, "1"))
    with open(os.path.join(tmp, name, "config.pbtxt"), "w") as f:
        f.write(_ensemble_config(name, max_batch_size))
    return {"ensemble": name, "models": ["preprocessing", "gpt", "postprocessing", name],
            "checkpoint_iteration": it, "seq_length": seq}
