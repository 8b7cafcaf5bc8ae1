"""Fused stages: a chain of per-document stages runs as one pass per shard (one read, one
write); only the chain's last stage writes its shards, every stage keeps its own counts,
rejected documents and markers; ``checkpoint: true``, branch points and global stages make a
stage's output written; resume is per group and shard."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from curator.base.errors import ConfigError
from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner
from curator.storage.shards import read_records
from tests.core.helpers_core import make_corpus, tree_digest
from tests.helpers import run_cli

CHAIN = """\
name: fusion
work_dir: {wd}
progress: off
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl"}}
  - tests.core.helpers_core:min_words: {{n: 8}}
  - tests.core.helpers_core:upper_first: {{}}
"""


def corpus(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    for i, name in enumerate("abc"):
        make_corpus(str(data / f"{name}.jsonl"), 60, seed=20 + i)
    return data


def run(text: str) -> dict:
    summary = Runner(pl.loads(text), LocalExecutor()).run()
    return {s["id"]: s for s in summary["stages"]}


def data_dirs(wd: Path) -> list[str]:
    """Stages whose output shards were written."""
    return sorted(p.parent.name for p in wd.glob("stages/*/data") if any(p.iterdir()))


def docs(wd: Path, stage: str) -> list[dict]:
    return [r for p in sorted((wd / "stages" / stage / "data").glob("*.jsonl.zst"))
            for r in read_records(str(p))]


def rejected(wd: Path, stage: str) -> int:
    return sum(1 for p in (wd / "rejected" / stage).glob("*.zst") for _ in read_records(str(p)))


def test_a_chain_runs_fused_and_keeps_per_stage_counts(tmp_path):
    data = corpus(tmp_path)
    wd = tmp_path / "w"
    rep = run(CHAIN.format(wd=wd, data=data))
    assert data_dirs(wd) == ["upper_first"]  # one write: the chain's last stage
    r, m, u = rep["read_jsonl"], rep["min_words"], rep["upper_first"]
    assert r["docs_in"] == r["docs_out"] == 180 and r["shards"] == 3
    assert m["docs_in"] == 180 and 0 < m["docs_out"] < 180
    assert m["rejected"] == {"min_words": 180 - m["docs_out"]}
    assert rejected(wd, "min_words") == 180 - m["docs_out"]
    assert u["docs_in"] == u["docs_out"] == m["docs_out"]
    assert m["bytes_in"] == r["bytes_out"] and u["bytes_in"] == m["bytes_out"]
    assert sum(m["length_hist"]) == m["docs_out"]
    assert all(rep[s]["seconds"] >= 0 and not rep[s]["skipped"] for s in rep)
    assert all(t[0].isupper() for t in (d["text"] for d in docs(wd, "upper_first")))
    # every stage keeps its own markers; the group is recorded with each stage
    for sid in rep:
        assert len(list((wd / "stages" / sid / "_done").glob("*.json"))) == 3
        done = json.loads((wd / "stages" / sid / "_SUCCESS.json").read_text())
        assert done["fused"] == ["read_jsonl", "min_words", "upper_first"]
    # a rerun reuses all of it, and `curator status` still shows every stage
    again = run(CHAIN.format(wd=wd, data=data))
    assert all(s["skipped"] for s in again.values())
    (tmp_path / "p.yaml").write_text(CHAIN.format(wd=wd, data=data))
    out = run_cli("validate", "p.yaml", cwd=tmp_path).stdout
    assert ("fused, one pass per shard (only 'upper_first' writes shards): "
            "read_jsonl -> min_words -> upper_first") in out
    st = run_cli("status", "p.yaml", cwd=tmp_path).stdout
    for sid in rep:
        assert any(line.startswith(sid) and " done " in line for line in st.splitlines()), st


def test_checkpoint_true_writes_the_stage_and_a_non_bool_is_one_line(tmp_path):
    data = corpus(tmp_path)
    wd = tmp_path / "w"
    text = CHAIN.format(wd=wd, data=data).replace(
        "{n: 8}\n", "{n: 8}\n    checkpoint: true\n")
    rep = run(text)
    assert data_dirs(wd) == ["min_words", "upper_first"]  # read_jsonl still fused into min_words
    assert len(docs(wd, "min_words")) == rep["min_words"]["docs_out"]
    # the same from the command line
    (tmp_path / "p.yaml").write_text(CHAIN.format(wd=tmp_path / "w2", data=data))
    run_cli("run", "p.yaml", "--set", "stages.read_jsonl.checkpoint=true", cwd=tmp_path)
    assert data_dirs(tmp_path / "w2") == ["read_jsonl", "upper_first"]

    with pytest.raises(ConfigError) as e:
        pl.loads(text.replace("checkpoint: true", "checkpoint: sometimes"))
    msg = str(e.value)
    assert "\n" not in msg and "stages[1].checkpoint" in msg and "sometimes" in msg
    assert ":7:" in msg  # the YAML line of the key


def test_branch_points_and_global_stages_materialise(tmp_path):
    data = corpus(tmp_path)
    wd = tmp_path / "w"
    rep = run(f"""\
name: branches
work_dir: {wd}
progress: off
stages:
  - id: a
    read_jsonl: {{paths: "{data}/a.jsonl"}}
  - id: b
    read_jsonl: {{paths: "{data}/b.jsonl"}}
  - id: both
    tests.core.helpers_core:min_words: {{n: 8}}
    inputs: [a, b]
  - id: upper
    tests.core.helpers_core:upper_first: {{}}
  - id: long
    tests.core.helpers_core:min_words: {{n: 20}}
    inputs: [upper]
  - id: short
    tests.core.helpers_core:min_words: {{n: 2}}
    inputs: [upper]
  - id: median
    tests.core.helpers_core:AboveMedian: {{}}
    inputs: [short]
  - id: after
    tests.core.helpers_core:upper_first: {{}}
""")
    # a, b: read by a stage with two inputs; upper: two consumers; short: a global stage's
    # input; long, after: ends of chains; median: a global stage. Only `both` was fused away.
    assert data_dirs(wd) == ["a", "after", "b", "long", "median", "short", "upper"]
    assert rep["upper"]["docs_in"] == rep["both"]["docs_out"]
    assert rep["after"]["docs_in"] == rep["median"]["docs_out"] > 0


def test_a_killed_group_resumes_per_shard(tmp_path):
    data = corpus(tmp_path)
    marker = tmp_path / "crashed"
    pipe = CHAIN.replace("  - tests.core.helpers_core:upper_first", (
        '  - tests.core.helpers_core:crash_on_id: {{id: "doc-22-5", marker: "{marker}"}}\n'
        "  - tests.core.helpers_core:upper_first"))
    (tmp_path / "p.yaml").write_text(pipe.format(wd=tmp_path / "w", data=data, marker=marker))
    res = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    assert res.returncode == -signal.SIGKILL  # killed in shard 2 (c.jsonl), mid-group
    wd = tmp_path / "w"
    stages = ["read_jsonl", "min_words", "crash_on_id", "upper_first"]
    for sid in stages:  # shards 0 and 1 are done for the whole group, shard 2 for no stage
        assert sorted(p.name for p in (wd / "stages" / sid / "_done").glob("*")) == [
            "read_jsonl-00000.json", "read_jsonl-00001.json"]
        assert not (wd / "stages" / sid / "_SUCCESS.json").exists()
    finished = {p: (p.stat().st_ino, p.stat().st_mtime_ns)
                for p in [*wd.glob("stages/*/_done/*.json"),
                          *wd.glob("stages/*/data/*.zst"), *wd.glob("rejected/*/*.zst")]}
    assert len(finished) == 4 * 2 + 2 + 2  # markers, upper_first's shards, min_words' rejects

    run_cli("run", "p.yaml", cwd=tmp_path)
    rep = {s["id"]: s for s in json.loads((wd / "report.json").read_text())["stages"]}
    assert all(rep[s]["shards_resumed"] == 2 and not rep[s]["skipped"] for s in stages)
    for p, stamp in finished.items():  # finished work was not redone
        assert (p.stat().st_ino, p.stat().st_mtime_ns) == stamp, p
    # the same bytes as an uninterrupted run
    base = run(pipe.format(wd=tmp_path / "base", data=data, marker=marker))
    assert tree_digest(wd / "stages/upper_first/data") == tree_digest(
        tmp_path / "base/stages/upper_first/data")
    assert {s: rep[s]["docs_out"] for s in stages} == {s: base[s]["docs_out"] for s in stages}


def test_changing_a_middle_stage_reruns_the_group(tmp_path):
    data = corpus(tmp_path)
    wd = tmp_path / "w"
    text = CHAIN + "  - tests.core.helpers_core:AboveMedian: {{}}\n  - write_jsonl: {{path: out}}\n"
    first = run(text.format(wd=wd, data=data))
    (tmp_path / "p.yaml").write_text(text.format(wd=wd, data=data))
    st = run_cli("status", "p.yaml", "--set", "stages.min_words.n=20", cwd=tmp_path).stdout
    lines = {line.split()[0]: line for line in st.splitlines()[1:-1]}
    assert "parameter 'n' changed (8 -> 20)" in lines["min_words"]
    assert "runs again with 'min_words' (fused)" in lines["read_jsonl"], st
    rep = run(text.format(wd=wd, data=data).replace("{n: 8}", "{n: 20}"))
    for sid in ("read_jsonl", "min_words", "upper_first", "above_median", "write_jsonl"):
        assert not rep[sid]["skipped"] and rep[sid].get("shards_resumed", 0) == 0, sid
    assert rep["min_words"]["docs_out"] < first["min_words"]["docs_out"]
    # the rerun stage's set-aside documents were replaced, not added to
    assert rejected(wd, "min_words") == 180 - rep["min_words"]["docs_out"]
    assert len(docs(wd, "upper_first")) == rep["upper_first"]["docs_out"]


def test_fused_output_equals_every_stage_checkpointed(tmp_path):
    data = corpus(tmp_path)
    text = CHAIN + "  - tests.core.helpers_core:AboveMedian: {{}}\n  - write_jsonl: {{path: out}}\n"
    fused = run(text.format(wd=tmp_path / "f", data=data))
    all_cp = "".join(line + ("\n    checkpoint: true" if line.startswith("  - ") else "") + "\n"
                     for line in text.splitlines())
    assert all_cp.count("checkpoint: true") == 5
    plain = run(all_cp.format(wd=tmp_path / "p", data=data))
    assert data_dirs(tmp_path / "p") == ["above_median", "min_words", "read_jsonl",
                                         "upper_first"]
    assert data_dirs(tmp_path / "f") == ["above_median", "upper_first"]
    assert tree_digest(tmp_path / "f/out") == tree_digest(tmp_path / "p/out")
    assert tree_digest(tmp_path / "f/stages/upper_first/data") == tree_digest(
        tmp_path / "p/stages/upper_first/data")
    assert tree_digest(tmp_path / "f/rejected") == tree_digest(tmp_path / "p/rejected")
    keys = ("docs_in", "docs_out", "bytes_in", "bytes_out", "rejected", "length_hist", "shards")
    for sid in fused:
        assert {k: fused[sid][k] for k in keys} == {k: plain[sid][k] for k in keys}, sid


def test_a_kill_between_marker_writes_redoes_nothing(tmp_path):
    """The last stage's marker is the group's commit point and holds the others: a shard whose
    own marker of a middle stage is missing (killed between two marker writes) is resumed,
    the marker written back, and no existing file rewritten."""
    data = corpus(tmp_path)
    wd = tmp_path / "w"
    text = CHAIN.format(wd=wd, data=data)
    run(text)
    gone = wd / "stages/min_words/_done/read_jsonl-00001.json"
    before = gone.read_bytes()
    gone.unlink()
    (wd / "stages/upper_first/_SUCCESS.json").unlink()  # killed before the stage ended
    stamps = {p: (p.stat().st_ino, p.stat().st_mtime_ns)
              for p in [*wd.glob("stages/*/_done/*.json"), *wd.glob("stages/*/data/*.zst"),
                        *wd.glob("rejected/*/*.zst")]}
    rep = run(text)
    assert all(rep[s]["shards_resumed"] == 3 for s in rep)
    assert gone.read_bytes() == before
    for p, stamp in stamps.items():
        assert (p.stat().st_ino, p.stat().st_mtime_ns) == stamp, p


def test_an_error_in_a_fused_stage_names_that_stage(tmp_path):
    from curator.base.errors import StageError

    data = corpus(tmp_path)
    text = CHAIN.replace("  - tests.core.helpers_core:upper_first", (
        '  - tests.core.helpers_core:explode: {{doc_id: "doc-21-3"}}\n'
        "  - tests.core.helpers_core:upper_first"))
    with pytest.raises(StageError) as e:
        run(text.format(wd=tmp_path / "w", data=data))
    assert "stage 'explode' failed on shard 'read_jsonl-00001': RuntimeError: boom on doc-21-3" \
        in str(e.value)
    assert not list((tmp_path / "w").glob("stages/*/_done/read_jsonl-00001.json"))
