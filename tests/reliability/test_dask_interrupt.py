"""Ctrl-C under ``--executor dask``: the terminal sends SIGINT to the whole process group, the
local cluster's worker processes included. The run stops with its one line (exit 130), and the
cluster's processes stop without a word (they used to print about 70 lines of tracebacks:
broken connections, cancelled tasks, workers killed after 4 s), leaving none behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.core.helpers_core import make_corpus
from tests.helpers import cli_env


def _group_alive(pgid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.getpgid(int(d)) == pgid:
                    out.append(int(d))
            except ProcessLookupError:
                pass
    return out


def test_ctrl_c_under_dask_is_one_line(tmp_path: Path) -> None:
    for i in range(4):
        make_corpus(str(tmp_path / f"in{i}.jsonl"), 150, seed=i)
    (tmp_path / "p.yaml").write_text(
        f"name: c\nwork_dir: {tmp_path / 'w'}\nprogress: log\nstages:\n"
        f"  - read_jsonl: {{paths: '{tmp_path}/in*.jsonl'}}\n"
        "  - tests.core.helpers_core:burn: {ms: 30}\n")
    err = tmp_path / "err.txt"

    def as_in_a_terminal() -> None:  # a shell started in the background would ignore SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    with open(err, "w") as fh:
        p = subprocess.Popen([sys.executable, "-m", "curator", "run", "p.yaml", "--executor",
                              "dask", "--workers", "2"], cwd=tmp_path, env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=fh, start_new_session=True,
                             preexec_fn=as_in_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while "imports: tests.core.helpers_core" not in err.read_text():  # the stage is running
            assert p.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.2)
        time.sleep(2)  # well into the shards: each takes seconds
        os.killpg(p.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
        assert p.wait(timeout=120) == 130, err.read_text()
        deadline = time.monotonic() + 30
        while _group_alive(p.pid):  # the cluster's processes end with the run
            assert time.monotonic() < deadline, _group_alive(p.pid)
            time.sleep(0.2)
    finally:
        if p.poll() is None or _group_alive(p.pid):
            os.killpg(p.pid, signal.SIGKILL)
    # all but curator's own log lines ("12:34:56 ...") and progress lines ("[stage] ...")
    lines = [x for x in err.read_text().splitlines()
             if x.strip() and not re.match(r"\d\d:\d\d:\d\d |\[", x)]
    assert lines == ["curator: interrupted; rerun the same command to resume"], (
        err.read_text()[-4000:])
