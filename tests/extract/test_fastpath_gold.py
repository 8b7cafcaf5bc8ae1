"""The fast path gives the text trafilatura gave when curator patched it at run time: the
digest of ``extract_text``'s output on every gold page (bench/gold) with the defaults, and on
every twelfth page with five other option sets, equals the one recorded with that code
(commit 8a7cc47, tests/extract/data/fastpath_gold.json: SHA-256, first 12 hex digits). One
default digest changed since, on purpose: ``readability/youth``, a Chinese article the rules
no longer swap for resiliparse's text now that they count a word per CJK character (F1 0.942
-> 1.0, docs/extract.md#word-counts-in-every-script)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from bench.gold_set import load_gold
from curator.extract.extract_html import extract_text

RECORD = json.loads((Path(__file__).parent / "data" / "fastpath_gold.json").read_text())


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@pytest.fixture(scope="module")
def gold() -> dict[str, Any]:
    return {p.id: p for p in load_gold("all")}


def test_default_text_unchanged_on_every_gold_page(gold: dict[str, Any]) -> None:
    assert set(RECORD["default"]) == set(gold)  # the record covers the whole set
    changed = [pid for pid, digest in RECORD["default"].items()
               if _digest(extract_text(gold[pid].html)) != digest]
    assert changed == []


@pytest.mark.parametrize("config", ["fast", "full", "default_comments", "precision", "plain"])
def test_other_options_unchanged(gold: dict[str, Any], config: str) -> None:
    options = RECORD["configs"][config]
    pages = {pid: d[config] for pid, d in RECORD["others"].items()}
    assert len(pages) > 50
    changed = [pid for pid, digest in pages.items()
               if _digest(extract_text(gold[pid].html, **options)) != digest]
    assert changed == []
