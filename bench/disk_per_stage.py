"""Disk per stage: work_dir bytes per input byte of a pipeline, for one or more curator checkouts.

Runs the quickstart (``pipelines/quickstart.yaml`` of each checkout, on its bundled sample) and
a FineWeb-like pipeline (read_jsonl -> fix_unicode -> language_id -> gopher_repetition ->
gopher_quality -> fineweb_quality -> exact_dedup) on a corpus from ``bench/scale.py``'s
``generate()`` (with English words from the bundled Wikipedia sample), with each checkout's
code (``PYTHONPATH``), and prints per run:

    input bytes (the files the source stages read, from their shard markers), work_dir bytes
    (all of it: shards, markers, set-aside documents, models...), the stage output shards
    alone (stages/*/data), both per input byte, and which stages wrote shards.

    python bench/disk_per_stage.py --code /path/to/main --code .     # before vs after
    python bench/disk_per_stage.py --n 20000 --only fineweb

The byte figures do not depend on load; the wall times (whole ``curator run``, imports included)
do, so compare them only within one run of this script.
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import scale
from bench.common import bench_main

ROOT = Path(__file__).resolve().parents[1]
WIKI_DUMP = (ROOT / "data/sample/wikimedia/enwiki/20160501"
             / "enwiki-20160501-pages-articles1.xml-p10p30302.bz2")

FINEWEB = """\
name: fineweb-disk
work_dir: {wd}
progress: off
stages:
  - read_jsonl: {{paths: "{corpus}/*/*.jsonl.zst"}}
  - fix_unicode: {{}}
  - language_id: {{languages: [en], min_score: 0.65}}
  - gopher_repetition: {{}}
  - gopher_quality: {{}}
  - fineweb_quality: {{}}
  - exact_dedup: {{}}
"""


def english_vocab(size: int, rng: Any = None) -> list[str]:
    """Words of the bundled English Wikipedia sample, most frequent first: scale.py's corpus
    with these words passes language ID and the Gopher stop-word rule like real web text
    (its own made-up words are removed at language ID, which would leave nothing to measure)."""
    with bz2.open(WIKI_DUMP, "rt", encoding="utf-8") as f:
        words = Counter(re.findall(r"[a-z]+", f.read().lower()))
    return [w for w, _ in words.most_common(size)]


def generate(out: Path, n: int) -> Any:
    """``scale.generate`` (lengths, Zipfian ranks, planted duplicates) with English words."""
    made_up, scale._vocab = scale._vocab, english_vocab
    try:
        return scale.generate(out, n, seed=0)
    finally:
        scale._vocab = made_up


def du(path: Path, pattern: str = "**/*") -> int:
    return sum(p.stat().st_size for p in path.glob(pattern) if p.is_file())


def input_bytes(wd: Path) -> int:
    """Size of every distinct file the source stages read, from their shard markers."""
    files: dict[str, int] = {}
    for done in wd.glob("stages/*/_SUCCESS.json"):
        if json.loads(done.read_text()).get("kind") != "source":
            continue
        for m in done.parent.glob("_done/*.json"):
            for p, ident in (json.loads(m.read_text()).get("read") or {}).items():
                if isinstance(ident, dict) and "size" in ident:
                    files[p] = ident["size"]
    return sum(files.values())


def measure(code: Path, yaml: Path, wd: Path, cwd: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(code))
    env.pop("CURATOR_DEBUG", None)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "curator", "run", str(yaml), "--work-dir", str(wd),
                        "--set", "progress=off"], cwd=cwd, env=env, capture_output=True,
                       text=True)
    if p.returncode:
        raise SystemExit(f"{yaml} with {code} failed:\n{p.stderr[-3000:]}")
    wall = time.perf_counter() - t0
    inp = input_bytes(wd)
    written = sorted(d.parent.name for d in wd.glob("stages/*/data") if any(d.iterdir()))
    return {"wall": wall, "input": inp, "work_dir": du(wd), "shards": du(wd, "stages/*/data/*"),
            "set_aside": du(wd, "rejected/**/*") + du(wd, "quarantine/**/*"), "written": written}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--code", action="append", type=Path,
                    help="a curator checkout to measure (repeat to compare); default: this one")
    ap.add_argument("--n", type=int, default=20_000, help="documents in the FineWeb-like corpus")
    ap.add_argument("--only", choices=["quickstart", "fineweb"])
    ap.add_argument("--tmp", type=Path, default=None, help="where corpus and work_dirs go")
    args = ap.parse_args(argv)
    codes = [c.resolve() for c in (args.code or [Path(__file__).resolve().parents[1]])]
    tmp = args.tmp or Path(tempfile.mkdtemp(prefix="disk-per-stage-"))
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    if args.only != "fineweb":
        for i, code in enumerate(codes):
            r = measure(code, code / "pipelines" / "quickstart.yaml", tmp / f"qs-{i}", code)
            rows.append(("quickstart", code, r))
    if args.only != "quickstart":
        corpus = generate(tmp / "corpus", args.n)
        for i, code in enumerate(codes):
            yaml = tmp / f"fineweb-{i}.yaml"
            yaml.write_text(FINEWEB.format(wd=tmp / f"fw-{i}", corpus=corpus.path))
            rows.append((f"fineweb-like N={args.n}", code,
                         measure(code, yaml, tmp / f"fw-{i}", tmp)))
    print(f"{'pipeline':22s} {'code':28s} {'input B':>11s} {'work_dir B':>11s} {'/in':>6s} "
          f"{'shards B':>11s} {'/in':>6s} {'wall s':>7s}  stages with shards")
    for name, code, r in rows:
        print(f"{name:22s} {str(code)[-28:]:28s} {r['input']:>11,d} {r['work_dir']:>11,d} "
              f"{r['work_dir'] / r['input']:>6.2f} {r['shards']:>11,d} "
              f"{r['shards'] / r['input']:>6.2f} {r['wall']:>7.1f}  "
              f"{len(r['written'])}: {', '.join(r['written'])}")
    print(f"(work_dirs under {tmp})")
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
