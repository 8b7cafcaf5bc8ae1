"""Reader-only throughput of ``iter_warc`` (no extraction): pages per CPU second of each
reader on one WARC, for this checkout and a baseline checkout of curator, measured in the same
run, alternating, each in a fresh process:

    python bench/warc_reader.py --warc /tmp/full/CC-FULL-00000.warc.gz --baseline main \\
        --repeat 3 --readers fastwarc warcio

``--baseline`` is a git revision of this repository (exported with ``git archive`` into a
temporary folder) or a folder holding another checkout. The full-size WARC comes from
bench/warc_full.py (``--dir`` keeps it). The machine may be shared: CPU seconds are the
steadier figure, and the spread over ``--repeat`` runs is printed with the median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import json, resource, sys, time, tempfile
from curator.acquire.warc import iter_warc
from curator.core.context import ShardContext
path, reader = sys.argv[1], sys.argv[2]
ctx = ShardContext(shard="s", stage_id="t", work_dir=tempfile.mkdtemp(), artifacts={})
u0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
n = b = 0
for rec in iter_warc(path, ctx, reader=reader):
    n += 1
    b += len(rec.body)
u1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)
print(json.dumps({"pages": n, "html_mb": round(b / 1e6, 1), "cpu_s": round(cpu, 2),
                  "wall_s": round(time.perf_counter() - t0, 2),
                  "counters": dict(ctx.counters)}))
"""


def export(rev: str, into: Path) -> Path:
    """``rev``'s ``curator/`` package (git archive) under ``into``; a folder is used as is."""
    if os.path.isdir(rev):
        return Path(rev)
    data = subprocess.run(["git", "-C", str(REPO), "archive", rev, "curator"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as t:
        t.extractall(into, filter="data")
    return into


def run(tree: Path, warc: str, reader: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, "-c", PROBE, warc, reader], env=env, cwd=str(tree),
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warc", required=True)
    ap.add_argument("--baseline", default="main", help="git revision or folder")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--readers", nargs="+", default=["fastwarc"])
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"baseline": export(args.baseline, Path(tmp)), "this": REPO}
        rows: dict[tuple[str, str], list[dict]] = {}
        for i in range(args.repeat):
            for reader in args.readers:
                for name, tree in trees.items():
                    res = run(tree, args.warc, reader)
                    rows.setdefault((name, reader), []).append(res)
                    print(f"run {i + 1} {name:8s} {reader:8s} pages {res['pages']} "
                          f"cpu {res['cpu_s']:.2f}s wall {res['wall_s']:.2f}s "
                          f"-> {res['pages'] / res['cpu_s']:.0f} pages/CPU-s", flush=True)
    print(f"\n{os.path.basename(args.warc)}: pages per CPU second, median (min-max) of "
          f"{args.repeat}")
    for (name, reader), rs in rows.items():
        rates = [r["pages"] / r["cpu_s"] for r in rs]
        print(f"  {name:8s} {reader:8s} {statistics.median(rates):8.0f} "
              f"({min(rates):.0f}-{max(rates):.0f})  pages {rs[0]['pages']}  "
              f"CPU s {[r['cpu_s'] for r in rs]}")
    for reader in args.readers:
        b = statistics.median(r["pages"] / r["cpu_s"] for r in rows[("baseline", reader)])
        t = statistics.median(r["pages"] / r["cpu_s"] for r in rows[("this", reader)])
        print(f"  {reader}: this / baseline = {t / b:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
