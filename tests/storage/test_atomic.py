"""curator.storage.atomic: a file is published whole or not at all, its temporary names its
writer, and only a dead writer's temporary is ever taken for a leftover."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from curator.storage import atomic


def test_a_failed_block_publishes_nothing_and_leaves_no_temporary(tmp_path):
    path = str(tmp_path / "out.bin")
    with atomic.atomic_open(path) as f:
        f.write(b"old")
    with pytest.raises(RuntimeError), atomic.atomic_open(path) as f:
        f.write(b"half of the new")
        raise RuntimeError("killed mid-write")
    assert Path(path).read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_a_write_error_names_the_file(tmp_path):
    path = str(tmp_path / "out.bin")
    with pytest.raises(OSError) as e, atomic.atomic_open(path) as f:
        f.write(b"x")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert e.value.filename == path and not os.path.exists(path)


def test_write_json_is_one_line(tmp_path):
    path = str(tmp_path / "m.json")
    atomic.write_json(path, {"a": 1, "b": [1, 2]})
    raw = Path(path).read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    assert orjson.loads(raw) == {"a": 1, "b": [1, 2]}


def test_compression_by_name():
    assert [atomic.compression_of(p) for p in ("a.jsonl.gz", "a.ZST", "b.zstd", "c.bz2", "d")] \
        == ["gzip", "zstd", "zstd", "bz2", None]


def test_a_temporary_names_its_run_host_and_pid():
    prev = atomic.current_run_id()
    atomic.set_run_id("0123456789ab")
    try:
        name = os.path.basename(atomic.temp_path("/w/part-1.jsonl"))
    finally:
        atomic.set_run_id(prev)
    assert name.startswith("part-1.jsonl.tmp-r0123456789ab-")
    assert atomic.temp_run_id(name) == "0123456789ab"
    assert atomic.temp_run_id("part-1.jsonl") is None
    assert not atomic.dead_temp(name, "0123456789ab")  # this live process wrote it


def test_only_a_dead_writers_temporary_is_dead():
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)  # exited and reaped
    live = os.path.basename(atomic.temp_path("/w/f"))
    dead = live.replace(f"-{os.getpid()}-", f"-{dead_pid}-")
    assert not atomic.pid_alive(dead_pid) and atomic.pid_alive(os.getpid())
    assert atomic.dead_temp(dead, "") and not atomic.dead_temp(live, "")
    assert not atomic.dead_temp("f.tmp-notours", "")
