"""Peers that stop answering, on one machine without root: an MPI rank whose process is
stopped (as a hung node or a paused VM looks to the others) ends the run at
``executor.peer_timeout_s`` with one line naming its host, instead of leaving every other rank
waiting in a collective for ever; the line's wording; and the Dask client's TCP deadline, set
for as long as the executor lives. Across hosts: test_mpi_netns.py, test_dask_netns.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from tests.core.helpers_core import BIN, make_corpus
from tests.helpers import cli_env

PIPE = """\
name: stopped
work_dir: w
progress: off
stages:
  - read_jsonl: {paths: "data/*.jsonl", shard_size_mb: 0.02}
  - tests.core.helpers_core:hold: {folder: hold}
  - write_jsonl: {path: out}
"""


def test_a_stopped_rank_ends_the_run_at_the_deadline_with_one_line(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "hold").mkdir()
    for i in range(2):
        make_corpus(str(tmp_path / "data" / f"p{i}.jsonl"), 40, seed=i)
    (tmp_path / "p.yaml").write_text(PIPE)
    proc = subprocess.Popen(
        [
            str(BIN / "mpiexec"),
            "-n",
            "2",
            sys.executable,
            "-m",
            "curator",
            "run",
            "p.yaml",
            "--executor",
            "mpi",
            "--set",
            "executor.peer_timeout_s=5",
        ],
        cwd=tmp_path,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stopped = 0
    try:
        deadline = time.monotonic() + 120
        while len(held := list((tmp_path / "hold").glob("held-*"))) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the ranks never started their shards"
            time.sleep(0.05)
        # held-<host>-<pid>: stop a rank that is not rank 0's process (the one the test sees
        # first is as good as any: rank 0 is whichever is not stopped)
        stopped = int(held[0].name.rsplit("-", 1)[1])
        os.kill(stopped, signal.SIGSTOP)
        (tmp_path / "hold" / "release").touch()
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if stopped:
            try:
                os.kill(stopped, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert proc.returncode != 0
    lines = err.strip().splitlines()
    assert [x for x in lines if "error" in x.lower() or "abort" in x.lower()] == lines[-1:], err
    host = socket.gethostname()
    assert lines[-1].startswith("curator: error: MPI rank "), lines[-1]
    assert f"on host {host} not heard from by rank " in lines[-1]
    assert "for 5 s" in lines[-1] and "executor.peer_timeout_s" in lines[-1]
    assert took < 5 + 20, took


class _Comm:
    def __init__(self, rank: int, size: int) -> None:
        self.rank, self.size = rank, size

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size


def test_the_line_names_the_host_that_was_cut_off():
    """With several ranks, rank 0 hearing from none of them names its own host; one silent
    rank is named with the rank that noticed."""
    from curator.core.liveness import PeerWatch

    hosts = ["node01", "node02", "node02", "node03"]
    alone = PeerWatch(_Comm(0, 4), 120, hosts).message([1, 2, 3])
    assert alone.startswith(
        "MPI rank 0 on host node01 heard from no other rank (hosts node02, "
        "node03) for 120 s: host node01 is down or cut off; stopped every"
    )
    one = PeerWatch(_Comm(0, 4), 30, hosts).message([3])
    assert one.startswith(
        "MPI rank 3 on host node03 not heard from by rank 0 on host node01 for 30 s"
    )
    two = PeerWatch(_Comm(0, 4), 30, hosts).message([1, 2])
    assert two.startswith("MPI ranks 1, 2 on hosts node02 not heard from by rank 0")


def test_dask_client_deadline_is_set_while_connected_and_restored_after():
    """The client's TCP deadline is ``peer_timeout_s`` while the executor lives, and Dask's own
    setting again after close or a failed connection."""
    import dask.config
    import distributed  # noqa: F401 - its defaults enter Dask's configuration on import
    import pytest

    from curator.base.errors import ConfigError
    from curator.core.executors import DaskExecutor

    before = dask.config.get("distributed.comm.timeouts.tcp")
    with pytest.raises(ConfigError, match="speaks TLS"):
        DaskExecutor(address="tls://127.0.0.1:1", peer_timeout_s=45)
    assert dask.config.get("distributed.comm.timeouts.tcp") == before
    with DaskExecutor(workers=1, peer_timeout_s=45) as ex:
        assert dask.config.get("distributed.comm.timeouts.tcp") == "45s"
        assert ex.map(abs, [-1, -2]) == [1, 2]
    assert dask.config.get("distributed.comm.timeouts.tcp") == before


def test_the_abort_waits_until_mpiexec_has_read_the_line(tmp_path):
    """The rank's line reaches the user only if mpiexec's proxy has read it from the pipe
    before the abort kills the rank: the wait ends when the pipe is empty, or at its deadline
    when no one reads."""
    import threading

    from curator.core.liveness import _read_by_reader

    r, w = os.pipe()
    try:
        os.write(w, b"curator: error: a line\n")
        t0 = time.monotonic()
        assert not _read_by_reader(w, 0.2)  # nobody reads: the deadline ends the wait
        assert time.monotonic() - t0 >= 0.2
        reader = threading.Thread(target=os.read, args=(r, 100))
        reader.start()
        assert _read_by_reader(w, 30)
        reader.join()
    finally:
        os.close(r)
        os.close(w)
    with open(tmp_path / "f", "w") as f:  # a file is not a pipe: nothing to wait for
        f.write("x")
        f.flush()
        assert _read_by_reader(f.fileno(), 0)
