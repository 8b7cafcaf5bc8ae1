"""Build the tiny demo model bundled in data/models/ (no download, ~40 s on one CPU core):

    python scripts/make_tiny_models.py [data/models/tiny-edu-classifier]

``tiny-edu-classifier``: a 2-layer BERT (hidden 32, 1,000-word WordPiece vocabulary trained
here, 128 tokens) with a regression head fitted for 300 Adam steps to score the seeded
synthetic documents of ``curator.filters.synthetic`` (seed 2024, not the bundled sample's
seed 0): prose 4, code and tables 2, menus, spam, lists and the rest 1: a stand-in for
FineWeb-Edu's 0-5 educational score that ``pipelines/fineweb-edu.yaml`` runs with
``preset: fineweb-edu``. It is a demo, not a quality model."""

from __future__ import annotations

import sys

from curator.filters.synthetic import documents
from curator.models.tiny import build_classifier

SCORES = {"prose": 4.0, "code": 2.0, "table": 2.0}


def main(out: str = "data/models/tiny-edu-classifier") -> None:
    import torch

    torch.set_num_threads(1)  # the same floats on any machine with this torch build
    docs = documents(600, seed=2024, prose_share=0.5)
    build_classifier(out, [d["text"] for d in docs], hidden=32, layers=2, heads=2,
                     max_length=128, vocab_size=1000, seed=0, init_range=0.02,
                     targets=[SCORES.get(d["kind"], 1.0) for d in docs], steps=300)
    print(out)


if __name__ == "__main__":
    main(*sys.argv[1:2])
