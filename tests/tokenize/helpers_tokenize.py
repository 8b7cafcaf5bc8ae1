"""Helpers for the tokenize tests: small corpora generated at run time, pipeline runs."""

from __future__ import annotations

import json
import random

WORDS = [
    "the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "data",
    "curation", "pipelines", "turn", "raw", "crawls", "into", "clean", "token", "shards", "for",
    "language", "model", "training", "at", "scale",
]
UNICODE = ["naïve café", "Grüße aus Köln", "日本語のテキスト。", "emoji 🙂 ok", "tab\tand\nnewline"]


def make_text(rng: random.Random, max_sentences: int = 6) -> str:
    n = rng.randint(0, max_sentences)
    sents = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 14))]
        if rng.random() < 0.15:
            words.append(rng.choice(UNICODE))
        sents.append(" ".join(words).capitalize() + rng.choice([".", "!", "?"]))
    return " ".join(sents)


def write_corpus(path: str, prefix: str, n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    recs = [{"id": f"{prefix}-{i}", "text": make_text(rng)} for i in range(n)]
    with open(path, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return recs




def run_pipeline(stages: list[dict], work_dir: str, executor: dict | None = None) -> dict:
    """Run a pipeline given as a list of stage entries; return the run summary."""
    import yaml

    from curator.core import pipeline as pl
    from curator.core.executors import make_executor
    from curator.core.runner import Runner

    doc = {"name": "t", "work_dir": str(work_dir), "progress": "off",
           "executor": executor or {"type": "local"}, "stages": stages}
    pipe = pl.loads(yaml.safe_dump(doc))
    with make_executor(pipe.config.executor) as ex:
        return Runner(pipe, ex).run()


def stage_artifacts(summary: dict, stage_id: str) -> dict:
    return next(s for s in summary["stages"] if s["id"] == stage_id)["artifacts"]
