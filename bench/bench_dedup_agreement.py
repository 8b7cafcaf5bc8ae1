"""FineWeb-preset fuzzy dedup vs datatrove's MinHash pipeline on a real corpus.

    python bench/bench_dedup_agreement.py [--max-docs N] [--copies 0.08] [--seed 0]

Corpus: the paragraphs (>= 8 words) of the Python 3.11 documentation sources shipped by Debian's
``python3.11-doc`` (``/usr/share/doc/python3.11/html/_sources``; ``apt-get install
python3.11-doc``), plus planted near-duplicates: copies of random paragraphs with the small
edits that web copies show (case, punctuation, quotes, numbers, diacritics, spacing, and for
some one word more or less), so normalisation decides whether they are found.

Both tools run FineWeb's settings: word 5-grams, 14 buckets x 8 hashes, seed 1; datatrove's
``MinhashDedupSignature -> MinhashDedupBuckets -> MinhashDedupCluster -> MinhashDedupFilter``
in process, curator's ``read_jsonl ->
fuzzy_dedup`` through the ``curator`` command (so its time includes reading and writing the
shards). Printed: removed documents per tool, the Jaccard of the removal sets (ids), and wall
times; curator runs ``normalize: fineweb, scheme: datatrove`` (FineWeb's recipe: the same
signatures bit for bit) and, for comparison, ``fineweb`` with its own ``legacy`` hashing and the
old ``basic`` normalisation.
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]
DOCS = "/usr/share/doc/python3.11/html/_sources"
BANDS, ROWS, SEED = 14, 8, 1
#: curator runs: (normalize, scheme); the first is FineWeb's exact recipe
CONFIGS = [("fineweb", "datatrove"), ("fineweb", "legacy"), ("basic", "legacy")]


def load_paragraphs(max_docs: int) -> list[str]:
    files = sorted(glob.glob(f"{DOCS}/**/*.txt", recursive=True))
    if not files:
        sys.exit(f"no corpus: {DOCS} is missing; apt-get install python3.11-doc")
    out = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for p in re.split(r"\n\s*\n", fh.read()):
                if len(p.split()) >= 8:
                    out.append(p.strip())
    return out[:max_docs]


_ACCENT = str.maketrans({"e": "é", "a": "à", "o": "ö", "u": "ü", "c": "ç", "i": "ï"})


def edit(text: str, rng: random.Random) -> str:
    """A copy as a scraper or a mirror would produce it: 2-3 small edits."""
    ops = rng.sample(["case", "punct", "quotes", "numbers", "accents", "space", "word"],
                     rng.randint(2, 3))
    for op in ops:
        if op == "case":
            text = text.upper() if rng.random() < 0.3 else text.title()
        elif op == "punct":
            text = text.replace(", ", " - ").replace(". ", "! ").replace(":", ";")
        elif op == "quotes":
            text = re.sub(r"``|''|\"", lambda m: rng.choice(["“", "”", "«", "'"]), text)
            text = text.replace("(", "[").replace(")", "]")
        elif op == "numbers":
            text = re.sub(r"\d+", lambda m: str(rng.randrange(10 ** len(m.group()))), text)
        elif op == "accents":
            words = text.split(" ")
            for i in rng.sample(range(len(words)), max(1, len(words) // 6)):
                words[i] = words[i].translate(_ACCENT)
            text = " ".join(words)
        elif op == "space":
            text = re.sub(r" ", lambda m: rng.choice([" ", "  ", "\n", " \t"]), text)
        elif op == "word":
            words = text.split(" ")
            i = rng.randrange(len(words))
            if rng.random() < 0.5 and len(words) > 20:
                del words[i]
            else:
                words.insert(i, rng.choice(["also", "really", "simply", "now"]))
            text = " ".join(words)
    return text


def build_corpus(max_docs: int, copies: float, seed: int) -> list[dict]:
    rng = random.Random(seed)
    paras = load_paragraphs(max_docs)
    docs = [{"id": f"p{i}", "text": t} for i, t in enumerate(paras)]
    for k, i in enumerate(rng.sample(range(len(paras)), int(len(paras) * copies))):
        docs.append({"id": f"p{i}-copy{k}", "text": edit(paras[i], rng)})
    rng.shuffle(docs)
    return docs


def run_datatrove(docs: list[dict], tmp: str) -> tuple[set[str], float]:
    import xxhash
    from datatrove.data import Document
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.utils.hashing import HashConfig

    cfg = MinhashConfig(n_grams=5, num_buckets=BANDS, hashes_per_bucket=ROWS, seed=SEED,
                        hash_config=HashConfig(precision=64, hash_fc="xxhash"))
    sigs, bkts, rem = (os.path.join(tmp, d) for d in ("sigs", "buckets", "remove"))
    t = time.perf_counter()
    step = MinhashDedupSignature(sigs, cfg, language="en")
    # datatrove hands str to xxhash; xxhash >= 4 wants bytes (same digest for UTF-8)
    step._hash_func = lambda s: xxhash.xxh64_intdigest(s.encode("utf-8"))
    step.run(iter(Document(text=d["text"], id=d["id"]) for d in docs), rank=0, world_size=1)
    for r in range(BANDS):
        MinhashDedupBuckets(sigs, bkts, config=cfg).run(rank=r, world_size=BANDS)
    MinhashDedupCluster(bkts, rem, config=cfg).run(world_size=1)
    kept = {d.id for d in MinhashDedupFilter(rem).run(
        iter(Document(text=d["text"], id=d["id"]) for d in docs), rank=0, world_size=1)}
    dt = time.perf_counter() - t
    return {d["id"] for d in docs} - kept, dt


def run_curator(docs: list[dict], tmp: str, normalize: str, scheme: str, shards: int = 4
                ) -> tuple[set[str], float]:
    data = Path(tmp) / "data"
    if not data.exists():
        data.mkdir(parents=True)
        for k in range(shards):  # contiguous slices: shard order = input order
            n = -(-len(docs) // shards)
            with open(data / f"part{k}.jsonl", "wb") as f:
                for d in docs[k * n:(k + 1) * n]:
                    f.write(orjson.dumps(d) + b"\n")
    work = Path(tmp) / f"work-{normalize}-{scheme}"
    yaml = Path(tmp) / f"{normalize}-{scheme}.yaml"
    yaml.write_text(
        f"name: agreement\nwork_dir: {work}\nexecutor: {{type: local}}\nprogress: 'off'\n"
        f"report: false\nstages:\n  - read_jsonl: {{paths: '{data}/part*.jsonl'}}\n"
        f"  - fuzzy_dedup: {{shingle: word, ngram: 5, num_perm: {BANDS * ROWS}, bands: {BANDS},"
        f" rows: {ROWS}, seed: {SEED}, scheme: {scheme}, normalize: {normalize}}}\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "curator", "run", str(yaml)], env=env,
                       capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode:
        sys.exit(f"curator failed:\n{r.stderr[-3000:]}")
    import zstandard

    removed = set()
    for f in sorted((work / "rejected" / "fuzzy_dedup").glob("*.jsonl.zst")):
        with open(f, "rb") as fh:
            raw = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
        removed.update(orjson.loads(line)["id"] for line in raw.splitlines())
    return removed, dt


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-docs", type=int, default=100_000)
    ap.add_argument("--copies", type=float, default=0.08, help="planted copies per document")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    docs = build_corpus(args.max_docs, args.copies, args.seed)
    planted = sum("-copy" in d["id"] for d in docs)
    print(f"corpus: {len(docs)} documents ({planted} planted near-duplicates) from {DOCS}, "
          f"{sum(len(d['text']) for d in docs) / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        dt_removed, dt_time = run_datatrove(docs, tmp)
        res = {f"{n}, {s}": run_curator(docs, tmp, n, s) for n, s in CONFIGS}
    print(f"\n{'':44s}{'removed':>9s}{'Jaccard vs datatrove':>22s}{'time s':>9s}")
    print(f"{'datatrove MinhashDedup* (4 steps)':44s}{len(dt_removed):9d}{'':>22s}"
          f"{dt_time:9.1f}")
    for name, (removed, t) in res.items():
        print(f"{'curator fuzzy_dedup ' + name:44s}{len(removed):9d}"
              f"{jaccard(removed, dt_removed):22.3f}{t:9.1f}")
    fw = res["fineweb, datatrove"][0]
    ratio = dt_time / res["fineweb, datatrove"][1]
    print(f"\nfineweb, datatrove: both {len(fw & dt_removed)}, only curator "
          f"{len(fw - dt_removed)}, only datatrove {len(dt_removed - fw)}; time datatrove / "
          f"curator: {ratio:.1f}x (machine shared; curator's time includes process start, "
          "reading and writing the shards)")


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
