"""What a stage's native code reads is part of its key: a custom ``@filter`` whose limit comes
from a safetensors file read by safetensors' Rust reader, from a Parquet file read by pyarrow's
C++ reader, from an environment variable its Python code reads and from one a C ``getenv``
reads. Each is edited in turn: ``curator status`` names it and the rerun gives what a fresh run
gives; a variable the stage does not read changes nothing. Real processes through the
``curator`` command (which preloads curator's native-reads library), a real Dask cluster."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from safetensors.numpy import save_file

from curator.core.native_reads import library_path
from tests.core.test_trust_adversarial import _pipe, _setup, curator, kept, line
from tests.helpers import cli_env

NATIVE = """
import ctypes
import os

import pyarrow.parquet as pq
from safetensors.numpy import load_file

from curator import filter

HERE = os.path.dirname(__file__)
_getenv = ctypes.CDLL(None).getenv
_getenv.restype = ctypes.c_char_p


@filter
def native_lim(doc) -> bool:
    lim = int(load_file(os.path.join(HERE, "mydata", "lim.safetensors"))["lim"][0])
    lim += pq.read_table(os.path.join(HERE, "mydata", "add.parquet")).column("add")[0].as_py()
    lim += int(os.environ.get("EXTRA", "0"))
    lim += int(_getenv(b"NATIVE_ADD") or b"0")  # read by C: no str constant names it
    return len(doc.text) < lim
"""


@pytest.fixture(autouse=True)
def _built():
    if library_path() is None:  # setup.sh builds it (gcc); CI must run these cases
        pytest.fail("curator/core/_native_reads.c is not built: run `bash scripts/setup.sh`")


def run(tmp_path: Path, *args: str, **env: str) -> str:
    """The command with none of the tests' variables set but ``env``'s."""
    unset: dict[str, str | None] = dict.fromkeys(("EXTRA", "NATIVE_ADD", "UNRELATED"))
    return curator(tmp_path, *args, env={**unset, **env})


def fresh(tmp_path: Path, *args: str, **env: str) -> int:
    shutil.rmtree(tmp_path / "fresh", ignore_errors=True)
    run(tmp_path, "run", "p.yaml", "--work-dir", "fresh", *args, **env)
    return kept(tmp_path, "fresh")


def weights(mods: Path, lim: int) -> None:
    tmp = mods / "mydata" / "new.safetensors"
    save_file({"lim": np.array([lim], dtype=np.int64)}, str(tmp))
    tmp.replace(mods / "mydata" / "lim.safetensors")


def parquet(mods: Path, add: int) -> None:
    pq.write_table(pa.table({"add": [add]}), str(mods / "mydata" / "add.parquet"))


def native_module(tmp_path: Path) -> Path:
    mods = _setup(tmp_path, NATIVE, "nat")
    weights(mods, 300)
    parquet(mods, 0)
    _pipe(tmp_path, "nat:native_lim")
    return mods


def test_files_and_variables_native_code_reads_are_part_of_the_key(tmp_path):
    mods = native_module(tmp_path)
    run(tmp_path, "run", "p.yaml")
    before = kept(tmp_path)
    assert "not traced" not in run(tmp_path, "status", "p.yaml")

    weights(mods, 500)  # read by safetensors' Rust reader
    st = run(tmp_path, "status", "p.yaml")
    assert "stale" in line(st, "native_lim") and "lim.safetensors" in line(st, "native_lim"), st
    run(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) == fresh(tmp_path) > before
    before = kept(tmp_path)

    parquet(mods, 200)  # read by pyarrow's C++ reader
    st = run(tmp_path, "status", "p.yaml")
    assert "add.parquet" in line(st, "native_lim"), st
    run(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) > before
    before = kept(tmp_path)

    env = {"EXTRA": "100"}  # read by the stage's Python code
    st = run(tmp_path, "status", "p.yaml", **env)
    assert "environment variable EXTRA changed" in line(st, "native_lim"), st
    run(tmp_path, "run", "p.yaml", **env)
    assert kept(tmp_path) > before
    before = kept(tmp_path)

    env["NATIVE_ADD"] = "100"  # read by C's getenv
    st = run(tmp_path, "status", "p.yaml", **env)
    assert "environment variable NATIVE_ADD" in line(st, "native_lim"), st
    run(tmp_path, "run", "p.yaml", **env)
    assert kept(tmp_path) == fresh(tmp_path, **env) > before

    # a variable no stage reads, and curator's own, change nothing
    st = run(tmp_path, "status", "p.yaml", UNRELATED="1", CURATOR_PROGRESS="off", **env)
    assert "nothing to do" in st, st
    # the values are kept as keyed digests only
    stage = tmp_path / "w" / "stages" / "native_lim"
    ident = json.loads((stage / "_FINGERPRINT").read_text())
    text = json.dumps(ident)
    assert "EXTRA" in text and "NATIVE_ADD" in text and "=100" not in text, text


def test_a_native_read_under_dask_is_part_of_the_key(tmp_path):
    mods = native_module(tmp_path)
    dask = ("--executor", "dask", "--workers", "2")
    run(tmp_path, "run", "p.yaml", *dask)
    before = kept(tmp_path)
    weights(mods, 500)
    st = run(tmp_path, "status", "p.yaml")
    assert "stale" in line(st, "native_lim") and "lim.safetensors" in line(st, "native_lim"), st
    run(tmp_path, "run", "p.yaml", *dask)
    assert kept(tmp_path) == fresh(tmp_path) > before
    # what the workers read (their own environment included) is what the root sees
    assert "nothing to do" in run(tmp_path, "status", "p.yaml")
    st = run(tmp_path, "status", "p.yaml", NATIVE_ADD="100")  # a getenv of the workers'
    assert "environment variable NATIVE_ADD" in line(st, "native_lim"), st


def test_the_command_says_when_native_reads_are_not_traced(tmp_path):
    native_module(tmp_path)
    st = run(tmp_path, "status", "p.yaml", CURATOR_NATIVE_READS="off")
    assert "not traced (CURATOR_NATIVE_READS=off)" in st, st


ATTRIBUTION = """
import ctypes, json, sys, threading
from curator.core import native_reads as native, tracing

libc = ctypes.CDLL(None)
assert native.lib() is not None


def c_open(path):  # a thread no recording owns opens a file in C (no audit event)
    t = threading.Thread(target=lambda: libc.close(libc.open(path.encode(), 0)))
    t.start()
    t.join()


with tracing.recording() as alone:
    c_open(sys.argv[1])
both = threading.Barrier(2)
recs = {}


def task(name):
    with tracing.recording() as rec:
        both.wait()
        if name == "a":
            c_open(sys.argv[2])  # two recordings: a foreign thread is neither's
        both.wait()
    recs[name] = rec


ts = [threading.Thread(target=task, args=(n,)) for n in "ab"]
[t.start() for t in ts]
[t.join() for t in ts]
print(json.dumps([sorted(alone.opened.get(-1, ())), sorted(recs["a"].opened.get(-1, ()))]))
"""


def test_a_thread_of_no_task_counts_for_the_only_recording(tmp_path):
    one, two = tmp_path / "one.bin", tmp_path / "two.bin"
    one.write_bytes(b"1")
    two.write_bytes(b"2")
    env = cli_env()
    env.update(LD_PRELOAD=str(library_path()))
    p = subprocess.run(
        [sys.executable, "-c", ATTRIBUTION, str(one), str(two)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    alone, shared = json.loads(p.stdout)
    assert str(one) in alone and str(two) not in shared
