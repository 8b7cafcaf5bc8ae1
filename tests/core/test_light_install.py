"""The core install (``pip install curator-pipeline``, no extra) as its user has it: every
package outside the core's dependencies unimportable. A pipeline of core stages runs; a stage
whose extra is missing stops with one line naming the extra to install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import cli_env

# core: pyproject.toml's [project] dependencies (and what they import); everything else fails
# to import as if it were not installed
BLOCK = """
import importlib.abc, sys
CORE = {"yaml", "_yaml", "pydantic", "pydantic_core", "annotated_types", "typing_extensions",
        "typing_inspection", "fsspec", "orjson", "zstandard", "pyarrow", "numpy", "xxhash",
        "curator", "helpers_core"}
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top in CORE or top in sys.stdlib_module_names or top.startswith("_"):
            return None
        raise ModuleNotFoundError(f"No module named '{top}'", name=top)
sys.meta_path.insert(0, NotInstalled())
from curator.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _curator(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK, *args], cwd=tmp, env=cli_env(),
                          capture_output=True, text=True, timeout=300)


def test_core_stages_run_without_any_extra(tmp_path):
    import random

    rng = random.Random(5)
    vocab = ("the river runs past old mill and children watch water with care while boats "
             "drift slowly under bridges near town").split()
    recs = [{"id": f"d{i}", "text": " ".join(rng.choice(vocab) for _ in range(80)) + "."}
            for i in range(6)]
    recs.append(dict(recs[0], id="copy"))
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "p.yaml").write_text(
        "name: core\nwork_dir: w\nstages:\n  - read_jsonl: {paths: a.jsonl}\n"
        "  - word_count_filter: {min_words: 3}\n  - gopher_repetition: {}\n"
        "  - exact_dedup: {}\n  - write_parquet: {path: out}\n")
    assert _curator(tmp_path, "validate", "p.yaml").returncode == 0
    r = _curator(tmp_path, "run", "p.yaml")
    assert r.returncode == 0, r.stderr
    assert "[exact_dedup] 7 -> 6 docs (1 removed)" in r.stderr, r.stderr
    assert "6 documents out of 'write_parquet'" in r.stderr


def test_a_stage_whose_extra_is_missing_names_the_extra(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"id": "1", "text": "some words here"}\n')
    for stage, extra in (("fix_unicode: {}", "[extract]' (or [filters])"),
                         ("megatron_shards: {tokenizer: gpt2}", "[tokenize]' (or [train])")):
        (tmp_path / "p.yaml").write_text(
            "name: core\nwork_dir: w\nstages:\n  - read_jsonl: {paths: a.jsonl}\n"
            f"  - {stage}\n")
        r = _curator(tmp_path, "run", "p.yaml")
        assert r.returncode == 1, r.stderr
        (line,) = [x for x in r.stderr.splitlines() if x.startswith("curator: error:")]
        assert f"pip install 'curator-pipeline{extra}" in line, r.stderr
        assert "Traceback" not in r.stderr
