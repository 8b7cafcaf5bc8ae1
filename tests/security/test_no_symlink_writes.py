"""Nothing outside the work_dir and declared outputs is written: a symlink planted in a work_dir
(by anyone who can write it) is one line naming it, and the file or folder it points to is
untouched. Real symlinks, real runs of the ``curator`` command."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import cli_env, run_cli

PIPE = """name: t
work_dir: {wd}
stages:
  - read_jsonl: {{paths: ["{data}"]}}
  - word_count_filter: {{min_words: {min_words}}}
    checkpoint: true
  - write_jsonl: {{path: out}}
"""


def _setup(tmp_path: Path, min_words: int = 100) -> Path:
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps({"id": f"d{i}", "text": f"doc {i} has some words"})
                            + "\n" for i in range(5)))
    (tmp_path / "p.yaml").write_text(PIPE.format(wd=tmp_path / "w", data=data,
                                                 min_words=min_words))
    (tmp_path / "w").mkdir()
    return tmp_path / "w"


def _victims(tmp_path: Path) -> tuple[Path, Path]:
    """A file and a folder of the user's, outside the work_dir."""
    f = tmp_path / "victim.txt"
    f.write_text("precious\n")
    d = tmp_path / "victim_dir"
    d.mkdir()
    (d / "keep.txt").write_text("mine\n")
    return f, d


def _snapshot(p: Path) -> dict[str, bytes]:
    if p.is_file():
        return {p.name: p.read_bytes()}
    return {str(q.relative_to(p)): q.read_bytes() if q.is_file() else b"<dir>"
            for q in sorted(p.rglob("*"))}


def _one_line(proc: subprocess.CompletedProcess, path: Path) -> str:
    assert proc.returncode != 0, proc.stdout + proc.stderr
    err = [x for x in proc.stderr.splitlines() if x.startswith("curator: error:")]
    assert len(err) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(path) in err[0] and "symlink" in err[0], err[0]
    return err[0]


@pytest.mark.parametrize("name", [".lock", ".write-test"])
def test_a_symlink_at_a_file_curator_writes_is_one_line_and_the_target_untouched(tmp_path,
                                                                                   name):
    """``ln -s ~/victim w/.lock`` used to truncate the victim (``.lock`` was opened with
    ``a+b`` and truncated); ``w/.write-test`` overwrote it with ``ok``."""
    wd = _setup(tmp_path)
    victim, _ = _victims(tmp_path)
    (wd / name).symlink_to(victim)
    proc = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    _one_line(proc, wd / name)
    assert victim.read_text() == "precious\n"
    assert (wd / name).is_symlink()


def test_a_hard_link_at_lock_or_write_test_never_reaches_the_other_file(tmp_path):
    """A hard link has no symlink to refuse: the lock (kept open, truncated) refuses a file
    with other names, the write probe removes one and writes a new file."""
    wd = _setup(tmp_path)
    victim, _ = _victims(tmp_path)
    os.link(victim, wd / ".lock")
    proc = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    err = [x for x in proc.stderr.splitlines() if x.startswith("curator: error:")]
    assert proc.returncode == 1 and len(err) == 1 and "hard links" in err[0], proc.stderr
    assert victim.read_text() == "precious\n"
    (wd / ".lock").unlink()
    os.link(victim, wd / ".write-test")
    run_cli("run", "p.yaml", cwd=tmp_path)
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("where", ["rejected", "stages", "quarantine"])
def test_a_symlinked_folder_in_the_work_dir_is_one_line_and_the_target_untouched(tmp_path,
                                                                                   where):
    """A symlinked ``rejected/`` used to receive ``word_count_filter/<shard>.jsonl.zst``, a
    symlinked stage data folder the stage's output shards."""
    wd = _setup(tmp_path, min_words=3)
    _, victim = _victims(tmp_path)
    before = _snapshot(victim)
    link = wd / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim, target_is_directory=True)
    proc = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    _one_line(proc, link)
    assert _snapshot(victim) == before


def test_atomic_writes_never_follow_a_symlink_below_a_root(tmp_path):
    from curator.storage import nofollow
    from curator.storage.atomic import atomic_open

    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    victim, vdir = _victims(tmp_path)
    (root / "file").symlink_to(victim)
    (root / "a" / "linked").symlink_to(vdir, target_is_directory=True)
    nofollow.confine(str(root))
    for target in (root / "file", root / "a" / "linked" / "keep.txt",
                   root / "a" / "linked" / "new" / "x.json"):
        with pytest.raises(OSError) as e, atomic_open(str(target), "wb") as f:
            f.write(b"clobbered")
        assert "symlink" in str(e.value)
    with pytest.raises(OSError):
        nofollow.unlink(str(root / "a" / "linked" / "keep.txt"))
    with pytest.raises(OSError):
        nofollow.makedirs(str(root / "a" / "linked" / "sub"))
    nofollow.rmtree(str(root / "a"))  # removes the link, not what it points to
    assert victim.read_text() == "precious\n" and sorted(os.listdir(vdir)) == ["keep.txt"]
    assert (vdir / "keep.txt").read_text() == "mine\n"


HOLDER = """
import sys
from curator.core.lock import WorkDirLock
sys.argv = ["curator", "run", "p.yaml", "--set", "redis.password=s3cr3t-set-value",
            "--set=storage.token=another-s3cr3t", "--se", "x=third-s3cr3t"]
WorkDirLock(sys.argv and {wd!r}).acquire()
print("held", flush=True)
sys.stdin.read()
"""


def test_lock_file_is_private_and_holds_no_set_values(tmp_path):
    """The lock names its holder (host, PID, command line) while a run lasts: it used to be
    0644 with ``--set`` values, secrets included, in clear."""
    wd = tmp_path / "w"
    wd.mkdir()
    (wd / ".lock").write_text("")
    os.chmod(wd / ".lock", 0o644)  # left by an older curator
    p = subprocess.Popen([sys.executable, "-c", HOLDER.format(wd=str(wd))], env=cli_env(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "held"
        deadline = time.monotonic() + 30
        while '"pid"' not in (wd / ".lock").read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        text = (wd / ".lock").read_text()
        assert f'"pid":{p.pid}' in text
        for secret in ("s3cr3t-set-value", "another-s3cr3t", "third-s3cr3t"):
            assert secret not in text, text
        assert "redis.password=***" in text and "p.yaml" in text
        assert stat.S_IMODE(os.stat(wd / ".lock").st_mode) == 0o600
    finally:
        p.kill()
        p.wait()
