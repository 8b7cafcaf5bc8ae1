"""fuzzy_dedup and exact_dedup give the same output on local, Dask (2 workers) and MPI
(2 ranks): the work is keyed on shards and partitions, never on worker count."""

from __future__ import annotations

from curator.storage.shards import read_records
from tests.dedup.helpers_dedup import make_corpus, rejected, write_pipeline
from tests.helpers import run_cli

STAGES = ("  - exact_dedup: {partitions: 3}\n"
          "  - fuzzy_dedup: {shingle: word, ngram: 5, threshold: 0.7, partitions: 4}\n")


def _outputs(work_dir):
    out = {}
    for f in sorted((work_dir / "stages" / "fuzzy_dedup" / "data").glob("*.jsonl.zst")):
        out[f.name] = list(read_records(str(f)))
    return out


def test_local_dask_mpi_identical(tmp_path):
    make_corpus(tmp_path / "c", n_base=150, seed=11, shards=5)
    inputs = f"{tmp_path}/c/part*.jsonl"
    runs = {
        "local": (write_pipeline(tmp_path / "l.yaml", tmp_path / "wl", inputs, STAGES), 0),
        "dask": (write_pipeline(tmp_path / "d.yaml", tmp_path / "wd", inputs, STAGES,
                                "{type: dask, workers: 2}"), 0),
        "mpi": (write_pipeline(tmp_path / "m.yaml", tmp_path / "wm", inputs, STAGES,
                               "{type: mpi}"), 2),
    }
    results = {}
    for name, (y, ranks) in runs.items():
        r = run_cli("run", str(y), mpi=ranks, check=False)
        assert r.returncode == 0, f"{name}: {r.stderr[-2000:]}"
        wd = y.parent / {"local": "wl", "dask": "wd", "mpi": "wm"}[name]
        results[name] = (rejected(wd, "exact_dedup"), rejected(wd, "fuzzy_dedup"),
                         _outputs(wd))
    assert len(results["local"][1]) > 30 and len(results["local"][0]) > 0
    assert results["dask"] == results["local"]
    assert results["mpi"] == results["local"]
