"""Corpus helpers of the classifier tests (importable as ``helpers_classifiers``)."""

from __future__ import annotations

import random

WORDS = ("the river school learns teacher history science energy cell water market price "
         "buy now free click here offer deal students lesson chapter theory proof data "
         "kitchen garden city season festival network mountain forest village").split()


def corpus(n: int = 200, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 120))) + "."
            for _ in range(n)]
