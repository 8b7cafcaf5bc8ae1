"""Smaller trust cases: a removed stage's folders, ``curator.load`` with a descriptor,
``curator stages | head``. (ENOSPC in a fused chain: test_disk_errors.py; string scores in
quality_buckets: tests/filters/test_quality_buckets.py.)"""

from __future__ import annotations

import io
import os
import subprocess
import sys

import curator
from tests.canary import assert_untouched, canary_tree, snapshot
from tests.core.helpers_core import make_corpus
from tests.helpers import ROOT, cli_env, run_cli

PIPE = """\
name: low
work_dir: w
progress: off
stages:
  - read_jsonl: {{paths: data.jsonl}}
{middle}  - write_jsonl: {{path: out}}
"""
MIDDLE = "  - id: gone\n    word_count_filter: {min_words: 20}\n"


def test_removed_stage_folders_are_listed_and_pruned_on_request(tmp_path):
    """A stage removed from the YAML: ``curator status`` lists its folders with their size
    and offers ``curator prune``; ``prune`` alone lists, ``--yes`` removes exactly the
    curator-made folders (not the output, not a user's folder in stages/, nothing beside)."""
    canary = canary_tree(tmp_path / "canary")
    before = snapshot(canary)
    make_corpus(str(tmp_path / "data.jsonl"), 200, seed=2)
    (tmp_path / "p.yaml").write_text(PIPE.format(middle=MIDDLE))
    run_cli("run", "p.yaml", cwd=tmp_path)
    wd = tmp_path / "w"
    assert (wd / "stages" / "gone").is_dir() and (wd / "rejected" / "gone").is_dir()
    (wd / "stages" / "mine").mkdir()  # a user's folder without curator markers: never listed
    (wd / "stages" / "mine" / "keep.txt").write_text("mine")
    (tmp_path / "p.yaml").write_text(PIPE.format(middle=""))
    st = run_cli("status", "p.yaml", cwd=tmp_path).stdout
    assert "not in this pipeline any more" in st, st
    assert "gone: stages/gone, rejected/gone (" in st and "mine" not in st
    assert "curator prune p.yaml" in st
    dry = run_cli("prune", "p.yaml", cwd=tmp_path).stdout
    assert "gone: stages/gone, rejected/gone" in dry and "--yes" in dry
    assert (wd / "stages" / "gone").is_dir()  # listing removes nothing
    res = run_cli("prune", "p.yaml", "--yes", cwd=tmp_path).stdout
    assert f"removed {wd / 'stages' / 'gone'}" in res
    assert not (wd / "stages" / "gone").exists() and not (wd / "rejected" / "gone").exists()
    assert (wd / "stages" / "mine" / "keep.txt").read_text() == "mine"
    assert any((wd / "out").iterdir()) and (wd / "stages" / "read_jsonl").is_dir()
    assert "not in this pipeline" not in run_cli("status", "p.yaml", cwd=tmp_path).stdout
    assert "nothing to prune" in run_cli("prune", "p.yaml", cwd=tmp_path).stdout
    assert_untouched(canary, before)


def test_load_with_a_descriptor_or_stream_leaves_it_open(tmp_path):
    """``curator.load(fd)`` used to close the caller's descriptor (``open(fd)`` owns it)."""
    p = tmp_path / "p.yaml"
    p.write_text(PIPE.format(middle=""))
    fd = os.open(p, os.O_RDONLY)
    try:
        pipe = curator.load(fd)
        assert [n.id for n in pipe.nodes] == ["read_jsonl", "write_jsonl"]
        os.fstat(fd)  # still open: raises EBADF if load closed it
        assert os.lseek(fd, 0, os.SEEK_CUR) > 0
    finally:
        os.close(fd)
    with open(p) as f:
        assert curator.load(f).config.name == "low"
        assert not f.closed
    stream = io.BytesIO(p.read_bytes())
    assert curator.load(stream).config.name == "low" and not stream.closed


def test_stages_into_a_closed_pipe_is_quiet(tmp_path):
    """``curator stages | head -1``: the reader is gone before the listing is written (its
    end of the pipe closed first, so the write fails every time): no BrokenPipeError
    traceback, exit 141 (128 + SIGPIPE), nothing on stderr."""
    r, w = os.pipe()
    os.close(r)
    try:
        res = subprocess.run([sys.executable, "-m", "curator", "stages"], cwd=ROOT,
                             env=cli_env(), stdout=w, stderr=subprocess.PIPE, text=True,
                             timeout=120)
    finally:
        os.close(w)
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr, res.stderr
    assert res.stderr == "" and res.returncode == 141
