"""``curator export-triton`` (checkpoint -> model repository) and ``curator serve`` (start
Triton's server on it, from the ``.venv-triton`` virtualenv)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any


def register(sub: Any) -> None:
    e = sub.add_parser("export-triton", help="turn a train checkpoint into a Triton repository")
    e.add_argument("--checkpoint", required=True, help="checkpoint folder written by train")
    e.add_argument("--output", required=True, help="model repository folder to write")
    e.add_argument("--model-name", default="curator_gpt", help="the ensemble's name")
    e.add_argument("--max-new-tokens", type=int, default=16,
                   help="tokens generated when a request does not say")
    e.add_argument("--max-batch-size", type=int, default=8)
    e.add_argument("--instance-kind", choices=["KIND_CPU", "KIND_GPU"], default="KIND_CPU")
    e.add_argument("--instances", type=int, default=1)
    e.add_argument("--max-queue-delay-us", type=int, default=1000)
    e.add_argument("--stop-at-eod", action="store_true")
    e.set_defaults(func=cmd_export)

    s = sub.add_parser("serve", help="start NVIDIA Triton on a model repository")
    s.add_argument("repository")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--http-port", type=int, default=8000)
    s.add_argument("--grpc-port", type=int, default=8001)
    s.add_argument("--metrics-port", type=int, default=8002)
    s.add_argument("--triton-venv", help="virtualenv with nvidia-pytriton (default: "
                   "$CURATOR_TRITON_VENV or .venv-triton; create with scripts/setup_triton.sh)")
    s.add_argument("--runtime-dir", help="where the backend folder goes (default: "
                   "<repository>/../.triton-runtime)")
    s.add_argument("--triton-arg", action="append", metavar="--FLAG=VALUE",
                   help="an extra tritonserver flag, e.g. --triton-arg=--http-restricted-api="
                   "model-repository,statistics:admin-key=$KEY (docs/deploy.md)")
    s.add_argument("--print-command", action="store_true",
                   help="print the command and environment instead of starting the server")
    s.set_defaults(func=cmd_serve)


def cmd_export(args: argparse.Namespace) -> int:
    from curator.deploy.export import export_repository

    s = export_repository(args.checkpoint, args.output, name=args.model_name,
                          max_new_tokens=args.max_new_tokens,
                          max_batch_size=args.max_batch_size, instance_kind=args.instance_kind,
                          instances=args.instances, max_queue_delay_us=args.max_queue_delay_us,
                          stop_at_eod=args.stop_at_eod)
    print(f"wrote Triton repository {s['repository']} (ensemble '{s['ensemble']}', checkpoint "
          f"iteration {s['checkpoint_iteration']}); serve with `curator serve {s['repository']}`")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import shlex

    from curator.deploy.serve import exposure_warning, server_command

    warning = exposure_warning(args.host, args.http_port, args.grpc_port)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    repo = os.path.abspath(args.repository)
    runtime = args.runtime_dir or os.path.join(os.path.dirname(repo), ".triton-runtime")
    cmd, env = server_command(repo, runtime, http_port=args.http_port, grpc_port=args.grpc_port,
                              metrics_port=args.metrics_port, host=args.host,
                              venv=args.triton_venv)
    gpu = has_gpu()
    if not gpu:  # no pinned host memory to set up for a GPU that is not there
        cmd += ["--pinned-memory-pool-byte-size=0", "--cuda-memory-pool-byte-size=0:0"]
    cmd += list(args.triton_arg or [])
    if args.print_command:
        for k in ("LD_LIBRARY_PATH", "PYTHONPATH", "CURATOR_TRITON_SITE"):
            print(f"export {k}={shlex.quote(env[k])}")
        print(" ".join(shlex.quote(c) for c in cmd))
        return 0
    print(f"starting Triton on {args.host}:{args.http_port} (HTTP), {args.grpc_port} (gRPC)",
          file=sys.stderr, flush=True)
    if gpu:
        os.execve(cmd[0], cmd, env)  # noqa: S606 - the venv's tritonserver, argv list, no shell
    return run_without_gpu_probes(cmd, env)


#: What tritonserver prints on a machine without an NVIDIA GPU while it probes for one (it has
#: no switch for this); on such a machine these lines say nothing and looked like failures.
CPU_PROBE_LINES = re.compile(
    r"CUDA memory pool disabled|CudaDriverHelper has not been initialized|"
    r"unable to create stream for [^:]*: CUDA driver version is insufficient|"
    r"CUDA driver version is insufficient for CUDA runtime version")


def has_gpu() -> bool:
    """Whether an NVIDIA driver is present (its control device)."""
    return os.path.exists("/dev/nvidiactl")


def run_without_gpu_probes(cmd: list[str], env: dict[str, str]) -> int:
    """Run tritonserver as a child, passing on its output but the GPU probe lines
    (:data:`CPU_PROBE_LINES`), and SIGINT/SIGTERM to it; its exit status is ours."""
    import signal
    import subprocess
    import threading

    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,  # noqa: S603 - as execve above
                         stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda n, _f: p.send_signal(n))
    def forward() -> None:
        assert p.stdout is not None  # noqa: S101 - PIPE above
        for line in p.stdout:
            if not CPU_PROBE_LINES.search(line):
                sys.stderr.write(line)
                sys.stderr.flush()

    # a thread: the Python backend's stub processes inherit the pipe and may outlive the
    # server, so its end is the server's exit, not the pipe's
    reader = threading.Thread(target=forward, daemon=True)
    reader.start()
    rc = p.wait()
    reader.join(timeout=2)
    return rc
