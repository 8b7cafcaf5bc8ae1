"""The memory bound of ``megatron_shards``' seeded shuffle, run on demand (not a test).

Synthetic token parts (random token ids, 1 to 200 tokens a document, about 10% empty) stand in
for the ``tokenize`` phase's output, so only the shuffle is measured: its ``keys`` and ``sort``
phases (``curator/tokenize/shuffle.py``) run in a fresh process per setting, which reports its
peak RSS (``ru_maxrss``), its CPU time and the documents per second; the output is checked to
hold every document once, in key order. The same ``--memory-mb`` at a tenth of the documents
and at all of them shows the bound: more documents make more key ranges, not more memory.

    python -m bench.bench_shuffle --docs 100000                        # a check that it works
    python -m bench.bench_shuffle --docs 1000000 --memory-mb 16        # the bound, 1e6 documents

Each run leaves its rows in a result file under bench/results/bench_shuffle/ (bench/common.py).
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
from typing import Any

import numpy as np

from bench.common import bench_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Ctx:
    """What ``shuffle_groups`` needs of a global stage's context, run in this process."""

    def __init__(self, stage_dir: str) -> None:
        self.stage_dir = stage_dir

    def map(self, fn: Any, items: list[Any], **_kw: Any) -> list[Any]:
        return [fn(i) for i in items]


def make_parts(folder: str, docs: int, parts: int, seed: int = 0) -> list[str]:
    from curator.tokenize import megatron

    rng = np.random.default_rng(seed)
    out = []
    per = -(-docs // parts)
    for p in range(parts):
        n = min(per, docs - p * per)
        prefix = os.path.join(folder, f"part{p:03d}")
        w = megatron.IndexedWriter(prefix, np.uint16)
        with open(prefix + ".ids", "wb") as ids:
            for lo in range(0, n, 10_000):
                k = min(10_000, n - lo)
                lens = rng.integers(1, 201, k)
                lens[rng.random(k) < 0.1] = 0
                toks = rng.integers(0, 50_000, int(lens.sum()), dtype=np.uint16)
                w.add_batch(toks, lens[lens > 0], (lens > 0).astype(np.int64))
                ids.write(b"".join(b"doc-%d-%d\n" % (p, lo + i) for i in range(k)))
        w.close()
        out.append(prefix)
    return out


def child(folder: str, docs: int, memory_mb: float, seed: int) -> dict[str, Any]:
    """One shuffle in this process: its numbers."""
    from curator.tokenize import megatron
    from curator.tokenize.shuffle import buckets_for, doc_key, shuffle_groups

    parts = sorted(os.path.join(folder, f[:-4]) for f in os.listdir(folder) if f.endswith(".idx"))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    out = shuffle_groups(
        _Ctx(os.path.join(folder, "stage")),
        {"all": parts},
        {"all": docs},
        names={"all": "all"},
        seed=seed,
        memory_mb=memory_mb,
        dtype="uint16",
    )["all"]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # check: every document once, in key order, tokens unchanged in total
    ids = [line.rstrip(b"\n") for p in out for line in open(p + ".ids", "rb")]  # noqa: SIM115
    keys = [doc_key(seed, i) for i in ids]
    tokens = sum(megatron.read_index(p + ".idx").tokens for p in out)
    return {
        "docs": docs,
        "memory_mb": memory_mb,
        "ranges": buckets_for(docs, memory_mb),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "docs_per_cpu_s": round(docs / max(cpu, 1e-9)),
        "peak_rss_mb": round(peak / 1024, 1),
        "rss_before_mb": round(base / 1024, 1),
        "all_once": len(ids) == docs == len(set(ids)),
        "in_key_order": keys == sorted(keys),
        "tokens": tokens,
    }


def main() -> tuple[dict[str, str], dict[str, object]] | None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--parts", type=int, default=16)
    ap.add_argument("--memory-mb", type=float, default=16)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], int(a.child[1]), float(a.child[2]), a.seed)))
        return
    rows = []
    for n in sorted({max(1, a.docs // 10), a.docs}):
        with tempfile.TemporaryDirectory() as tmp:
            make_parts(tmp, n, a.parts)
            p = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--seed",
                    str(a.seed),
                    "--child",
                    tmp,
                    str(n),
                    str(a.memory_mb),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append(json.loads(p.stdout))
            print(json.dumps(rows[-1]))
    figures = {f"{r['docs']:,} docs, {r['memory_mb']:g} MB": f"peak {r['peak_rss_mb']} MB, "
               f"{r['docs_per_cpu_s']:,} docs/CPU-s, all once and in order: "
               f"{r['all_once'] and r['in_key_order']}" for r in rows}
    return figures, {"rows": rows}


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
