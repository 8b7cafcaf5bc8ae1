"""What the command line says when a user gets something wrong: every error of a file (not
"(and 1 more)"), an override's typo at the override, a did-you-mean for ``input:``, custom
stages described from anywhere, summaries that are whole sentences."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_cli


def _pipeline(tmp: Path, stages: str) -> Path:
    (tmp / "a.jsonl").write_text('{"id": "1", "text": "one two three"}\n')
    p = tmp / "p.yaml"
    p.write_text(
        f"name: w\nwork_dir: {tmp / 'w'}\nstages:\n"
        f"  - {{id: src, read_jsonl: {{paths: '{tmp}/a.jsonl'}}}}\n{stages}"
    )
    return p


def test_every_error_of_a_stage_is_printed_one_line_each(tmp_path):
    p = _pipeline(tmp_path, "  - word_count_filter: {min_wordz: 5, max_words: many}\n")
    r = run_cli("validate", str(p), check=False)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2, r.stderr
    assert lines[0].endswith(
        "word_count_filter.min_wordz: unknown key (did you mean 'min_words'?)"
    ), r.stderr
    assert "word_count_filter.max_words: " in lines[1] and "'many'" in lines[1]
    assert "more)" not in r.stderr


def test_an_overrides_typo_is_reported_at_the_override(tmp_path):
    p = _pipeline(tmp_path, "  - {id: wc, word_count_filter: {min_words: 1}}\n")
    r = run_cli("validate", str(p), "--set", "stages.wc.min_wordz=5", check=False)
    assert r.returncode == 2
    assert r.stderr.startswith(
        "curator: error: --set stages.wc.min_wordz=5: "
        "stages[1].word_count_filter.min_wordz: unknown key (did you "
        "mean 'min_words'?)"
    ), r.stderr
    assert "p.yaml:" not in r.stderr


def test_input_for_inputs_gets_a_did_you_mean(tmp_path):
    p = _pipeline(tmp_path, "  - {word_count_filter: {min_words: 1}, input: src}\n")
    r = run_cli("validate", str(p), check=False)
    assert r.returncode == 2
    assert "stages[1].input: unknown key (did you mean 'inputs'?)" in r.stderr, r.stderr


def test_custom_stage_is_described_from_another_folder(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "myfilters_h47.py").write_text(
        "import curator\n\n@curator.filter\ndef letter_ratio(doc, min_ratio: float = 0.5)"
        ' -> bool:\n    """Keep letters."""\n    return True\n'
    )
    (proj / "p.yaml").write_text("name: x\nwork_dir: w\nstages: []\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    r = run_cli("stages", "myfilters_h47:letter_ratio", cwd=other, check=False)
    assert r.returncode != 0 and "--pipeline" in r.stderr, r.stderr
    r = run_cli(
        "stages", "myfilters_h47:letter_ratio", "--pipeline", str(proj / "p.yaml"), cwd=other
    )
    assert "min_ratio" in r.stdout


def test_stage_summaries_are_whole_sentences():
    r = run_cli("stages")
    rows = [line for line in r.stdout.splitlines()[:-2] if line.strip()]
    assert len(rows) > 40
    cut = [line for line in rows if not line.rstrip().endswith((".", ")", "`"))]
    assert not cut, cut


def test_readme_commands_work_without_activating_the_venv(tmp_path):
    """Every command the README shows names the venv's tools by path (``mpiexec`` lives in
    ``.venv/bin``, from the ``mpi`` extra); its MPI line, run as written with a PATH that has
    no venv on it, goes through."""
    import os
    import re
    import subprocess

    from tests.helpers import BIN, ROOT

    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```\n(.*?)```", readme, re.S)
    lines = [ln.split("#")[0].strip() for b in blocks for ln in b.splitlines()]
    cmds = [ln for ln in lines if re.match(r"(\S*/)?(curator|mpiexec)\b", ln)]
    assert cmds and all(c.startswith(".venv/bin/") for c in cmds), cmds
    (mpi,) = [c for c in cmds if "mpiexec" in c]
    (tmp_path / "a.jsonl").write_text('{"id": "1", "text": "one two three"}\n')
    (tmp_path / "p.yaml").write_text(f"name: m\nwork_dir: {tmp_path / 'w'}\nstages:\n"
                                     f"  - read_jsonl: {{paths: '{tmp_path}/a.jsonl'}}\n"
                                     f"  - write_jsonl: {{path: out}}\n")
    argv = mpi.replace(".venv/bin/", f"{BIN}/").replace(
        "pipelines/quickstart.yaml", str(tmp_path / "p.yaml")).split()
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": str(ROOT)}
    r = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "1 documents out of 'write_jsonl'" in r.stderr
