"""Core overhead: read JSONL -> a trivial filter -> write JSONL, curator vs datatrove, same input,
same machine, one process each, in one run. Prints docs/s and the ratio.

    .venv/bin/python bench/bench_core.py --docs 200000
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.common import bench_main
from curator import filter


@filter
def long_enough(doc, min_chars: int = 100) -> bool:
    return len(doc.text) >= min_chars


def make_input(d: Path, n: int) -> None:
    rnd = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    with open(d / "in.jsonl", "w") as f:
        for i in range(n):
            text = " ".join(rnd.choice(words) for _ in range(rnd.randint(20, 400)))
            f.write(json.dumps({"id": str(i), "text": text}) + "\n")


def run_curator(d: Path) -> float:
    from curator.core import pipeline as pl
    from curator.core.executors import LocalExecutor
    from curator.core.runner import Runner

    text = (f"name: bench\nwork_dir: {d / 'cw'}\nprogress: off\nreport: false\n"
            "save_rejected: false\nstages:\n"
            f"  - read_jsonl: {{paths: '{d}/in.jsonl', shard_size_mb: 1024}}\n"
            "  - bench.bench_core:long_enough: {}\n"
            "  - write_jsonl: {path: out, compression: none}\n")
    t = time.perf_counter()
    Runner(pl.loads(text), LocalExecutor()).run()
    return time.perf_counter() - t


def run_datatrove(d: Path) -> float:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.filters import LambdaFilter
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    pipe = [JsonlReader(str(d), glob_pattern="in.jsonl"),
            LambdaFilter(lambda doc: len(doc.text) >= 100),
            JsonlWriter(str(d / "dt_out"), compression=None)]
    t = time.perf_counter()
    LocalPipelineExecutor(pipe, tasks=1, workers=1, logging_dir=str(d / "dt_logs")).run()
    return time.perf_counter() - t


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=50_000)
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="bench-core-"))
    try:
        make_input(d, args.docs)
        mb = (d / "in.jsonl").stat().st_size / 1e6
        ours = run_curator(d)
        peer = run_datatrove(d)
        print(f"input: {args.docs} docs, {mb:.1f} MB, one process each")
        print(f"curator   read->filter->write: {args.docs / ours:10,.0f} docs/s ({ours:.2f}s)")
        print(f"datatrove read->filter->write: {args.docs / peer:10,.0f} docs/s ({peer:.2f}s)")
        print(f"ratio curator/datatrove: {peer / ours:.2f}x")
        return {"documents": args.docs, "input_mb": round(mb, 1),
                "curator_docs_per_s": round(args.docs / ours),
                "datatrove_docs_per_s": round(args.docs / peer),
                "ratio_curator_datatrove": round(peer / ours, 2)}
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
