"""Reading ``blend.json`` (written by the tokenize stages) and checking it before training.

The contract: ``{"data_prefix": [w1, "/abs/prefix1", w2, ...], "split": "949,50,1",
"tokenizer": {"type", "path", "vocab_size", "eod_id"}, "sources": [...]}`` where each prefix
names ``<prefix>.bin/.idx`` in megatron-core's mmap ``IndexedDataset`` format.

Megatron's dataset builder loops forever when a requested split of some prefix holds zero
documents (``949,50,1`` on a small corpus), so :func:`check_splits` refuses that up front.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from curator.base.errors import ConfigError, InputError
from curator.train.quiet import megatron_notices_off


@dataclass(frozen=True)
class Blend:
    """A parsed blend: prefixes with their weights, the split string and the tokenizer."""

    path: str
    prefixes: list[str]
    weights: list[float]
    split: str
    tokenizer: dict[str, Any]

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer["vocab_size"])

    @property
    def eod_id(self) -> int:
        return int(self.tokenizer["eod_id"])


def load_blend(path: str) -> Blend:
    """Parse and check ``blend.json``; one-line :class:`InputError` naming the bad key."""
    try:
        with open(path, "rb") as f:
            raw = json.loads(f.read())
    except OSError as e:
        raise InputError(f"{path}: cannot read blend: {e.strerror}") from None
    except ValueError as e:
        raise InputError(f"{path}: blend is not valid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: blend must be a JSON object")
    dp = raw.get("data_prefix")
    if not isinstance(dp, list) or not dp or len(dp) % 2:
        raise InputError(f"{path}: 'data_prefix' must be a non-empty list [weight, prefix, ...]")
    base = os.path.dirname(os.path.abspath(path))
    weights, prefixes = [], []
    for w, p in zip(dp[0::2], dp[1::2]):
        if not isinstance(w, int | float) or isinstance(w, bool) or w <= 0:
            raise InputError(f"{path}: data_prefix weight {w!r} must be a positive number")
        if not isinstance(p, str):
            raise InputError(f"{path}: data_prefix entry {p!r} must be a path prefix")
        p = p if os.path.isabs(p) else os.path.join(base, p)
        for ext in (".bin", ".idx"):
            if not os.path.exists(p + ext):
                raise InputError(f"{path}: data_prefix '{p}' has no {p + ext}")
        weights.append(float(w))
        prefixes.append(p)
    split = raw.get("split", "100,0,0")
    if not isinstance(split, str):
        raise InputError(f"{path}: 'split' must be a string like '949,50,1'")
    tok = raw.get("tokenizer")
    if not isinstance(tok, dict):
        raise InputError(f"{path}: 'tokenizer' must be an object with type, path, vocab_size, "
                         "eod_id")
    for key in ("type", "path", "vocab_size", "eod_id"):
        if key not in tok:
            raise InputError(f"{path}: tokenizer has no '{key}'")
    if tok["type"] not in ("huggingface", "sentencepiece"):
        raise InputError(f"{path}: tokenizer type '{tok['type']}' is not huggingface or "
                         "sentencepiece")
    tpath = tok["path"] if os.path.isabs(tok["path"]) else os.path.join(base, tok["path"])
    tok = {**tok, "path": tpath}
    if tok["type"] == "huggingface":
        _check_declared_eos(path, tok)
    return Blend(path=os.path.abspath(path), prefixes=prefixes, weights=weights, split=split,
                 tokenizer=tok)


def _check_declared_eos(path: str, tok: dict[str, Any]) -> None:
    """The EOS the tokenizer folder declares (what Megatron-LM's HuggingFaceTokenizer and
    AutoTokenizer read from it) must be the ``eod_id`` the shards were written with: training
    by one and reading data made by another would put a wrong token between documents."""
    from curator.tokenize.hf_folder import declared_eos

    tpath = tok["path"]
    if not os.path.isfile(tpath):
        return
    eos, where = declared_eos(os.path.dirname(tpath))
    if eos is None:
        return
    from tokenizers import Tokenizer

    try:
        eos_id = Tokenizer.from_file(tpath).token_to_id(eos)
    except Exception as e:  # the Rust error types are not importable
        raise InputError(f"{tpath}: not a tokenizers JSON file: {e}") from None
    if eos_id != int(tok["eod_id"]):
        raise InputError(f"{path}: tokenizer eod_id {tok['eod_id']} is not the eos_token "
                         f"'{eos}' (id {eos_id}) that {where} declares; write the shards and "
                         "blend.json again with this tokenizer, or fix its eos_token")


def split_bookends(split: str) -> list[tuple[float, float] | None]:
    """Megatron's own split matrix for ``split`` (``None`` = split not requested)."""
    megatron_notices_off()
    from megatron.core.datasets.blended_megatron_dataset_config import (
        convert_split_vector_to_split_matrix,
        parse_and_normalize_split,
    )

    try:
        vec = parse_and_normalize_split(split)
    except Exception as e:  # megatron asserts on a malformed string
        raise ConfigError(f"train: split '{split}' is not like '949,50,1': {e}") from None
    return convert_split_vector_to_split_matrix(vec)


def plan_splits(blend: Blend, need: tuple[bool, bool, bool]
                ) -> tuple[list[tuple[float, float] | None], list[int]]:
    """Megatron's split bookends with the splits this run does not ``need`` (train, valid,
    test) switched off, and the documents per split summed over prefixes.

    :class:`ConfigError` if a needed split is empty for some prefix. A split that is not
    needed is dropped rather than built, so ``949,50,1`` works on a small corpus.
    """
    megatron_notices_off()
    from megatron.core.datasets.indexed_dataset import _IndexReader

    names = ("train", "valid", "test")
    bookends = [be if need[i] else None for i, be in enumerate(split_bookends(blend.split))]
    totals = [0, 0, 0]
    for prefix in blend.prefixes:
        index = _IndexReader(prefix + ".idx", multimodal=False)
        n = len(index)
        del index
        for i, be in enumerate(bookends):
            if not need[i]:
                continue
            if be is None:
                raise ConfigError(
                    f"train: split '{blend.split}' gives the {names[i]} split no share, but "
                    f"the run needs one (set eval_interval: 0 to train without validation)")
            count = round(be[1] * n) - round(be[0] * n)
            if count <= 0:
                raise ConfigError(
                    f"train: split '{blend.split}' leaves the {names[i]} split of '{prefix}' "
                    f"empty ({n} sequences); use a split like '98,2,0' or more data")
            totals[i] += count
    return bookends, totals
