"""The first pass's default cuts on real paragraphs: recall of the full model's pairs.

Fixture (tests/dedup/data/semantic_paragraphs, built by bench/semantic_fixture.py): the 667
paragraphs of Python's documentation that are in one of the 491 pairs at cosine >= 0.9 of the
packaged all-MiniLM-L6-v2 among 10,000 (bench/semantic_default.py's python-docs corpus), with
their vectors from the static model distilled from it (distilling takes ~90 CPU-s, so they are
stored; the full model is run here on some pairs to tie the fixture to it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import zstandard

from curator.dedup.semantic_dedup import SemanticDedup
from curator.models.candidates import first_pass_for, first_pass_mask, word_sets
from tests.dedup.helpers_semantic import MINILM

DATA = Path(__file__).parent / "data" / "semantic_paragraphs"


def _fixture() -> tuple[list[str], np.ndarray, np.ndarray]:
    raw = (
        zstandard.ZstdDecompressor()
        .stream_reader((DATA / "docs.jsonl.zst").read_bytes(), read_across_frames=True)
        .read()
    )
    texts = [json.loads(ln)["text"] for ln in raw.splitlines()]
    return texts, np.load(DATA / "static.npy").astype(np.float32), np.load(DATA / "pairs.npy")


def _recall(
    cuts: str, texts: list[str], static: np.ndarray, pairs: np.ndarray
) -> tuple[float, float]:
    """Share of the pairs with both documents sent to the full model, and of the documents."""
    cut = first_pass_for(0.9, cuts)
    mark = first_pass_mask(
        static,
        cut.static,
        weight=cut.weight,
        jaccard=cut.jaccard,
        words=word_sets(texts, cut.ngram),
        alone=cut.alone,
    )
    return float((mark[pairs[:, 0]] & mark[pairs[:, 1]]).mean()), float(mark.mean())


def test_default_first_pass_keeps_098_of_the_full_models_pairs_on_paragraphs() -> None:
    """Paragraphs share fewer words than short texts at the same meaning: the ``fast`` cuts
    (word weight 0.2, score 0.82; the default before) lose 9% of these pairs, the default
    ``recall`` cuts under 2%."""
    texts, static, pairs = _fixture()
    assert len(pairs) == 491
    assert SemanticDedup.Params().prefilter_cuts == "recall"
    recall, kept = _recall("recall", texts, static, pairs)
    fast, fast_kept = _recall("fast", texts, static, pairs)
    assert recall >= 0.98, recall
    assert fast < 0.93 and fast_kept < kept, (fast, fast_kept, kept)


def test_fixture_pairs_are_the_packaged_models() -> None:
    """The stored pairs are the packaged full model's (some re-encoded here): a new model
    version makes this fail, and the fixture is rebuilt with bench/semantic_fixture.py."""
    from curator.models.embed import load_encoder

    texts, _static, pairs = _fixture()
    pick = pairs[np.random.default_rng(0).choice(len(pairs), 8, replace=False)]
    enc = load_encoder(MINILM, batch_size=16)
    a = enc.encode([texts[i] for i in pick[:, 0]])
    b = enc.encode([texts[j] for j in pick[:, 1]])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert (cos >= 0.9 - 2e-3).all(), cos
