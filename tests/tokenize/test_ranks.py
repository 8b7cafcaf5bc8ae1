"""Same bytes on real MPI ranks as in one process; reruns skip finished work and clean up
outputs of earlier settings."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import yaml

from tests.tokenize.helpers_tokenize import run_pipeline, stage_artifacts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _stages(corpus, size_mb: float) -> list[dict]:
    return [
        {"read_jsonl": {"paths": corpus["web"][0], "source": "web", "shard_size_mb": 0.004},
         "id": "web"},
        {"read_jsonl": {"paths": corpus["wiki"][0], "source": "wiki"}, "id": "wiki"},
        {"train_tokenizer": {"vocab_size": 500}, "inputs": ["web", "wiki"], "id": "tok"},
        {"megatron_shards": {"split_sentences": True, "prefix_size_mb": size_mb}, "id": "mega"},
        {"blend": {}, "id": "blend"},
    ]


def _files(d: str) -> dict[str, bytes]:
    out = {}
    for f in sorted(os.listdir(d)):
        with open(os.path.join(d, f), "rb") as fh:
            out[f] = fh.read()
    return out


def test_mpi_ranks_write_the_same_bytes_as_one_process(tmp_path, corpus):
    local = run_pipeline(_stages(corpus, 0.003), tmp_path / "local")
    assert local["stages"][0]["shards"] > 2  # web is split into several byte-range shards

    cfg = {"name": "mpi", "work_dir": str(tmp_path / "mpi"), "progress": "off",
           "executor": {"type": "mpi"}, "stages": _stages(corpus, 0.003)}
    path = tmp_path / "mpi.yaml"
    path.write_text(yaml.safe_dump(cfg))
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec"
    env = dict(os.environ, PYTHONPATH=REPO)
    r = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "curator", "run", str(path)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "2 workers" in r.stderr
    a, b = _files(str(tmp_path / "local" / "megatron")), _files(str(tmp_path / "mpi" / "megatron"))
    assert len(a) > 6 and a == b
    # the tokenizers are the same too (deterministic sample and training)
    tok = stage_artifacts(local, "tok")["tokenizer"]
    with open(tok["path"], "rb") as f1, open(
            str(tmp_path / "mpi" / os.path.relpath(tok["path"], tmp_path / "local")), "rb") as f2:
        assert f1.read() == f2.read()


def test_rerun_skips_and_changed_settings_replace_outputs(tmp_path, corpus):
    first = run_pipeline(_stages(corpus, 0.003), tmp_path / "w")
    many = stage_artifacts(first, "mega")["prefixes"]
    assert len(many["web"]) > 1
    again = run_pipeline(_stages(corpus, 0.003), tmp_path / "w")
    assert all(s["skipped"] for s in again["stages"])
    third = run_pipeline(_stages(corpus, 0), tmp_path / "w")
    assert [s["skipped"] for s in third["stages"]] == [True, True, True, False, False]
    one = stage_artifacts(third, "mega")["prefixes"]
    assert {k: len(v) for k, v in one.items()} == {"web": 1, "wiki": 1}
    # only the new prefixes remain in the output folder
    left = sorted(os.listdir(tmp_path / "w" / "megatron"))
    assert left == sorted(f"{s}_text_document.{e}" for s in ("web", "wiki")
                          for e in ("bin", "idx", "ids"))
