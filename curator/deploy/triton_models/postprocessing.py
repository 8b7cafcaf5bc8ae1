"""Triton python backend: OUTPUT_IDS (int64) -> TEXT_OUTPUT (bytes) with the tokenizer; a
batch ``[B, N]`` gives ``[B, 1]`` texts, each row's -1 padding left out."""

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


class TritonPythonModel:
    def initialize(self, args):
        folder = os.path.join(args["model_repository"], args["model_version"])
        with open(os.path.join(folder, "tokenizer_spec.json")) as f:
            spec = json.load(f)
        if spec["type"] == "huggingface":
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(os.path.join(folder, spec["file"]))
            self.decode = lambda ids: tok.decode(ids)
        else:
            import sentencepiece as spm

            sp = spm.SentencePieceProcessor(model_file=os.path.join(folder, spec["file"]))
            self.decode = lambda ids: sp.decode(ids)

    def execute(self, requests):
        out = []
        for req in requests:
            batch = pb_utils.get_input_tensor_by_name(req, "OUTPUT_IDS").as_numpy()
            batch = batch.reshape(batch.shape[0], -1) if batch.ndim > 1 else batch.reshape(1, -1)
            texts = [self.decode([int(i) for i in row if i >= 0]).encode("utf-8")
                     for row in batch]
            arr = np.array(texts, dtype=np.object_).reshape(-1, 1)
            out.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("TEXT_OUTPUT", arr)]))
        return out
