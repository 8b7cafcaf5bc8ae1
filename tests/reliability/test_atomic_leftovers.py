"""A writer SIGKILLed mid-write leaves ``<file>.tmp-xxxxxxxx``; when that file is published by
the rerun the leftover goes, while temporaries of other files (maybe still being written by
another worker) stay. The end-to-end version is the curated kill point of
test_quickstart_kills.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from curator.storage.atomic import atomic_open

WRITER = """
import os, signal, sys
sys.path.insert(0, {root!r})
from curator.storage.atomic import atomic_open
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


LIVE_WRITER = """
import sys
sys.path.insert(0, {root!r})
from curator.storage.atomic import atomic_open
with atomic_open({path!r}) as f:
    f.write(b"slow writer")
    f.flush()
    print("writing", flush=True)
    sys.stdin.readline()
print("published", flush=True)
"""


def test_a_live_writers_temporary_is_never_removed(tmp_path):
    """Two writers of one file (two runs, or a retried task): publishing one must not delete
    the other's temporary under it (that was a raw FileNotFoundError in the other writer).
    Temporaries name their writer's host and PID; only a dead local writer's are removed."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    target = tmp_path / "out" / "s-00001.jsonl.gz"
    target.parent.mkdir()
    other_host = target.parent / "s-00001.jsonl.gz.tmp-ffffffff-1-0123abcd"  # can't check it
    other_host.write_bytes(b"?")
    p = subprocess.Popen([sys.executable, "-c", LIVE_WRITER.format(root=root, path=str(target))],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "writing\n"
        [live] = [n for n in os.listdir(target.parent) if n != other_host.name]
        assert f"-{p.pid}-" in live
        with atomic_open(str(target)) as f:
            f.write(b"fast writer")
        assert sorted(os.listdir(target.parent)) == sorted(
            [target.name, live, other_host.name])
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline() == "published\n"
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
    assert target.read_bytes() == b"slow writer"
    assert sorted(os.listdir(target.parent)) == sorted([target.name, other_host.name])
