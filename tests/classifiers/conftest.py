"""Tiny Hugging Face models built in the test session (no downloads): a WordPiece tokenizer
built here from the texts' words (the same in every pytest worker) and randomly initialised
BERT classifiers saved with ``save_pretrained``."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.models.tiny import build_classifier, train_wordpiece
from tests.classifiers.helpers_classifiers import corpus


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture(scope="session")
def texts() -> list[str]:
    return corpus()


@pytest.fixture(scope="session")
def tokenizer(texts):
    return train_wordpiece(texts, vocab_size=200, max_length=64)


@pytest.fixture(scope="session")
def regression_model(tmp_path_factory, texts, tokenizer) -> Path:
    out = tmp_path_factory.mktemp("models") / "regression"
    build_classifier(str(out), texts, tokenizer=tokenizer, max_length=64, seed=1)
    return out


@pytest.fixture(scope="session")
def multiclass_model(tmp_path_factory, texts, tokenizer) -> Path:
    out = tmp_path_factory.mktemp("models") / "multiclass"
    build_classifier(str(out), texts, tokenizer=tokenizer, labels=["low", "mid", "high"],
                     max_length=64, seed=2)
    return out
