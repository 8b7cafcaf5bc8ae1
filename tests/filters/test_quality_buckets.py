"""Quality buckets (Nemotron-CC style), annotate-only presets and ``select`` on real text: the
bundled Wikipedia sample (106 real articles) and Common Crawl sample (real Python
documentation pages), acquired through the real source stages."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from curator.base.document import Document, meta_value
from curator.base.errors import ConfigError
from curator.filters.select import compile_expr
from curator.tokenize.blend import compute_blend, split_group
from tests.filters.helpers_filters import ROOT, run_pipeline, write_jsonl

SAMPLE = ROOT / "data" / "sample"
SOURCES = [
    {"wikipedia": {"language": "en", "dump_date": "latest",
                   "base_url": str(SAMPLE / "wikimedia")}, "id": "wiki"},
    {"common_crawl": {"snapshot": "CC-MAIN-2024-10", "base_url": str(SAMPLE / "commoncrawl"),
                      "files": "0-1", "extractor": "trafilatura"}, "id": "cc"},
]
MWL = "signals.gopher_quality:mean_word_length"
ALPHA = "signals.gopher_quality:alpha_words"


@functools.cache
def real_docs(tmp: str) -> list[Document]:
    """Wikipedia articles and Python doc pages, every Gopher signal in meta, nothing removed."""
    run = run_pipeline(Path(tmp), [*SOURCES, {"gopher_quality": {"mode": "annotate"},
                                              "inputs": ["wiki", "cc"], "id": "annot"}])
    return run.docs("annot")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[Document]]:
    tmp = tmp_path_factory.mktemp("real")
    docs = real_docs(str(tmp))
    recs = [{"id": d.id, "text": d.text, **d.meta} for d in docs]
    return write_jsonl(tmp / "annotated.jsonl", recs), docs


def test_annotate_mode_keeps_everything_and_records_failures(corpus) -> None:
    _, docs = corpus
    assert len(docs) >= 100
    sources = {d.meta["source"] for d in docs}
    assert {"wikipedia", "common_crawl"} <= sources
    for d in docs:
        assert len([k for k in d.meta["signals"] if k.startswith("gopher_quality:")]) == 8
    failing = [d for d in docs if d.meta["failed_rules"]]
    passing = [d for d in docs if not d.meta["failed_rules"]]
    assert failing and passing  # stub articles fail word_count, long articles pass
    d = failing[0]
    assert all(r.startswith("gopher_quality:") for r in d.meta["failed_rules"])


def test_quality_buckets_are_corpus_percentiles(corpus, tmp_path) -> None:
    """One score: buckets are its quintiles over the whole corpus (not per shard), so each
    holds about a fifth of the documents and bucket order follows score order."""
    data, docs = corpus
    run = run_pipeline(tmp_path, [
        {"read_jsonl": {"paths": str(data), "shard_size_mb": 0.3}},
        {"quality_buckets": {"scores": [MWL]}, "id": "qb"},
    ])
    out = run.docs("qb")
    assert len(out) == len(docs)
    assert len(run.runner.results["read_jsonl"]["shards"]) >= 3  # several shards, one ranking
    by = {b: sorted(meta_value(d.meta, MWL) for d in out if d.meta["quality_bucket"] == b)
          for b in range(5)}
    n = len(out)
    for b in range(5):
        assert 0.1 * n <= len(by[b]) <= 0.3 * n, {k: len(v) for k, v in by.items()}
    for b in range(4):
        assert by[b][-1] <= by[b + 1][0]  # every score of a bucket <= every score above it
    counters = run.stage("qb")["counters"]
    assert sum(counters[f"quality_bucket:{b}"] for b in range(5)) == n


def test_combined_scores_max_invert_and_select(corpus, tmp_path) -> None:
    """Two signals, one inverted (fewer alphabetic words is 'better' here only to exercise
    inversion), combined by max as Nemotron-CC's ensemble; then select keeps the top two
    buckets and the report says why the rest went."""
    data, _ = corpus
    run = run_pipeline(tmp_path, [
        {"read_jsonl": {"paths": str(data)}},
        {"quality_buckets": {"scores": [MWL, ALPHA], "invert": [ALPHA], "combine": "max"},
         "id": "qb"},
        {"select": {"expr": "meta.quality_bucket >= 3"}, "id": "top"},
    ])
    kept, gone = run.docs("top"), run.rejected("top")
    assert kept and gone
    assert all(d.meta["quality_bucket"] >= 3 for d in kept)
    assert all(r["meta"]["quality_bucket"] < 3 for r in gone)
    for d in kept:  # max of two 0..19 integers: bucket = combined // 4
        assert d.meta["quality_bucket"] == d.meta["quality_bucket_score"] // 4
    assert run.stage("top")["rejected"] == {"select:meta.quality_bucket >= 3": len(gone)}


def test_select_expressions() -> None:
    doc = Document("7", "hello", {"quality_bucket": 3, "language": "en",
                                  "signals": {"gopher_quality:word_count": 120},
                                  "failed_rules": ["fineweb_quality:list_ratio"]})
    true = ["meta.quality_bucket >= 3", "meta.language in ['en', 'de'] and length == 5",
            "meta.signals['gopher_quality:word_count'] > 100", "not meta.missing",
            "'fineweb_quality:list_ratio' in meta.failed_rules", "id == '7'",
            "2 < meta.quality_bucket <= 4", "meta.missing == None"]
    false = ["meta.quality_bucket > 3", "meta.missing >= 1", "meta.language < 3",
             "'gopher_quality:word_count' in meta.failed_rules"]
    for e in true:
        assert compile_expr(e)(doc) is True or compile_expr(e)(doc), e
    for e in false:
        assert not compile_expr(e)(doc), e
    # attribute syntax is only ever a key lookup in meta, never Python attribute access
    assert compile_expr("meta.language.__class__ == None")(doc) is True
    for bad in ["__import__('os').system('true')", "open('f')", "doc.text == 1",
                "[x for x in meta]", "meta.a + 1 > 2", "lambda: 1", "meta >= 1 if 1 else 2"]:
        with pytest.raises(ConfigError, match=r"select\.expr"):
            compile_expr(bad)
    with pytest.raises(ConfigError, match="not an expression"):
        compile_expr("meta.a >=")


def test_fuzzy_dedup_keeps_the_highest_bucket(corpus, tmp_path) -> None:
    """keep: score with score_field: quality_bucket: of real near-duplicate pages (the same
    Python doc page captured under /3/ and /3.11/), the copy in the better bucket stays."""
    docs = [d for d in corpus[1] if d.meta["source"] == "common_crawl"]
    by_path: dict[str, list[Document]] = {}
    for d in docs:
        by_path.setdefault(d.meta["url"].split("/")[-1], []).append(d)
    pairs = [v for v in by_path.values() if len(v) == 2]
    assert len(pairs) >= 3
    recs = []
    for i, (a, b) in enumerate(pairs):  # the later capture gets the better bucket
        recs.append({"id": a.id, "text": a.text, "quality_bucket": 1})
        recs.append({"id": b.id, "text": b.text, "quality_bucket": 4 if i % 2 else 0})
    data = write_jsonl(tmp_path / "pairs.jsonl", recs)
    run = run_pipeline(tmp_path / "d", [
        {"read_jsonl": {"paths": str(data)}},
        {"fuzzy_dedup": {"keep": "score", "score_field": "quality_bucket", "threshold": 0.7}},
    ])
    kept = {d.id for d in run.docs()}
    for i, (a, b) in enumerate(pairs):
        want = b.id if i % 2 else a.id
        assert want in kept and ({a.id, b.id} - {want}).isdisjoint(kept), (a.id, b.id)


def test_blend_weights_per_bucket() -> None:
    tokens = {"web@q0": 600, "web@q4": 200, "wiki": 200}
    prefixes = {g: [(f"/m/{g}", t)] for g, t in tokens.items()}
    assert split_group("web@q4") == ("web", "4") and split_group("wiki") == ("wiki", None)
    # natural mixture, bucket 4 seen 3x as often per token, bucket 0 left out
    dp, rows = compute_blend(tokens, prefixes, bucket_weights={"4": 3.0, "0": 0.0})
    r = {x["source"]: x for x in rows}
    assert r["web@q0"]["weight"] == 0 and r["web@q4"]["bucket"] == "4"
    assert r["web@q4"]["weight"] == pytest.approx(600 / 800)
    assert r["web@q4"]["epochs"] == pytest.approx(0.75 * 1000 / 200)
    assert "/m/web@q0" not in dp
    # source weights are kept: web 50%, split over its buckets by tokens x factor
    _, rows = compute_blend(tokens, prefixes, weights={"web": 1, "wiki": 1},
                            bucket_weights={"4": 3.0})
    r = {x["source"]: x for x in rows}
    assert r["wiki"]["weight"] == pytest.approx(0.5)
    assert r["web@q4"]["weight"] == pytest.approx(0.5 * 600 / 1200)
    assert r["web@q0"]["weight"] == pytest.approx(0.5 * 600 / 1200)
    with pytest.raises(ConfigError, match="unknown source"):
        compute_blend(tokens, prefixes, weights={"web@q0": 1})


def test_example_pipeline_validates() -> None:
    """The example pipeline's parameters are checked against the stages' schemas (running it
    acquires and trains: ~1 min, done by hand; see docs/filters.md)."""
    from tests.helpers import run_cli

    p = run_cli("validate", str(ROOT / "pipelines" / "quality-buckets.yaml"), cwd=ROOT)
    assert "quality_buckets" in p.stdout and "select" in p.stdout


def test_missing_scores_and_bad_expression_in_yaml(tmp_path) -> None:
    """Documents without any score (missing, null) go to level 0 and are counted, or are
    rejected with missing: drop; a score that is not a number ("high", true) is never level 0
    silently: the document is rejected with reason quality_buckets:invalid_score, key and
    value; a numeric string ("7.5") is a number. A select expression that is not
    allowed stops the run before it starts, with one line naming it."""
    from tests.helpers import run_cli

    recs = [{"id": str(i), "text": "t", "s": float(i)} for i in range(20)]
    recs += [{"id": "none", "text": "t"}, {"id": "str", "text": "t", "s": "high"},
             {"id": "bool", "text": "t", "s": True}, {"id": "numstr", "text": "t", "s": "19.5"},
             {"id": "nan", "text": "t", "s": None}]  # (JSON has no NaN)
    data = write_jsonl(tmp_path / "in.jsonl", recs)
    for missing, kept in (("lowest", 23), ("drop", 21)):
        run = run_pipeline(tmp_path / missing, [
            {"read_jsonl": {"paths": str(data)}},
            {"quality_buckets": {"scores": ["s"], "missing": missing}, "id": "qb"}])
        out = {d.id: d.meta for d in run.docs("qb")}
        assert len(out) == kept
        assert run.stage("qb")["counters"]["quality_buckets:no_score"] == 2
        assert run.stage("qb")["rejected"]["quality_buckets:invalid_score"] == 2
        assert "str" not in out and "bool" not in out
        assert out["numstr"]["quality_bucket"] == 4
        rejected = run.rejected("qb")
        bad = {r["id"]: r["rejected"] for r in rejected
               if r["rejected"]["reason"] == "quality_buckets:invalid_score"}
        assert bad["str"]["key"] == "s" and bad["str"]["value"] == "'high'"
        assert [out[str(i)]["quality_bucket"] for i in range(0, 20, 4)] == [0, 1, 2, 3, 4]
        if missing == "lowest":
            assert out["none"]["quality_bucket"] == out["nan"]["quality_bucket"] == 0
    (tmp_path / "p.yaml").write_text(
        f"name: x\nwork_dir: {tmp_path / 'w'}\nstages:\n"
        f"  - read_jsonl: {{paths: {data}}}\n"
        "  - select: {expr: \"__import__('os').getcwd() == 1\"}\n")
    p = run_cli("validate", str(tmp_path / "p.yaml"), cwd=tmp_path, check=False)
    assert p.returncode == 2 and "select.expr" in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.count("\n") <= 2
