"""Quality classifier: model size against held-out accuracy for fastText ``bucket``/``dim``
and quantization, on real text.

High quality: the Wikipedia articles of the bundled dump sample; other: Python documentation
pages (Debian's python3.11-doc HTML, the pages the bundled WARC sample is made of), and, as a
harder task where only word order tells the classes apart, the same Wikipedia text with its
words shuffled ("word salad", which only word bigrams can catch, so hash collisions from a
small ``bucket`` would show). Documents are 60-word windows.

    curator run pipelines/quickstart.yaml --work-dir /tmp/qs      # gives the extracted text
    python bench/quality_model_size.py --work-dir /tmp/qs \
        [--html '/usr/share/doc/python3.11/html/library/*.html']    # Debian python3.11-doc
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import sys
import tempfile
import time

from bench.common import bench_main
from curator.classifiers.quality import HQ, LQ, normalize, train_from_parts
from curator.storage.shards import read_shard

WINDOW = 60


def windows(texts: list[str]) -> list[str]:
    out = []
    for t in texts:
        w = t.split()
        out += [" ".join(w[i:i + WINDOW]) for i in range(0, len(w) - WINDOW + 1, WINDOW)]
    return out


def stage_texts(work_dir: str, stage: str) -> list[str]:
    return [d.text for p in sorted(glob.glob(f"{work_dir}/stages/{stage}/data/*"))
            for d in read_shard(p)]


def html_texts(pattern: str) -> list[str]:
    from curator.extract.extract_html import extract_text

    out = []
    for p in sorted(glob.glob(pattern)):
        with open(p, "rb") as f:
            t = extract_text(f.read().decode("utf-8", "replace"))
        if t:
            out.append(t)
    return out


def write_split(path_tr: str, path_ho: str, hq: list[str], lq: list[str], seed: int) -> None:
    rng = random.Random(seed)
    n = min(len(hq), len(lq))
    rows = [(HQ, t) for t in rng.sample(hq, n)] + [(LQ, t) for t in rng.sample(lq, n)]
    rng.shuffle(rows)
    with open(path_tr, "w") as ftr, open(path_ho, "w") as fho:
        for i, (lab, t) in enumerate(rows):
            (fho if i % 5 == 0 else ftr).write(f"{lab} {normalize(t)}\n")


CONFIGS = [  # (label, params of train_from_parts)
    ("bucket 2M, dim 64 (before)", {"bucket": 2_000_000, "dim": 64}),
    ("bucket 200k, dim 16", {"bucket": 200_000, "dim": 16}),
    ("bucket 100k, dim 32", {"bucket": 100_000, "dim": 32}),
    ("bucket 100k, dim 16", {"bucket": 100_000, "dim": 16}),
    ("bucket 50k, dim 16", {"bucket": 50_000, "dim": 16}),
    ("bucket 100k, dim 16, quantized", {"bucket": 100_000, "dim": 16, "quantize": True}),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work-dir", required=True, help="a finished quickstart work_dir")
    ap.add_argument("--html", default="/usr/share/doc/python3.11/html/library/*.html")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--only", help="run the configs whose label contains this")
    args = ap.parse_args()
    wiki = windows(stage_texts(args.work_dir, "wiki_unicode"))
    docs = windows(html_texts(args.html) if glob.glob(args.html)
                   else stage_texts(args.work_dir, "web_unicode"))
    rng = random.Random(0)
    salad = []
    for t in wiki:
        w = t.split()
        rng.shuffle(w)
        salad.append(" ".join(w))
    half = len(wiki) // 2  # salad is made from the other half of wiki: no shared windows
    tasks = {"wiki vs python docs": (wiki, docs),
             "wiki vs shuffled wiki": (wiki[:half], salad[half:])}
    print(f"documents: wiki {len(wiki)}, python docs {len(docs)} ({WINDOW}-word windows)")
    results = []
    for task, (hq, lq) in tasks.items():
        for label, params in CONFIGS:
            if args.only and args.only not in label:
                continue
            accs, sizes, secs = [], [], []
            for seed in range(args.seeds):
                with tempfile.TemporaryDirectory() as d:
                    tr, ho = os.path.join(d, "p.train"), os.path.join(d, "p.holdout")
                    write_split(tr, ho, hq, lq, seed)
                    t0 = time.perf_counter()
                    r = train_from_parts([tr], [ho], os.path.join(d, "m"), seed=seed,
                                         **params)
                    secs.append(time.perf_counter() - t0)
                    accs.append(r.metrics.accuracy)
                    sizes.append(r.model_bytes)
            row = {"task": task, "config": label, "accuracy": [round(a, 4) for a in accs],
                   "mean_accuracy": round(sum(accs) / len(accs), 4),
                   "model_mb": round(max(sizes) / 1e6, 2),
                   "train_s": round(sum(secs) / len(secs), 2),
                   "holdout_docs": r.metrics.holdout_docs}
            results.append(row)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
