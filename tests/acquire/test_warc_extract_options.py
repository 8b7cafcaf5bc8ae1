"""The WARC sources take ``extract_html``'s extraction options (one ``ExtractOptions`` group):
each option reaches ``extract_text`` as given, and under another extractor than trafilatura
the options key nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import zstandard

from curator.acquire.cc_index import CcIndex
from curator.acquire.common_crawl import CommonCrawl
from curator.acquire.read_warc import ReadWarc
from curator.extract.extract_html import ExtractHtml, ExtractOptions, extract_text
from tests.acquire.helpers_acquire import read_output, run_pipeline, warc_response, write_warc

GOLD = Path(__file__).resolve().parents[2] / "bench" / "gold" / "pages.jsonl.zst"


def _gold() -> list[dict]:
    with open(GOLD, "rb") as f:
        return [json.loads(line) for line in
                io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(f), "utf-8")]


@pytest.fixture(scope="module")
def pages() -> list[dict]:
    """Two forum threads where resiliparse's text replaces trafilatura's (the fallback fires)
    and two articles where it does not."""
    rows = [r for r in _gold() if r["split"] == "tuning"]
    fired = [r for r in rows if r["type"] == "forum"
             and extract_text(r["html"]) != extract_text(r["html"], fallback_ratio=0.0)][:2]
    quiet = [r for r in rows if r["type"] == "article"
             and extract_text(r["html"]) == extract_text(r["html"], fallback_ratio=0.0)][:2]
    assert len(fired) == 2 and len(quiet) == 2
    return fired + quiet


@pytest.mark.parametrize("options", [
    {},
    {"fallback_ratio": 0.0},
    {"fast": False, "balance": "precision", "include_comments": True},
])
def test_read_warc_extracts_with_the_options_given(tmp_path, options, pages) -> None:
    path = write_warc(str(tmp_path / "in" / "crawl.warc.gz"),
                      [warc_response(r["url"], r["html"].encode("utf-8")) for r in pages])
    summary = run_pipeline(str(tmp_path / "w"),
                           [{"read_warc": {"paths": path, **options}, "id": "warc"}])
    got = {d.meta["url"]: d.text for d in read_output(summary, "warc")}
    assert got == {r["url"]: extract_text(r["html"], **options) for r in pages}
    if options == {"fallback_ratio": 0.0}:
        # the two threads lose resiliparse's text, the articles are as by default
        assert [got[r["url"]] != extract_text(r["html"]) for r in pages] == [
            True, True, False, False]


@pytest.mark.parametrize("stage", [ReadWarc, CommonCrawl, CcIndex, ExtractHtml])
def test_extraction_options_key_only_the_trafilatura_extractor(stage) -> None:
    base = {ReadWarc: {"paths": "x.warc.gz"}, CommonCrawl: {"snapshot": "CC-MAIN-2024-10"},
            CcIndex: {"index": "index.parquet"}, ExtractHtml: {}}[stage]

    def key(**kw: object) -> dict:
        return stage.from_params({**base, **kw}).key_params()

    assert set(ExtractOptions.model_fields) <= set(stage.Params.model_fields)
    # a changed option reruns a trafilatura stage and nothing under resiliparse
    assert key(fallback_ratio=0.0) != key()
    assert key(extractor="resiliparse", fallback_ratio=0.0, fast=False) == key(
        extractor="resiliparse")
