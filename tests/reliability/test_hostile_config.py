"""Hostile pipeline files: YAML alias bombs under a real memory limit, recursive aliases, and
the code a pipeline file imports (named by ``curator validate``); custom modules next to the
pipeline found by the real ``curator`` console script."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from curator.base.errors import ConfigError
from curator.core import pipeline as pl
from tests.core.helpers_core import ROOT, make_corpus
from tests.helpers import cli_env, run_cli

CURATOR_BIN = Path(sys.executable).parent / "curator"
LIMIT = 1536 * 2**20  # 1.5 GiB of address space for the whole `curator validate` process


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The "billion laughs": each level is a list of ``width`` aliases of the level below,
    so ~700 bytes stand for width**levels (387 million) strings."""
    lines = ["name: bomb", "work_dir: w",
             "x0: &x0 [" + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * width) + "]")
    lines += ["stages:", f"  - read_jsonl: {{paths: *x{levels - 1}}}"]
    return "\n".join(lines) + "\n"


def test_alias_bomb_fails_in_one_line_under_a_memory_limit(tmp_path):
    text = alias_bomb()
    assert len(text) < 800
    (tmp_path / "bomb.yaml").write_text(text)
    p = subprocess.run([sys.executable, "-m", "curator", "validate", "bomb.yaml"],
                       cwd=tmp_path, env=cli_env(), capture_output=True, text=True,
                       timeout=60, preexec_fn=_limit_memory)
    assert p.returncode == 2, p.stderr[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("curator: error: bomb.yaml:")
    assert "alias" in lines[0] and "1,000,000" in lines[0]


def test_alias_bomb_in_an_override_is_refused():
    expr = "&x0 [l, l, l, l, l, l, l, l, l]"
    for i in range(1, 9):
        expr = f"&x{i} [{expr}, " + ", ".join([f"*x{i - 1}"] * 8) + "]"
    with pytest.raises(ConfigError) as e:
        pl.loads("name: o\nwork_dir: w\nstages:\n  - read_jsonl: {paths: a.jsonl}\n",
                 source="o.yaml", overrides=[f"stages.read_jsonl.paths={expr}"])
    assert str(e.value).startswith("--set stages.read_jsonl.paths:1: invalid YAML:")
    assert "alias" in str(e.value)


def test_a_few_aliases_are_still_fine():
    pipe = pl.loads(textwrap.dedent("""\
        name: ok
        work_dir: w
        stages:
          - read_jsonl: {paths: a.jsonl}
          - word_count_filter: &common {min_words: 3}
          - id: again
            word_count_filter: *common
        """), source="p.yaml")
    assert [n.stage.params["min_words"] for n in pipe.nodes[1:]] == [3, 3]


def test_recursive_alias_is_refused_in_one_line():
    with pytest.raises(ConfigError) as e:
        pl.loads("name: r\nwork_dir: w\nstages: &s\n  - read_jsonl: {paths: *s}\n",
                 source="r.yaml")
    assert str(e.value).startswith("r.yaml:3: invalid YAML:") and "recursive" in str(e.value)


def test_deeply_nested_yaml_is_refused_in_one_line():
    text = "name: d\nwork_dir: w\nstages: " + "[" * 20_000 + "]" * 20_000 + "\n"
    with pytest.raises(ConfigError) as e:
        pl.loads(text, source="d.yaml")
    assert str(e.value).startswith("d.yaml") and "\n" not in str(e.value)


MY_FILTER = '''\
from curator import filter

print("my_pkg.filters imported")


@filter
def at_least(doc, n: int = 5) -> bool:
    """Keep documents with at least n words."""
    return len(doc.text.split()) >= n
'''


def _project(tmp_path: Path) -> Path:
    """A user's project folder: my_pkg/ next to the pipeline file and the data."""
    proj = tmp_path / "proj"
    (proj / "my_pkg").mkdir(parents=True)
    (proj / "my_pkg" / "__init__.py").write_text("")
    (proj / "my_pkg" / "filters.py").write_text(MY_FILTER)
    make_corpus(str(proj / "a.jsonl"), 40, seed=3)
    (proj / "p.yaml").write_text(
        "name: custom\nwork_dir: w\nstages:\n"
        "  - read_jsonl: {paths: a.jsonl}\n"
        "  - my_pkg.filters:at_least: {n: 20}\n"
        "  - write_jsonl: {path: out}\n")
    return proj


def read_jsonl_dir(d: Path) -> list[dict]:
    import gzip
    import json

    return [json.loads(line) for p in sorted(d.glob("*.jsonl.gz"))
            for line in gzip.open(p, "rt", encoding="utf-8")]


def _console_env() -> dict[str, str]:
    env = cli_env()
    env["PYTHONPATH"] = str(ROOT)  # this checkout's curator; nothing of the project's
    return env


def test_validate_names_the_modules_it_imports(tmp_path):
    proj = _project(tmp_path)
    r = run_cli("validate", "p.yaml", cwd=proj)
    assert "my_pkg.filters imported" in r.stdout  # importing ran the module's code ...
    assert "imports: my_pkg.filters (custom stage: at_least)" in r.stdout  # ... and says so
    (proj / "builtin.yaml").write_text(
        "name: b\nwork_dir: w\nstages:\n  - read_jsonl: {paths: a.jsonl}\n")
    assert "imports:" not in run_cli("validate", "builtin.yaml", cwd=proj).stdout


def test_a_non_stage_import_is_named_in_the_error(tmp_path):
    (tmp_path / "p.yaml").write_text(
        "name: z\nwork_dir: w\nstages:\n  - read_jsonl: {paths: a.jsonl}\n  - this:s: {}\n")
    r = run_cli("validate", "p.yaml", cwd=tmp_path, check=False)
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert "p.yaml:5" in last and "'this:s' is not a stage class" in last


def test_console_script_finds_modules_in_the_current_directory(tmp_path):
    proj = _project(tmp_path)
    r = subprocess.run([str(CURATOR_BIN), "run", "p.yaml"], cwd=proj, env=_console_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "imports: my_pkg.filters (custom stage: at_least)" in r.stderr
    kept = [d for d in read_jsonl_dir(proj / "w" / "out")]
    assert kept and all(len(d["text"].split()) >= 20 for d in kept) and len(kept) < 40


def test_console_script_finds_modules_next_to_the_pipeline_file(tmp_path):
    """From another directory, on Dask: the spawned workers import my_pkg too."""
    proj = _project(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    (proj / "p.yaml").write_text((proj / "p.yaml").read_text().replace(
        "paths: a.jsonl", f"paths: {proj / 'a.jsonl'}"))
    r = subprocess.run([str(CURATOR_BIN), "validate", str(proj / "p.yaml")], cwd=other,
                       env=_console_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "imports: my_pkg.filters" in r.stdout
    r = subprocess.run([str(CURATOR_BIN), "run", str(proj / "p.yaml"), "--executor", "dask",
                        "--workers", "1"], cwd=other, env=_console_env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    kept = read_jsonl_dir(other / "w" / "out")
    assert kept and all(len(d["text"].split()) >= 20 for d in kept)


def test_current_directory_cannot_shadow_installed_modules(tmp_path):
    """The folders go at the end of sys.path: a stray yaml.py in the current directory is
    not imported instead of PyYAML."""
    (tmp_path / "yaml.py").write_text("raise SystemExit('shadowed yaml imported')\n")
    (tmp_path / "p.yaml").write_text(
        "name: s\nwork_dir: w\nstages:\n  - read_jsonl: {paths: a.jsonl}\n")
    (tmp_path / "a.jsonl").write_text('{"id": "1", "text": "x"}\n')  # validate lists inputs
    r = subprocess.run([str(CURATOR_BIN), "validate", "p.yaml"], cwd=tmp_path,
                       env=_console_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "shadowed" not in r.stderr, r.stderr[-2000:]
    assert os.path.exists(tmp_path / "yaml.py")


def test_oversized_or_binary_pipeline_file_is_one_line(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("name: x\nwork_dir: w\nstages:\n" + "#" * (2 << 20) + "\n")
    res = run_cli("validate", str(big), cwd=tmp_path, check=False)
    assert res.returncode == 2 and res.stderr.strip().count("\n") == 0
    assert "larger than 1,048,576 characters" in res.stderr
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"name: \xff\xfe\n")
    res = run_cli("validate", str(binary), cwd=tmp_path, check=False)
    assert res.returncode == 2 and f"{binary}: not a UTF-8 text file" in res.stderr
