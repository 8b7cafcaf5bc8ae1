"""The same pipeline on the same input gives byte-identical outputs on the local executor, a real
Dask LocalCluster and real MPI ranks (mpiexec from the mpich wheel)."""

from __future__ import annotations

import json
import urllib.request

from tests.core.helpers_core import make_corpus, tree_digest
from tests.helpers import run_cli

PIPE = """\
name: equivalence
work_dir: {wd}
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl", shard_size_mb: 0.01}}
  - tests.core.helpers_core:min_words: {{n: 5}}
  - tests.core.helpers_core:hog: {{mb: 200}}
    checkpoint: true
  - tests.core.helpers_core:upper_first: {{}}
  - tests.core.helpers_core:burn: {{ms: 3}}
  - tests.core.helpers_core:AboveMedian: {{}}
  - write_jsonl: {{path: out, compression: zstd}}
"""


def test_local_dask_mpi_byte_identical(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for s in range(3):
        make_corpus(str(data / f"part{s}.jsonl"), 120, seed=s)
    (tmp_path / "p.yaml").write_text(PIPE.format(wd=tmp_path / "w", data=data))

    run_cli("run", "p.yaml", "--work-dir", str(tmp_path / "w_local"), cwd=tmp_path)
    res = run_cli("run", "p.yaml", "--executor", "dask", "--workers", "2",
                  "--work-dir", str(tmp_path / "w_dask"), cwd=tmp_path)
    assert "dashboard http://127.0.0.1:" in res.stderr
    run_cli("run", "p.yaml", "--executor", "mpi", "--work-dir", str(tmp_path / "w_mpi"),
            cwd=tmp_path, mpi=2)

    outs = {k: tree_digest(tmp_path / f"w_{k}" / "out") for k in ("local", "dask", "mpi")}
    assert len(outs["local"]) >= 4  # several shards were written
    assert outs["local"] == outs["dask"] == outs["mpi"]
    # read_jsonl -> min_words -> hog ran fused (hog is checkpointed), then upper_first -> burn
    for k in ("local", "dask", "mpi"):
        written = sorted(p.parent.name for p in (tmp_path / f"w_{k}").glob("stages/*/data"))
        assert written == ["above_median", "burn", "hog"], (k, written)
    rej = {k: tree_digest(tmp_path / f"w_{k}" / "rejected") for k in ("local", "dask", "mpi")}
    assert rej["local"] == rej["dask"] == rej["mpi"] and rej["local"]

    reports = {k: json.loads((tmp_path / f"w_{k}" / "report.json").read_text())
               for k in ("local", "dask", "mpi")}
    assert reports["dask"]["executor"] == {"type": "dask", "workers": 2}
    assert reports["mpi"]["executor"] == {"type": "mpi", "workers": 2}
    for k in ("dask", "mpi"):
        for a, b in zip(reports["local"]["stages"], reports[k]["stages"], strict=True):
            assert (a["docs_in"], a["docs_out"], a["rejected"], a["artifacts"]) == \
                   (b["docs_in"], b["docs_out"], b["rejected"], b["artifacts"])
    # CPU seconds and peak RSS per stage come back from Dask workers and MPI ranks: the CPU
    # burnt in the workers is all counted, and the peak is the stage's own (a stage that
    # wrote 200 MB shows it; the next chain, in the same processes, does not)
    for k, rep in reports.items():
        st = {s["id"]: s for s in rep["stages"]}
        assert all(s["cpu_s"] >= 0 and s["peak_rss_mb"] > 10 for s in rep["stages"]), k
        assert st["burn"]["cpu_s"] >= 0.9 * st["burn"]["docs_in"] * 0.003, (k, st["burn"])
        assert st["burn"]["cpu_s"] > st["min_words"]["cpu_s"], k
        assert st["hog"]["peak_rss_mb"] >= 200, (k, st["hog"])
        assert st["upper_first"]["peak_rss_mb"] < st["hog"]["peak_rss_mb"] - 150, k
        assert st["above_median"]["cpu_s"] > 0, k


def test_dask_dashboard_answers(tmp_path):
    from curator.core.executors import DaskExecutor

    with DaskExecutor(workers=1) as ex:
        assert ex.map(abs, [-1, -2, 3]) == [1, 2, 3]
        url = ex.dashboard_link
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=30) as r:
            assert r.status == 200
            assert b"Dask" in r.read()


def test_dask_dashboard_off_is_not_announced():
    from curator.core.executors import DaskExecutor

    lines: list[str] = []
    with DaskExecutor(workers=1, dashboard_address=None, log=lines.append) as ex:
        assert ex.map(abs, [-4]) == [4]
        assert ex.dashboard_link is None
    assert lines and lines[0].endswith("dashboard off"), lines


def _profiling(dask_worker) -> bool:
    return "profile" in dask_worker.periodic_callbacks


def test_dask_workers_do_not_sample_task_frames():
    """distributed's profiler holds a task thread's frames and frees them on the event loop
    thread; resiliparse's objects in those frames may not be freed there (extract_html)."""
    from distributed import LocalCluster

    from curator.core.executors import DaskExecutor

    with DaskExecutor(workers=2, dashboard_address=None) as ex:
        assert ex.map(abs, [-1]) == [1]
        assert set(ex.client.run(_profiling).values()) == {False}
    # a plain worker of the same distributed does sample (the check above could fail)
    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        from distributed import Client

        with Client(cluster) as client:
            assert set(client.run(_profiling).values()) == {True}


def test_mpi_failure_on_one_rank_fails_all_with_message(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 10)
    (tmp_path / "p.yaml").write_text(
        "name: f\nwork_dir: w\nexecutor: {type: mpi}\nstages:\n"
        f"  - read_jsonl: {{paths: {data}/a.jsonl, shard_size_mb: 0.0005}}\n"
        "  - tests.core.helpers_core:explode: {doc_id: doc-0-7}\n")
    res = run_cli("run", "p.yaml", cwd=tmp_path, mpi=2, check=False, timeout=120)
    assert res.returncode == 1
    # both ranks stop with the same one-line message naming stage, shard and cause
    errors = [x for x in res.stderr.splitlines() if x.startswith("curator: error:")]
    assert len(errors) == 2 and errors[0] == errors[1]
    assert "stage 'explode' failed on shard 'read_jsonl-" in errors[0]
    assert "boom on doc-0-7" in errors[0]
    assert not (tmp_path / "w" / "stages" / "explode" / "_SUCCESS.json").exists()


def test_workers_on_the_local_executor_say_where_they_apply():
    from curator.core.executors import LocalExecutor, make_executor
    from curator.core.pipeline import ExecutorConfig

    lines: list[str] = []
    ex = make_executor(ExecutorConfig(type="local", workers=2), log=lines.append)
    assert isinstance(ex, LocalExecutor)
    assert len(lines) == 1 and "--executor dask --workers 2" in lines[0], lines
    for cfg in (ExecutorConfig(type="local"), ExecutorConfig(type="local", workers=1)):
        make_executor(cfg, log=lines.append)
    assert len(lines) == 1, lines
