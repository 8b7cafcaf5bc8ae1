"""Dedup benchmarks, run on demand (not a test): curator against its peers, side by side in one
run on the same documents and the same permutations.

1. MinHash signatures/s: curator (word 5-grams and char 24-grams) vs datasketch ``MinHash``
   (legacy scheme, sha1 per shingle) and datatrove ``MinhashDedupSignature`` hashing (xxhash per
   shingle; its spaCy word tokenizer is replaced by ``str.split`` so it needs no model, which
   only favours datatrove).
2. LSH insert+query/s on one plain redis-server started here (datasketch's storage is not
   cluster-aware; curator's store uses plain mode when given one non-cluster node):
   curator's ``RedisBucketStore`` vs datasketch ``MinHashLSH`` with Redis storage (insertion
   session = pipelined), same signatures and banding.
3. Peak memory per document of a whole ``read_jsonl -> fuzzy_dedup`` run (local executor, one
   fresh process per size; peak RSS reset after the imports via /proc/self/clear_refs):
   1e4 and 1e5 documents, 1e6 with ``--big``.

    python bench/bench_dedup.py                  # small default
    python bench/bench_dedup.py --docs 5000 --lsh-docs 3000 --big
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]

from curator.dedup.minhash import MinHasher, band_digests, normalize  # noqa: E402

NUM_PERM, SEED, BANDS, ROWS = 128, 1, 16, 8
ROUNDS = 3


def make_docs(n: int, words: int = 120, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"tok{i}" for i in range(20000)]
    out = []
    for i in range(n):
        if i % 5 == 4:  # near-duplicate of the previous document
            w = out[-1].split()
            w[rng.randrange(len(w))] = "changed"
            out.append(" ".join(w))
        else:
            out.append(" ".join(rng.choice(vocab) for _ in range(words)))
    return out


def timed(fn, *args):
    t = time.perf_counter()
    r = fn(*args)
    return time.perf_counter() - t, r


def bench_signatures(docs: list[str]) -> None:
    import datatrove.pipeline.dedup.minhash as dtm
    from datasketch import MinHash

    def ngrams(text: str, n: int = 5) -> list[bytes]:
        w = normalize(text).split()
        return [" ".join(w[i:i + n]).encode() for i in range(max(1, len(w) - n + 1))]

    def ds() -> None:
        for d in docs:
            m = MinHash(num_perm=NUM_PERM, seed=SEED, scheme="legacy")
            m.update_batch(ngrams(d))

    class _Split:
        word_tokenize = staticmethod(str.split)

    dtm.load_word_tokenizer = lambda _lang: _Split()  # no spaCy model needed
    dt = dtm.MinhashDedupSignature(tempfile.mkdtemp(), dtm.MinhashConfig(
        n_grams=5, num_buckets=BANDS, hashes_per_bucket=ROWS, seed=SEED))
    # datatrove passes str to xxhash, which the installed xxhash refuses: encode first
    import xxhash

    dt._hash_func = lambda s: xxhash.xxh64_intdigest(s.encode())

    def dtv() -> None:
        for d in docs:
            dt.get_signature(dt.get_shingles(d))

    contenders = {
        "word": lambda: MinHasher(NUM_PERM, SEED, 5, "word")(docs),
        "legacy": lambda: MinHasher(NUM_PERM, SEED, 5, "word", scheme="legacy")(docs),
        "char": lambda: MinHasher(NUM_PERM, SEED, 24, "char")(docs),
        "ds": ds, "dt": dtv}
    # interleaved rounds, best time each: the machine is shared, load comes and goes
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(ROUNDS):
        for name, fn in contenders.items():
            best[name] = min(best[name], timed(fn)[0])
    t_word, t_legacy, t_char, t_ds, t_dt = (best[k] for k in contenders)
    n = len(docs)
    print(f"\n== MinHash signatures/s ({n} docs, ~{np.mean([len(d) for d in docs]):.0f} chars, "
          f"{NUM_PERM} permutations, seed {SEED}; best of {ROUNDS} interleaved rounds)")
    rows = [("curator word 5-grams (affine32)", t_word),
            ("curator word 5-grams (legacy, same math as the peers)", t_legacy),
            ("curator char 24-grams (affine32)", t_char),
            ("datasketch MinHash (word 5-grams, sha1)", t_ds),
            ("datatrove MinhashDedupSignature (word 5-grams, xxhash)", t_dt)]
    for name, t in rows:
        print(f"  {name:58s} {n / t:10.0f} docs/s")
    print(f"  ratio curator word affine32 / datasketch: {t_ds / t_word:.1f}x, "
          f"/ datatrove: {t_dt / t_word:.1f}x; legacy / datasketch: {t_ds / t_legacy:.1f}x, "
          f"/ datatrove: {t_dt / t_legacy:.1f}x")


def start_redis(tmp: Path) -> tuple[subprocess.Popen, int]:
    import socket

    import redis

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp),
         "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    deadline = time.monotonic() + 20
    while True:
        try:
            r.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    return proc, port


def bench_lsh(docs: list[str]) -> None:
    from datasketch import MinHash, MinHashLSH

    from curator.dedup.backends.redis_cluster import (
        RedisBucketStore,
        buckets_for,
        redis_edges,
    )
    from curator.dedup.common import pack_refs

    sigs = MinHasher(NUM_PERM, SEED, 5, "word")(docs)
    tmp = Path(tempfile.mkdtemp())
    proc, port = start_redis(tmp)
    try:
        # curator: claim every band bucket of every document (insert and query in one command)
        def ours() -> int:
            dig = band_digests(sigs, BANDS, ROWS).reshape(-1)
            store = RedisBucketStore([f"127.0.0.1:{port}"], "curator:bench:",
                                     buckets=buckets_for(dig.size))  # as the stage sizes it
            refs = np.repeat(pack_refs(0, sigs.shape[0]), BANDS)
            u, _ = redis_edges(store, dig, refs)  # insert + query: one script call per batch
            store.cleanup()
            store.close()
            return int(u.shape[0])

        mhs = [MinHash(num_perm=NUM_PERM, seed=SEED, hashvalues=s.astype(np.uint64),
                       scheme="legacy") for s in sigs]
        rounds = iter(range(1000))

        def theirs() -> int:
            lsh = MinHashLSH(num_perm=NUM_PERM, params=(BANDS, ROWS), storage_config={
                "type": "redis", "basename": b"dsbench%d" % next(rounds),  # fresh per round
                "redis": {"host": "127.0.0.1", "port": port}})
            with lsh.insertion_session() as s:
                for i, m in enumerate(mhs):
                    s.insert(i, m)
            hits = sum(len(lsh.query(m)) - 1 for m in mhs)
            return hits

        t_ours = t_ds = float("inf")
        for _ in range(ROUNDS):  # interleaved, best of each
            t, edges = timed(ours)
            t_ours = min(t_ours, t)
            t, hits = timed(theirs)
            t_ds = min(t_ds, t)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    n = len(docs)
    print(f"\n== LSH insert+query on one redis-server ({n} docs, {BANDS} bands x {ROWS} rows; "
          f"best of {ROUNDS} interleaved rounds)")
    print(f"  {'curator RedisBucketStore':58s} {n / t_ours:10.0f} docs/s  ({edges} edges)")
    print(f"  {'datasketch MinHashLSH(redis storage)':58s} {n / t_ds:10.0f} docs/s  "
          f"({hits} neighbour hits)")
    print(f"  ratio curator / datasketch: {t_ds / t_ours:.1f}x")


_CHILD = r"""
import json, sys, time
from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])

pipe = pl.load(sys.argv[1])  # imports the stages' modules
import numpy, curator.dedup.fuzzy_dedup, curator.io.jsonl  # noqa: E401,F401
with open("/proc/self/clear_refs", "w") as f:  # reset the peak (VmHWM) after the imports
    f.write("5")
base = status("VmRSS")
t = time.perf_counter()
Runner(pipe, LocalExecutor()).run()
print(json.dumps({"base_kb": base, "peak_kb": status("VmHWM"),
                  "seconds": time.perf_counter() - t}))
"""


def bench_memory(sizes: list[int]) -> None:
    print("\n== peak memory of read_jsonl -> fuzzy_dedup (word 5-grams, threshold 0.8, local)")
    for n in sizes:
        tmp = Path(tempfile.mkdtemp())
        try:
            with open(tmp / "docs.jsonl", "w") as f:
                for i, d in enumerate(make_docs(n, words=60, seed=n)):
                    f.write(json.dumps({"id": f"d{i}", "text": d}) + "\n")
            (tmp / "p.yaml").write_text(
                f"name: bench\nwork_dir: {tmp}/w\nprogress: 'off'\nreport: false\nstages:\n"
                f"  - read_jsonl: {{paths: {tmp}/docs.jsonl, shard_size_mb: 8}}\n"
                "  - fuzzy_dedup: {shingle: word, ngram: 5, threshold: 0.8}\n")
            out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp / "p.yaml")],
                                 env=dict(os.environ, PYTHONPATH=str(REPO)),
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            extra = (r["peak_kb"] - r["base_kb"]) * 1024 / n
            print(f"  {n:>9,d} docs: peak RSS {r['peak_kb'] / 1024:8.1f} MiB "
                  f"(after imports {r['base_kb'] / 1024:.1f} MiB), peak above that "
                  f"{extra:8.1f} B/doc, {r['seconds']:.1f}s "
                  f"({n / r['seconds']:.0f} docs/s end to end)")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=2000, help="documents for signatures/s")
    ap.add_argument("--lsh-docs", type=int, default=2000, help="documents for the LSH bench")
    ap.add_argument("--sizes", default="10000,100000", help="corpus sizes for peak memory")
    ap.add_argument("--big", action="store_true", help="also measure 1e6 documents")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"maxrss unit KiB ({resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} now)")
    bench_signatures(make_docs(args.docs))
    bench_lsh(make_docs(args.lsh_docs, seed=1))
    sizes = [int(s) for s in args.sizes.split(",") if s]
    bench_memory(sizes + ([1_000_000] if args.big else []))


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
