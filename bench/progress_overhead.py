"""CPU cost per document of the in-shard progress heartbeat (core/progress.py): documents
pulled through ``heartbeat`` against a bare loop over the same list, best of N. The share of
the input read is asked for only when a beat is written, so it must not change this figure.

    .venv/bin/python bench/progress_overhead.py --docs 1000000 --repeat 7
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from bench.common import bench_main
from curator.base.document import Document
from curator.core.progress import heartbeat


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    docs = [Document(str(i), f"document number {i} with some words") for i in range(a.docs)]
    path = os.path.join(tempfile.mkdtemp(), "stages", "s", "_progress", "x.json")

    def bare() -> None:
        for _ in docs:
            pass

    def beat() -> None:
        for _ in heartbeat(iter(docs), path):
            pass

    best = {}
    for name, fn in (("bare loop", bare), ("heartbeat", beat)):
        times = []
        for _ in range(a.repeat):
            t = time.process_time()
            fn()
            times.append(time.process_time() - t)
        best[name] = min(times)
        print(f"{name}: {best[name]:.3f} CPU s for {a.docs:,} documents")
    per = (best["heartbeat"] - best["bare loop"]) / a.docs * 1e9
    print(f"heartbeat: {per:.0f} ns per document")


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
