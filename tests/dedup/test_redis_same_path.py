"""Two runs of the redis backend that share a Redis server and a work_dir *path* (two machines
or containers with the same layout): the work_dir's own random tag is part of every key, so
neither run clears or reads the other's keys, and both finish with the right result.

The two "machines" are one folder path, ``<tmp>/link``, a symlink switched between two real
folders while the runs are frozen (failure injection: :func:`start_frozen_run` SIGSTOPs a run
right after ``RedisBucketStore.begin`` / the first ``claim`` returned)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

import redis

from tests.dedup.helpers_dedup import (
    REPO,
    make_corpus,
    plain_redis_server,
    rejected,
    start_frozen_run,
    write_pipeline,
)
from tests.helpers import run_cli

FUZZY = "{shingle: word, ngram: 5, threshold: 0.7"


def _point(link: Path, target: Path) -> None:
    """Switch ``link`` to ``target`` atomically (what the other machine sees at that path)."""
    tmp = link.with_name(link.name + ".new")
    tmp.symlink_to(target)
    os.replace(tmp, link)


def _finish(run: subprocess.Popen) -> tuple[int, str]:
    os.killpg(run.pid, signal.SIGCONT)
    _, err = run.communicate(timeout=300)
    return run.returncode, err


def test_two_runs_at_the_same_work_dir_path_never_share_buckets(tmp_path):
    """Used to: run B's start removed every key of run A (the same path and stage id gave the
    same stage tag), and A stopped with "keys of this run vanished ... the node was flushed,
    restarted empty ...", which sent the user after a Redis fault that never happened."""
    real_a, real_b, link = tmp_path / "a", tmp_path / "b", tmp_path / "link"
    docs = make_corpus(real_a / "c", n_base=240, seed=11, shards=4)
    # B holds the same documents in another order: its document numbers mean other documents
    (real_b / "c").mkdir(parents=True)
    for k in range(4):
        shutil.copy(real_a / "c" / f"part{k}.jsonl", real_b / "c" / f"part{3 - k}.jsonl")
    assert len(docs) > 300
    expected = {}
    with plain_redis_server(tmp_path) as port:
        stage = (f"  - fuzzy_dedup: {FUZZY}, backend: redis, "
                 f"redis: {{nodes: ['127.0.0.1:{port}']}}}}\n")
        y = write_pipeline(tmp_path / "r.yaml", link / "w", f"{link}/c/part*.jsonl", stage)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        runs: dict[str, subprocess.Popen] = {}
        try:
            for name, real in (("a", real_a), ("b", real_b)):
                ye = write_pipeline(tmp_path / f"e{name}.yaml", tmp_path / f"e{name}",
                                    f"{real}/c/part*.jsonl", f"  - fuzzy_dedup: {FUZZY}}}\n")
                run_cli("run", str(ye))
                expected[name] = rejected(tmp_path / f"e{name}", "fuzzy_dedup")
            assert len(expected["a"]) > 20
            _point(link, real_a)
            (tmp_path / "fa").mkdir()
            runs["a"] = start_frozen_run(tmp_path / "fa", ["run", str(y)], env,
                                         after="redis_watch.begin")
            _point(link, real_b)
            (tmp_path / "fb").mkdir()
            runs["b"] = start_frozen_run(tmp_path / "fb", ["run", str(y)], env)
            for name, real in (("a", real_a), ("b", real_b)):
                _point(link, real)
                rc, err = _finish(runs.pop(name))
                assert rc == 0, (name, err)
                assert rejected(real / "w", "fuzzy_dedup") == expected[name], name
        finally:
            for run in runs.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.pid, signal.SIGKILL)
                run.wait()
        # each rerun completes correctly and leaves no key behind
        for name, real in (("a", real_a), ("b", real_b)):
            _point(link, real)
            run_cli("run", str(y))
            assert rejected(real / "w", "fuzzy_dedup") == expected[name], name
        assert redis.Redis(port=port).dbsize() == 0
