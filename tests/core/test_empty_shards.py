"""Empty shards flow through every global stage, whatever made them empty.

A source yields an empty shard for an empty file; a shard stage yields one when it drops every
document of a shard; a global stage forwards one (``train_quality_classifier`` with ``output:
negatives`` passes on the shards without positive documents, an empty one included). The last
case once crashed the next stage that also read the source: "two inputs have a shard named
wiki-00000".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curator.filters.synthetic import documents
from tests.filters.helpers_filters import run_pipeline, write_jsonl

# Every global stage that reads documents, with parameters enough to run on a small corpus.
# (``train`` and ``export_triton`` read a blend and a checkpoint, not document shards.)
GLOBAL: dict[str, dict[str, Any]] = {
    "exact_dedup": {},
    "bloom_dedup": {"level": "paragraph"},
    "fuzzy_dedup": {},
    "line_dedup": {},
    "sentence_span_dedup": {},
    # no model: the packaged all-MiniLM-L6-v2; 32 tokens a document: the empty shard is what is
    # tested, and the full 256 would cost most of this file's time
    "semantic_dedup": {"prefilter": "none", "max_seq_length": 32},
    "decontaminate": {"tasks": {"qa": "EVAL"}},
    "quality_buckets": {},
    "train_quality_classifier": {"positive_sources": ["wiki"]},
    "train_tokenizer": {"type": "bpe", "vocab_size": 300},
    "megatron_shards": {},
    "blend": {},
}
UPSTREAM = ["source", "shard_stage", "global_stage"]


def _corpus(tmp: Path) -> None:
    wiki = [{"id": f"w{i}", "text": r["text"], "quality_score": (i % 10) / 10}
            for i, r in enumerate(documents(80, seed=1, prose_share=1.0))]
    crawl = [{**r, "quality_score": (i % 7) / 7}
             for i, r in enumerate(documents(80, seed=2, prose_share=0.3))]
    write_jsonl(tmp / "wiki" / "a.jsonl", [])  # the empty shard: wiki-00000
    write_jsonl(tmp / "wiki" / "b.jsonl", wiki)
    write_jsonl(tmp / "crawl.jsonl", crawl)
    write_jsonl(tmp / "eval.jsonl", [{"text": "an evaluation question that no crawl page holds "
                                              "word for word in this small corpus at all"}])


def _stages(tmp: Path, stage: str, upstream: str) -> list[dict[str, Any]]:
    stages: list[dict[str, Any]] = [
        {"id": "wiki", "read_jsonl": {"paths": str(tmp / "wiki" / "*.jsonl")}},
        {"id": "crawl", "read_jsonl": {"paths": str(tmp / "crawl.jsonl")}},
    ]
    if upstream == "source":
        inputs = ["wiki", "crawl"]
    elif upstream == "shard_stage":  # drops every document of the extra shard
        stages.append({"id": "extra", "read_jsonl": {"paths": str(tmp / "crawl.jsonl")}})
        stages.append({"id": "flt", "inputs": ["extra"],
                       "word_count_filter": {"min_words": 1_000_000}})
        inputs = ["wiki", "crawl", "flt"]
    else:  # forwards the empty wiki-00000 and the crawl; the source is read as well
        stages.append({"id": "cls", "inputs": ["wiki", "crawl"],
                       "train_quality_classifier": {"positive_sources": ["wiki"]}})
        inputs = ["cls", "wiki"]
    params = json.loads(json.dumps(GLOBAL[stage]).replace('"EVAL"',
                                                          json.dumps(str(tmp / "eval.jsonl"))))
    if stage in ("megatron_shards", "blend"):
        stages.append({"id": "tok", "inputs": inputs,
                       "train_tokenizer": {"type": "bpe", "vocab_size": 300}})
        stages.append({"id": "megatron_shards", "inputs": ["tok"], "megatron_shards": {}})
        if stage == "blend":
            stages.append({"id": "blend", "inputs": ["megatron_shards"], "blend": {}})
    else:
        stages.append({"id": stage, "inputs": inputs, stage: params})
    return stages


@pytest.mark.parametrize("upstream", UPSTREAM)
@pytest.mark.parametrize("stage", list(GLOBAL))
def test_global_stage_takes_an_empty_shard(tmp_path: Path, stage: str, upstream: str) -> None:
    _corpus(tmp_path)
    run = run_pipeline(tmp_path, _stages(tmp_path, stage, upstream))
    results = run.runner.results
    names = [s["name"] for s in results[stage]["shards"]]
    assert len(names) == len(set(names))
    # the empty shard reached the stage and came out as a shard of its own, with no documents
    empty = [s for s in results[stage]["shards"]
             if s["name"].endswith(("wiki-00000", "extra-00000"))]
    assert empty and all(s["docs"] == 0 for s in empty)
    docs_in = sum(s["docs"] for i in ([stage] if stage not in ("megatron_shards", "blend")
                                      else ["tok"]) for s in results[i]["shards"])
    assert docs_in > 0
    # a rerun reuses everything: the renamed shards have stable names and keys
    again = run_pipeline(tmp_path, _stages(tmp_path, stage, upstream))
    assert all(s.get("skipped") for s in again.summary["stages"] if s["kind"] == "global")


def test_obsolete_shards_of_a_stage_that_never_ran_is_nothing_to_drop(tmp_path: Path) -> None:
    """A source that lists no shard on a fresh work_dir has no _done folder yet."""
    from curator.core.stage_state import remove_obsolete

    remove_obsolete(str(tmp_path), "src", set())
    assert not any(tmp_path.iterdir())
