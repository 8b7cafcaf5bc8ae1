"""Bloom-filter dedup, run on demand (not a test): curator's ``bloom_dedup`` against datatrove's
``SingleBloomFilter`` and dolma's ``dolma dedupe`` (BFF) where it is installed, on the same
documents with planted repeats.

Documents are made of real words: six random sentences of the bundled English Wikipedia
sample, the words of each shuffled (so that distinct documents share no 13-word shingle, which
datatrove's near-duplicate rule would count), plus planted repeats (a copy of an earlier
document with its case and spacing changed, which every tool's normalisation undoes: curator
``basic``, datatrove ``simplify_text``; dolma compares raw text, so its copies are exact).
Each tool runs in a fresh process; what is measured:

* items per CPU-second (user + system CPU of the process and its children; items = documents);
* peak RSS of that process tree (``ru_maxrss`` of the children);
* repeats found and false removals (removed documents that were not repeats);
* for curator, peak RSS at two corpus sizes with the same ``memory_mb``: the memory bound.

    python -m bench.bench_bloom --docs 20000                       # a check that it works
    python -m bench.bench_bloom --docs 1000000 --memory-mb 64 \\
        --dolma .bench-dolma/bin/dolma                                # the comparison

Each run leaves its rows in a result file under bench/results/bench_bloom/ (bench/common.py).

dolma's dependencies (numpy<2, old boto3) conflict with curator's, so it lives in its own venv:
``python -m venv .bench-dolma && .bench-dolma/bin/pip install dolma==1.2.1``.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import html
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import xxhash

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]
WIKI = (
    REPO
    / "data/sample/wikimedia/enwiki/20160501"
    / "enwiki-20160501-pages-articles1.xml-p10p30302.bz2"
)


def sentences() -> list[str]:
    """Sentences (8+ words) of the prose paragraphs of the bundled Wikipedia sample."""
    with bz2.open(WIKI) as f:
        raw = f.read().decode("utf-8")
    out = []
    for page in re.findall(r"<text[^>]*>(.*?)</text>", raw, re.S):
        for para in re.split(r"\n\s*\n", html.unescape(page)):
            if para.lstrip().startswith(("{", "|", "[", "=", "*", "<")):
                continue
            out += [s for s in re.split(r"(?<=[.!?])\s+", para) if len(s.split()) >= 8]
    return out


def make_corpus(
    folder: Path, n: int, repeat: float, shards: int, seed: int = 0
) -> tuple[list[str], set[str]]:
    """``n`` documents in ``shards`` JSONL files (and the same as dolma's gzipped documents);
    returns the ids in input order and the ids of the planted repeats."""
    rng = random.Random(seed)
    sents = sentences()
    texts: list[str] = []
    ids: list[str] = []
    root: list[int] = []  # the original each document copies (itself if none)
    planted: set[str] = set()
    for i in range(n):
        if texts and rng.random() < repeat:
            j = root[rng.randrange(len(texts))]
            texts.append(texts[j].upper().replace(" ", "  ") + " ")
            root.append(j)
            planted.add(f"d{i}")
        else:
            picked = [rng.choice(sents).split() for _ in range(6)]
            for words in picked:  # shuffled: distinct documents share no 13-word shingle
                rng.shuffle(words)
            texts.append(" ".join(" ".join(w) for w in picked))
            root.append(i)
        ids.append(f"d{i}")
    (folder / "jsonl").mkdir(parents=True)
    (folder / "dolma" / "documents").mkdir(parents=True)
    per = -(-n // shards)
    order: list[str] = []
    for k in range(shards):
        part = range(k * per, min(n, (k + 1) * per))
        with open(folder / "jsonl" / f"part{k:04d}.jsonl", "w") as f:
            for i in part:
                f.write(json.dumps({"id": ids[i], "text": texts[i]}) + "\n")
        with gzip.open(folder / "dolma" / "documents" / f"part{k:04d}.jsonl.gz", "wt") as f:
            for i in part:  # dolma compares raw text: its repeats are exact copies
                f.write(
                    json.dumps(
                        {
                            "id": ids[i],
                            "text": texts[root[i]],
                            "source": "bench",
                            "added": "2026-01-01",
                            "created": "2026-01-01",
                        }
                    )
                    + "\n"
                )
        order += [ids[i] for i in part]
    return order, planted


#: Runs a command and prints the CPU time and peak RSS of its process tree alone (a fresh
#: process: RUSAGE_CHILDREN's peak is the largest of *its* children, not of earlier runs').
_MEASURE = (
    "import json, resource, subprocess, sys\n"
    "rc = subprocess.run(sys.argv[1:]).returncode\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps([rc, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024]), file=sys.stderr)\n"
)


def measured(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Run ``cmd``; (wall s, CPU s of it and its children, the largest peak RSS among them
    in MB)."""
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", _MEASURE, *cmd], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    rc, cpu, rss = json.loads(p.stderr.strip().splitlines()[-1])
    if rc:
        raise SystemExit(f"{cmd[:3]} failed ({rc}):\n{p.stderr[-3000:]}")
    return wall, cpu, rss


def run_curator(folder: Path, memory_mb: float, tag: str) -> dict:
    wd = folder / f"work-{tag}"
    y = folder / f"{tag}.yaml"
    y.write_text(
        f"name: bench-bloom\nwork_dir: {wd}\nprogress: 'off'\nexecutor: {{type: local}}\n"
        f"stages:\n  - read_jsonl: {{paths: '{folder}/jsonl/part*.jsonl'}}\n"
        f"  - bloom_dedup: {{memory_mb: {memory_mb}}}\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    wall, cpu, rss = measured([sys.executable, "-m", "curator", "run", str(y)], env)
    report = json.loads((wd / "report.json").read_text())
    stage = next(s for s in report["stages"] if s["id"] == "bloom_dedup")
    removed = set()
    import zstandard

    for f in sorted((wd / "rejected" / "bloom_dedup").glob("*.jsonl.zst")):
        with open(f, "rb") as fh:
            data = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
        removed.update(json.loads(x)["id"] for x in data.splitlines())
    shutil.rmtree(wd)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": rss,
        "removed": removed,
        "stage_cpu_s": stage.get("cpu_s"),
        "stage_peak_rss_mb": stage.get("peak_rss_mb"),
        "bloom": stage["artifacts"]["bloom"],
    }


DATATROVE = r"""
import json, math, sys
import xxhash
import datatrove.pipeline.dedup.bloom_filter as bf
from datatrove.pipeline.readers import JsonlReader

class _Split:  # str.split instead of a downloaded word tokenizer: only favours datatrove
    word_tokenize = staticmethod(str.split)

bf.load_word_tokenizer = lambda language: _Split()
folder, m_bytes, expected, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
# k given: get_optimal_k takes bits for bytes (8x too many hashes); this is the best k for
# the m_bytes + 1 bits that ``& m_bytes`` can reach
k = max(1, round((m_bytes + 1) / expected * math.log(2)))
cfg = bf.BloomFilterConfig(m_bytes=m_bytes, k=k, expected_elements=expected)
step = bf.SingleBloomFilter(output_folder=folder + "/dt-out", config=cfg)
# its default 32-bit xxhash is handed str and raises (datatrove 0.10.1): encode first
step.hash_fc = lambda s, _h=xxhash.xxh32_intdigest: _h(s.encode("utf-8"))
kept = {d.id for d in step.run(JsonlReader(folder + "/jsonl", glob_pattern="*.jsonl")())}
json.dump({"kept": sorted(kept), "k": cfg.k}, open(out, "w"))
"""


def run_datatrove(folder: Path, memory_mb: float, order: list[str]) -> dict:
    script = folder / "dt.py"
    script.write_text(DATATROVE)
    out = folder / "dt.json"
    # datatrove's elements are 13-word shingles: about (words - 12) per document
    words = 0
    for f in sorted((folder / "jsonl").glob("*.jsonl")):
        with open(f) as fh:
            words += sum(len(json.loads(x)["text"].split()) - 12 for x in fh)
    # m_bytes one below the budget: datatrove takes an index as ``hash & m_bytes`` (not
    # ``mod``), so a power of two leaves it two bits (it removed 4,999 of 5,000 documents);
    # all ones below it is its best case (every bit of m_bytes reachable: 1/8 of the filter)
    m_bytes = int(memory_mb * (1 << 20)) - 1
    cmd = [sys.executable, str(script), str(folder), str(m_bytes), str(words), str(out)]
    wall, cpu, rss = measured(cmd)
    res = json.loads(out.read_text())
    kept = set(res["kept"])
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": rss,
        "hashes": res["k"],
        "removed": {i for i in order if i not in kept},
        "shingles": words,
    }


def run_dolma(folder: Path, memory_mb: float, n: int, dolma: str) -> dict:
    cfg = {
        "documents": [str(folder / "dolma" / "documents" / "*.jsonl.gz")],
        "dedupe": {
            "name": "bff",
            "documents": {"attribute_name": "bff_dup", "key": "$.text"},
            "skip_empty": True,
        },
        "bloom_filter": {
            "file": str(folder / "dolma.bloom"),
            "read_only": False,
            "estimated_doc_count": n,
            "size_in_bytes": int(memory_mb * (1 << 20)),
            "desired_false_positive_rate": 1e-4,
        },
        "processes": 1,
    }
    (folder / "dolma.json").write_text(json.dumps(cfg))
    # dolma downloads NLTK's punkt on import unless it is found; dedupe never uses it
    (folder / "nltk_data" / "tokenizers" / "punkt").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NLTK_DATA=str(folder / "nltk_data"))
    wall, cpu, rss = measured([dolma, "-c", str(folder / "dolma.json"), "dedupe"], env)
    removed = set()
    for f in (folder / "dolma" / "attributes").rglob("*.jsonl.gz"):  # attributes/<name>/
        with gzip.open(f, "rt") as fh:
            for line in fh:
                rec = json.loads(line)
                if rec["attributes"].get("bff_dup"):
                    removed.add(rec["id"])
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss, "removed": removed}


def summary(name: str, r: dict, n: int, planted: set[str], repeats: set[str]) -> dict:
    removed = r.pop("removed")
    row = {
        "tool": name,
        **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()},
        "docs_per_cpu_s": round(n / r["cpu_s"]) if r["cpu_s"] else None,
        "removed": len(removed),
        "repeats_found": len(removed & repeats),
        "repeats": len(repeats),
        "false_removals": len(removed - repeats),
    }
    print(json.dumps(row), flush=True)
    return row


def true_repeats(folder: Path, exact: bool = False) -> set[str]:
    """Ids whose text occurred earlier in input order (planted or natural): after curator's
    ``basic`` normalisation, or (``exact``, dolma's files) as written."""
    seen: set[int] = set()  # 128-bit hashes: a million texts would take gigabytes
    out: set[str] = set()
    files = (
        sorted((folder / "dolma" / "documents").glob("*.jsonl.gz"))
        if exact
        else sorted((folder / "jsonl").glob("*.jsonl"))
    )
    for f in files:
        with gzip.open(f, "rt") if exact else open(f) as fh:
            for line in fh:
                d = json.loads(line)
                text = d["text"] if exact else " ".join(d["text"].lower().split())
                key = xxhash.xxh3_128_intdigest(text.encode("utf-8", "surrogatepass"))
                if key in seen:
                    out.add(d["id"])
                seen.add(key)
    return out


def main() -> tuple[dict[str, str], dict[str, object]] | None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--repeat", type=float, default=0.1, help="share of planted repeats")
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--memory-mb", type=float, default=64)
    ap.add_argument("--dolma", default=shutil.which("dolma"), help="dolma's command, if any")
    ap.add_argument("--skip-datatrove", action="store_true")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-bloom-") as tmp:
        folder = Path(tmp)
        for n in sorted({max(1000, a.docs // 10), a.docs}):  # the memory bound: two sizes
            sub = folder / f"n{n}"
            order, planted = make_corpus(sub, n, a.repeat, a.shards)
            repeats = true_repeats(sub)
            print(
                f"# {n} documents, {len(planted)} planted repeats, {len(repeats)} repeats",
                flush=True,
            )
            rows.append(
                {
                    "docs": n,
                    **summary("curator", run_curator(sub, a.memory_mb, "c"), n, planted, repeats),
                }
            )
            if n != a.docs:
                continue
            if not a.skip_datatrove:
                rows.append(
                    {
                        "docs": n,
                        **summary(
                            "datatrove", run_datatrove(sub, a.memory_mb, order), n, planted, repeats
                        ),
                    }
                )
            if a.dolma:
                rows.append(
                    {
                        "docs": n,
                        **summary(
                            "dolma",
                            run_dolma(sub, a.memory_mb, n, a.dolma),
                            n,
                            planted,
                            true_repeats(sub, exact=True),
                        ),
                    }
                )
            else:
                print("# dolma: not installed (see the docstring)", flush=True)
    figures = {f"{r['tool']} @ {r['docs']:,} docs": f"{r['docs_per_cpu_s']:,} docs/CPU-s, peak "
               f"{r['peak_rss_mb']:.0f} MB, false removals {r['false_removals']}" for r in rows}
    return figures, {"memory_mb": a.memory_mb, "repeat": a.repeat, "rows": rows}

if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
