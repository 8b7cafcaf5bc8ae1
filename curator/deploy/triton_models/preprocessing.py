"""Triton python backend: TEXT (bytes) -> INPUT_IDS (int64) with the pipeline's tokenizer."""

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


def load_tokenizer(folder: str, spec: dict):
    if spec["type"] == "huggingface":
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(os.path.join(folder, spec["file"]))
        return lambda text: tok.encode(text).ids, lambda ids: tok.decode(ids)
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=os.path.join(folder, spec["file"]))
    return lambda text: sp.encode(text), lambda ids: sp.decode(ids)


class TritonPythonModel:
    def initialize(self, args):
        folder = os.path.join(args["model_repository"], args["model_version"])
        with open(os.path.join(folder, "tokenizer_spec.json")) as f:
            self.encode, _ = load_tokenizer(folder, json.load(f))

    def execute(self, requests):
        out = []
        for req in requests:
            texts = pb_utils.get_input_tensor_by_name(req, "TEXT").as_numpy().reshape(-1)
            text = texts[0].decode("utf-8") if isinstance(texts[0], bytes) else str(texts[0])
            ids = np.asarray(self.encode(text), dtype=np.int64)
            out.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("INPUT_IDS", ids.reshape(1, -1))]))
        return out
