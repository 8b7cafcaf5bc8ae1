"""Run every comparison bench in bench/ with sizes that fit in minutes; each leaves its result
file under bench/results/ (bench/common.py), and bench/RESULTS.md is generated from them.

    python -m bench.run_all                                  # all, ~10-15 min on 2 cores
    python -m bench.run_all --only minhash tokenize

Each bench runs in its own process (``python -m bench.<script> <args>``, the command its result
file records), so a crash or a slow peer in one does not stop the others. A bench whose script
is not in bench/ is listed as skipped.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from bench import results_table
from bench.common import BENCH, REPO, figure_lines

PYDOCS = "/usr/share/doc/python3.11/html/_sources"


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    args: tuple[str, ...]
    what: str  # comparison and input, one line


BENCHES = [
    Bench("core", "bench_core.py", ("--docs", "20000", "--rounds", "7"),
          "read JSONL -> filter -> write JSONL vs datatrove; 20,000 synthetic documents"),
    Bench("extract", "bench_extract.py", ("--repeat", "1"),
          "HTML extractors and WARC -> trafilatura vs datatrove; the bundled sample WARCs "
          "(real Python documentation pages)"),
    Bench("ccpath", "bench_ccpath.py", (),
          "Common Crawl path (WARC -> extraction -> LID -> Gopher -> C4 -> FineWeb) vs "
          "datatrove's FineWeb steps"),
    Bench("extraction_quality", "extraction_quality.py", ("--split", "heldout"),
          "extraction token F1, empty rate and CPU/page of curator's default vs trafilatura's "
          "defaults, datatrove's settings, resiliparse; 251 held-out gold pages (bench/gold)"),
    Bench("dedup_agreement", "bench_dedup_agreement.py", ("--max-docs", "20000"),
          "FineWeb MinHash dedup (normalize: fineweb, scheme: datatrove) vs datatrove's 4 "
          "MinhashDedup steps: removal-set Jaccard and time; Python docs paragraphs with "
          "planted near-copies"),
    Bench("filters", "bench_filters.py", ("--docs", "2000", "--repeat", "2"),
          "Gopher/C4/FineWeb rules and fastText LID vs datatrove; 2,000 synthetic documents"),
    Bench("minhash", "bench_minhash.py", ("--docs", "500", "--repeat", "2"),
          "MinHash 128 perm, text in -> signatures out, vs rensa and datasketch; 500 ~10 KB "
          "documents of the Python 3.11 docs (Debian python3.11-doc)"),
    Bench("dedup", "bench_dedup.py", ("--docs", "1000", "--lsh-docs", "1000", "--sizes",
                                      "10000"),
          "MinHash signatures/s vs datasketch/datatrove, LSH on Redis vs datasketch, fuzzy dedup "
          "peak memory; synthetic documents"),
    Bench("redis_memory", "redis_memory.py",
          ("--n", "100000", "--no-ttl-variant", "--peer-docs", "20000"),
          "Redis memory of fuzzy dedup's redis backend (INFO memory used_memory): bytes per "
          "document in a 3-master cluster, and vs datasketch MinHashLSH(redis storage) on a "
          "plain redis-server; bench/scale.py's synthetic web-like corpus, stage defaults "
          "(9 bands x 13 rows)"),
    Bench("tokenize (real text)", "bench_tokenize.py",
          ("--corpus", PYDOCS, "--docs", "600", "--repeat", "2"),
          "tokenize + Megatron .bin/.idx vs datatrove MegatronDocumentTokenizer, byte-identical "
          "check; 600 ~10 KB documents of the Python 3.11 docs"),
    Bench("tokenize (synthetic)", "bench_tokenize.py", ("--docs", "3000", "--repeat", "2"),
          "as above on 3,000 synthetic English-like documents"),
]


def run(b: Bench, timeout: int) -> tuple[str, float, int | None]:
    """Output, wall seconds and exit status (None: stopped at ``timeout``) of one bench."""
    cmd = [sys.executable, "-m", f"bench.{b.script.removesuffix('.py')}", *b.args]
    env = {**os.environ, "PYTHONPATH": str(REPO), "TOKENIZERS_PARALLELISM": "false"}
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=REPO, env=env, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or "") + (
            f"\n[run_all: stopped after {timeout} s]")
        rc = None
    return out, time.perf_counter() - t, rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", help="names (or prefixes) of the benches to run")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per bench")
    args = ap.parse_args(argv)
    failed = 0
    for b in BENCHES:
        if args.only and not any(b.name.startswith(o) for o in args.only):
            continue
        if not (BENCH / b.script).exists():
            print(f"[run_all] {b.name}: bench/{b.script} is not in this checkout; skipped")
            continue
        print(f"[run_all] {b.name}: python -m bench.{b.script[:-3]} {' '.join(b.args)}",
              flush=True)
        out, secs, rc = run(b, args.timeout)
        status = "" if rc == 0 else (" (timed out)" if rc is None else f" (exit {rc})")
        failed += rc != 0
        print("\n".join("    " + s for s in figure_lines(out) or ["(no figure printed)"]))
        print(f"    {secs:.0f} s{status}", flush=True)
    results_table.main([])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
