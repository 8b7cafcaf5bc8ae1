"""A writer SIGKILLed mid-write leaves ``<file>.tmp-xxxxxxxx``; when that file is published by
the rerun the leftover goes, while temporaries of other files (maybe still being written by
another worker) stay. The end-to-end version is the curated kill point of
test_quickstart_kills.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from curator.io.atomic import atomic_open

WRITER = """
import os, signal, sys
sys.path.insert(0, {root!r})
from curator.io.atomic import atomic_open
with atomic_open({path!r}) as f:
    f.write(b"partial")
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_leftover_of_a_killed_writer_is_removed_when_the_file_is_published(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    target = tmp_path / "out" / "s-00001.jsonl.gz"
    p = subprocess.run([sys.executable, "-c", WRITER.format(root=root, path=str(target))])
    assert p.returncode == -signal.SIGKILL
    [left] = os.listdir(target.parent)
    assert left.startswith("s-00001.jsonl.gz.tmp-") and not target.exists()
    busy = target.parent / "s-00002.jsonl.gz.tmp-0123abcd"  # another file's writer
    busy.write_bytes(b"in progress")

    with atomic_open(str(target)) as f:
        f.write(b"complete")
    assert sorted(os.listdir(target.parent)) == ["s-00001.jsonl.gz", busy.name]
    assert target.read_bytes() == b"complete"
