"""exact_dedup and fuzzy_dedup end to end through the pipeline, checked against brute force."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from curator.base.errors import ConfigError
from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner
from curator.dedup.minhash import normalize
from tests.dedup.helpers_dedup import make_corpus, output_ids, rejected, write_pipeline
from tests.helpers import run_cli

FUZZY = "{shingle: word, ngram: 5, threshold: 0.7, num_perm: 128"


def run_local(path: Path) -> dict:
    pipe = pl.load(str(path))
    return Runner(pipe, LocalExecutor()).run()


def word_shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    w = normalize(text).split()
    return {tuple(w[i:i + n]) for i in range(max(1, len(w) - n + 1))}


def brute_force_clusters(docs: list[dict], t: float) -> dict[str, int]:
    """Components of the graph 'Jaccard >= t' by exhaustive comparison of candidate pairs
    (pairs sharing at least one shingle; all others have Jaccard 0)."""
    sets = [word_shingles(d["text"]) for d in docs]
    by_shingle: dict[tuple, list[int]] = {}
    for i, s in enumerate(sets):
        for sh in s:
            by_shingle.setdefault(sh, []).append(i)
    pairs = {(a, b) for ids in by_shingle.values() for a, b in itertools.combinations(ids, 2)}
    parent = list(range(len(docs)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        j = len(sets[a] & sets[b]) / len(sets[a] | sets[b])
        if j >= t:
            parent[find(a)] = find(b)
    return {d["id"]: find(i) for i, d in enumerate(docs)}


def cluster_pairs(labels: dict[str, object]) -> set[frozenset]:
    groups: dict[object, list[str]] = {}
    for doc_id, lab in labels.items():
        groups.setdefault(lab, []).append(doc_id)
    return {frozenset(p) for g in groups.values() for p in itertools.combinations(g, 2)}


def predicted_labels(docs: list[dict], rej: dict[str, dict]) -> dict[str, str]:
    return {d["id"]: rej[d["id"]]["duplicate_of"] if d["id"] in rej else d["id"] for d in docs}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[dict]]:
    d = tmp_path_factory.mktemp("corpus")
    return d, make_corpus(d, n_base=240)


def test_exact_dedup_keeps_first_copy_and_records_it(tmp_path, corpus):
    cdir, docs = corpus
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{cdir}/part*.jsonl",
                       "  - exact_dedup: {partitions: 3}\n")
    run_local(y)
    first: dict[str, str] = {}
    want = {}
    for d in docs:  # file order = the stage's input order
        key = normalize(d["text"])
        if key in first:
            want[d["id"]] = first[key]
        else:
            first[key] = d["id"]
    got = {k: v["duplicate_of"] for k, v in rejected(tmp_path / "w", "exact_dedup").items()}
    assert want and got == want
    assert all(v["reason"] == "exact_duplicate"
               for v in rejected(tmp_path / "w", "exact_dedup").values())
    assert sorted(output_ids(tmp_path / "w", "exact_dedup")) == sorted(
        d["id"] for d in docs if d["id"] not in want)


@pytest.mark.parametrize("verify,sims", [
    # without verification, pairs close to the threshold are found with the S-curve's
    # probability, so planted similarities stay clear of 0.7 ...
    (False, (0.95, 0.9, 0.85, 0.5, 0.3)),
    # ... with exact verification (and recall-leaning banding) they may come closer
    (True, (0.95, 0.85, 0.78, 0.6, 0.5, 0.4)),
])
def test_fuzzy_precision_recall_vs_brute_force(tmp_path, verify, sims):
    cdir = tmp_path / "corpus"
    docs = make_corpus(cdir, n_base=240, sims=sims, seed=7)
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{cdir}/part*.jsonl",
                       f"  - fuzzy_dedup: {FUZZY}, verify: {str(verify).lower()}}}\n")
    summary = run_local(y)
    truth = cluster_pairs(brute_force_clusters(docs, 0.7))
    pred = cluster_pairs(predicted_labels(docs, rejected(tmp_path / "w", "fuzzy_dedup")))
    tp = len(truth & pred)
    precision, recall = tp / len(pred), tp / len(truth)
    assert len(truth) > 100
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)
    stats = summary["stages"][-1]
    assert stats["counters"]["duplicates"] == stats["docs_in"] - stats["docs_out"]


@pytest.mark.parametrize("keep", ["longest", "score"])
def test_fuzzy_keep_rules(tmp_path, corpus, keep):
    cdir, docs = corpus
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{cdir}/part*.jsonl",
                       f"  - fuzzy_dedup: {FUZZY}, keep: {keep}}}\n")
    run_local(y)
    rej = rejected(tmp_path / "w", "fuzzy_dedup")
    by_id = {d["id"]: d for d in docs}
    clusters: dict[str, list[str]] = {}
    for doc_id, r in rej.items():
        clusters.setdefault(r["duplicate_of"], []).append(doc_id)
    assert len(clusters) > 20
    for kept, members in clusters.items():
        assert kept not in rej
        for m in members:
            if keep == "longest":
                assert len(by_id[kept]["text"]) >= len(by_id[m]["text"])
            else:
                assert by_id[kept]["quality_score"] >= by_id[m]["quality_score"]


def test_cross_corpus_against_saved_index(tmp_path, corpus):
    cdir, docs = corpus
    y1 = write_pipeline(tmp_path / "a.yaml", tmp_path / "wa", f"{cdir}/part*.jsonl",
                        f"  - fuzzy_dedup: {FUZZY}, save_index: {tmp_path}/index}}\n")
    run_local(y1)
    kept_a = set(output_ids(tmp_path / "wa", "fuzzy_dedup"))
    # a new corpus: near copies of some old documents plus fresh ones
    newdir = tmp_path / "new"
    fresh = make_corpus(newdir / "fresh", n_base=40, sims=(), seed=99, shards=1, id_prefix="n")
    old = [d for d in docs if d["id"] in kept_a][:30]
    with open(newdir / "fresh" / "part1.jsonl", "w") as f:
        for i, d in enumerate(old):
            words = d["text"].split()
            words[len(words) // 2] = "changed"
            f.write(json.dumps({"id": f"re{i}", "text": " ".join(words)}) + "\n")
    y2 = write_pipeline(tmp_path / "b.yaml", tmp_path / "wb", f"{newdir}/fresh/part*.jsonl",
                        f"  - fuzzy_dedup: {FUZZY}, against: ['{tmp_path}/index']}}\n")
    run_local(y2)
    rej = rejected(tmp_path / "wb", "fuzzy_dedup")
    copies = [d["id"][:-5] for d in fresh if d["id"].endswith("-copy")]
    assert {k for k in rej if k.startswith("re")} == {f"re{i}" for i in range(len(old))}
    assert all(rej[f"re{i}"]["duplicate_of"] == old[i]["id"] for i in range(len(old)))
    fresh_removed = set(rej) - {f"re{i}" for i in range(len(old))}
    assert len(copies) == 2 and len(fresh_removed) == len(copies)
    for c in copies:  # within the new corpus, one of each exact pair goes
        (gone,) = fresh_removed & {c, c + "-copy"}
        assert rej[gone]["duplicate_of"] == ({c, c + "-copy"} - {gone}).pop()
    out = set(output_ids(tmp_path / "wb", "fuzzy_dedup"))
    assert out == {d["id"] for d in fresh} - fresh_removed  # index documents never come out


def test_against_index_with_other_settings_is_a_config_error(tmp_path, corpus):
    cdir, _ = corpus
    y1 = write_pipeline(tmp_path / "a.yaml", tmp_path / "wa", f"{cdir}/part0.jsonl",
                        f"  - fuzzy_dedup: {FUZZY}, save_index: {tmp_path}/index}}\n")
    run_local(y1)
    y2 = write_pipeline(tmp_path / "b.yaml", tmp_path / "wb", f"{cdir}/part1.jsonl",
                        "  - fuzzy_dedup: {shingle: word, ngram: 4, threshold: 0.7, "
                        f"against: ['{tmp_path}/index']}}\n")
    with pytest.raises(ConfigError, match=r"ngram=5 \(here 4\)"):
        run_local(y2)


def test_cudf_backend_runs_or_says_it_needs_rapids(tmp_path, corpus):
    cdir, _ = corpus
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{cdir}/part0.jsonl",
                       f"  - fuzzy_dedup: {FUZZY}, backend: cudf}}\n")
    try:
        import cudf  # noqa: F401
    except ImportError:
        r = run_cli("run", str(y), check=False)
        assert r.returncode == 2
        last = r.stderr.strip().splitlines()[-1]
        assert last.startswith("curator: error: fuzzy_dedup backend 'cudf' needs RAPIDS cuDF")
        assert "Traceback" not in r.stderr
        assert not (tmp_path / "w" / "stages" / "fuzzy_dedup" / "_SUCCESS.json").exists()
    else:  # on a GPU machine: same removals as the embedded backend
        run_local(y)
        y2 = write_pipeline(tmp_path / "e.yaml", tmp_path / "e", f"{cdir}/part0.jsonl",
                            f"  - fuzzy_dedup: {FUZZY}}}\n")
        run_local(y2)
        assert rejected(tmp_path / "w", "fuzzy_dedup") == rejected(tmp_path / "e",
                                                                   "fuzzy_dedup")


def test_example_pipeline_runs(tmp_path):
    run_cli("run", "pipelines/dedup-example.yaml", "--work-dir", str(tmp_path / "w"))
    exact = rejected(tmp_path / "w", "exact_dedup")
    fuzzy = rejected(tmp_path / "w", "fuzzy_dedup")
    assert len(exact) == 6 and all(v["duplicate_of"] for v in exact.values())
    # every edited document is in a cluster with its original (one of the two goes)
    edited = {k.replace("-edited", "") for k in fuzzy} | {v["duplicate_of"].replace(
        "-edited", "") for v in fuzzy.values()}
    assert len(fuzzy) == 10 and len(edited) == 10
    assert (tmp_path / "w" / "index" / "sample" / "index.json").exists()


def test_empty_input_and_empty_texts(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(
        '{"id": "e1", "text": ""}\n{"id": "e2", "text": "   "}\n{"id": "x", "text": "hello"}\n')
    (tmp_path / "in" / "b.jsonl").write_text("")
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{tmp_path}/in/*.jsonl",
                       "  - exact_dedup: {}\n  - fuzzy_dedup: {}\n")
    run_local(y)
    assert rejected(tmp_path / "w", "exact_dedup") == {
        "e2": {"stage": "exact_dedup", "reason": "exact_duplicate", "duplicate_of": "e1"}}
    assert output_ids(tmp_path / "w", "fuzzy_dedup") == ["e1", "x"]


def test_crash_in_a_late_phase_resumes_without_redoing_signatures(tmp_path, corpus,
                                                                  monkeypatch):
    import curator.dedup.fuzzy_dedup as fz

    cdir, _ = corpus
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{cdir}/part*.jsonl",
                       f"  - fuzzy_dedup: {FUZZY}}}\n")
    real_components, real_signatures = fz._components_task, fz._signature_task

    def crash(*_a, **_k):  # failure injection
        raise RuntimeError("injected crash")

    monkeypatch.setattr(fz, "_components_task", crash)
    with pytest.raises(RuntimeError, match="injected crash"):
        run_local(y)
    assert not (tmp_path / "w" / "stages" / "fuzzy_dedup" / "_SUCCESS.json").exists()
    monkeypatch.setattr(fz, "_components_task", real_components)
    monkeypatch.setattr(fz, "_signature_task", crash)  # must come from the saved phase
    run_local(y)
    monkeypatch.setattr(fz, "_signature_task", real_signatures)
    y2 = write_pipeline(tmp_path / "q.yaml", tmp_path / "clean", f"{cdir}/part*.jsonl",
                        f"  - fuzzy_dedup: {FUZZY}}}\n")
    run_local(y2)
    got = rejected(tmp_path / "w", "fuzzy_dedup")
    assert got and got == rejected(tmp_path / "clean", "fuzzy_dedup")


def test_lookup_ids_loads_each_shard_once_and_keeps_order(tmp_path: Path) -> None:
    """Kept copies can be anywhere in the corpus: their ids are looked up one shard at a time
    (memory is one shard's ids), each shard's file read once, results in the asked order."""
    import orjson

    from curator.dedup.common import lookup_ids

    for s in range(3):
        (tmp_path / f"{s}.json").write_bytes(orjson.dumps([f"s{s}-r{r}" for r in range(5)]))
    asked: list[int] = []

    def path(s: int) -> str:
        asked.append(s)
        return str(tmp_path / f"{s}.json")

    got = lookup_ids([2, 0, 2, 1, 0], [4, 1, 0, 3, 1], path)
    assert got == ["s2-r4", "s0-r1", "s2-r0", "s1-r3", "s0-r1"]
    assert sorted(asked) == [0, 1, 2]
