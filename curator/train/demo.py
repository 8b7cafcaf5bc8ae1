"""A demo blend for trying ``train`` without the tokenize stages:
``python -m curator.train.demo work/train-demo`` writes ``docs.jsonl`` (generated sentences),
``tokenizer.json`` (byte-level BPE), ``<source>_text_document.bin/.idx`` (megatron-core's
``IndexedDatasetBuilder``) and ``blend.json`` in the artifact contract's format."""

from __future__ import annotations

import json
import os
import random
import sys

_NOUNS = ["cat", "dog", "bird", "house", "tree", "river", "hill", "sun", "moon", "boat"]
_VERBS = ["sat on", "ran to", "looked at", "flew over", "slept near", "jumped on"]
_ADJS = ["red", "blue", "green", "big", "small", "old", "new", "quiet"]


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)  # noqa: S311 - seeded demo text, not a secret
    return [
        " and ".join(f"the {rng.choice(_ADJS)} {rng.choice(_NOUNS)} {rng.choice(_VERBS)} the "
                     f"{rng.choice(_NOUNS)}" for _ in range(rng.randint(1, 3))) + "."
        for _ in range(n)
    ]


def write_demo_blend(root: str, sources: dict[str, int] | None = None,
                     split: str = "98,2,0", vocab_size: int = 512) -> str:
    """Write the demo corpus under ``root``; returns the path of ``blend.json``."""
    import numpy as np
    import torch

    from curator.train.quiet import megatron_notices_off

    megatron_notices_off()
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from curator.tokenize.hf_folder import special_token_roles, write_hf_config

    sources = sources or {"web": 2000, "books": 1000}
    root = os.path.abspath(root)
    os.makedirs(root, exist_ok=True)
    texts = {name: sentences(n, seed=i) for i, (name, n) in enumerate(sources.items())}
    with open(os.path.join(root, "docs.jsonl"), "w") as f:
        for name, docs in texts.items():
            for i, t in enumerate(docs):
                f.write(json.dumps({"id": f"{name}-{i}", "text": t, "source": name}) + "\n")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        [t for docs in texts.values() for t in docs],
        trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok_path = os.path.join(root, "tokenizer.json")
    tok.save(tok_path)
    # a complete Hugging Face folder, as train_tokenizer writes: Megatron-LM's
    # HuggingFaceTokenizer and curator train read its EOS from tokenizer_config.json
    write_hf_config(root, special_token_roles(["<|endoftext|>"], "<|endoftext|>"))
    eod = tok.token_to_id("<|endoftext|>")
    data_prefix: list[float | str] = []
    for name, docs in texts.items():
        prefix = os.path.join(root, f"{name}_text_document")
        builder = IndexedDatasetBuilder(prefix + ".bin", dtype=np.uint16)
        for enc in tok.encode_batch(docs):
            ids = [*enc.ids, eod]
            builder.add_document(torch.tensor(ids), [len(ids)])
        builder.finalize(prefix + ".idx")
        data_prefix += [float(len(docs)), prefix]
    blend = {"data_prefix": data_prefix, "split": split, "sources": list(sources),
             "tokenizer": {"type": "huggingface", "path": tok_path,
                           "vocab_size": tok.get_vocab_size(), "eod_id": eod}}
    path = os.path.join(root, "blend.json")
    with open(path, "w") as f:
        json.dump(blend, f, indent=1)
    return path


if __name__ == "__main__":
    print(write_demo_blend(sys.argv[1] if len(sys.argv) > 1 else "work/train-demo"))
