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


def _other_host(hostname: str) -> list[str]:
    """The argv prefix that runs a command as another host would: a UTS namespace of its own
    with another host name (root: CI runs as root), the same files."""
    import shutil

    from tests.helpers import unavailable

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        unavailable("needs root and unshare(1) to run a process under another host name")
    return ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', hostname]


def test_temporaries_of_a_run_killed_on_another_host_are_counted_and_removed(tmp_path):
    """A run SIGKILLed mid-write on another host leaves ``*.tmp-*`` in ``stages/`` and
    ``rejected/``; this host can never ask whether their writer lives, but they carry that
    run's id: ``curator status`` counts them (and their bytes), and the next run of the
    work_dir, started here, removes them. They used to stay for good."""
    from tests.core.helpers_core import make_corpus
    from tests.helpers import cli_env

    recs = make_corpus(str(tmp_path / "a.jsonl"), 400, seed=7)
    # die on a document after two short ones: the shard's rejected file is being written
    crash = next(r for i, r in enumerate(recs) if i > 300 and all(
        len(recs[j]["text"].split()) < 12 for j in (i - 1, i - 2)))
    marker = tmp_path / "crashed"
    y = tmp_path / "p.yaml"
    y.write_text(
        "name: temps\nwork_dir: w\nreport: false\nprogress: 'off'\nstages:\n"
        "  - read_jsonl: {paths: a.jsonl, shard_size_mb: 0.05}\n"
        "  - tests.core.helpers_core:min_words: {n: 12}\n"
        f"  - tests.core.helpers_core:crash_on_id: {{id: '{crash['id']}', marker: '{marker}'}}\n"
        "  - exact_dedup: {}\n")
    cmd = [sys.executable, "-m", "curator", "run", "p.yaml"]
    dead = subprocess.run([*_other_host("h45-elsewhere"), *cmd], cwd=tmp_path, env=cli_env(),
                          capture_output=True, text=True, timeout=300)
    assert dead.returncode == -signal.SIGKILL or dead.returncode == 128 + signal.SIGKILL, \
        dead.stderr
    left = sorted(p for p in (tmp_path / "w").rglob("*") if ".tmp-" in p.name)
    kinds = {p.relative_to(tmp_path / "w").parts[0] for p in left}
    assert {"stages", "rejected"} <= kinds, left
    size = sum(p.stat().st_size for p in left)

    status = subprocess.run([sys.executable, "-m", "curator", "status", "p.yaml"],
                            cwd=tmp_path, env=cli_env(), capture_output=True, text=True,
                            timeout=120)
    [line] = [x for x in status.stdout.splitlines() if x.startswith("temporary files")]
    from curator.core.status import _human

    assert line.startswith(f"temporary files of runs that died: {len(left)} "
                           f"({_human(size)}) in "), line

    again = subprocess.run(cmd, cwd=tmp_path, env=cli_env(), capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert [p for p in (tmp_path / "w").rglob("*") if ".tmp-" in p.name] == []
    assert f"removed {len(left)} temporary file(s)" in again.stderr + again.stdout


def test_a_killed_dask_workers_temporaries_on_another_host_go_with_the_next_run(tmp_path):
    """Two ``dask worker --no-nanny`` processes, one under another host name; that one dies
    (SIGKILL) mid-shard and the other redoes its work, so the run succeeds, but the dead
    worker's temporaries stay: no process on its host is left to say that their writer died.
    They carry the run's id (a Dask task takes it to its worker): ``curator status`` counts
    them, and the next run removes them."""
    import contextlib
    import time

    from tests.core.helpers_core import BIN, make_corpus
    from tests.helpers import cli_env

    make_corpus(str(tmp_path / "a.jsonl"), 400, seed=9)
    marker = tmp_path / "crashed"
    (tmp_path / "p.yaml").write_text(
        "name: temps\nwork_dir: w\nreport: false\nprogress: 'off'\nstages:\n"
        "  - read_jsonl: {paths: a.jsonl, shard_size_mb: 0.05}\n"
        "  - tests.core.helpers_core:min_words: {n: 12}\n"
        "  - tests.core.helpers_core:crash_on_host: "
        f"{{host: h45-far, after: 40, marker: '{marker}'}}\n"
        "  - write_jsonl: {path: out, compression: none}\n")
    sched_file = tmp_path / "scheduler.json"
    env = cli_env()
    far = _other_host("h45-far")

    def start(cmd: list[str], name: str) -> subprocess.Popen:
        (tmp_path / name).mkdir()
        return subprocess.Popen(cmd, cwd=tmp_path / name, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)

    worker = [str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file), "--no-nanny",
              "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"]
    procs = [start([str(BIN / "dask"), "scheduler", "--scheduler-file", str(sched_file),
                    "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
                    "127.0.0.1:0"], "s")]
    try:
        procs.append(start([*far, *worker], "far"))
        procs.append(start(worker, "near"))
        from distributed import Client

        deadline = time.monotonic() + 60
        while not sched_file.exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with Client(scheduler_file=str(sched_file), timeout="60s") as c:
            c.wait_for_workers(2, timeout=120)
        cmd = [sys.executable, "-m", "curator", "run", "p.yaml", "--executor", "dask",
               "--set", f"executor.scheduler_file={sched_file}"]
        first = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)
        assert first.returncode == 0, first.stderr[-3000:]
        assert marker.read_text() == "h45-far"
        left = [p for p in (tmp_path / "w").rglob("*") if ".tmp-" in p.name]
        assert left, "the far worker died before it wrote a temporary"
        assert all(".tmp-r" in p.name for p in left), left  # named after their run
        status = subprocess.run([sys.executable, "-m", "curator", "status", "p.yaml"],
                                cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=120)
        assert f"temporary files of runs that died: {len(left)} (" in status.stdout, \
            status.stdout
        again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)
        assert again.returncode == 0, again.stderr[-3000:]
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert [p for p in (tmp_path / "w").rglob("*") if ".tmp-" in p.name] == []
    assert f"removed {len(left)} temporary file(s)" in again.stderr + again.stdout


def test_status_does_not_count_the_live_runs_own_temporaries(tmp_path):
    """While a run holds the work_dir, its own temporaries (its id is in the lock file) are
    work in progress, not leftovers; another run's are."""
    from curator.core.lock import WorkDirLock
    from curator.core.status import dead_temps

    wd = tmp_path / "w"
    (wd / "stages" / "s" / "data").mkdir(parents=True)
    (wd / "rejected" / "s").mkdir(parents=True)
    with WorkDirLock(str(wd)) as lock:
        live = wd / "stages" / "s" / "data" / f"a.jsonl.zst.tmp-r{lock.run_id}-0123abcd-1-89abcdef"
        dead = wd / "rejected" / "s" / "a.jsonl.zst.tmp-r0123456789ab-0123abcd-2-89abcdef"
        old = wd / "stages" / "s" / "b.pkl.tmp-0123abcd-3-89abcdef"  # before run ids
        live.write_bytes(b"12345")
        dead.write_bytes(b"123")
        old.write_bytes(b"1")
        assert dead_temps(str(wd)) == (2, 4, ["rejected/s", "stages/s"])
    assert dead_temps(str(wd)) == (3, 9, ["rejected/s", "stages/s", "stages/s/data"])
