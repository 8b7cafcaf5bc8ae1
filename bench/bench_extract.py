"""Extraction throughput: each HTML extractor on the same WARC input, and our whole Common
Crawl path (WARC -> charset -> trafilatura) against datatrove's WarcReader -> Trafilatura on
the same files, in the same run, on one core each.

    python bench/bench_extract.py                 # the bundled sample WARCs, repeated 4x
    python bench/bench_extract.py --warc 'crawl/*.warc.gz' --repeat 1

Prints docs/s and MB/s (of HTML input) per core, and the ratio to datatrove.
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import sys
import tempfile
import time

from bench.common import bench_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from curator.acquire.read_warc import ReadWarc  # noqa: E402
from curator.acquire.warc import iter_warc  # noqa: E402
from curator.core.context import ShardContext  # noqa: E402
from curator.core.stage import ShardSpec  # noqa: E402
from curator.extract.charset import decode_html  # noqa: E402
from curator.extract.extract_html import EXTRACTORS, extract_text  # noqa: E402

SAMPLE = os.path.join(REPO, "data/sample/commoncrawl/crawl-data/CC-MAIN-2024-10/segments/"
                      "*/warc/*.warc.gz")


def _ctx(tmp: str) -> ShardContext:
    return ShardContext(shard="bench", stage_id="bench", work_dir=tmp, artifacts={},
                        save_rejected=False)


def make_input(pattern: str, repeat: int, tmp: str) -> list[str]:
    """Copies of the input WARCs (repeat times) in one folder, so both sides read the same."""
    files = sorted(glob.glob(pattern))
    if not files:
        sys.exit(f"no WARC matches {pattern}")
    d = os.path.join(tmp, "warc")
    os.makedirs(d)
    out = []
    for r in range(repeat):
        for f in files:
            dst = os.path.join(d, f"{r:03d}-{os.path.basename(f)}")
            shutil.copy(f, dst)
            out.append(dst)
    return out


def bench_extractors(files: list[str], tmp: str) -> None:
    ctx = _ctx(tmp)
    pages = []
    for f in files:
        for rec in iter_warc(f, ctx):
            if rec.body.strip():
                pages.append(decode_html(rec.body, rec.content_type)[0])
    mb = sum(len(p.encode()) for p in pages) / 1e6
    print(f"extractors on {len(pages)} HTML pages ({mb:.1f} MB), per core (CPU seconds of "
          "this process, so other load on the machine does not count):")
    base = None
    for name in EXTRACTORS:
        extract_text(pages[0], name)  # warm-up (imports, stop lists)
        t0 = time.process_time()
        chars = sum(len(extract_text(p, name, timeout_s=30)) for p in pages)
        dt = time.process_time() - t0
        base = base or dt
        print(f"  {name:12s} {len(pages) / dt:8.1f} docs/s {mb / dt:7.2f} MB/s "
              f"{chars / 1e6:6.2f} M chars out   x{base / dt:.1f} vs trafilatura")


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (datatrove extracts in a child)."""
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + c.ru_utime + c.ru_stime


def bench_cc_path(files: list[str], tmp: str) -> tuple[float, float, int]:
    src = ReadWarc.from_params({"paths": files, "extractor": "trafilatura", "timeout_s": 10})
    ctx = _ctx(tmp)
    t0, c0 = time.perf_counter(), _cpu()
    n = 0
    for i, f in enumerate(files):
        for _ in src.read(ShardSpec(f"s{i}", {"url": f}), ctx):
            n += 1
    return time.perf_counter() - t0, _cpu() - c0, n


def bench_datatrove(folder: str) -> tuple[float, float, int]:
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.readers import WarcReader
    from loguru import logger

    logger.remove()

    reader = WarcReader(folder, glob_pattern="*.warc.gz", compression="gzip")
    # Same trafilatura options as ours (deduplicate off: it is cross-document process state).
    extractor = Trafilatura(favour_precision=True, timeout=10, deduplicate=False)
    t0, c0 = time.perf_counter(), _cpu()
    n = sum(1 for d in extractor.run(reader.run(), rank=0, world_size=1) if d.text)
    return time.perf_counter() - t0, _cpu() - c0, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warc", default=SAMPLE, help="glob of .warc.gz files")
    ap.add_argument("--repeat", type=int, default=4)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-extract-")
    try:
        files = make_input(args.warc, args.repeat, tmp)
        mb = sum(os.path.getsize(f) for f in files) / 1e6
        print(f"input: {len(files)} WARC files, {mb:.1f} MB compressed")
        bench_extractors(files, tmp)
        ours, ours_cpu, n1 = bench_cc_path(files, tmp)
        theirs, theirs_cpu, n2 = bench_datatrove(os.path.dirname(files[0]))
        print("whole CC path (WARC -> trafilatura); per core = docs per CPU-second "
              "(datatrove's extractor child process included):")
        for name, wall, cpu, n in (("curator", ours, ours_cpu, n1),
                                   ("datatrove", theirs, theirs_cpu, n2)):
            print(f"  {name:10s} {n:5d} docs  wall {wall:6.2f}s  cpu {cpu:6.2f}s  "
                  f"{n / cpu:6.1f} docs/s/core  {mb / cpu:5.2f} MB/s/core (compressed WARC)")
        print(f"  ratio curator/datatrove per-core throughput: {theirs_cpu / ours_cpu:.2f}x "
              f"(wall-clock: {theirs / ours:.2f}x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
