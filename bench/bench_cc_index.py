"""cc_index's index scan, run on demand (not a test): how fast and in how much memory a
``where`` picks rows out of a Common Crawl-shaped Parquet index, against loading it whole.

The index is synthetic but shaped like Common Crawl's (5,000 domains, six language lists,
one PDF in seven, one 404 in nine, 20,000 records per WARC file, row groups of 100,000 rows).
Each way runs in a fresh process; peak RSS is that process's (VmHWM), imports included.

    python bench/bench_cc_index.py --rows 2000000
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

from bench.common import bench_main

WHERE = ("url_host_registered_domain IN ('site7.com', 'site42.com') AND content_languages "
         "LIKE '%eng%' AND fetch_status = 200 AND content_mime_detected = 'text/html'")


def build(path: str, n: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    doms = [f"site{i}.com" for i in range(5000)]
    langs = ["eng", "deu,eng", "fra", "rus", "zho", "eng,fra"]
    t = pa.table({
        "url": [f"https://www.{doms[i % 5000]}/p{i}" for i in range(n)],
        "url_host_registered_domain": [doms[i % 5000] for i in range(n)],
        "content_mime_detected": ["text/html" if i % 7 else "application/pdf" for i in range(n)],
        "content_languages": [langs[i % 6] for i in range(n)],
        "fetch_status": pa.array([200 if i % 9 else 404 for i in range(n)], pa.int16()),
        "warc_filename": [f"crawl-data/x/{i // 20000:05d}.warc.gz" for i in range(n)],
        "warc_record_offset": pa.array([(i % 20000) * 30000 for i in range(n)], pa.int64()),
        "warc_record_length": pa.array([25000] * n, pa.int32()),
    })
    pq.write_table(t, path, row_group_size=100_000)


def measure(path: str, way: str) -> dict:
    import pyarrow.dataset as ds

    from curator.acquire.cc_index import LOCATION, parse_where

    t0 = time.perf_counter()
    data = ds.dataset(path, format="parquet")
    if way == "cc_index":
        expr = parse_where(WHERE).compile(data.schema)
        rows = []
        for b in data.to_batches(columns=list(LOCATION), filter=expr, batch_readahead=4,
                                 fragment_readahead=2):
            rows.extend(zip(*[b.column(c).to_pylist() for c in LOCATION], strict=True))
        chosen = len(rows)
    else:  # load the whole index, then filter
        chosen = data.to_table().filter(parse_where(WHERE).compile(data.schema)).num_rows
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"way": way, "chosen": chosen, "wall_s": round(time.perf_counter() - t0, 2),
            "cpu_s": round(ru.ru_utime + ru.ru_stime, 2), "peak_rss_mib": _hwm_mib()}


def _hwm_mib() -> int:
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not inherited from the forked
    parent across exec)."""
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) // 1024 for ln in f if ln.startswith("VmHWM:"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--child", nargs=2, metavar=("PATH", "WAY"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(measure(*a.child)))
        return
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "index.parquet")
        build(path, a.rows)
        print(f"index: {a.rows} rows, {os.path.getsize(path) / 1e6:.1f} MB")
        for way in ("cc_index", "whole"):
            out = subprocess.run([sys.executable, __file__, "--child", path, way],
                                 capture_output=True, text=True, check=True).stdout
            print(out.strip())


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
