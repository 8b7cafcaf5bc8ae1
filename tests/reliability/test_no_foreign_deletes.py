"""No stage or command deletes what curator did not create: an output folder that is the
current folder, the work_dir (or a parent of either), or that holds files without the same
stage's mark is refused with one line, before any work, and nothing in it is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.helpers_core import make_corpus, tree_digest
from tests.helpers import run_cli


def one_line(res) -> str:
    """The error: one line, the last one (progress lines may come before it)."""
    lines = [ln for ln in res.stderr.strip().splitlines() if ln.startswith("curator:")]
    assert len(lines) == 1 and res.stderr.strip().endswith(lines[0]), res.stderr
    assert "Traceback" not in res.stderr
    return lines[0]


def user_folder(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    (p / "notes.txt").write_text("the user's own file")
    (p / "sub").mkdir(exist_ok=True)
    (p / "sub" / "keep.bin").write_bytes(b"\0" * 10)
    return p


@pytest.mark.parametrize("output", [".", "mine", ".."])
def test_export_triton_command_refuses_foreign_folders(tmp_path, output):
    cwd = user_folder(tmp_path / "cwd")
    user_folder(cwd / "mine")
    before = tree_digest(tmp_path)
    res = run_cli("export-triton", "--checkpoint", "no/such/ckpt", "--output", output,
                  cwd=cwd, check=False)
    assert res.returncode == 2
    line = one_line(res)
    assert line.startswith("curator: error: export_triton: refusing to write")
    assert ("current folder" in line) if output == "." else True
    assert tree_digest(tmp_path) == before  # nothing deleted, nothing added


PIPE = """\
name: safe
work_dir: {wd}
progress: off
stages:
  - read_jsonl: {{paths: "{data}"}}
  - id: curated
    write_jsonl: {{path: curated}}
  - id: triton
    export_triton: {{checkpoint: no/such/ckpt}}
"""


@pytest.mark.parametrize("output", [".", "{wd}", "{wd}/..", "{user}"])
def test_export_triton_stage_refuses_work_dir_and_user_folders(tmp_path, output):
    make_corpus(str(tmp_path / "a.jsonl"), 20, seed=1)
    wd = tmp_path / "w"
    user = user_folder(tmp_path / "user")
    (tmp_path / "p.yaml").write_text(PIPE.format(wd=wd, data=tmp_path / "a.jsonl"))
    # the first two stages run; the export then fails (no checkpoint) without touching anything
    res = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    assert res.returncode != 0 and (wd / "curated").is_dir()
    before = tree_digest(tmp_path)
    res = run_cli("run", "p.yaml", "--set",
                  f"stages.triton.output={output.format(wd=wd, user=user)}",
                  cwd=tmp_path, check=False)
    assert res.returncode == 2
    line = one_line(res)
    assert line.startswith("curator: error: export_triton: refusing to write")
    after = tree_digest(tmp_path)
    # only the run's own bookkeeping may change (report, lock, the runs' log); no file is gone
    assert set(before) <= set(after)

    def mine(k: str) -> bool:
        return "report" in k or k.endswith((".lock", "_runs.json"))

    assert {k: v for k, v in after.items() if k in before and not mine(k)} == {
        k: v for k, v in before.items() if not mine(k)}


def test_writer_refuses_a_folder_with_user_files_and_reuses_its_own(tmp_path):
    make_corpus(str(tmp_path / "a.jsonl"), 20, seed=2)
    user = user_folder(tmp_path / "user")
    (tmp_path / "p.yaml").write_text(
        f"name: w\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
        f"  - read_jsonl: {{paths: '{tmp_path / 'a.jsonl'}'}}\n"
        f"  - write_jsonl: {{path: '{user}'}}\n")
    before = tree_digest(user)
    res = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    assert res.returncode == 2
    assert "write_jsonl: refusing to write into output folder" in one_line(res)
    assert "2 file(s) curator did not write there" in one_line(res)
    assert tree_digest(user) == before
    # a folder of its own: written, and written again after a parameter change
    run_cli("run", "p.yaml", "--set", f"stages.write_jsonl.path={tmp_path / 'out'}",
            cwd=tmp_path)
    run_cli("run", "p.yaml", "--set", f"stages.write_jsonl.path={tmp_path / 'out'}",
            "--set", "stages.write_jsonl.compression=zstd", cwd=tmp_path)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["read_jsonl-00000.jsonl.zst"]
