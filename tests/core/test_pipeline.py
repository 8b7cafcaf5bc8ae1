"""Pipeline YAML validation: every mistake is one line naming the key path and the YAML line."""

from __future__ import annotations

import textwrap

import pytest

from curator.base.errors import ConfigError
from curator.core import pipeline as pl
from tests.helpers import run_cli

GOOD = """\
name: t
work_dir: {wd}
executor:
  type: local
stages:
  - read_jsonl:
      paths: {data}
  - tests.core.helpers_core:min_words:
      n: 5
  - write_jsonl: {{path: out}}
"""


def load(text: str, **kw):
    return pl.loads(textwrap.dedent(text), source="p.yaml", **kw)


def err(text: str, **kw) -> str:
    with pytest.raises(ConfigError) as ei:
        load(text, **kw)
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


def test_valid_pipeline_builds_linear_dag(tmp_path):
    p = load(GOOD.format(wd=tmp_path, data="x.jsonl"))
    assert [n.id for n in p.nodes] == ["read_jsonl", "min_words", "write_jsonl"]
    assert [n.inputs for n in p.nodes] == [[], ["read_jsonl"], ["min_words"]]
    assert p.nodes[1].stage.params == {"n": 5}


def test_unknown_stage_names_line_and_suggests():
    msg = err("""\
        name: t
        work_dir: w
        stages:
          - read_jsonl: {paths: x}
          - write_jsonll: {path: out}
        """)
    assert msg.startswith("p.yaml:5:")
    assert "unknown stage 'write_jsonll'" in msg and "did you mean 'write_jsonl'" in msg


def test_misspelled_parameter_names_key_path_and_line():
    msg = err("""\
        name: t
        work_dir: w
        stages:
          - read_jsonl:
              paths: x
              text_feild: body
        """)
    assert msg.startswith("p.yaml:6:")
    assert "stages[0].read_jsonl.text_feild: unknown key" in msg
    assert "did you mean 'text_field'" in msg


def test_wrong_type_names_key_path_and_line():
    msg = err("""\
        name: t
        work_dir: w
        stages:
          - read_jsonl: {paths: x}
          - write_jsonl:
              path: out
              compression: lz4
        """)
    assert msg.startswith("p.yaml:7:")
    assert "stages[1].write_jsonl.compression" in msg and "lz4" in msg


def test_top_level_typo_and_executor_type():
    msg = err("name: t\nwork_dir: w\nstagse: []\n")
    assert "stagse: unknown key" in msg and "did you mean 'stages'" in msg and msg.startswith(
        "p.yaml:3:")
    msg = err("name: t\nwork_dir: w\nexecutor:\n  type: spark\n"
              "stages:\n  - read_jsonl: {paths: x}\n")
    assert msg.startswith("p.yaml:4:") and "executor.type" in msg


def test_missing_required_parameter():
    msg = err("name: t\nwork_dir: w\nstages:\n  - read_jsonl: {}\n")
    assert "stages[0].read_jsonl.paths: required key is missing" in msg


def test_inputs_must_name_earlier_stage_and_sources_take_none():
    msg = err("""\
        name: t
        work_dir: w
        stages:
          - read_jsonl: {paths: x}
          - write_jsonl: {path: out}
            inputs: [nope]
        """)
    assert "'nope' is not the id of an earlier stage" in msg and msg.startswith("p.yaml:6:")
    msg = err("name: t\nwork_dir: w\nstages:\n  - write_jsonl: {path: o}\n")
    assert "needs input documents" in msg


def test_branches_meet_with_explicit_inputs():
    p = load("""\
        name: t
        work_dir: w
        stages:
          - id: web
            read_jsonl: {paths: a}
          - tests.core.helpers_core:min_words: {n: 3}
          - id: wiki
            read_jsonl: {paths: b}
          - id: merged
            write_jsonl: {path: out}
            inputs: [min_words, wiki]
        """)
    assert p.node("wiki").inputs == []
    assert p.node("merged").inputs == ["min_words", "wiki"]
    assert p.ancestors("merged") == ["min_words", "wiki", "web"]


def test_set_overrides_by_stage_id_and_index(tmp_path):
    text = GOOD.format(wd=tmp_path, data="x.jsonl")
    p = load(text, overrides=["stages.min_words.n=42", "executor.type=dask",
                              "executor.workers=3", "stages.2.path=elsewhere"])
    assert p.node("min_words").stage.params["n"] == 42
    assert p.config.executor.type == "dask" and p.config.executor.workers == 3
    assert p.node("write_jsonl").stage.params["path"] == "elsewhere"
    assert "stages[1].tests.core.helpers_core:min_words.n" in err(
        text, overrides=["stages.min_words.n=many"])


def test_set_on_a_whole_stage_or_inside_a_list_names_the_override(tmp_path):
    """``--set stages.0={...}`` used to turn ``stages`` into a mapping and fail with
    "p.yaml:7: stages: Input should be a valid list", blaming the file for the override."""
    text = GOOD.format(wd=tmp_path, data="[a.jsonl, b.jsonl]")
    for ov in ["stages.0={read_parquet: {paths: x}}", "stages.write_jsonl={path: o}"]:
        assert err(text, overrides=[ov]) == (
            f"--set {ov}: 'stages' is a list, not a mapping: set one parameter of a stage, "
            "stages.<id or index>.<param>=value")
    assert err(text, overrides=["stages.0.paths.1=c.jsonl"]) == (
        "--set stages.0.paths.1=c.jsonl: 'paths' is a list, not a mapping")
    p = load(text, overrides=["stages.0.paths=[c.jsonl]"])
    assert p.node("read_jsonl").stage.params["paths"] == ["c.jsonl"]


def test_a_stages_own_parameter_check_names_the_file_line_and_key(tmp_path):
    """Checks a stage makes when it is built (a Gopher rule that does not exist, a language
    the LID model lacks) used to be the bare message (``gopher_quality: unknown rule
    'word_cont' ...``) without the file and YAML line every other mistake has."""
    text = f"""\
    name: t
    work_dir: {tmp_path}
    stages:
      - read_jsonl: {{paths: x.jsonl}}
      - gopher_quality:
          overrides: {{word_cont: {{min_words: 10}}}}
      - language_id:
          languages: [english]
    """
    assert err(text).startswith(
        "p.yaml:5: stages[1].gopher_quality: unknown rule 'word_cont' (rules: word_count, ")
    text = text.replace("word_cont", "word_count")
    assert err(text).startswith(
        "p.yaml:8: stages[2].language_id.languages: 'english' is not a language of the model")


def test_fingerprint_changes_downstream_only(tmp_path):
    a = load(GOOD.format(wd=tmp_path, data="x.jsonl"))
    b = load(GOOD.format(wd=tmp_path, data="x.jsonl"), overrides=["stages.min_words.n=6"])
    fa = [n.fingerprint for n in a.nodes]
    fb = [n.fingerprint for n in b.nodes]
    assert fa[0] == fb[0] and fa[1] != fb[1] and fa[2] != fb[2]


def test_invalid_yaml_syntax_names_line():
    msg = err("name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: [x\n")
    assert msg.startswith("p.yaml:") and "invalid YAML" in msg


def test_validate_cli_exit_codes(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD.format(wd=tmp_path / "w", data="x.jsonl"))
    (tmp_path / "x.jsonl").write_text('{"id": "1", "text": "x"}\n')  # validate lists inputs
    out = run_cli("validate", str(good), cwd=tmp_path)
    assert "valid pipeline 't' with 3 stages" in out.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.format(wd=tmp_path / "w", data="x.jsonl").replace("n: 5", "nn: 5"))
    res = run_cli("validate", str(bad), cwd=tmp_path, check=False)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"curator: error: {bad}:9:")
    assert not (tmp_path / "w").exists()  # nothing ran
    res = run_cli("run", str(tmp_path / "missing.yaml"), cwd=tmp_path, check=False)
    assert res.returncode == 2 and "cannot read pipeline file" in res.stderr


def test_environment_layer_between_file_and_set(tmp_path, monkeypatch):
    f = tmp_path / "p.yaml"
    f.write_text(GOOD.format(wd=tmp_path, data="x.jsonl"))
    monkeypatch.setenv("CURATOR__EXECUTOR__TYPE", "dask")
    monkeypatch.setenv("CURATOR__EXECUTOR__WORKERS", "5")
    monkeypatch.setenv("CURATOR__STAGES__MIN_WORDS__N", "7")
    p = pl.load(str(f), ["executor.workers=9"])
    assert p.config.executor.type == "dask"
    assert p.config.executor.workers == 9  # --set wins over the environment
    assert p.node("min_words").stage.params["n"] == 7
