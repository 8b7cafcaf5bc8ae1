"""``curator validate`` checks what can be checked before running (every source's listing on
local inputs), and ``read_hf`` tells a mistyped local folder from a hub id."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import ROOT, run_cli


def _pipeline(tmp: Path, stages: str) -> Path:
    p = tmp / "p.yaml"
    p.write_text(f"name: v\nwork_dir: {tmp / 'w'}\nstages:\n{stages}")
    return p


def test_validate_reports_every_source_that_would_fail_its_listing(tmp_path):
    (tmp_path / "corpora" / "hf_pydocs").mkdir(parents=True)
    shutil.copytree(
        ROOT / "data" / "sample" / "hf", tmp_path / "corpora" / "hf_pydocs", dirs_exist_ok=True
    )
    (tmp_path / "corpora" / "not_a_dataset").mkdir()
    p = _pipeline(
        tmp_path,
        f"""\
  - {{id: web, read_jsonl: {{paths: '{tmp_path}/corpora/*.jsonl'}}}}
  - {{id: hf, read_hf: {{path: corpora/hf_pydoc}}}}
  - {{id: hf2, read_hf: {{path: corpora/not_a_dataset}}}}
  - {{id: tex, arxiv: {{months: '2301', base_url: '{tmp_path}/corpora/arxiv_mirror'}}}}
  - {{id: ok, read_hf: {{path: corpora/hf_pydocs}}}}
""",
    )
    r = run_cli("validate", str(p), cwd=tmp_path, check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    err = r.stderr
    assert "4 input problems (nothing ran)" in err, err
    assert f"web.paths: '{tmp_path}/corpora/*.jsonl' matches no file" in err
    assert (
        "hf.path: local folder 'corpora/hf_pydoc' does not exist (did you mean "
        "'corpora/hf_pydocs'?)"
    ) in err
    assert "hf2.path: no save_to_disk files" in err
    assert "arxiv_mirror" in err and "tex" in err
    assert "hub" not in err.split("hf.path:")[1].split("\n")[0].split(";")[0]
    assert not (tmp_path / "w").exists()  # validating wrote nothing


def test_read_hf_mistyped_local_folder_is_named_without_a_hub_lookup(tmp_path):
    (tmp_path / "corpora" / "hf_pydocs").mkdir(parents=True)
    p = _pipeline(tmp_path, "  - read_hf: {path: corpora/hf_pydoc}\n  - write_jsonl: {path: out}\n")
    r = run_cli("run", str(p), cwd=tmp_path, check=False)
    assert r.returncode != 0
    assert (
        "read_hf.path: local folder 'corpora/hf_pydoc' does not exist (did you mean "
        "'corpora/hf_pydocs'?)"
    ) in r.stderr, r.stderr
    assert "cannot be reached" not in r.stderr and "network" not in r.stderr


def test_validate_passes_local_inputs_that_exist_and_notes_remote_ones(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"id": "1", "text": "x"}\n')
    p = _pipeline(
        tmp_path,
        f"""\
  - {{id: local, read_jsonl: {{paths: '{tmp_path}/*.jsonl'}}}}
  - {{id: far, read_jsonl: {{paths: 'http://127.0.0.1:9/x.jsonl'}}}}
""",
    )
    r = run_cli("validate", str(p), cwd=tmp_path)
    assert "far: not listed, reads http://127.0.0.1:9/x.jsonl over the network" in r.stdout
