"""Builds a real tokenized corpus in megatron-core's format, the way the tokenize stages hand
it over (HF byte-level BPE, ``IndexedDatasetBuilder``, ``blend.json``). A uniquely named module
(not conftest) so other families' conftest files cannot shadow it."""

from __future__ import annotations

import json
import os
import random

WORDS = [
    "the", "cat", "dog", "bird", "sat", "on", "a", "mat", "ran", "far", "fast", "slow", "red",
    "blue", "green", "big", "small", "old", "new", "house", "tree", "river", "hill", "sun",
    "moon",
]


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    # a small grammar, so there is structure for a tiny model to learn
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(2, 4)):
            parts.append(f"the {rng.choice(WORDS[17:])} {rng.choice(WORDS[:17])}")
        out.append(" and ".join(parts) + ".")
    return out


def write_corpus(root: str, sources: dict[str, int], split: str = "90,10,0",
                 vocab_size: int = 320) -> str:
    """Train a tokenizer, tokenize one prefix per source and write ``blend.json``."""
    import numpy as np
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    os.makedirs(root, exist_ok=True)
    texts = {name: sentences(n, seed=i) for i, (name, n) in enumerate(sources.items())}
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        [s for v in texts.values() for s in v],
        trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok_path = os.path.join(root, "tokenizer.json")
    tok.save(tok_path)
    eod = tok.token_to_id("<|endoftext|>")
    data_prefix: list = []
    for name, docs in texts.items():
        prefix = os.path.join(root, f"{name}_text_document")
        b = IndexedDatasetBuilder(prefix + ".bin", dtype=np.uint16)
        for enc in tok.encode_batch(docs):
            ids = enc.ids + [eod]
            b.add_document(torch.tensor(ids), [len(ids)])
        b.finalize(prefix + ".idx")
        data_prefix += [float(len(docs)), prefix]
    tokenizer = {"type": "huggingface", "path": tok_path, "vocab_size": tok.get_vocab_size(),
                 "eod_id": eod}
    path = os.path.join(root, "blend.json")
    with open(path, "w") as f:
        json.dump({"data_prefix": data_prefix, "split": split, "tokenizer": tokenizer,
                   "sources": list(sources)}, f)
    return path
