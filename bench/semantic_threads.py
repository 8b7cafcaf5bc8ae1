"""Documents per second of all-MiniLM-L6-v2's encoder on 2 cores: torch's intra-op threads
(1 or 2 in one process) against 2 processes of 1 thread, at a given mean token count.

    python bench/semantic_threads.py [--tokens 13,87,256] [--n 3000] [--cores 0,1]

The arithmetic of a BERT forward pass does not depend on the weights' values, so the model is
the architecture of all-MiniLM-L6-v2 (6 layers, hidden 384, 12 heads, 1536) with weights drawn
from its config: nothing to carry to a machine that has only torch and transformers. Each
document is ``U(mean/2, 3*mean/2)`` tokens; batches of 32 sorted by length (as
sentence-transformers sorts), attention masks for the padding, in inference mode. 13 tokens is
the mean of Debian's package summaries (47 characters), 87 of paragraphs of Python's
documentation (358 characters), 256 the model's cut. Each process is pinned to the cores
with ``taskset``; CPU seconds are getrusage's. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time

from bench.common import bench_main

WORKER = r'''
import sys, time, resource, json, random, torch
torch.set_num_threads(int(sys.argv[1]))
from transformers import BertConfig, BertModel
torch.manual_seed(0)
m = BertModel(BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                         intermediate_size=1536)).eval()
mean, n = int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
L = sorted(rng.randint(max(3, mean // 2), mean * 3 // 2) for _ in range(n))
def go(ls):
    with torch.inference_mode():
        for i in range(0, len(ls), 32):
            b = ls[i:i + 32]; w = max(b)
            x = torch.randint(1000, 30000, (len(b), w))
            a = torch.zeros(len(b), w, dtype=torch.long)
            for j, l in enumerate(b):
                a[j, :l] = 1
            m(input_ids=x, attention_mask=a)
go(L[:64])
r0 = resource.getrusage(0); t = time.perf_counter(); go(L); r1 = resource.getrusage(0)
print(json.dumps({"wall": time.perf_counter() - t, "n": n,
                  "cpu": r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime}))
'''


def run(tokens: int, n: int, procs: int, threads: int, cores: str | None) -> dict:
    cmd = [sys.executable, "-c", WORKER, str(threads), str(tokens), str(n // procs)]
    if cores:
        cmd = ["taskset", "-c", cores, *cmd]
    ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(procs)]
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in ps]
    wall = max(o["wall"] for o in outs)
    cpu = sum(o["cpu"] for o in outs)
    docs = sum(o["n"] for o in outs)
    return {"tokens": tokens, "procs": procs, "threads": threads, "docs": docs,
            "docs_per_s": round(docs / wall, 1), "docs_per_cpu_s": round(docs / cpu, 1),
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", default="13,87,256")
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--cores", default="0,1")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cores = args.cores if args.cores and shutil.which("taskset") else None
    rows = []
    t0 = time.perf_counter()
    for tokens in map(int, args.tokens.split(",")):
        for procs, threads in ((1, 1), (1, 2), (2, 1)):
            r = run(tokens, args.n, procs, threads, cores)
            rows.append(r)
            print(f"~{tokens:3d} tokens  {procs} proc x {threads} thread  "
                  f"{r['docs_per_s']:7.1f} docs/s  {r['docs_per_cpu_s']:7.1f} docs/CPU-s",
                  flush=True)
    print(f"# {time.perf_counter() - t0:.0f} s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
