"""MinHash signatures, text in -> signatures out, MB/s per core: curator (compiled kernels and
the numpy fallback) against rensa (the fastest MinHash on PyPI) and datasketch, side by side
in one run on the same real documents, next to the physical limit of one pass over the text.

Input: the reStructuredText sources of the Python 3.11 documentation (Debian package
``python3.11-doc``, PSF licence; ``scripts/setup.sh`` installs it), cut at paragraph breaks
into documents of about 10 KB. 128 permutations; word 5-grams and character 24-grams; both
permutation schemes (``affine32``, datasketch >= 2's default, and ``legacy``, the one
datasketch < 2, NeMo Curator and datatrove use).

Every figure counts the whole job: normalisation, shingling, hashing and the minimum. rensa
and datasketch take a list of shingles per document, built here in Python (lower-case,
whitespace collapsed like curator, 5-word / 24-character windows) as their users build them.
``rensa (prehashed)`` is rensa fed curator's own shingle hashes, i.e. its kernel alone;
rensa's R-MinHash is a different sketch (bucketed "fast similarity sketching", not k
independent permutations), so its signatures are not comparable to datasketch's, while
curator's are bit-identical to datasketch's for the same scheme and seed (checked here).
Times are CPU seconds of this process (``time.process_time``), best of ``--repeat``.

    PYTHONPATH=. python bench/bench_minhash.py                 # ~1,200 documents, 11 MB
    PYTHONPATH=. python bench/bench_minhash.py --docs 300 --repeat 2
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from bench.common import bench_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from curator.dedup.minhash import (  # noqa: E402
    MinHasher,
    kernels,
    normalize,
    shingle_hashes,
)

CORPUS = "/usr/share/doc/python3.11/html/_sources"
NUM_PERM, SEED = 128, 1
SHINGLES = (("word", 5), ("char", 24))
SCHEMES = ("affine32", "legacy")


def load_corpus(root: str, target: int = 10_000, limit: int | None = None) -> list[str]:
    """Documents of about ``target`` characters: each source file cut at blank lines."""
    files = sorted(glob.glob(os.path.join(root, "**", "*.txt"), recursive=True))
    if not files:
        sys.exit(f"no documentation sources under {root}: apt-get install python3.11-doc "
                 "(or pass --corpus DIR with .txt files)")
    docs: list[str] = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        cur: list[str] = []
        size = 0
        for para in text.split("\n\n"):
            cur.append(para)
            size += len(para) + 2
            if size >= target:
                docs.append("\n\n".join(cur))
                cur, size = [], 0
        if size > target // 5:
            docs.append("\n\n".join(cur))
        if limit and len(docs) >= limit:
            return docs[:limit]
    return docs


def best_cpu(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def word_shingles(text: str, n: int) -> list[str]:
    w = normalize(text).split()
    return [" ".join(w[i:i + n]) for i in range(max(1, len(w) - n + 1))]


def char_shingles(text: str, n: int) -> list[str]:
    t = normalize(text)
    return [t[i:i + n] for i in range(max(1, len(t) - n + 1))]


def cold_start() -> tuple[float, float]:
    """Seconds to the first signature in a fresh process: with an empty numba cache (compile)
    and again with the cache it left (load)."""
    code = ("import time; t = time.perf_counter(); "
            "from curator.dedup.minhash import MinHasher; "
            "[MinHasher(16, 1, n, k, scheme=s)(['some text here ' * 20, 'ü ' * 30]) "
            "for k, n in (('word', 5), ('char', 24)) for s in ('affine32', 'legacy')]; "
            "print(time.perf_counter() - t)")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPATH": REPO, "NUMBA_CACHE_DIR": cache}
        out = [float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                    capture_output=True, text=True).stdout)
               for _ in range(2)]
    return out[0], out[1]


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=CORPUS, help="folder of .txt files")
    ap.add_argument("--docs", type=int, default=0, help="at most this many documents (0: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--datasketch-docs", type=int, default=40,
                    help="datasketch is ~100x slower: timed on this many documents")
    args = ap.parse_args(argv)

    import rensa
    import xxhash
    from datasketch import MinHash

    if kernels() is None:
        sys.exit("numba is not installed: pip install -e '.[dedup]'")
    docs = load_corpus(args.corpus, limit=args.docs or None)
    data = [d.encode() for d in docs]
    mb = sum(map(len, data)) / 1e6
    few = docs[:args.datasketch_docs]
    few_mb = sum(len(d.encode()) for d in few) / 1e6
    print(f"{len(docs)} documents of the Python 3.11 docs ({args.corpus}), {mb:.1f} MB, "
          f"{mb * 1e6 / len(docs) / 1e3:.1f} KB each on average; {NUM_PERM} permutations; "
          f"CPU time of one process, best of {args.repeat}\n")
    rate: dict[str, float] = {}
    section = ""

    def row(name: str, dt: float, size: float = mb) -> None:
        rate[f"{section}{name}"] = size / dt
        print(f"  {name:44s} {size / dt:9.1f} MB/s")

    print("single pass over the text (the physical limit):")
    row("utf-8 encode + xxh3_64", best_cpu(lambda: [xxhash.xxh3_64_intdigest(d.encode())
                                                    for d in docs], args.repeat))
    row("numpy frombuffer(utf-8).sum()",
        best_cpu(lambda: [np.frombuffer(b, np.uint8).sum() for b in data], args.repeat))
    row("normalize() alone (split, join, lower)",
        best_cpu(lambda: [normalize(d) for d in docs], args.repeat))

    identical = True
    for kind, n in SHINGLES:
        section = f"{kind} {n}-grams: "
        print(f"\n{kind} {n}-grams:")
        for scheme in SCHEMES:
            h = MinHasher(NUM_PERM, SEED, n, kind, scheme=scheme)  # type: ignore[arg-type]
            h(docs[:2])  # compile or load the kernels outside the timing
            row(f"curator {scheme}", best_cpu(lambda h=h: h(docs), args.repeat))
            hn = MinHasher(NUM_PERM, SEED, n, kind, scheme=scheme,  # type: ignore[arg-type]
                           compiled=False)
            row(f"curator {scheme} (numpy fallback)", best_cpu(lambda hn=hn: hn(docs), 1))
            identical &= bool(np.array_equal(h(docs), hn(docs)))
            sig = h(few[:5])
            for text, s in zip(few[:5], sig):  # datasketch fed curator's shingle hashes
                hv, _ = shingle_hashes([text], ngram=n, kind=kind)  # type: ignore[arg-type]
                m = MinHash(num_perm=NUM_PERM, seed=SEED, hashfunc=int, scheme=scheme)
                m.update_batch(hv.tolist())
                identical &= bool(np.array_equal(m.hashvalues.astype(np.uint32), s))
        shingle = word_shingles if kind == "word" else char_shingles
        row("rensa RMinHash (Python shingles)", best_cpu(
            lambda shingle=shingle, n=n: rensa.RMinHash.digest_matrix_from_token_sets(
                [shingle(d, n) for d in docs], NUM_PERM, SEED), args.repeat))

        def prehashed(kind=kind, n=n) -> None:
            hv, off = shingle_hashes(docs, ngram=n, kind=kind)  # type: ignore[arg-type]
            rows = np.append(off, hv.shape[0]).astype(np.uint64)
            rensa.RMinHash.digest_matrix_from_flat_token_hashes(hv.astype(np.uint64), rows,
                                                                NUM_PERM, SEED)

        row("rensa RMinHash (prehashed by curator)", best_cpu(prehashed, args.repeat))

        def ds(shingle=shingle, n=n) -> None:
            for d in few:
                m = MinHash(num_perm=NUM_PERM, seed=SEED, scheme="legacy")
                m.update_batch([s.encode() for s in shingle(d, n)])

        row(f"datasketch legacy, sha1 ({len(few)} docs)", best_cpu(ds, 1), few_mb)

    warm = cold_start()
    print(f"\nnumba cold start (fresh process, import + first signatures of all 4 kernels): "
          f"{warm[0]:.2f} s with an empty cache (compile), {warm[1]:.2f} s with the cache")
    print(f"curator signatures bit-identical to datasketch (same scheme/seed) and compiled == "
          f"numpy fallback: {identical}\n")
    limit = rate["utf-8 encode + xxh3_64"]
    for kind, n in SHINGLES:
        sec = f"{kind} {n}-grams: "
        rensa_py = rate[sec + "rensa RMinHash (Python shingles)"]
        rensa_pre = rate[sec + "rensa RMinHash (prehashed by curator)"]
        ds = rate[sec + f"datasketch legacy, sha1 ({len(few)} docs)"]
        for scheme in SCHEMES:
            ours = rate[sec + f"curator {scheme}"]
            print(f"ratio curator {scheme} / rensa, {kind} {n}-grams: {ours / rensa_py:.2f}x "
                  f"(vs rensa prehashed {ours / rensa_pre:.2f}x, vs datasketch "
                  f"{ours / ds:.0f}x, {ours / limit:.1%} of the single-pass limit)")
    return rate


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
