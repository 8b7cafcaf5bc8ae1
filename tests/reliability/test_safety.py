"""Safety: no shell command is built from strings anywhere in ``curator/``, and relative output
paths from YAML cannot leave ``work_dir`` (absolute paths and URLs are the user's explicit
choice). Redis key namespacing and cleanup are shown in tests/dedup/test_redis_cluster.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from curator.base.errors import ConfigError
from curator.core.context import StageContext
from tests.core.helpers_core import make_corpus
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
SHELL_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"),
               ("subprocess", "getstatusoutput"), ("pty", "spawn")}
SPAWN = {"run", "Popen", "call", "check_call", "check_output"}


def _shell_uses(tree: ast.AST) -> list[tuple[int, str]]:
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = (f.value.id, f.attr) if isinstance(f, ast.Attribute) and isinstance(
            f.value, ast.Name) else None
        if name in SHELL_CALLS:
            bad.append((node.lineno, f"{name[0]}.{name[1]}"))
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant)
                                          and kw.value.value is False):
                bad.append((node.lineno, "shell="))
        if name and name[0] == "subprocess" and name[1] in SPAWN and node.args and isinstance(
                node.args[0], (ast.JoinedStr, ast.BinOp, ast.Constant)):
            bad.append((node.lineno, "command given as one string"))
        if name and name[0] == "asyncio" and name[1] == "create_subprocess_shell":
            bad.append((node.lineno, "asyncio shell"))
    return bad


def test_the_checker_catches_shell_commands():
    src = ("import os, subprocess\nos.system('ls ' + p)\nsubprocess.run(f'ls {p}', shell=True)\n"
           "subprocess.run(['ls', p])\nsubprocess.check_output('ls -l')\n")
    assert [k for _, k in _shell_uses(ast.parse(src))] == [
        "os.system", "shell=", "command given as one string", "command given as one string"]


def test_no_module_builds_a_shell_command():
    files = sorted((ROOT / "curator").rglob("*.py"))
    assert len(files) > 50
    bad = [f"{p.relative_to(ROOT)}:{line}: {what}"
           for p in files for line, what in _shell_uses(ast.parse(p.read_text(), str(p)))]
    assert bad == []


@pytest.mark.parametrize("path", ["../x", "a/../../x", "curated/../../../etc", ".."])
def test_relative_output_path_cannot_escape_work_dir(tmp_path, path):
    ctx = StageContext(stage_id="my_writer", work_dir=str(tmp_path / "w"), artifacts={})
    with pytest.raises(ConfigError) as e:
        ctx.output_path(path)
    assert "my_writer" in str(e.value) and path in str(e.value)


def test_inside_absolute_and_url_output_paths_are_allowed(tmp_path):
    wd = tmp_path / "w"
    ctx = StageContext(stage_id="s", work_dir=str(wd), artifacts={})
    assert ctx.output_path("a/../b") == str(wd / "b")
    assert ctx.output_path("out") == str(wd / "out")
    assert ctx.output_path(str(tmp_path / "abs")) == str(tmp_path / "abs")
    assert ctx.output_path("s3://bucket/x") == "s3://bucket/x"


@pytest.mark.parametrize("stage,key", [("write_jsonl", "path"),
                                       ("megatron_shards", "output_dir")])
def test_pipeline_with_escaping_output_fails_before_writing_outside(tmp_path, stage, key):
    """End to end: the stage fails with a one-line error naming it; nothing appears outside."""
    make_corpus(str(tmp_path / "a.jsonl"), 20, seed=1)
    (tmp_path / "w").mkdir()
    pre = ("  - train_tokenizer: {type: bpe, vocab_size: 300}\n"
           if stage == "megatron_shards" else "")
    (tmp_path / "p.yaml").write_text(
        f"name: esc\nwork_dir: {tmp_path / 'w'}\nstages:\n"
        f"  - read_jsonl: {{paths: '{tmp_path}/a.jsonl'}}\n{pre}"
        f"  - {stage}: {{{key}: ../escaped}}\n")
    r = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert stage in last and "escapes work_dir" in last and "Traceback" not in r.stderr
    assert not (tmp_path / "escaped").exists()
    assert not (tmp_path / "w" / "stages" / stage / "_SUCCESS.json").exists()


def test_symlink_inside_work_dir_cannot_lead_out(tmp_path):
    """A relative output path is checked once resolved: a symlink in work_dir that points
    outside is refused (both the link itself and a path below it)."""
    wd, outside = tmp_path / "w", tmp_path / "outside"
    wd.mkdir()
    outside.mkdir()
    (wd / "out").symlink_to(outside)
    ctx = StageContext(stage_id="my_writer", work_dir=str(wd), artifacts={})
    for path in ("out", "out/sub/file.jsonl"):
        with pytest.raises(ConfigError) as e:
            ctx.output_path(path)
        msg = str(e.value)
        assert "my_writer" in msg and path in msg and "symlink" in msg and str(outside) in msg
        assert "\n" not in msg


def test_symlinks_that_stay_inside_are_allowed(tmp_path):
    real_wd = tmp_path / "disk" / "w"
    (real_wd / "data").mkdir(parents=True)
    (tmp_path / "w_link").symlink_to(real_wd)           # work_dir itself is a symlink
    (real_wd / "latest").symlink_to(real_wd / "data")   # a link that stays inside
    ctx = StageContext(stage_id="s", work_dir=str(tmp_path / "w_link"), artifacts={})
    assert ctx.output_path("latest/x") == str(tmp_path / "w_link" / "latest" / "x")
    assert ctx.output_path("new/x") == str(tmp_path / "w_link" / "new" / "x")


def test_pipeline_writing_through_a_symlink_out_fails_before_writing(tmp_path):
    make_corpus(str(tmp_path / "a.jsonl"), 20, seed=1)
    (tmp_path / "w").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "w" / "out").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "p.yaml").write_text(
        f"name: esc\nwork_dir: {tmp_path / 'w'}\nstages:\n"
        f"  - read_jsonl: {{paths: '{tmp_path}/a.jsonl'}}\n"
        f"  - write_jsonl: {{path: out}}\n")
    r = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "write_jsonl" in last and "escapes work_dir (through a symlink" in last
    assert "Traceback" not in r.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []
