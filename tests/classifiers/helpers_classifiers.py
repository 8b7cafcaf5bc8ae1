"""Corpus helpers of the classifier tests (``tests.classifiers.helpers_classifiers``)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

WORDS = ("the river school learns teacher history science energy cell water market price "
         "buy now free click here offer deal students lesson chapter theory proof data "
         "kitchen garden city season festival network mountain forest village").split()


def corpus(n: int = 200, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 120))) + "."
            for _ in range(n)]


def plain(folder: Path, texts: list[str], max_length: int | None = None) -> np.ndarray:
    """What the model cards do: one text at a time, no padding, truncation on."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
    rows = []
    with torch.no_grad():
        for t in texts:
            enc = tok(t, truncation=True, max_length=max_length, return_tensors="pt")
            rows.append(model(**enc).logits[0].float().numpy())
    return np.stack(rows)


def mixed_texts() -> list[str]:
    """Short, empty, long (past the token limit and past the prefix cut), a 1 MB page, a word
    run with no spaces, long whitespace runs: in an order that sorting by length changes."""
    base = corpus(40, seed=3)
    long = " ".join(base) * 3
    return ([base[0], "", long, base[1], "x" * 3000 + " tail", "word " * 200_000,
             "   \n\t " * 2000 + base[2], base[3] * 40, "a", long[:1100]] + base[4:30])
