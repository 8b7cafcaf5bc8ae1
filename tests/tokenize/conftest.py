"""Fixtures for the tokenize tests: small corpora generated at run time."""

from __future__ import annotations

import os

import pytest

from tests.tokenize.helpers_tokenize import write_corpus


@pytest.fixture
def corpus(tmp_path):
    """Two sources (web, wiki) as JSONL files, with some empty documents."""
    out = {}
    for i, name in enumerate(("web", "wiki")):
        p = os.path.join(tmp_path, f"{name}.jsonl")
        out[name] = (p, write_corpus(p, name, 160 + 40 * i, seed=i))
    return out
