"""What every bench shares: the repository's paths, the machine a run was on, and the result
file each run leaves.

A bench's figures are data, not prose: each run of ``python -m bench.<name> ...`` ends with
:func:`record`, which writes ``bench/results/<name>/<date>T<time>Z-<commit>.json`` holding the
command, the commit (and whether the checkout had changes), the machine, the date and the
figures. ``bench/RESULTS.md`` is generated from those files by ``python -m bench.results_table``
and never edited by hand; what a run means goes in docs/performance.md, dated.

``BENCH_RESULTS`` (a folder) sends the files elsewhere: a trial run, a test.

Run a bench from the repository root as ``python -m bench.<name>``: no bench edits
``sys.path``.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
RESULTS = BENCH / "results"
#: Keys every result file holds (bench/results_table.py reads these files only).
RECORD_KEYS = ("bench", "command", "commit", "date", "machine", "figures")


def results_dir() -> Path:
    """Where result files go: ``$BENCH_RESULTS`` when set, else bench/results."""
    return Path(os.environ.get("BENCH_RESULTS") or RESULTS)


def commit() -> str:
    """The checkout's commit (short), with ``+changes`` when tracked files differ from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            text=True,
            capture_output=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            text=True,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + ("+changes" if dirty.strip() else "")


def machine() -> dict[str, Any]:
    """CPUs, CPU model, memory, Python, the load average at the time (a shared machine's
    figures move with it) and the GPU when ``nvidia-smi`` names one."""
    cpu = platform.processor() or "?"
    with contextlib.suppress(OSError, StopIteration), open("/proc/cpuinfo") as f:
        cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    ram_gib: float | None = None
    with contextlib.suppress(OSError, StopIteration, ValueError), open("/proc/meminfo") as f:
        kb = int(next(line.split()[1] for line in f if line.startswith("MemTotal")))
        ram_gib = round(kb / 2**20, 1)
    out: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "ram_gib": ram_gib,
        "python": platform.python_version(),
        "load": [round(x, 1) for x in os.getloadavg()],
    }
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        gpu = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            text=True,
            capture_output=True,
            timeout=20,
        ).stdout.strip()
        if gpu:
            out["gpu"] = gpu.splitlines()
    return out


def command(script: str, argv: list[str] | None = None) -> str:
    """The command that reruns this bench: ``python -m bench.<name> <args>``."""
    args = sys.argv[1:] if argv is None else argv
    return shlex.join(["python", "-m", f"bench.{Path(script).stem}", *args])


def record(
    script: str,
    figures: dict[str, Any],
    *,
    argv: list[str] | None = None,
    detail: Any = None,
    out: Path | None = None,
) -> Path:
    """Write this run's result file and return its path. ``script`` is the bench's
    ``__file__``; ``figures`` the numbers a reader compares between runs (name -> value);
    ``detail`` anything longer worth keeping (rows per size, per extractor)."""
    now = datetime.datetime.now(datetime.UTC)
    name = Path(script).stem
    rec: dict[str, Any] = {
        "bench": name,
        "command": command(script, argv),
        "commit": commit(),
        "date": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "figures": figures,
    }
    if detail is not None:
        rec["detail"] = detail
    folder = (out or results_dir()) / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{now:%Y-%m-%dT%H%M%SZ}-{rec['commit'].replace('+', '-')}.json"
    path.write_text(json.dumps(rec, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"[bench] result file: {path}", file=sys.stderr)
    return path


#: A printed line that states a figure: a ratio, a rate, a share, a byte count.
_FIGURE = re.compile(r"\d(?:\.\d+)?x\b|ratio|/s\b|\bF1\b|identical|bytes per|peak|%")


def figure_lines(text: str) -> list[str]:
    """The lines of a bench's printed output that state a figure (log lines left out)."""
    keep = []
    for line in text.splitlines():
        s = line.strip()
        if s and not s.startswith(("20", "WARNING", "INFO", "[")) and _FIGURE.search(s):
            keep.append(s)
    return keep


class _Tee(io.TextIOBase):
    def __init__(self, inner: Any) -> None:
        self.inner, self.buf = inner, io.StringIO()

    def write(self, s: str) -> int:
        self.buf.write(s)
        return self.inner.write(s)

    def flush(self) -> None:
        self.inner.flush()


@contextlib.contextmanager
def _tee_stdout() -> Iterator[_Tee]:
    tee = _Tee(sys.stdout)
    old, sys.stdout = sys.stdout, tee
    try:
        yield tee
    finally:
        sys.stdout = old


def bench_main(script: str, main: Callable[[], Any]) -> int:
    """Run a bench's ``main`` and record it: its figures are what ``main`` returns (a dict, or
    ``(figures, detail)``), else the figure lines it printed; ``main`` returning an ``int``
    gives the exit status (no file when it is not 0).

    The processes a bench starts (a ``--child`` of itself, another bench) find this checkout
    through ``PYTHONPATH`` and leave no result file: the run that started them records."""
    child = bool(os.environ.get("BENCH_PARENT"))
    os.environ["BENCH_PARENT"] = script
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    )
    with _tee_stdout() as tee:
        got = main()
    rc = got if isinstance(got, int) else 0
    detail = None
    if isinstance(got, tuple):
        got, detail = got
    figures = got if isinstance(got, dict) else {"lines": figure_lines(tee.buf.getvalue())}
    if rc == 0 and not child:
        record(script, figures, detail=detail)
    return rc
