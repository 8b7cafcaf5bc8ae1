"""Fixtures: a real tokenized corpus in megatron-core's format, built the way the tokenize
stages hand it over (HF byte-level BPE, ``IndexedDatasetBuilder``, ``blend.json``) by the
shipped demo (:mod:`curator.train.demo`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from curator.train.demo import sentences, write_demo_blend
from tests.helpers import built_once


@pytest.fixture(scope="session")
def blend_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo blend users try ``train`` with (``python -m curator.train.demo``), smaller;
    made once per run and read by every worker (:func:`tests.helpers.built_once`)."""
    return built_once(tmp_path_factory, "corpus", lambda d: write_demo_blend(
        str(d), {"web": 300, "wiki": 150}, split="90,10,0", vocab_size=320))


def pytest_configure(config: pytest.Config) -> None:
    # megatron-core announces its fallbacks (no Apex / Transformer Engine on CPU) on import
    config.addinivalue_line(
        "filterwarnings", "ignore:.*(Apex|Transformer Engine|cuda_graph_scope).*:UserWarning")


@pytest.fixture(scope="session")
def example_run(blend_path: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The shipped ``pipelines/train-example.yaml`` run with ``curator run`` on the fixture
    blend: read -> train (20 steps) -> export_triton. Returns its work_dir, output and the
    stage markers; run once per test run, whichever worker asks first."""
    import subprocess
    import sys

    def run(tmp: Path) -> dict:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        docs = tmp / "docs.jsonl"
        docs.write_text("".join(json.dumps({"id": f"d{i}", "text": s}) + "\n"
                                for i, s in enumerate(sentences(7, seed=9))))
        work = tmp / "work"
        env = {**os.environ, "PYTHONPATH": root}
        sets = [f"stages.read_jsonl.paths={docs}", f"stages.train.blend={blend_path}",
                "stages.train.train_iters=20", "stages.train.eval_interval=0",
                "stages.train.num_threads=1", "stages.export_triton.max_batch_size=4"]
        cmd = [sys.executable, "-m", "curator", "run",
               os.path.join(root, "pipelines", "train-example.yaml"), "--work-dir", str(work)]
        for s in sets:
            cmd += ["--set", s]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        markers = {}
        for stage in ("train", "export_triton"):
            with open(work / "stages" / stage / "_SUCCESS.json") as f:
                markers[stage] = json.load(f)
        return {"work": str(work), "stderr": p.stderr, "markers": markers,
                "checkpoint": markers["train"]["artifacts"]["checkpoint"],
                "repository": markers["export_triton"]["artifacts"]["triton_repository"]}

    return built_once(tmp_path_factory, "example", run)


@pytest.fixture(scope="session")
def checkpoint(example_run: dict) -> str:
    """A tiny GPT trained for 20 steps by the example pipeline."""
    return example_run["checkpoint"]


@pytest.fixture(scope="session")
def triton_venv() -> str:
    """The Triton virtualenv (created by scripts/setup_triton.sh when missing, as the
    project's setup does)."""
    import glob
    import subprocess

    from curator.deploy.serve import default_venv

    venv = default_venv()
    if not glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "pytriton",
                                  "tritonserver", "bin", "tritonserver")):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run([os.path.join(root, "scripts", "setup_triton.sh"), venv], check=True)
    return venv
