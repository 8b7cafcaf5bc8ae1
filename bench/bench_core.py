"""Core overhead: read JSONL -> a trivial filter -> write JSONL, curator vs datatrove, same input,
same machine, one process, in one run. Prints docs/s and the ratio.

    python -m bench.bench_core --docs 200000 --rounds 5

At 20,000 documents each side takes under a second, and one pair of runs moved the ratio by
+-0.15 between reruns on a quiet machine; so the two alternate for ``--rounds`` rounds (each
round in the other order) and the figures are the medians of wall and CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
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


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _timed(run: Callable[[Path], float], d: Path, out: str) -> tuple[float, float]:
    """One run in a fresh output folder: (wall s, CPU s of this process and its children)."""
    for name in (out, "dt_logs"):
        shutil.rmtree(d / name, ignore_errors=True)
    c = _cpu()
    wall = run(d)
    return wall, _cpu() - c


def main() -> dict[str, float]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="bench-core-"))
    try:
        make_input(d, args.docs)
        mb = (d / "in.jsonl").stat().st_size / 1e6
        ours: list[tuple[float, float]] = []
        peer: list[tuple[float, float]] = []
        for r in range(args.rounds):
            pair = [(ours, run_curator, "cw"), (peer, run_datatrove, "dt_out")]
            for got, run, out in pair if r % 2 == 0 else pair[::-1]:
                got.append(_timed(run, d, out))
        wall_o, cpu_o = (statistics.median(x) for x in zip(*ours, strict=True))
        wall_p, cpu_p = (statistics.median(x) for x in zip(*peer, strict=True))
        print(f"input: {args.docs} docs, {mb:.1f} MB, one process, {args.rounds} rounds "
              "(medians)")
        print(f"curator   read->filter->write: {args.docs / wall_o:10,.0f} docs/s "
              f"({wall_o:.2f} s wall, {cpu_o:.2f} s CPU)")
        print(f"datatrove read->filter->write: {args.docs / wall_p:10,.0f} docs/s "
              f"({wall_p:.2f} s wall, {cpu_p:.2f} s CPU)")
        print(f"ratio curator/datatrove: {wall_p / wall_o:.2f}x wall, {cpu_p / cpu_o:.2f}x CPU")
        return {"documents": args.docs, "input_mb": round(mb, 1), "rounds": args.rounds,
                "curator_docs_per_s": round(args.docs / wall_o),
                "datatrove_docs_per_s": round(args.docs / wall_p),
                "curator_cpu_s": round(cpu_o, 3), "datatrove_cpu_s": round(cpu_p, 3),
                "ratio_curator_datatrove": round(wall_p / wall_o, 2),
                "cpu_ratio_curator_datatrove": round(cpu_p / cpu_o, 2)}
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
