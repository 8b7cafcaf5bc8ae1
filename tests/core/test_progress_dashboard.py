"""Progress inside a long shard on the Dask dashboard and as a share of the input read
: a shard in flight shows on the stock dashboard of a real cluster (scheduler
and worker as separate processes), and the heartbeat carries how far through its (compressed)
input file the reader is."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from curator.core import progress
from curator.core.progress import heartbeat, live_summary, shard_eta
from tests.core.helpers_core import BIN
from tests.helpers import cli_env, stop_process_groups

ROOT = Path(__file__).resolve().parents[2]


def _words(rng: random.Random, n: int) -> str:
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))
                    for _ in range(n))


def _beats_while_reading(docs: Iterator, path: str, probe: Iterator[int]) -> list[dict]:
    """Pull ``docs`` through a heartbeat written at every 32nd document; at the document
    numbers in ``probe`` note the beat this process holds for the shard."""
    seen = []
    want = next(probe, None)
    for n, _ in enumerate(heartbeat(docs, path, every=0.0), 1):
        if n == want:
            seen.append(dict(progress.LIVE[path]))
            want = next(probe, None)
    assert path not in progress.LIVE  # the shard ended: gone from the worker's metrics
    return seen


def test_heartbeat_carries_the_share_of_a_gzip_jsonl_read(tmp_path):
    """The fraction is the compressed position over the file's size: it grows with the
    documents read and ends near 1, and a per-shard ETA follows from it."""
    from curator.core.shard_context import ShardContext
    from curator.io.jsonl import iter_lines

    rng = random.Random(7)
    path = tmp_path / "big.jsonl.gz"
    n = 12_000
    with gzip.open(path, "wt") as f:  # random words: compressed bytes grow evenly
        for i in range(n):
            f.write(json.dumps({"id": str(i), "text": _words(rng, 40)}) + "\n")
    assert path.stat().st_size > 2_000_000
    ctx = ShardContext(shard="s", stage_id="t", work_dir=str(tmp_path), artifacts={})
    docs = (SimpleNamespace(text=line.decode()) for _, _, line in iter_lines(str(path), ctx))
    beat_path = str(tmp_path / "stages" / "t" / "_progress" / "s.json")
    beats = _beats_while_reading(docs, beat_path, iter([1024, n // 2, n - 32]))
    fracs = [b["fraction"] for b in beats]
    assert fracs == sorted(fracs) and fracs[0] < 0.35
    assert abs(fracs[1] - 0.5) < 0.2  # half the documents: about half the compressed bytes
    assert fracs[2] > 0.9
    assert shard_eta(beats[1]) is not None and shard_eta({"docs": 1}) is None


def test_heartbeat_carries_the_share_of_a_warc_read(tmp_path):
    """A .warc.gz of many gzip members (as Common Crawl writes them): the fraction follows the
    member being read."""
    from curator.acquire.warc import iter_warc
    from curator.core.shard_context import ShardContext
    from tests.acquire.helpers_acquire import warc_response, write_warc

    rng = random.Random(3)
    members = [warc_response(f"http://example.com/{i}",
                             f"<html><body><p>{_words(rng, 300)}</p></body></html>".encode())
               for i in range(1500)]
    path = write_warc(str(tmp_path / "a.warc.gz"), members)
    size = os.path.getsize(path)
    assert size > 2_000_000
    ctx = ShardContext(shard="s", stage_id="t", work_dir=str(tmp_path), artifacts={})
    docs = (SimpleNamespace(text="x") for _ in iter_warc(path, ctx))
    beats = _beats_while_reading(docs, str(tmp_path / "p" / "x" / "s.json"),
                                 iter([320, 750, 1472]))
    # the reader reports the end of the member just parsed (the next one may be in the works)
    for beat in beats:  # written at the last 32nd document before the probe
        k = beat["docs"]
        lo = sum(len(m) for m in members[:k]) / size
        hi = sum(len(m) for m in members[:k + 2]) / size
        assert lo - 1e-4 <= beat["fraction"] <= hi + 1e-4, (k, lo, hi, beat)
    assert [b["docs"] for b in beats] == [320, 736, 1472]


def test_live_summary_is_what_the_worker_shows():
    """The worker metrics: one text column naming the shards (with share read and ETA) and
    numbers summed over the shards in flight."""
    progress.LIVE.clear()
    assert live_summary() == {"curator_shard": "", "curator_docs": 0, "curator_mb": 0.0,
                              "curator_docs_per_s": 0}
    now = time.time()
    progress.LIVE["/w/stages/web/_progress/web-00001.json"] = {
        "docs": 500, "bytes": 2_000_000, "started": now - 10, "at": now, "fraction": 0.25}
    progress.LIVE["/w/stages/web/_progress/web-00002.json"] = {
        "docs": 100, "bytes": 500_000, "started": now - 10, "at": now}
    try:
        assert live_summary() == {
            "curator_shard": "web/web-00001 25% ETA 30s, web/web-00002",
            "curator_docs": 600, "curator_mb": 2.5, "curator_docs_per_s": 60}
    finally:
        progress.LIVE.clear()
    # a shard stuck for 10 s since its last beat: its ETA grows instead of staying frozen
    stuck = {"docs": 1, "bytes": 1, "started": now - 20, "at": now - 10, "fraction": 0.5}
    assert shard_eta(stuck) == pytest.approx(10) and shard_eta(stuck, now) == pytest.approx(20)


# -- a real cluster ------------------------------------------------------------------------------

HOLD = '''
import os, time
from curator import filter

@filter
def hold_at(doc, at: str = "", release: str = "") -> bool:
    """Stops the shard at document ``at`` until the file ``release`` exists."""
    if doc.id == at:
        deadline = time.monotonic() + 300
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.05)
    return True
'''


@contextlib.contextmanager
def _cluster(tmp: Path, env: dict[str, str]) -> Iterator[tuple[Path, int]]:
    """``dask scheduler`` and one ``dask worker`` as separate processes; yields the scheduler
    file and the dashboard's port (bound to 127.0.0.1)."""
    sched_file = tmp / "scheduler.json"
    procs: list[subprocess.Popen] = []
    with open(tmp / "scheduler.log", "w") as log:  # the scheduler's log: a failure's cause
        yield from _start(tmp, env, sched_file, procs, log)


def _start(tmp: Path, env: dict[str, str], sched_file: Path, procs: list, log) -> Iterator:
    try:
        procs.append(subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--scheduler-file", str(sched_file),
             "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0"],
            cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=log,
            start_new_session=True))
        procs.append(subprocess.Popen(
            [str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file), "--nworkers",
             "1", "--nthreads", "1", "--host", "127.0.0.1", "--local-directory",
             str(tmp / "worker")],
            cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True))
        from distributed import Client

        with Client(scheduler_file=str(sched_file), timeout="60s") as c:
            c.wait_for_workers(1, timeout=120)
        port = json.loads(sched_file.read_text())["services"]["dashboard"]
        yield sched_file, port
    finally:
        stop_process_groups(procs)


def _get(port: int, path: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
        return r.status, r.read()


def _curator_metrics(port: int) -> dict | None:
    """The ``curator_*`` metrics of the one worker, from the scheduler's JSON; ``None`` while
    Dask's own JSON encoding fails (a heartbeat's fine-performance digests have tuple keys:
    500 until the next heartbeat, a Dask quirk independent of curator)."""
    import urllib.error

    try:
        ident = json.loads(_get(port, "/json/identity.json")[1])
    except urllib.error.HTTPError as e:
        if e.code == 500:
            return None
        raise
    (worker,) = ident["workers"].values()
    return {k: v for k, v in worker["metrics"].items() if k.startswith("curator_")}


def _dashboard_sources(port: int, page: str) -> list[dict]:
    """The data of every ColumnDataSource of a dashboard page's Bokeh document, pulled over
    HTTP and the page's websocket on 127.0.0.1 as a browser does."""
    from bokeh.client import pull_session
    from bokeh.models import ColumnDataSource

    with pull_session(url=f"http://127.0.0.1:{port}/{page}") as session:
        return [dict(src.data) for src in session.document.select({"type": ColumnDataSource})]


def _dashboard_tables(port: int, page: str) -> list[dict]:
    """Column field -> values of each DataTable of a dashboard page."""
    from bokeh.client import pull_session
    from bokeh.models import DataTable

    with pull_session(url=f"http://127.0.0.1:{port}/{page}") as session:
        return [{c.field: list(t.source.data[c.field]) for c in t.columns}
                for t in session.document.select({"type": DataTable})]


def _poll(fn, ok, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while True:
        got = fn()
        if ok(got):
            return got
        assert time.monotonic() < deadline, f"{what}: {got}"
        time.sleep(0.2)


@pytest.mark.slow
def test_dask_dashboard_shows_the_shard_in_flight(tmp_path):
    """A shard held after 2,000 documents: the stock dashboard (HTTP on 127.0.0.1) shows its
    worker reading it (documents, MB, rate, share of the gzip file read), the task is named by
    stage and shard, and once the shard ends the worker shows nothing in flight."""
    rng = random.Random(5)
    data = tmp_path / "big.jsonl.gz"
    with gzip.open(data, "wt") as f:
        for i in range(6000):
            f.write(json.dumps({"id": str(i), "text": _words(rng, 30)}) + "\n")
    (tmp_path / "holdmod.py").write_text(HOLD)
    release = tmp_path / "release"
    (tmp_path / "p.yaml").write_text(
        "name: p\nwork_dir: work\nstages:\n"
        "  - {id: big, read_jsonl: {paths: big.jsonl.gz}}\n"
        f"  - holdmod:hold_at: {{at: '2000', release: '{release}'}}\n")
    env = {**cli_env(), "CURATOR_HEARTBEAT_S": "0"}
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env.get('PYTHONPATH', '')}"
    (tmp_path / "worker").mkdir()
    with _cluster(tmp_path, env) as (sched_file, port):
        run = subprocess.Popen(
            [sys.executable, "-m", "curator", "run", "p.yaml", "--executor", "dask", "--set",
             f"executor.scheduler_file={sched_file}"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            m = _poll(lambda: _curator_metrics(port),
                      lambda m: m and m.get("curator_docs", 0) >= 1984,
                      "the worker's metrics never showed the held shard")
            # the heartbeat before document 2000 (every 32nd document), on the held shard
            assert m["curator_docs"] == 1984, m
            assert m["curator_mb"] > 0.3 and m["curator_docs_per_s"] > 0
            shard, pct = m["curator_shard"].split()[:2]
            assert shard == "big/big-00000" and 0 < int(pct.rstrip("%")) < 100, m
            # the stock Workers page, as a browser gets it (the Bokeh document over the
            # dashboard's own websocket): a table with the curator columns and these values
            workers = _dashboard_tables(port, "workers")
            table = next(t for t in workers if "curator_docs" in t)
            assert table["curator_docs"][1:] == [1984], table
            assert table["curator_shard"][1].startswith(f"big/big-00000 {pct} ETA "), table
            # the Progress page's bars are named by stage
            bars = _dashboard_sources(port, "individual-progress")
            assert any("curator:big..hold_at" in map(str, d.get("name", ())) for d in bars), bars
            from distributed import Client

            with Client(scheduler_file=str(sched_file), timeout="30s") as c:
                prefixes = c.run_on_scheduler(
                    lambda dask_scheduler: sorted(map(str, dask_scheduler.task_prefixes)))
                spans = c.run_on_scheduler(
                    lambda dask_scheduler: sorted(
                        "/".join(s.name) for s in
                        dask_scheduler.extensions["spans"].spans.values()))
            # one task per shard of the fused pair big..hold_at, named so on the dashboard
            assert prefixes == spans == ["curator:big..hold_at"], (prefixes, spans)
        finally:
            release.write_text("")
            _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        assert f"(shards in flight: http://127.0.0.1:{port}/workers)" in err  # the start line
        m = _poll(lambda: _curator_metrics(port),
                  lambda m: m is not None and not m.get("curator_docs"),
                  "the finished shard stayed on the dashboard")
        assert m == {"curator_shard": "", "curator_docs": 0, "curator_mb": 0.0,
                     "curator_docs_per_s": 0}


HOLD_PHASE = '''
import functools, os, time
from curator import GlobalStage
from curator.core import progress

def _count(release, name):
    """1,000 documents counted, held after the 500th until ``release`` exists."""
    progress.expect(1000)
    for i in range(1000):
        progress.step()
        if i == 499:
            deadline = time.monotonic() + 300
            while not os.path.exists(release) and time.monotonic() < deadline:
                time.sleep(0.05)
    return name

class HoldPhase(GlobalStage):
    """A global stage whose one phase is held half-way."""
    name = "hold_phase"

    def __init__(self, release: str = ""):
        self.release = release

    def run(self, shards, ctx):
        ctx.map(functools.partial(_count, self.release), [s.name for s in shards],
                phase="count", keys=[s.name for s in shards])
        return ctx.passthrough(shards)
'''


@pytest.mark.slow
def test_dask_dashboard_names_a_global_stage_and_its_phases(tmp_path):
    """A global stage's phase task held half-way: the worker's curator_* columns show it by
    stage and phase with its documents and share done; every task of the run (exact_dedup's
    phases, its final pass, the held stage's phase) has a key and a span named by stage and
    phase, where they used to be 'call_measured' with no stage."""
    with open(tmp_path / "in.jsonl", "w") as f:
        for i in range(300):
            f.write(json.dumps({"id": str(i), "text": f"doc {i % 200}"}) + "\n")
    (tmp_path / "holdphase.py").write_text(HOLD_PHASE)
    release = tmp_path / "release"
    (tmp_path / "p.yaml").write_text(
        "name: p\nwork_dir: work\nstages:\n"
        "  - {id: src, read_jsonl: {paths: in.jsonl}}\n"
        "  - {id: dedup, exact_dedup: {}}\n"
        f"  - {{id: hold, 'holdphase:HoldPhase': {{release: '{release}'}}}}\n")
    env = {**cli_env(), "CURATOR_HEARTBEAT_S": "0"}
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env.get('PYTHONPATH', '')}"
    (tmp_path / "worker").mkdir()
    with _cluster(tmp_path, env) as (sched_file, port):
        run = subprocess.Popen(
            [sys.executable, "-m", "curator", "run", "p.yaml", "--executor", "dask", "--set",
             f"executor.scheduler_file={sched_file}"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            m = _poll(lambda: _curator_metrics(port),
                      lambda m: m and m.get("curator_docs", 0) >= 500,
                      "the worker's metrics never showed the held phase")
            assert m["curator_docs"] == 500, m
            assert m["curator_shard"].startswith("hold:count/src-00000 50% ETA "), m
            assert m["curator_docs_per_s"] > 0 and m["curator_mb"] == 0.0
        finally:
            release.write_text("")
            _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        from distributed import Client

        with Client(scheduler_file=str(sched_file), timeout="30s") as c:
            prefixes = c.run_on_scheduler(
                lambda dask_scheduler: sorted(map(str, dask_scheduler.task_prefixes)))
            spans = c.run_on_scheduler(
                lambda dask_scheduler: sorted(
                    "/".join(s.name) for s in dask_scheduler.extensions["spans"].spans.values()))
        want = ["curator:dedup", "curator:dedup:groups", "curator:dedup:hash",
                "curator:dedup:removals", "curator:hold:count", "curator:src"]
        assert prefixes == spans == want, (prefixes, spans)
