"""Run every comparison bench in bench/ with sizes that fit in minutes, and rewrite
bench/RESULTS.md with each ratio, its input, the machine, the date and the exact command.

    PYTHONPATH=. .venv/bin/python bench/run_all.py                # all, ~10-15 min on 2 cores
    PYTHONPATH=. .venv/bin/python bench/run_all.py --only minhash tokenize --out /tmp/r.md

Each bench runs in its own process (``python bench/<script> <args>``, the command printed in
RESULTS.md), so a crash or a slow peer in one does not stop the others. A bench whose script is
not in bench/ (written on another branch) is listed as skipped. The summary keeps the lines of
each bench's output that state a ratio; the full output follows.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
PYDOCS = "/usr/share/doc/python3.11/html/_sources"


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    args: tuple[str, ...]
    what: str  # comparison and input, one line


BENCHES = [
    Bench("core", "bench_core.py", ("--docs", "20000"),
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


def machine() -> dict[str, str]:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    ram = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(line.split()[1] for line in f if line.startswith("MemTotal")))
        ram = f"{kb / 2**20:.1f} GiB"
    except (OSError, StopIteration):
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                                capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "?"
    return {"nproc": str(os.cpu_count()), "cpu": cpu, "ram": ram,
            "python": platform.python_version(), "commit": commit,
            "load": " ".join(f"{x:.1f}" for x in os.getloadavg())}


def ratio_lines(output: str) -> list[str]:
    """The lines of a bench's output that state a comparison."""
    keep = []
    for line in output.splitlines():
        s = line.strip()
        if not s or s.startswith(("20", "WARNING", "INFO")):  # log lines
            continue
        low = s.lower()
        if ("ratio" in low or "byte-identical" in low or "bit-identical" in low
                or "bytes per document" in low
                or re.search(r"\d\.\d+x\b", s)):
            keep.append(s)
    return keep


def run(b: Bench, timeout: int) -> tuple[str, str, float, int | None]:
    cmd = ["python", f"bench/{b.script}", *b.args]
    shown = "PYTHONPATH=. .venv/bin/" + shlex.join(cmd)
    env = {**os.environ, "PYTHONPATH": REPO, "TOKENIZERS_PARALLELISM": "false"}
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, *cmd[1:]], cwd=REPO, env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or "") + (
            f"\n[run_all: stopped after {timeout} s]")
        rc = None
    return shown, out, time.perf_counter() - t, rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(BENCH, "RESULTS.md"))
    ap.add_argument("--only", nargs="*", help="names (or prefixes) of the benches to run")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per bench")
    args = ap.parse_args(argv)

    m = machine()
    started = datetime.datetime.now(datetime.UTC)
    rows, details = [], []
    for b in BENCHES:
        if args.only and not any(b.name.startswith(o) for o in args.only):
            continue
        if not os.path.exists(os.path.join(BENCH, b.script)):
            print(f"[run_all] {b.name}: bench/{b.script} is not in this checkout; skipped",
                  flush=True)
            rows.append(f"| {b.name} | {b.what} | skipped: bench/{b.script} not in this "
                        "checkout | | |")
            continue
        print(f"[run_all] {b.name}: bench/{b.script} {' '.join(b.args)}", flush=True)
        shown, out, secs, rc = run(b, args.timeout)
        status = "" if rc == 0 else (" (timed out)" if rc is None else f" (exit {rc})")
        found = ratio_lines(out) or ["(no ratio line printed)"]
        print("\n".join("    " + s for s in found), flush=True)
        cell = "<br>".join(s.replace("|", "\\|") for s in found)
        rows.append(f"| {b.name} | {b.what} | {cell}{status} | `{shown}` | {secs:.0f} s |")
        details.append(f"### {b.name}\n\n`{shown}` ({secs:.0f} s wall{status})\n\n```\n"
                       f"{out.strip()}\n```\n")
    total = (datetime.datetime.now(datetime.UTC) - started).total_seconds()

    md = [
        "# Benchmark results",
        "",
        "Written by `PYTHONPATH=. .venv/bin/python bench/run_all.py` "
        f"({'--only ' + ' '.join(args.only) if args.only else 'all benches'}); do not edit by "
        "hand. Every ratio compares curator with the named peer measured in the same process "
        "run, on the same input (> 1: curator faster; most benches use CPU time of one "
        "process, so the figures are per core).",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC, {total / 60:.1f} min in all",
        f"- machine: {m['nproc']} CPUs ({m['cpu']}), {m['ram']} RAM, Python {m['python']}, "
        f"commit {m['commit']}",
        f"- load average at the start: {m['load']} — the machine is **shared** with other "
        "jobs, so absolute figures move between runs; ratios measured side by side move less",
        "",
        "| bench | comparison and input | result | command | time |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
        "## Full output",
        "",
        *details,
    ]
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(md).rstrip() + "\n")
    print(f"[run_all] wrote {args.out} ({total / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
