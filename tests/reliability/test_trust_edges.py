"""The edges of trust: a copied work_dir, an output deleted by hand, two stages
writing one folder. Each test keeps a canary tree beside its work_dirs (and the conftest's
beside its folder) and checks that nothing in it was touched."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.canary import assert_untouched, canary_tree, snapshot
from tests.core.helpers_core import make_corpus, tree_digest
from tests.helpers import run_cli

PIPE = """\
name: trust
work_dir: {wd}
progress: off
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl"}}
  - word_count_filter: {{min_words: {n}}}
  - write_jsonl: {{path: out, compression: none}}
"""


def setup(tmp_path: Path, shards: int = 2) -> tuple[Path, dict[str, tuple]]:
    data = tmp_path / "data"
    data.mkdir()
    for i in range(shards):
        make_corpus(str(data / f"part{i}.jsonl"), 120, seed=i)
    canary = canary_tree(tmp_path / "canary")
    return canary, snapshot(canary)


def write_pipe(tmp_path: Path, name: str, wd: str, n: int = 5) -> str:
    (tmp_path / name).write_text(PIPE.format(wd=wd, data=tmp_path / "data", n=n))
    return name


def docs_out(res: subprocess.CompletedProcess) -> int:
    m = re.search(r"(\d+) documents out of", res.stderr + res.stdout)
    assert m, res.stderr
    return int(m.group(1))


def test_copied_work_dir_uses_its_own_files_and_never_touches_the_original(tmp_path):
    """The issue's sequence: ``cp -a wA wB``, the YAML pointed at wB, run; remove wB/out and
    rerun; change a parameter and rerun. The copy's records are rebased onto it: it is
    accepted, its missing output is rewritten (not announced and absent), and wA (as the
    canary) is never touched. On main: refused, then "N documents out" with wB/out missing,
    then wA/out's files deleted."""
    canary, before = setup(tmp_path)
    run_cli("run", write_pipe(tmp_path, "a.yaml", "wA"), cwd=tmp_path)
    wa = tmp_path / "wA"
    out_a = tree_digest(wa / "out")
    assert len(out_a) == 2
    wa_before = snapshot(wa)
    subprocess.run(["cp", "-a", str(wa), str(tmp_path / "wB")], check=True)
    wb = tmp_path / "wB"
    pb = write_pipe(tmp_path, "b.yaml", "wB")
    res = run_cli("run", pb, cwd=tmp_path)
    assert "copied or moved from" in res.stderr
    assert tree_digest(wb / "out") == out_a
    subprocess.run(["rm", "-rf", str(wb / "out")], check=True)
    st = run_cli("status", pb, cwd=tmp_path)
    assert re.search(r"write_jsonl\s+stale .*missing", st.stdout), st.stdout
    res = run_cli("run", pb, cwd=tmp_path)
    assert docs_out(res) == sum(len(Path(p).read_text().splitlines())
                                for p in (wb / "out").iterdir())
    assert tree_digest(wb / "out") == out_a  # rewritten, same bytes
    pb = write_pipe(tmp_path, "b.yaml", "wB", n=40)
    res = run_cli("run", pb, cwd=tmp_path)
    assert tree_digest(wb / "out") != out_a
    assert docs_out(res) == sum(len(Path(p).read_text().splitlines())
                                for p in (wb / "out").iterdir())
    assert_untouched(wa, wa_before)
    assert_untouched(canary, before)


def test_copied_work_dir_with_old_markers_trusts_and_deletes_nothing_of_the_original(tmp_path):
    """Markers written before they recorded their work_dir (absolute paths into wA): the copy
    does not reuse wA's files (its output shards and writer files are not its own) and,
    when a parameter changes, deletes none of them."""
    canary, before = setup(tmp_path)
    run_cli("run", write_pipe(tmp_path, "a.yaml", "wA"), cwd=tmp_path)
    wa, wb = tmp_path / "wA", tmp_path / "wB"
    subprocess.run(["cp", "-a", str(wa), str(wb)], check=True)
    for p in [*wb.rglob("_done/*.json"), *wb.rglob("_SUCCESS.json")]:
        m = json.loads(p.read_text())
        m.pop("work_dir", None)
        p.write_text(json.dumps(m))
    (wb / "_outputs.json").write_text(json.dumps({str(wa / "out"): "write_jsonl"}))
    wa_before = snapshot(wa)
    subprocess.run(["rm", "-rf", str(wb / "out")], check=True)
    pb = write_pipe(tmp_path, "b.yaml", "wB")
    res = run_cli("run", pb, cwd=tmp_path)
    assert len(list((wb / "out").iterdir())) == 2, res.stderr
    run_cli("run", write_pipe(tmp_path, "b.yaml", "wB", n=40), cwd=tmp_path)
    assert_untouched(wa, wa_before)
    assert_untouched(canary, before)


def test_output_file_deleted_by_hand_is_stale_and_redone(tmp_path):
    """One of the writer's files removed by hand: ``curator status`` says the stage is stale
    and why, the rerun redoes exactly that shard (the other is reused) and writes the same
    bytes. On main: "done earlier, skipped", the file stays missing."""
    canary, before = setup(tmp_path)
    p = write_pipe(tmp_path, "p.yaml", "w")
    run_cli("run", p, cwd=tmp_path)
    out = tmp_path / "w" / "out"
    want = tree_digest(out)
    (out / "read_jsonl-00001.jsonl").unlink()
    st = run_cli("status", p, cwd=tmp_path)
    assert re.search(r"write_jsonl\s+stale\s+1 of 2 shards to redo; read_jsonl-00001: output "
                     r"file\(s\) missing .*out/read_jsonl-00001.jsonl", st.stdout), st.stdout
    run_cli("run", p, cwd=tmp_path)
    assert tree_digest(out) == want
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    writer = next(s for s in rep["stages"] if s["id"] == "write_jsonl")
    assert writer["shards_resumed"] == 1
    st = run_cli("status", p, cwd=tmp_path)
    assert "nothing to do" in st.stdout
    # a materialised shard of the stage folder removed by hand: same
    data = next((tmp_path / "w" / "stages" / "word_count_filter" / "data").iterdir())
    data.unlink()
    st = run_cli("status", p, cwd=tmp_path)
    assert re.search(r"word_count_filter\s+stale", st.stdout), st.stdout
    run_cli("run", p, cwd=tmp_path)
    assert data.exists() and tree_digest(out) == want
    assert_untouched(canary, before)


def test_output_file_replaced_is_stale_and_redone(tmp_path):
    """A writer's file replaced under its name (by hand with the same size, or by another
    machine's folder at the same absolute path after the work_dir moved there): not this
    work_dir's output any more, so the shard is redone. Used to be "done earlier, skipped" with
    the foreign file reported as the run's output. A ``cp -a`` copy (same sizes and mtimes)
    still reuses everything."""
    canary, before = setup(tmp_path)
    p = write_pipe(tmp_path, "p.yaml", "w")
    run_cli("run", p, cwd=tmp_path)
    out = tmp_path / "w" / "out"
    want = tree_digest(out)
    victim = out / "read_jsonl-00000.jsonl"
    body = victim.read_bytes()
    victim.write_bytes(body.replace(b'"text":"', b'"text":"X', 1)[:len(body)])  # same size
    st = run_cli("status", p, cwd=tmp_path)
    assert re.search(r"write_jsonl\s+stale\s+1 of 2 shards to redo; read_jsonl-00000: output "
                     r"file\(s\) missing or not this work_dir's: .*out/read_jsonl-00000.jsonl",
                     st.stdout), st.stdout
    run_cli("run", p, cwd=tmp_path)
    assert tree_digest(out) == want
    assert "nothing to do" in run_cli("status", p, cwd=tmp_path).stdout
    subprocess.run(["cp", "-a", str(tmp_path / "w"), str(tmp_path / "w2")], check=True)
    p2 = write_pipe(tmp_path, "p2.yaml", "w2")
    assert "nothing to do" in run_cli("status", p2, cwd=tmp_path).stdout

    # an output folder outside the work_dir; the work_dir moved to a machine where that path
    # holds other files of the same names
    far = tmp_path / "far"
    (tmp_path / "p3.yaml").write_text(PIPE.format(wd="w3", data=tmp_path / "data", n=5)
                                      .replace("path: out,", f"path: {far},"))
    run_cli("run", "p3.yaml", cwd=tmp_path)
    want = tree_digest(far)
    (tmp_path / "w3").rename(tmp_path / "w4")
    for f in far.iterdir():
        f.write_text('{"id": "theirs", "text": "another machine\'s file"}\n')
    (tmp_path / "p4.yaml").write_text((tmp_path / "p3.yaml").read_text().replace("w3", "w4"))
    st = run_cli("status", "p4.yaml", cwd=tmp_path)
    assert re.search(r"write_jsonl\s+stale\s+2 of 2 shards to redo", st.stdout), st.stdout
    res = run_cli("run", "p4.yaml", cwd=tmp_path)
    assert docs_out(res) > 0 and tree_digest(far) == want
    assert_untouched(canary, before)


def test_a_source_never_reads_its_own_output(tmp_path):
    """``data/**/*.jsonl`` with the writer's output in ``data/out``: the rerun used to read the
    last run's output as input (240, then 480, then 720 documents out). Now the rerun, and
    ``curator status``, stop with one line naming the file and the folder; the output is left
    as it was. The same for an input pattern that reaches into the work_dir."""
    canary, before = setup(tmp_path)
    (tmp_path / "p.yaml").write_text(
        PIPE.format(wd="w", data=tmp_path / "data", n=0)
        .replace("/*.jsonl", "/**/*.jsonl")
        .replace("path: out,", f"path: {tmp_path / 'data' / 'out'},"))
    first = docs_out(run_cli("run", "p.yaml", cwd=tmp_path))
    assert first == 240
    want = tree_digest(tmp_path / "data")
    for cmd in ("run", "status"):
        res = run_cli(cmd, "p.yaml", cwd=tmp_path, check=False)
        assert res.returncode == 1, res.stdout + res.stderr
        lines = [x for x in res.stderr.splitlines() if x.startswith("curator: error:")]
        assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
        assert re.fullmatch(
            r"curator: error: stage 'read_jsonl': its paths match "
            r"'.*/data/out/read_jsonl-0000\d\.jsonl', inside the output folder of stage "
            r"'write_jsonl' '.*/data/out': this pipeline's own output, which every rerun would "
            r"read again; narrow the pattern or move the work_dir or output elsewhere",
            lines[0]), lines[0]
    assert tree_digest(tmp_path / "data") == want
    # a work_dir inside the input folder
    (tmp_path / "q.yaml").write_text(
        PIPE.format(wd=tmp_path / "data" / "w", data=tmp_path / "data", n=0)
        .replace("/*.jsonl", "/part*.jsonl"))
    run_cli("run", "q.yaml", cwd=tmp_path)
    (tmp_path / "q.yaml").write_text((tmp_path / "q.yaml").read_text().replace(
        "/part*.jsonl", "/**/part*.jsonl"))
    (tmp_path / "data" / "w" / "part9.jsonl").write_text('{"id": "x", "text": "a b c d e"}\n')
    res = run_cli("run", "q.yaml", cwd=tmp_path, check=False)
    assert res.returncode == 1 and "part9.jsonl', inside the work_dir '" in res.stderr \
        and "this pipeline's own output" in res.stderr, res.stderr
    assert_untouched(canary, before)


def test_an_output_name_too_long_for_the_filesystem_is_one_line(tmp_path):
    """200 ``é`` (400 bytes) as ``write_jsonl``'s folder: used to be an OSError traceback."""
    setup(tmp_path)
    (tmp_path / "p.yaml").write_text(PIPE.format(wd="w", data=tmp_path / "data", n=0)
                                     .replace("path: out,", f"path: {'é' * 200},"))
    res = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("curator: error:")]
    assert line.endswith("File name too long [ENAMETOOLONG]; a file or folder name is longer "
                         "than the filesystem allows (255 bytes on most); choose a shorter one")


OVERLAP = """\
name: overlap
work_dir: w
stages:
  - read_jsonl: {{paths: data.jsonl}}
  - id: first
    write_jsonl: {{path: "{a}"}}
  - id: second
    write_parquet:
      path: "{b}"
    inputs: [read_jsonl]
"""


@pytest.mark.parametrize(("a", "b", "how"), [
    ("out", "out", "the same folder as stage 'first'"),
    ("out", "./x/../out/", "the same folder as stage 'first'"),
    ("out", "out/sub", "inside the output folder of stage 'first'"),
    ("out/sub", "out", "a parent of the output folder of stage 'first'"),
    ("{abs}/w/out", "out", "the same folder as stage 'first'"),
    ("out", "stages/read_jsonl/data", "inside curator's own 'stages/read_jsonl/data'"),
    ("out", "rejected", "inside curator's own 'rejected'"),
    ("out", "quarantine/first", "inside curator's own 'quarantine/first'"),
])
def test_validate_refuses_overlapping_outputs_naming_both_stages_and_lines(tmp_path, a, b,
                                                                         how):
    (tmp_path / "p.yaml").write_text(OVERLAP.format(a=a.format(abs=tmp_path),
                                                    b=b.format(abs=tmp_path)))
    res = run_cli("validate", "p.yaml", cwd=tmp_path, check=False)
    assert res.returncode == 2, res.stdout
    line = res.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith("curator: error: p.yaml:9: stages[2] 'second': output folder")
    assert how in line
    if "stage 'first'" in how:
        assert "(p.yaml:6)" in line
    # and `curator run` refuses it before any stage runs
    res = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    assert res.returncode == 2 and not (tmp_path / "w").exists()
