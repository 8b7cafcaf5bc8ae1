"""Served latency of an exported repository: Triton's ensemble over HTTP (tokenize -> greedy
ONNX -> detokenize) vs the same greedy loop run in-process with onnxruntime, side by side.

    python bench/triton_latency.py REPOSITORY [--new-tokens 16] [--requests 20]

Needs the Triton virtualenv (scripts/setup_triton.sh). Prints medians and the ratio
(served / in-process): the cost of the server, the ensemble and the python-backend hops.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench.common import bench_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("repository")
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--prompt", default="the red cat sat on")
    a = ap.parse_args()
    import onnxruntime as ort
    import tritonclient.http as http
    from tokenizers import Tokenizer

    repo = os.path.abspath(a.repository)
    gdir = os.path.join(repo, "gpt", "1")
    with open(os.path.join(gdir, "generation.json")) as f:
        gen = json.load(f)
    with open(os.path.join(repo, "preprocessing", "1", "tokenizer_spec.json")) as f:
        spec = json.load(f)
    tok = Tokenizer.from_file(os.path.join(repo, "preprocessing", "1", spec["file"]))
    # the served model's own greedy loop, imported without Triton's utils module
    with open(os.path.join(gdir, "model.py")) as f:
        src = f.read()
    greedy_src = src[src.index("def greedy("):src.index("class TritonPythonModel")]
    ns: dict = {"np": np}
    exec(greedy_src, ns)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(os.path.join(gdir, "model.onnx"), opts,
                                providers=["CPUExecutionProvider"])

    def local() -> str:
        ids = tok.encode(a.prompt).ids
        new = ns["greedy"](lambda x: sess.run(None, {"input_ids": x})[0], ids, a.new_tokens,
                           gen["seq_length"])
        return tok.decode(new)

    ports = [_port(), _port(), _port()]
    env = {**os.environ, "PYTHONPATH": ROOT}
    with tempfile.TemporaryDirectory() as rt:
        proc = subprocess.Popen(
            [sys.executable, "-m", "curator", "serve", repo, "--http-port", str(ports[0]),
             "--grpc-port", str(ports[1]), "--metrics-port", str(ports[2]), "--runtime-dir",
             rt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            c = http.InferenceServerClient(f"127.0.0.1:{ports[0]}")
            deadline = time.monotonic() + 120
            while True:
                try:
                    if c.is_server_ready():
                        break
                except ConnectionError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("tritonserver did not start")
                try:
                    proc.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass

            def served() -> str:
                t = http.InferInput("TEXT", [1, 1], "BYTES")
                t.set_data_from_numpy(np.array([[a.prompt.encode()]], dtype=np.object_))
                k = http.InferInput("MAX_NEW_TOKENS", [1, 1], "INT32")
                k.set_data_from_numpy(np.array([[a.new_tokens]], dtype=np.int32))
                return c.infer("curator_gpt", [t, k]).as_numpy("TEXT_OUTPUT")[0][0].decode()

            results = {}
            for name, fn in (("served", served), ("local", local)):
                fn()
                ts = []
                for _ in range(a.requests):
                    t0 = time.perf_counter()
                    out = fn()
                    ts.append(time.perf_counter() - t0)
                results[name] = (float(np.median(ts)), out)
            c.close()
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    (ms, out_s), (ml, out_l) = results["served"], results["local"]
    assert out_s == out_l, (out_s, out_l)
    print(f"Triton ensemble (HTTP):          median {ms * 1000:.2f} ms for {a.new_tokens} tokens")
    print(f"in-process onnxruntime greedy:   median {ml * 1000:.2f} ms")
    print(f"ratio served / in-process: {ms / ml:.2f}  (same text: {out_s!r})")


if __name__ == "__main__":
    if importlib.util.find_spec("tritonclient") is None:
        raise SystemExit("pip install 'tritonclient[http]'")
    sys.exit(bench_main(__file__, main))
