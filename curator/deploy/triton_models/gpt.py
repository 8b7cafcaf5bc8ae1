"""Triton python backend: greedy generation with the exported GPT (ONNX, onnxruntime).

INPUT_IDS (int64) + MAX_NEW_TOKENS (int32) -> OUTPUT_IDS (int64, the new tokens only).
A request may carry a batch (INPUT_IDS ``[B, L]``, MAX_NEW_TOKENS ``[B, 1]``): each row is
one prompt, right-padded with -1 (the preprocessing model's padding), generated one after
the other; OUTPUT_IDS ``[B, N]`` rows are right-padded with -1 to the longest.
The ONNX graph takes a fixed [1, seq_length] window; causal attention makes right padding
invisible to the last real position, whose logits pick the next token.
"""

import json
import os
import sys

# Triton's python stub starts an isolated interpreter that ignores PYTHONPATH; `curator serve`
# names the Triton virtualenv's site-packages here so tokenizers/onnxruntime are found.
for _p in reversed(os.environ.get("CURATOR_TRITON_SITE", "").split(os.pathsep)):
    if _p and _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402


def greedy(run, ids, n_new, seq_length, eod_id=None):
    """``run(window[1, seq_length]) -> logits[1, seq_length, vocab]``; stops early at EOD."""
    ids = list(ids)
    new = []
    for _ in range(n_new):
        window = ids[-seq_length:]
        x = np.zeros((1, seq_length), dtype=np.int64)
        x[0, :len(window)] = window
        nxt = int(np.argmax(run(x)[0, len(window) - 1]))
        new.append(nxt)
        ids.append(nxt)
        if eod_id is not None and nxt == eod_id:
            break
    return new


class TritonPythonModel:
    def initialize(self, args):
        import onnxruntime as ort

        folder = os.path.join(args["model_repository"], args["model_version"])
        with open(os.path.join(folder, "generation.json")) as f:
            self.gen = json.load(f)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(self.gen.get("threads", 1))
        providers = ["CPUExecutionProvider"]
        # KIND_GPU instances use CUDA when the serving env has onnxruntime-gpu
        if (args.get("model_instance_kind") == "GPU"
                and "CUDAExecutionProvider" in ort.get_available_providers()):
            providers.insert(0, ("CUDAExecutionProvider",
                                 {"device_id": int(args.get("model_instance_device_id", 0))}))
        self.session = ort.InferenceSession(os.path.join(folder, "model.onnx"), opts,
                                            providers=providers)

    def run(self, x):
        return self.session.run(None, {"input_ids": x})[0]

    def execute(self, requests):
        out = []
        for req in requests:
            batch = pb_utils.get_input_tensor_by_name(req, "INPUT_IDS").as_numpy()
            batch = batch.reshape(batch.shape[0], -1) if batch.ndim > 1 else batch.reshape(1, -1)
            n_t = pb_utils.get_input_tensor_by_name(req, "MAX_NEW_TOKENS")
            ns = (n_t.as_numpy().reshape(-1).tolist() if n_t is not None
                  else [self.gen["max_new_tokens"]])
            rows = []
            for i, ids in enumerate(batch):
                ids = ids[ids >= 0]  # the batch's right padding
                if len(ids) == 0:
                    ids = np.array([self.gen["eod_id"]], dtype=np.int64)
                n = int(ns[i] if i < len(ns) else ns[0])
                rows.append(greedy(self.run, ids.tolist(), n, self.gen["seq_length"],
                                   self.gen["eod_id"] if self.gen.get("stop_at_eod") else None))
            arr = np.full((len(rows), max((len(r) for r in rows), default=0)), -1,
                          dtype=np.int64)
            for i, r in enumerate(rows):
                arr[i, :len(r)] = r
            out.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("OUTPUT_IDS", arr)]))
        return out
