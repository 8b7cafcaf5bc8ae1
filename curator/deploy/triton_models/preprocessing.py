"""Triton python backend: TEXT (bytes) -> INPUT_IDS (int64) with the pipeline's tokenizer.

A request may carry a batch of prompts (TEXT ``[B, 1]``): each row is tokenized, and the rows
of INPUT_IDS ``[B, L]`` are padded on the right with :data:`PAD` (-1, never a token id) to
the longest."""

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

#: right padding of the rows of a batch (the gpt and postprocessing models drop it)
PAD = -1


def pad_rows(rows):
    """``[B, max len]`` int64, each row padded on the right with :data:`PAD`."""
    out = np.full((len(rows), max((len(r) for r in rows), default=0)), PAD, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


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
            texts = pb_utils.get_input_tensor_by_name(req, "TEXT").as_numpy()
            texts = texts.reshape(texts.shape[0], -1)[:, 0]  # one prompt per row of the batch
            ids = [self.encode(t.decode("utf-8") if isinstance(t, bytes) else str(t))
                   for t in texts]
            out.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("INPUT_IDS", pad_rows(ids))]))
        return out
