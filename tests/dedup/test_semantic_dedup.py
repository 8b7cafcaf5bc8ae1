"""semantic_dedup and curator.models.embed: vectors equal sentence-transformers' own, the
keep-first rule equals a brute-force reference, embeddings are reused across parameter
changes, the static first pass sends only candidates to the model, bad models fail in one
line, and local / Dask / MPI remove the same documents."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest

from curator.dedup.semantic_cluster import (
    Clustering,
    ShardVectors,
    _assign_task,
    _cluster_task,
    _leaf,
    _split,
)
from curator.models.embed import load_encoder
from tests.dedup.helpers_dedup import output_ids, rejected, write_pipeline
from tests.dedup.helpers_semantic import MINILM, build_tiny_model, make_corpus, make_variant_corpus
from tests.helpers import run_cli


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("model") / "tiny")


def _texts(corpus: Path) -> list[tuple[str, str]]:
    out = []
    for f in sorted(corpus.glob("part*.jsonl")):
        out += [(r["id"], r["text"]) for r in map(orjson.loads, f.read_bytes().splitlines())]
    return out


def _reference(model: Path, docs: list[tuple[str, str]], t: float) -> dict[str, str]:
    """Brute force with sentence-transformers itself: in input order, a document whose cosine
    to an earlier kept one reaches ``t`` is removed (-> the closest kept one)."""
    from sentence_transformers import SentenceTransformer

    v = SentenceTransformer(str(model), device="cpu").encode([t for _, t in docs])
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    kept: list[int] = []
    out = {}
    for i in range(len(docs)):
        if kept:
            sims = v[kept] @ v[i]
            j = int(np.argmax(sims))
            if sims[j] >= t:
                out[docs[i][0]] = docs[kept[j]][0]
                continue
        kept.append(i)
    return out


def _counters(work_dir: Path) -> dict[str, int]:
    rep = json.loads((work_dir / "report.json").read_text())
    return next(s for s in rep["stages"] if s["id"] == "semantic_dedup")["counters"]


def _pipeline(tmp: Path, name: str, corpus: Path, params: str, executor: str = "{type: local}"
              ) -> Path:
    if "prefilter" not in params and "backend: static" not in params:
        # these tests are about the full model's pass
        params = f"{params}, prefilter: none" if params.strip() else "prefilter: none"
    y = write_pipeline(tmp / f"{name}.yaml", tmp / name, f"{corpus}/part*.jsonl",
                       f"  - semantic_dedup: {{{params}}}\n", executor)
    y.write_text(y.read_text().replace("report: false", "report: true"))
    return y


# -- the encoder ------------------------------------------------------------------------------


def test_torch_encoder_equals_sentence_transformers_on_minilm():
    """The packaged all-MiniLM-L6-v2: our vectors are SentenceTransformer.encode's, bit for
    bit (its pooling, 256-token truncation, Normalize), also with max_seq_length overridden;
    an empty and a 1 MB text pass."""
    from sentence_transformers import SentenceTransformer

    texts = ["The cat sat on the mat.", "A feline rested on the rug.", "",
             "Stock markets fell sharply on Monday. " * 30, "x" * 1_000_000,
             "Ünïcödé text — with dashes and emoji 🙂"]
    ours = load_encoder(MINILM, batch_size=4).encode(texts)
    st = SentenceTransformer(MINILM, device="cpu")
    ref = st.encode(texts, batch_size=4)
    assert ours.dtype == np.float32 and ours.shape == (6, 384)
    assert np.array_equal(ours, ref)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    short = load_encoder(MINILM, max_seq_length=8).encode(texts[3:4])
    st.max_seq_length = 8
    assert np.array_equal(short, st.encode(texts[3:4]))
    assert not np.allclose(short, ours[3:4], atol=1e-3)  # the override did truncate


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown encoder backend 'nope'"):
        load_encoder(MINILM, backend="nope")


def test_static_encoder_is_distilled_once_and_cached(tiny, tmp_path):
    enc = load_encoder(str(tiny), backend="static", cache_dir=str(tmp_path))
    v = enc.encode(["river mountain market", "", "coffee tea"])
    assert v.shape == (3, enc.dim) and v.dtype == np.float32
    (folder,) = list(tmp_path.iterdir())
    mtime = (folder / "model.safetensors").stat().st_mtime_ns
    again = load_encoder(str(tiny), backend="static", cache_dir=str(tmp_path))
    assert np.array_equal(again.encode(["river mountain market"]), v[:1])
    assert (folder / "model.safetensors").stat().st_mtime_ns == mtime  # not distilled again


# -- the per-cluster rule ---------------------------------------------------------------------


def _cl(t: float, mode: str = "dedup", cap: int = 10_000) -> Clustering:
    return Clustering(stage_dir="", tag="full", threshold=t, mode=mode, clusters=0,
                      max_cluster_size=cap, sample=1000, iterations=10, seed=1, device="cpu")


def test_leaf_keep_first_equals_brute_force_across_blocks():
    """Random vectors with planted near-copies, more rows than one similarity block: the
    block-wise rule equals the plain sequential one (removed, duplicate_of and cosine)."""
    rng = np.random.default_rng(3)
    base = rng.normal(size=(1500, 16)).astype(np.float32)
    x = np.concatenate([base, base[:900] + rng.normal(scale=0.15, size=(900, 16))])
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    order = rng.permutation(x.shape[0])
    x = x[order]
    refs = np.arange(x.shape[0], dtype=np.uint64)
    rem, kept, cos = _leaf(refs, x, _cl(0.95))
    ref_rem, ref_kept, ref_cos = [], [], []
    keep: list[int] = []
    for i in range(x.shape[0]):
        if keep:
            s = x[keep] @ x[i]
            j = int(np.argmax(s))
            if s[j] >= np.float32(0.95):
                ref_rem.append(i)
                ref_kept.append(keep[j])
                ref_cos.append(s[j])
                continue
        keep.append(i)
    assert len(ref_rem) > 300
    assert rem.tolist() == ref_rem and kept.tolist() == ref_kept
    np.testing.assert_allclose(cos, ref_cos, atol=1e-5)
    cand, _, _ = _leaf(refs, x, _cl(0.95, "candidates"))
    assert set(cand.tolist()) == set(ref_rem) | set(ref_kept)


class _Vectors:
    def __init__(self, x: np.ndarray) -> None:
        self.x = x

    def __call__(self, refs: np.ndarray) -> np.ndarray:
        return self.x[refs.astype(np.int64)]


def test_oversized_cluster_is_split_within_the_cap():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5000, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    refs = np.arange(5000, dtype=np.uint64)
    parts = list(_split(refs, _Vectors(x), _cl(0.9, cap=700), 0))  # type: ignore[arg-type]
    assert all(p.shape[0] <= 700 for p in parts) and len(parts) >= 8
    assert sorted(np.concatenate(parts).tolist()) == list(range(5000))
    assert all(np.all(np.diff(p.astype(np.int64)) > 0) for p in parts)  # input order kept


@pytest.mark.parametrize("assign", [1, 2])
def test_first_pass_finds_a_pair_split_across_clusters(tmp_path, assign):
    """Two static clusters (centroids e1, e2) and a pair at cosine 0.9945 on their border, one
    document nearer each centroid: with each document in its 2 nearest clusters the first pass
    marks both (the stage's default, ``prefilter_assign: 2``); with 1 (the old assignment) the
    pair is split and lost."""
    rng = np.random.default_rng(0)
    dim = 16
    e1, e2 = np.eye(dim)[0], np.eye(dim)[1]
    filler = np.concatenate([e1 + rng.normal(scale=0.8, size=(20, dim)),
                             e2 + rng.normal(scale=0.8, size=(20, dim))])
    pair = np.stack([e1 + 0.9 * e2, 0.9 * e1 + e2])
    x = np.concatenate([filler, pair])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    sims = x @ x.T
    np.fill_diagonal(sims, -1)
    assert sims[40, 41] > 0.99 and sims[:40].max() < 0.95  # the filler has no neighbour
    vec = tmp_path / "v.npy"
    np.save(vec, x.astype(np.float16))
    cent = tmp_path / "cent.npy"
    np.save(cent, np.stack([e1, e2]).astype(np.float32))
    sv = ShardVectors(0, "s", str(vec), len(x))
    cl = Clustering(stage_dir=str(tmp_path), tag="pre", threshold=0.95, mode="candidates",
                    clusters=2, max_cluster_size=1000, sample=1000, iterations=5, seed=1,
                    device="cpu", assign=assign)
    sizes = _assign_task(cl, str(cent), sv)
    assert sum(sizes.sizes) == assign * len(x)
    out = _cluster_task(cl, [sv], (0, 2))
    marked = set(np.load(out.path + ".removed.npy").astype(np.int64).tolist())
    assert marked == ({40, 41} if assign == 2 else set())


# -- the stage, through the curator command ----------------------------------------------------


def test_stage_equals_brute_force_reference(tiny, tmp_path):
    """One cluster: exactly the brute-force keep-first result of sentence-transformers'
    vectors; every planted copy is removed pointing at its original, with its cosine."""
    planted = make_corpus(tmp_path / "c")
    y = _pipeline(tmp_path, "w", tmp_path / "c", f"model: '{tiny}', threshold: 0.9")
    run_cli("run", str(y))
    rej = rejected(tmp_path / "w", "semantic_dedup")
    want = _reference(tiny, _texts(tmp_path / "c"), 0.9)
    assert {k: v["duplicate_of"] for k, v in rej.items()} == want
    for orig, copy in planted:
        assert rej[copy]["duplicate_of"] == orig and rej[copy]["cosine"] >= 0.9999
    assert all(v["reason"] == "semantic_duplicate" and v["cosine"] >= 0.9 for v in rej.values())
    assert len(want) > len(planted)  # the random-text corpus has near neighbours too
    assert set(output_ids(tmp_path / "w", "semantic_dedup")).isdisjoint(rej)


def test_new_threshold_and_clusters_reuse_the_embeddings(tiny, tmp_path):
    """A new threshold or cluster count reruns the stage without one model call (the
    embeddings are the stage's cached artifact); the result is the one a fresh run gives."""
    make_corpus(tmp_path / "c")
    n = len(_texts(tmp_path / "c"))
    y = _pipeline(tmp_path, "w", tmp_path / "c", f"model: '{tiny}', threshold: 0.95")
    run_cli("run", str(y))
    assert _counters(tmp_path / "w")["embedded_documents"] == n
    y.write_text(y.read_text().replace("threshold: 0.95", "threshold: 0.85, clusters: 3"))
    r = run_cli("run", str(y))
    assert "rerunning: parameter" in r.stderr + r.stdout
    assert _counters(tmp_path / "w").get("embedded_documents", 0) == 0
    fresh = _pipeline(tmp_path, "f", tmp_path / "c",
                      f"model: '{tiny}', threshold: 0.85, clusters: 3")
    run_cli("run", str(fresh))
    assert _counters(tmp_path / "f")["embedded_documents"] == n
    assert rejected(tmp_path / "w", "semantic_dedup") == rejected(tmp_path / "f",
                                                                   "semantic_dedup")


def test_prune_removes_the_embeddings_of_a_removed_stage(tiny, tmp_path):
    """work_dir/cache/<id> is curator's like stages/<id>: `curator prune` lists it once the
    stage is gone from the pipeline, and removes it with --yes."""
    make_corpus(tmp_path / "c")
    y = _pipeline(tmp_path, "w", tmp_path / "c", f"model: '{tiny}'")
    run_cli("run", str(y))
    cache = tmp_path / "w" / "cache" / "semantic_dedup"
    assert any(cache.rglob("*.npy"))
    text = y.read_text()
    entry = next(x for x in text.splitlines(True) if "semantic_dedup" in x)
    y.write_text(text.replace(entry, ""))
    listed = run_cli("prune", str(y)).stdout
    assert "cache/semantic_dedup" in listed and cache.exists(), listed
    run_cli("prune", str(y), "--yes")
    assert not cache.exists()
    assert (tmp_path / "w" / "stages").exists()  # the rest stays


def test_cache_pruning_leaves_files_it_did_not_write(tiny, tmp_path):
    """The stage drops stale vectors from its cache, never anything else put there."""
    make_corpus(tmp_path / "c")
    y = _pipeline(tmp_path, "w", tmp_path / "c", f"model: '{tiny}'")
    run_cli("run", str(y))
    cache = tmp_path / "w" / "cache" / "semantic_dedup"
    mine = cache / "notes.txt"
    mine.write_text("keep me")
    stale = cache / "old-key" / "x.npy"
    stale.parent.mkdir()
    stale.write_bytes(b"")
    y.write_text(y.read_text().replace(f"model: '{tiny}'", f"model: '{tiny}', threshold: 0.8"))
    run_cli("run", str(y))
    assert mine.read_text() == "keep me" and not stale.exists()


def test_static_prefilter_sends_only_candidates_to_the_model(tiny, tmp_path):
    """prefilter: static embeds every document with the distilled model and only candidates
    with the full one; a lower prefilter threshold then embeds only the new candidates (no
    document goes through the full model twice); with every document a candidate the result
    is the full model's. (How much the cheap pass misses is a property of the real model:
    measured in docs/models.md, not here on a random one.) The word-overlap part is off here:
    on sentences drawn from 44 words every document has a lexical neighbour."""
    make_corpus(tmp_path / "c", per_shard=60)
    n = len(_texts(tmp_path / "c"))
    full = _pipeline(tmp_path, "full", tmp_path / "c", f"model: '{tiny}', threshold: 0.9")
    run_cli("run", str(full))
    y = _pipeline(tmp_path, "w", tmp_path / "c", f"model: '{tiny}', threshold: 0.9, "
                  "prefilter: static, prefilter_threshold: 0.85, prefilter_jaccard: 0, "
                  "prefilter_word_weight: 0")
    run_cli("run", str(y))
    c1 = _counters(tmp_path / "w")
    assert c1["static_embedded_documents"] == n
    assert 0 < c1["candidates"] < n and c1["embedded_documents"] == c1["candidates"]
    rej_pre = rejected(tmp_path / "w", "semantic_dedup")
    kept = set(output_ids(tmp_path / "w", "semantic_dedup"))
    assert rej_pre and all(v["cosine"] >= 0.9 and v["duplicate_of"] in kept
                           for v in rej_pre.values())
    y.write_text(y.read_text().replace("prefilter_threshold: 0.85", "prefilter_threshold: 0.01"))
    run_cli("run", str(y))
    c2 = _counters(tmp_path / "w")
    assert c2["candidates"] == n
    assert c2["embedded_documents"] == n - c1["candidates"]
    assert c2.get("static_embedded_documents", 0) == 0
    assert rejected(tmp_path / "w", "semantic_dedup") == rejected(tmp_path / "full",
                                                                   "semantic_dedup")


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A word-bag model: its cosine follows the words, so planted near-copies are pairs."""
    return build_tiny_model(tmp_path_factory.mktemp("model") / "bag", layers=0)


def test_prefilter_finds_the_same_pairs_as_the_full_model(bag, tmp_path):
    """With the default first pass (cuts derived from `threshold`: static neighbour or word
    overlap) the stage removes what it removes without one: every planted paraphrase and
    boilerplate variant, pointing at its original, with the same cosine, and nothing else;
    and fewer documents go through the full model. (Only the planted pairs are required: the
    word-bag model sometimes puts two random sentences sharing no word at 0.90-0.91, and the
    default score, 0.8 x static cosine + 0.2 x word Jaccard >= 0.82, needs a pair to share
    at least a tenth of its words: by design, see docs/models.md.)"""
    planted = make_variant_corpus(tmp_path / "c")
    n = len(_texts(tmp_path / "c"))
    full = _pipeline(tmp_path, "full", tmp_path / "c", f"model: '{bag}', threshold: 0.9")
    run_cli("run", str(full))
    want = rejected(tmp_path / "full", "semantic_dedup")
    assert {k: v["duplicate_of"] for k, v in want.items()} == _reference(
        bag, _texts(tmp_path / "c"), 0.9)
    assert {(v["duplicate_of"], k) for k, v in want.items()} >= set(planted)
    y = _pipeline(tmp_path, "w", tmp_path / "c", f"model: '{bag}', threshold: 0.9, "
                  "prefilter: static")
    run_cli("run", str(y))
    c = _counters(tmp_path / "w")
    assert c["embedded_documents"] == c["candidates"] < n
    got = rejected(tmp_path / "w", "semantic_dedup")
    copies = [copy for _orig, copy in planted]
    assert {k: got.get(k) for k in copies} == {k: want[k] for k in copies}
    assert all(want.get(k) == v for k, v in got.items())


def test_lexical_first_pass_catches_boilerplate_variants(bag, tmp_path):
    """With a static cut so high that no boilerplate variant passes it (checked on the
    distilled model's own vectors), the word-overlap part alone still sends every variant to
    the full model: the same removals of the planted copies as without a first pass, and no
    other (fails without the lexical part)."""
    planted = make_variant_corpus(tmp_path / "c")
    texts = dict(_texts(tmp_path / "c"))
    variants = planted[:12]
    static = load_encoder(str(bag), backend="static", cache_dir=str(tmp_path / "st"))
    for orig, copy in variants:
        a, b = static.encode([texts[orig], texts[copy]])
        assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) < 0.995
    full = _pipeline(tmp_path, "full", tmp_path / "c", f"model: '{bag}', threshold: 0.9")
    run_cli("run", str(full))
    want = rejected(tmp_path / "full", "semantic_dedup")
    assert {copy for _orig, copy in variants} <= set(want)
    y = _pipeline(tmp_path, "lex", tmp_path / "c", f"model: '{bag}', threshold: 0.9, "
                  "prefilter: static, prefilter_threshold: 0.995")
    run_cli("run", str(y))
    got = rejected(tmp_path / "lex", "semantic_dedup")
    copies = [copy for _orig, copy in planted]
    assert {k: got.get(k) for k in copies} == {k: want[k] for k in copies}
    assert all(want.get(k) == v for k, v in got.items())


@pytest.mark.parametrize("prefilter", ["none", "static"])
def test_local_dask_mpi_identical(tiny, tmp_path, prefilter):
    """Several clusters, some split (max_cluster_size 30): the same removals under local,
    Dask (2 workers) and MPI (2 ranks); with the first pass too (each document in its 2
    nearest static clusters, so listed twice across cluster tasks)."""
    make_corpus(tmp_path / "c", shards=4, per_shard=50)
    params = (f"model: '{tiny}', threshold: 0.85, clusters: 3, max_cluster_size: 30, "
              f"prefilter: {prefilter}")
    runs = {"l": ("{type: local}", 0), "d": ("{type: dask, workers: 2}", 0),
            "m": ("{type: mpi}", 2)}
    results = {}
    for name, (executor, ranks) in runs.items():
        y = _pipeline(tmp_path, name, tmp_path / "c", params, executor)
        r = run_cli("run", str(y), mpi=ranks, check=False)
        assert r.returncode == 0, f"{name}: {r.stderr[-2000:]}"
        results[name] = (rejected(tmp_path / name, "semantic_dedup"),
                         output_ids(tmp_path / name, "semantic_dedup"))
    assert len(results["l"][0]) > (15 if prefilter == "none" else 0)
    if prefilter == "static":
        c = _counters(tmp_path / "l")
        assert c["embedded_documents"] == c["candidates"] < 200
    assert results["d"] == results["l"]
    assert results["m"] == results["l"]


def test_not_a_model_is_one_line_naming_the_key(tmp_path):
    make_corpus(tmp_path / "c", shards=2, per_shard=5, dups=1)
    (tmp_path / "empty").mkdir()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{\"model_type\": \"bert\"}")
    (broken / "tokenizer.json").write_text("{}")
    for model, want in ((tmp_path / "empty", "no config.json or modules.json"),
                        (tmp_path / "nowhere" / "x", "no such folder"),
                        (broken, "could not be loaded")):
        y = _pipeline(tmp_path, "w", tmp_path / "c", f"model: '{model}'")
        r = run_cli("run", str(y), check=False)
        err = r.stderr.strip().splitlines()
        assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
        assert err[-1].startswith("curator: error:") and "semantic_dedup.model" in err[-1]
        assert want in err[-1], err[-1]


def test_empty_and_huge_documents_pass(tiny, tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    docs = [{"id": "e1", "text": ""}, {"id": "big", "text": "river " * 200_000},
            {"id": "e2", "text": ""}, {"id": "w", "text": "coffee tea sugar"}]
    (d / "part0.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in docs))
    y = _pipeline(tmp_path, "w", d, f"model: '{tiny}', threshold: 0.99")
    run_cli("run", str(y))
    rej = rejected(tmp_path / "w", "semantic_dedup")
    assert {k: v["duplicate_of"] for k, v in rej.items()} == {"e2": "e1"}
    assert output_ids(tmp_path / "w", "semantic_dedup") == ["e1", "big", "w"]


def test_new_weights_in_the_same_folder_rerun_and_reembed(tiny, tmp_path):
    """The weights' content is part of the stage's identity and of the embeddings' key."""
    model = tmp_path / "m"
    shutil.copytree(tiny, model)
    make_corpus(tmp_path / "c", shards=2, per_shard=10, dups=2)
    n = len(_texts(tmp_path / "c"))
    y = _pipeline(tmp_path, "w", tmp_path / "c", f"model: '{model}'")
    run_cli("run", str(y))
    other = build_tiny_model(tmp_path / "other", seed=7)
    for f in ("model.safetensors",):
        os.replace(other / f, model / f)
    r = run_cli("run", str(y))
    assert "rerunning" in r.stderr + r.stdout
    assert _counters(tmp_path / "w")["embedded_documents"] == n
    emb = list((tmp_path / "w" / "cache" / "semantic_dedup").glob("*/*.npy"))
    assert len(emb) == 2  # the old weights' vectors were pruned


def test_static_backend_removes_the_planted_copies(tiny, tmp_path):
    """backend: static (the distilled model alone, distilled once before the shard tasks):
    the upper-cased copies have the same tokens, so cosine 1 to their originals."""
    planted = make_corpus(tmp_path / "c")
    y = _pipeline(tmp_path, "w", tmp_path / "c",
                  f"model: '{tiny}', threshold: 0.999, backend: static")
    run_cli("run", str(y))
    rej = rejected(tmp_path / "w", "semantic_dedup")
    assert {copy: orig for orig, copy in planted}.items() <= {
        k: v["duplicate_of"] for k, v in rej.items()}.items()
    assert _counters(tmp_path / "w")["embedded_documents"] == len(_texts(tmp_path / "c"))
    assert len(list((tmp_path / "w" / "cache" / "semantic_dedup" / "models").iterdir())) == 1


def test_resume_with_another_worker_count_regroups_clusters(tiny, tmp_path):
    """The cluster tasks are grouped by worker count; a run resumed on more workers (finished
    phases kept, the stage not done) must not take a saved group for another group of
    clusters: its removals equal a fresh run's."""
    make_corpus(tmp_path / "c", shards=3, per_shard=40)
    params = f"model: '{tiny}', threshold: 0.75, clusters: 6"
    y = _pipeline(tmp_path, "w", tmp_path / "c", params)
    run_cli("run", str(y))
    want = rejected(tmp_path / "w", "semantic_dedup")
    sdir = tmp_path / "w" / "stages" / "semantic_dedup"
    (sdir / "_SUCCESS.json").unlink()  # as if killed after the cluster phase
    shutil.rmtree(sdir / "_phases" / "removals")
    for d in (sdir / "removals", sdir / "_done", sdir / "data",
              tmp_path / "w" / "rejected" / "semantic_dedup"):
        shutil.rmtree(d)
    y.write_text(y.read_text().replace("{type: local}", "{type: dask, workers: 2}"))
    run_cli("run", str(y))
    assert rejected(tmp_path / "w", "semantic_dedup") == want and len(want) > 10
    assert len(list((sdir / "_phases" / "full_clusters").iterdir())) > 4  # it did regroup


# -- the defaults: no model key, the first pass on ----------------------------------------------


def test_defaults_are_the_packaged_model_and_an_automatic_first_pass():
    from curator.dedup.semantic_cost import choose_prefilter, packaged_model
    from curator.dedup.semantic_dedup import SemanticDedup

    st = SemanticDedup.from_params({})
    assert st.model == packaged_model() == MINILM and st.prefilter == "auto"
    assert st.backend == "torch" and st.params["model"] is None
    assert st.input_files() == [MINILM]  # the packaged files join the stage's identity
    assert SemanticDedup.from_params({"backend": "static"}).prefilter == "none"
    # the static first pass where it repays distilling its model: not on 500 short texts,
    # on 26,506 (the corpus of the walk that found the full model alone took 40 minutes)
    kw = {"model": MINILM, "backend": "torch"}
    assert choose_prefilter(500, 500 * 400, **kw) == "none"
    assert choose_prefilter(26_506, 26_506 * 400, **kw) == "static"
    assert choose_prefilter(26_506, 26_506 * 400, model=MINILM, backend="static") == "none"


def test_cost_estimate_scales_with_the_documents_and_the_first_pass():
    from curator.dedup.semantic_cost import estimate

    short = estimate(10_000, 10_000 * 400, model=MINILM, backend="torch", prefilter="none")
    long_ = estimate(10_000, 10_000 * 4000, model=MINILM, backend="torch", prefilter="none")
    pre = estimate(10_000, 10_000 * 4000, model=MINILM, backend="torch", prefilter="static")
    assert long_.total > 2 * short.total  # longer texts, more tokens (up to the 256 cut)
    assert pre.total < 0.6 * long_.total and pre.distill > 0 and pre.kept < 1
    # 1,500-character documents: ~21 documents per CPU-second with the exact encoder
    one = estimate(1000, 1000 * 1500, model=MINILM, backend="torch", prefilter="none")
    assert 30 < one.total < 80


def test_no_model_key_runs_the_packaged_model_and_says_the_cost_first(tmp_path):
    """``semantic_dedup: {}``: the packaged all-MiniLM-L6-v2 (66 short documents: no first
    pass, it would not repay distilling its model); the planted copies go, and the log says
    what the run will cost, and what the other choice would, before any phase runs. On
    f8f1ca4 the missing key was an error ("model: Field required")."""
    planted = make_corpus(tmp_path / "c", shards=2, per_shard=30, dups=6)
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{tmp_path}/c/part*.jsonl",
                       "  - semantic_dedup: {}\n")
    r = run_cli("run", str(y))
    lines = r.stderr.splitlines()
    at = next(i for i, ln in enumerate(lines) if "expect ~" in ln)
    cost = lines[at]
    assert "[semantic_dedup] 66 documents (" in cost and "all-MiniLM-L6-v2 (packaged)" in cost
    assert "backend torch, prefilter auto: none: expect ~" in cost, cost
    assert "; prefilter static: ~" in cost, cost
    assert not any(ln.startswith("[semantic_dedup:") for ln in lines[:at])
    assert {c for _, c in planted} <= set(rejected(tmp_path / "w", "semantic_dedup"))
