"""Scale bench: does curator stay flat in memory and linear in time as the corpus grows?

For each N it writes a deterministic corpus straight to sharded JSONL.zst (web-like lengths:
log-normal words per document, Zipfian vocabulary, several sources, exact and near duplicates
planted at known rates), then runs ``curator run`` on it (exact + fuzzy dedup, the FineWeb
filters, BPE training on a bounded sample and Megatron tokenization) with any executor, and prints
one row per N:

    N, wall s, docs/s per core, peak RSS of the largest process, work_dir bytes per document,
    duplicates planted vs removed by exact and fuzzy dedup

    python bench/scale.py --n 100000 1000000 --executor local
    python bench/scale.py --n 10000000 --only-dedup          # fuzzy + exact dedup only
    python bench/scale.py --n 1000000 --executor mpi --ranks 2

Peak RSS is the largest ``ru_maxrss`` of the processes the run started (the curator process, or
each MPI rank), so it is the per-worker high-water mark, not the sum.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import zstandard

from bench.common import bench_main

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

#: planted rates, per generated original document
EXACT_RATE = 0.05
NEAR_RATE = 0.05


@dataclass(frozen=True)
class Corpus:
    """What was written: where, how big, and how many copies were planted."""

    path: Path
    docs: int
    bytes: int
    exact_planted: int
    near_planted: int


def _vocab(size: int, rng: np.random.Generator) -> list[str]:
    letters = np.frombuffer(b"etaoinshrdlcumwfgypbvkjxqz", dtype=np.uint8)
    p = np.array([12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4,
                  2.2, 2.0, 2.0, 1.9, 1.5, 1.0, 0.8, 0.2, 0.2, 0.1, 0.1])
    p /= p.sum()
    lens = np.clip(rng.poisson(4.5, size), 1, 14)
    chars = rng.choice(letters, size=int(lens.sum()), p=p)
    out, i = [], 0
    seen: set[str] = set()
    for n in lens:
        w = chars[i:i + n].tobytes().decode()
        i += n
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def _join(words: np.ndarray, seps: np.ndarray) -> str:
    both = np.empty(2 * len(words), dtype=object)
    both[0::2] = words
    both[1::2] = seps
    return "".join(both.tolist())


def generate(out: Path, n: int, shards: int = 0, sources: int = 4, seed: int = 0) -> Corpus:
    """Write about ``n`` documents to ``out/<source>/part-XXXXX.jsonl.zst``.

    Originals are ``n / (1 + EXACT_RATE + NEAR_RATE)``; each is copied verbatim with probability
    EXACT_RATE and with about 1% of its words replaced with probability NEAR_RATE (Jaccard of
    word 5-grams about 0.9), so the planted counts are known exactly."""
    rng = np.random.default_rng(seed)
    vocab = np.array(_vocab(60_000, rng), dtype=object)
    zipf = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    zipf /= zipf.sum()
    cdf = np.cumsum(zipf)
    originals = int(n / (1 + EXACT_RATE + NEAR_RATE))
    shards = shards or max(4, n // 50_000)
    per_shard = -(-originals // shards)
    cctx = zstandard.ZstdCompressor(level=3)
    total_docs = total_bytes = exact = near = 0
    if out.exists():
        shutil.rmtree(out)
    for s in range(shards):
        src = f"src{s % sources}"
        (out / src).mkdir(parents=True, exist_ok=True)
        k = min(per_shard, originals - s * per_shard)
        if k <= 0:
            break
        lens = np.clip(rng.lognormal(5.6, 0.9, k).astype(np.int64), 50, 20_000)  # words
        words = np.searchsorted(cdf, rng.random(int(lens.sum())))
        words = np.minimum(words, len(vocab) - 1)
        kind = rng.random(k)
        # separators after each word: sentences of ~14 words, paragraphs (lines) of ~5 sentences
        r = rng.random(len(words))
        seps = np.where(r < 1 / 70, ".\n", np.where(r < 1 / 14, ". ", " ")).astype(object)
        buf = bytearray()
        off = 0
        for i in range(k):
            ids = words[off:off + lens[i]]
            sep = seps[off:off + lens[i]]
            sep[-1] = "."
            off += lens[i]
            text = _join(vocab[ids], sep)
            did = f"{src}-{s}-{i}"
            buf += orjson.dumps({"id": did, "text": text, "source": src}) + b"\n"
            total_docs += 1
            total_bytes += len(text)
            if kind[i] < EXACT_RATE:
                buf += orjson.dumps({"id": did + "-x", "text": text, "source": src}) + b"\n"
                exact += 1
                total_docs += 1
                total_bytes += len(text)
            elif kind[i] < EXACT_RATE + NEAR_RATE:
                edited = ids.copy()
                pos = rng.integers(0, len(ids), max(1, len(ids) // 100))
                edited[pos] = rng.integers(0, len(vocab), len(pos))
                t2 = _join(vocab[edited], sep)
                buf += orjson.dumps({"id": did + "-n", "text": t2, "source": src}) + b"\n"
                near += 1
                total_docs += 1
                total_bytes += len(t2)
        with open(out / src / f"part-{s:05d}.jsonl.zst", "wb") as f:
            f.write(cctx.compress(bytes(buf)))
    return Corpus(out, total_docs, total_bytes, exact, near)


PIPELINE = """\
name: scale
work_dir: {wd}
progress: log
stages:
{sources}
  - id: exact
    exact_dedup: {{}}
    inputs: [{source_ids}]
  - id: fuzzy
    fuzzy_dedup: {{threshold: 0.8, shingle: word, ngram: 5, num_perm: 112, keep: first}}
{rest}"""

REST = """\
  - id: fineweb
    fineweb_quality: {}
  - id: tokenizer
    train_tokenizer: {type: bpe, vocab_size: 8000, max_docs: 20000, max_mb: 32,
                      special_tokens: ["<|endoftext|>"]}
  - id: megatron
    megatron_shards: {output_dir: megatron, append_eod: true}
"""


def pipeline_yaml(corpus: Corpus, wd: Path, only_dedup: bool) -> str:
    srcs = sorted(p.name for p in corpus.path.iterdir() if p.is_dir())
    sources = "".join(
        f"  - id: {s}\n    read_jsonl: {{paths: \"{corpus.path / s}/*.jsonl.zst\", source: {s}}}\n"
        for s in srcs)
    return PIPELINE.format(wd=wd, sources=sources, source_ids=", ".join(srcs),
                           rest="" if only_dedup else REST)


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run(n: int, tmp: Path, executor: str, ranks: int, only_dedup: bool, keep: bool) -> dict:
    t = time.perf_counter()
    corpus = generate(tmp / f"corpus-{n}", n)
    gen_s = time.perf_counter() - t
    wd = tmp / f"work-{n}"
    shutil.rmtree(wd, ignore_errors=True)
    yaml_path = tmp / f"scale-{n}.yaml"
    yaml_path.write_text(pipeline_yaml(corpus, wd, only_dedup))
    cmd = [sys.executable, "-m", "curator", "run", str(yaml_path), "--executor", executor]
    cores = 1
    if executor == "mpi":
        cmd = [str(BIN / "mpiexec"), "-n", str(ranks), *cmd]
        cores = ranks
    elif executor == "dask":
        cmd += ["--workers", str(ranks)]
        cores = ranks
    # a fresh wrapper process per N, so ru_maxrss is this run's high-water mark alone
    wrapper = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]).returncode; "
               "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
               "print('RUSAGE', u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); "
               "sys.exit(r)")
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", wrapper, *cmd], cwd=ROOT, capture_output=True,
                       text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"scale: run failed for N={n}:\n{p.stderr[-3000:]}")
    _, maxrss_kib, cpu_s = p.stderr.strip().splitlines()[-1].split()
    rep = json.loads((wd / "report.json").read_text())
    by_id = {s["id"]: s for s in rep["stages"]}
    removed_exact = sum(by_id["exact"]["rejected"].values())
    removed_fuzzy = sum(by_id["fuzzy"]["rejected"].values())
    row = {
        "n": corpus.docs, "mb_in": round(corpus.bytes / 1e6, 1), "gen_s": round(gen_s, 1),
        "wall_s": round(wall, 1), "docs_s_core": round(corpus.docs / wall / cores),
        "cpu_s": round(float(cpu_s), 1),
        # the load-independent rate: documents per CPU-second of the run's processes
        "docs_per_cpu_s": round(corpus.docs / max(float(cpu_s), 1e-9)),
        # ru_maxrss of RUSAGE_CHILDREN is the largest single descendant's peak (KiB on Linux)
        "peak_rss_mb": round(int(maxrss_kib) / 1024),
        "work_dir_bytes_per_doc": round(du(wd) / corpus.docs),
        "exact_planted": corpus.exact_planted, "exact_removed": removed_exact,
        "near_planted": corpus.near_planted, "fuzzy_removed": removed_fuzzy,
        "stage_seconds": {s["id"]: s["seconds"] for s in rep["stages"]},
    }
    if not keep:
        shutil.rmtree(wd, ignore_errors=True)
        shutil.rmtree(corpus.path, ignore_errors=True)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100_000])
    ap.add_argument("--executor", choices=["local", "dask", "mpi"], default="local")
    ap.add_argument("--ranks", type=int, default=2, help="MPI ranks / Dask workers")
    ap.add_argument("--only-dedup", action="store_true", help="exact + fuzzy dedup only")
    ap.add_argument("--tmp", default=os.environ.get("TMPDIR", "/tmp") + "/curator-scale")
    ap.add_argument("--keep", action="store_true", help="keep corpus and work_dir")
    ap.add_argument("--json", help="append each row as a JSON line to this file")
    args = ap.parse_args(argv)
    tmp = Path(args.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    print(f"# {platform.node()} {os.cpu_count()} cores, executor {args.executor}"
          f"{' x' + str(args.ranks) if args.executor != 'local' else ''}, "
          f"{'dedup only' if args.only_dedup else 'dedup + fineweb + tokenize'}")
    print("| N docs | MB text | wall s | CPU s | docs/s/core | docs/CPU-s | peak RSS MB | "
          "work_dir B/doc | exact planted/removed | near planted/fuzzy removed |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        row = run(n, tmp, args.executor, args.ranks, args.only_dedup, args.keep)
        print(f"| {row['n']:,} | {row['mb_in']:,} | {row['wall_s']} | {row['cpu_s']} | "
              f"{row['docs_s_core']:,} | {row['docs_per_cpu_s']:,} | {row['peak_rss_mb']} | "
              f"{row['work_dir_bytes_per_doc']:,} | "
              f"{row['exact_planted']}/{row['exact_removed']} | "
              f"{row['near_planted']}/{row['fuzzy_removed']} |", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
