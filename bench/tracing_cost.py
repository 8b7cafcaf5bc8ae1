"""CPU cost of recording what stages read (core/tracing.py: an audit hook per process, each
task's opens and imports turned into identities at its end): the same pipeline run with the
recording on and off, each run in a fresh process, CPU seconds of the run itself (process time
around ``curator.run``), best of N, alternating the two so the machine's load hits both.

The runs with the recording on have curator's native-reads library preloaded, as the
``curator`` command runs (:mod:`curator.core.native_reads`: every libc ``open`` and ``getenv``
of the process passes through it); the runs with it off have neither hook nor library.

On a loaded machine the difference of the two drowns in noise; so the script also measures
the parts of the cost directly: the audit events of one run (counted by a second audit hook:
curator's own is installed by ``import curator``, before anything could wrap it), the CPU
nanoseconds one event costs once the hook is installed, the CPU seconds spent turning reads
into identities and taking in what native code read (and how many entries it recorded);
``estimated_overhead_pct`` is their sum over the run's CPU.

Two pipelines: the quick start (``pipelines/quickstart.yaml`` on ``data/sample``) and an exact
dedup of ``--docs`` generated documents (read_jsonl -> exact_dedup -> write_jsonl). The result
file goes under bench/results/tracing_cost/. Needs a quiet machine for figures under a few
percent:

    python -m bench.tracing_cost --docs 1000000 --repeat 5
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import bench_main

ROOT = Path(__file__).resolve().parents[1]


def child(pipeline: str, work_dir: str, on: bool) -> None:
    """One run in this process; prints its CPU seconds and what the stages recorded."""
    if not on:  # ``import curator`` installs the hook: off, it installs nothing
        sys.addaudithook = lambda hook: None
    import curator
    from curator.core import tracing

    if not on:  # the recording replaced by nothing: nothing identified

        class Nothing:
            def used(self, steps, *_a, **_k):
                return [{} for _ in range(steps)]

        @contextlib.contextmanager
        def recording():
            yield Nothing()

        tracing.recording = recording
    t = time.process_time()
    curator.run(pipeline, overrides={"work_dir": work_dir, "progress": "off"})
    cpu = time.process_time() - t
    used = 0
    for fp in Path(work_dir, "stages").glob("*/_FINGERPRINT"):
        used += len(json.loads(fp.read_text()).get("used") or {})
    print(json.dumps({"cpu_s": cpu, "recorded_inputs": used}))


def probe(pipeline: str, work_dir: str) -> None:
    """One run with the recording on, counting the audit events the hook saw and the CPU
    seconds spent turning reads into identities (``Recorder.used``): the parts of the cost
    that do not drown in a loaded machine's noise."""
    import curator
    from curator.core import native_reads as native
    from curator.core import tracing

    events = [0]

    def counting(event, args):
        events[0] += 1

    sys.addaudithook(counting)  # sees every event curator's hook sees from now on
    spent = [0.0]
    entries = [0]

    def timed(fn, count=False):
        def wrapper(self, *a, **k):
            t = time.process_time()
            try:
                if count:
                    a = (list(a[0]),)
                    entries[0] += len(a[0])
                return fn(self, *a, **k)
            finally:
                spent[0] += time.process_time() - t

        return wrapper

    tracing.Recorder.used = timed(tracing.Recorder.used)
    tracing.Recorder.take = timed(tracing.Recorder.take, count=True)
    curator.run(pipeline, overrides={"work_dir": work_dir, "progress": "off"})
    out = {"events": events[0], "used_s": spent[0], "native_entries": entries[0]}
    print(json.dumps({**out, "native": native.lib() is not None}))


def hook_ns(n: int = 2_000_000) -> float:
    """CPU nanoseconds one audit event costs once the hook is installed (``id()`` raises
    one), from a process with the hook against one without, best of 3."""
    code = (
        "import sys, time\n"  # off: curator not imported (its import installs the hook)
        "if sys.argv[1] == 'on':\n    from curator.core import tracing\n    tracing.install()\n"
        "best = 1e9\n"
        f"for _ in range(3):\n    t = time.process_time()\n    for _ in range({n}): id(0)\n"
        "    best = min(best, time.process_time() - t)\nprint(best)"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t = {}
    for mode in ("off", "on"):
        p = subprocess.run(
            [sys.executable, "-c", code, mode], env=env, capture_output=True, text=True, check=True
        )
        t[mode] = float(p.stdout)
    return (t["on"] - t["off"]) / n * 1e9


def _env(on: bool) -> dict[str, str]:
    """A child's environment: with the recording on, the native-reads library preloaded (as
    the ``curator`` command runs itself)."""
    from curator.core.native_reads import SWITCH, library_path

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("LD_PRELOAD", None)
    lib = library_path()
    if on and lib is not None:
        env.update(LD_PRELOAD=lib, **{SWITCH: lib})
    return env


def run_once(pipeline: str, on: bool, tmp: Path) -> dict:
    wd = tmp / f"w-{'on' if on else 'off'}"
    shutil.rmtree(wd, ignore_errors=True)
    env = _env(on)
    p = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            "on" if on else "off",
            "--pipeline",
            pipeline,
            "--work-dir",
            str(wd),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure(name: str, pipeline: str, repeat: int, tmp: Path) -> dict:
    runs: dict[bool, list[dict]] = {True: [], False: []}
    for _ in range(repeat):
        for on in (False, True):
            runs[on].append(run_once(pipeline, on, tmp))
    off = min(r["cpu_s"] for r in runs[False])
    on = min(r["cpu_s"] for r in runs[True])
    wd = tmp / "w-probe"
    shutil.rmtree(wd, ignore_errors=True)
    env = _env(True)
    p = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            "probe",
            "--pipeline",
            pipeline,
            "--work-dir",
            str(wd),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    parts = json.loads(p.stdout.strip().splitlines()[-1])
    per_event = hook_ns()
    estimate = parts["events"] * per_event * 1e-9 + parts["used_s"]
    out = {
        "pipeline": name,
        "cpu_s_off": round(off, 3),
        "cpu_s_on": round(on, 3),
        "overhead_pct": round(100 * (on - off) / off, 2),
        "recorded_inputs": runs[True][0]["recorded_inputs"],
        "repeat": repeat,
        "audit_events": parts["events"],
        "hook_ns_per_event": round(per_event, 1),
        "identities_cpu_s": round(parts["used_s"], 4),
        "native_traced": parts["native"],
        "native_entries": parts["native_entries"],
        "estimated_overhead_pct": round(100 * estimate / off, 2),
    }
    print(json.dumps(out))
    return out


def dedup_pipeline(tmp: Path, docs: int) -> str:
    data = tmp / "data"
    data.mkdir(exist_ok=True)
    rnd = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    files = 8
    for k in range(files):
        with open(data / f"part{k}.jsonl", "w") as f:
            for i in range(k, docs, files):
                n = i % (docs // 3 or 1)  # a third of the texts come back: duplicates
                rnd.seed(n)
                text = " ".join(rnd.choice(words) for _ in range(40))
                f.write(json.dumps({"id": f"d{i}", "text": text}) + "\n")
    p = tmp / "dedup.yaml"
    p.write_text(
        f"name: dedup\nwork_dir: {tmp / 'unused'}\nstages:\n"
        f"  - read_jsonl: {{paths: '{data}/*.jsonl'}}\n"
        "  - exact_dedup: {}\n  - write_jsonl: {path: out}\n"
    )
    return str(p)


def main() -> tuple[dict[str, str], dict[str, object]] | None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--child")
    ap.add_argument("--pipeline")
    ap.add_argument("--work-dir")
    a = ap.parse_args()
    if a.child == "probe":
        probe(a.pipeline, a.work_dir)
        return
    if a.child:
        child(a.pipeline, a.work_dir, a.child == "on")
        return
    tmp = Path(tempfile.mkdtemp(prefix="tracing-cost-"))
    try:
        results = [
            measure("quickstart", str(ROOT / "pipelines" / "quickstart.yaml"), a.repeat, tmp),
            measure(
                f"exact_dedup of {a.docs:,} documents", dedup_pipeline(tmp, a.docs), a.repeat, tmp
            ),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures = {
        r["pipeline"]: f"overhead {r['overhead_pct']}% measured, "
        f"{r['estimated_overhead_pct']}% estimated"
        for r in results
    }
    return figures, {"results": results}


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
