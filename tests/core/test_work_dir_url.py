"""A work_dir on an object store is refused with one line (markers and atomic renames need a
POSIX filesystem); the same pipeline with a shared-filesystem path is fine."""

from __future__ import annotations

from tests.helpers import run_cli

PIPE = "name: t\nwork_dir: {wd}\nstages:\n  - read_jsonl: {{paths: in.jsonl}}\n"


def test_object_store_work_dir_is_refused_in_one_line(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "x"}\n')  # validate lists inputs
    (tmp_path / "p.yaml").write_text(PIPE.format(wd="s3://bucket/run"))
    res = run_cli("validate", "p.yaml", cwd=tmp_path, check=False)
    assert res.returncode == 2
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "p.yaml:2: work_dir" in lines[0]
    assert "not a URL ('s3://bucket/run')" in lines[0]
    (tmp_path / "p.yaml").write_text(PIPE.format(wd="file://" + str(tmp_path / "w")))
    run_cli("validate", "p.yaml", cwd=tmp_path)
