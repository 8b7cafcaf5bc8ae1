"""Code identity is automatic: a built-in stage's fingerprint holds a digest
of its module and of the curator modules of stage logic it imports, so editing a stage's code
reruns it (and what is below it) with no number to bump, `curator status` names the module,
and the same code installed elsewhere, copied or touched gives the same keys.

The package is copied to a temporary folder and edited there; real `curator` processes run
from the copy (PYTHONPATH), so the checkout is never touched."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from curator.core import codehash
from curator.core.identity import code_identity, explain
from curator.core.registry import resolve
from tests.core.helpers_core import make_corpus
from tests.helpers import ROOT, cli_env

#: A custom filter that calls a curator text helper: editing the helper reruns it too.
CUSTOM = '''
from curator import filter
from curator.text.words import split_words


@filter
def wordy(doc, n: int = 4) -> bool:
    return len(split_words(doc.text)) >= n
'''

PIPE = """\
name: code
work_dir: {wd}
progress: off
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl"}}
    checkpoint: true
  - c4_quality: {{}}
    checkpoint: true
  - gopher_quality: {{}}
    checkpoint: true
  - myfilters:wordy: {{}}
    checkpoint: true
  - exact_dedup: {{}}
  - write_jsonl: {{path: out}}
"""

PRINT_FPS = """\
import json, sys, curator
from curator.core import pipeline
pipe = pipeline.load(sys.argv[1])
print(json.dumps({"pkg": curator.__file__,
                  "fps": {n.id: n.fingerprint for n in pipe.nodes},
                  "modules": {n.id: n.identity["code"].get("modules") for n in pipe.nodes}}))
"""


def copy_package(dest: Path) -> Path:
    """A copy of the checkout's ``curator`` package under ``dest`` (what a second install, or
    a checkout at another path, holds)."""
    shutil.copytree(ROOT / "curator", dest / "curator",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def env_for(pkg_root: Path, tmp_path: Path) -> dict[str, str]:
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(pkg_root), str(tmp_path / "mods")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def fingerprints(pkg_root: Path, tmp_path: Path) -> dict:
    p = subprocess.run([sys.executable, "-c", PRINT_FPS, str(tmp_path / "p.yaml")],
                       cwd=tmp_path, env=env_for(pkg_root, tmp_path), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["pkg"] == str(pkg_root / "curator" / "__init__.py")  # the copy ran
    return got


def curator(pkg_root: Path, tmp_path: Path, *args: str) -> str:
    p = subprocess.run([sys.executable, "-m", "curator", *args], cwd=tmp_path,
                       env=env_for(pkg_root, tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout + p.stderr


def setup(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 60, seed=3)
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "myfilters.py").write_text(CUSTOM)
    (tmp_path / "p.yaml").write_text(PIPE.format(wd=tmp_path / "w", data=data))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def changed(a: dict, b: dict) -> list[str]:
    return [k for k in a["fps"] if a["fps"][k] != b["fps"][k]]


def test_same_code_same_keys_in_another_process_at_another_path(tmp_path):
    """Two copies of the package at different paths, one with every file's mtime moved: the
    same fingerprints as this process computes from the checkout."""
    setup(tmp_path)
    a = fingerprints(copy_package(tmp_path / "a"), tmp_path)
    b_root = copy_package(tmp_path / "b")
    for p in (b_root / "curator").rglob("*.py"):
        os.utime(p, ns=(1_000_000_000, 1_000_000_000))
    b = fingerprints(b_root, tmp_path)
    sys.path.insert(0, str(tmp_path / "mods"))
    try:
        from curator.core import pipeline

        here = {n.id: n.fingerprint for n in pipeline.load(str(tmp_path / "p.yaml")).nodes}
    finally:
        sys.path.remove(str(tmp_path / "mods"))
        sys.modules.pop("myfilters", None)
    assert a["fps"] == b["fps"] == here
    # the modules are named by their place in the package, never by where it is installed
    assert "curator/filters/gopher_quality.py" in a["modules"]["gopher_quality"]
    assert all(not k.startswith("/") for m in a["modules"].values() for k in m or {})


def test_editing_a_module_changes_exactly_the_stages_that_use_it(tmp_path):
    setup(tmp_path)
    root = copy_package(tmp_path / "pkg")
    base = fingerprints(root, tmp_path)
    pkg = root / "curator"

    # comments, docstrings and blank lines are not code: nothing changes
    edit(pkg / "filters" / "gopher_quality.py", '"""', '"""An edited docstring.\n\n')
    (pkg / "text" / "words.py").write_text(
        "# a new comment\n\n" + (pkg / "text" / "words.py").read_text() + "\n\n# the end  \n")
    assert changed(base, fingerprints(root, tmp_path)) == []

    # the runner, the shard files, the stage base classes: machinery, not stage logic
    for f in ("core/runner.py", "storage/shards.py", "core/stage.py", "base/errors.py"):
        (pkg / f).write_text((pkg / f).read_text() + "\n_EDITED = 1\n")
    assert changed(base, fingerprints(root, tmp_path)) == []

    # a stage's own module: that stage and those below it
    (pkg / "filters" / "c4_quality.py").write_text(
        (pkg / "filters" / "c4_quality.py").read_text() + "\n_EDITED = 1\n")
    now = fingerprints(root, tmp_path)
    assert changed(base, now) == ["c4_quality", "gopher_quality", "wordy", "exact_dedup",
                                  "write_jsonl"]
    assert (now["modules"]["c4_quality"]["curator/filters/c4_quality.py"]
            != base["modules"]["c4_quality"]["curator/filters/c4_quality.py"])
    assert now["modules"]["gopher_quality"] == base["modules"]["gopher_quality"]

    # a text helper: every stage that calls it, built-in (through filters/features.py, or
    # c4_quality's words per line) or custom
    base = now
    edit(pkg / "text" / "words.py", "def split_words(", "_EDITED = 2\n\n\ndef split_words(")
    now = fingerprints(root, tmp_path)
    assert changed(base, now) == ["c4_quality", "gopher_quality", "wordy", "exact_dedup",
                                  "write_jsonl"]
    assert "curator/text/words.py" in now["modules"]["wordy"]


def test_a_code_edit_reruns_the_stage_and_status_names_the_module(tmp_path):
    setup(tmp_path)
    root = copy_package(tmp_path / "pkg")
    pkg = root / "curator"
    curator(root, tmp_path, "run", "p.yaml")
    assert "nothing to do" in curator(root, tmp_path, "status", "p.yaml")

    # a change of behaviour in a module gopher_quality imports (the rules it is made of)
    edit(pkg / "filters" / "line_rules.py", '"lorem ipsum", ', "")
    st = curator(root, tmp_path, "status", "p.yaml")
    rows = {ln.split()[0]: ln for ln in st.splitlines()[1:-1]}
    assert " done " in rows["read_jsonl"] and " done " in rows["c4_quality"]
    assert "code of curator/filters/line_rules.py changed" in rows["gopher_quality"]
    assert "upstream stage 'gopher_quality' changed" in rows["wordy"]
    log = curator(root, tmp_path, "run", "p.yaml")
    assert "[gopher_quality] rerunning: code of curator/filters/line_rules.py changed" in log
    rep = {s["id"]: s for s in json.loads((tmp_path / "w" / "report.json").read_text())
           ["stages"]}
    assert [rep[s]["skipped"] for s in ("read_jsonl", "c4_quality", "gopher_quality",
                                        "wordy", "exact_dedup", "write_jsonl")] == [
        True, True, False, False, False, False]

    # a declared data file (code_deps) counts like code
    edit(pkg / "filters" / "c4_quality.py", "    name = \"c4_quality\"",
         "    name = \"c4_quality\"\n    code_deps = (\"curator/filters/models/README.md\",)")
    curator(root, tmp_path, "run", "p.yaml")
    (pkg / "filters" / "models" / "README.md").write_text("edited\n")
    st = curator(root, tmp_path, "status", "p.yaml")
    assert "code of curator/filters/models/README.md changed" in st


def test_imports_are_found_statically_and_only_stage_logic_is_followed():
    src = textwrap.dedent('''
        """doc"""
        from typing import TYPE_CHECKING
        from curator.base.errors import ConfigError
        from curator.base.document import Document
        from . import rules
        from .presets import Preset
        import curator.text.words as w

        if TYPE_CHECKING:
            from curator.dedup import lsh

        def f():
            try:
                from curator.text import sentences
            except ImportError:
                pass
            return "not an import: from curator.io import jsonl"
    ''')
    got = codehash.source_imports(src, "curator.filters.example")
    assert sorted(got) == ["curator.base.document", "curator.filters.presets",
                           "curator.filters.rules", "curator.text.sentences",
                           "curator.text.words"]
    assert codehash.followed("curator.storage.encoding")
    assert not codehash.followed("curator.storage.shards")
    assert not codehash.followed("curator.core.runner")


def test_comments_and_docstrings_do_not_count_but_strings_do():
    def digest(src: str) -> str:
        src = textwrap.dedent(src)
        _, docs = codehash._scan(ast.parse(src), "m", False)
        return codehash._normalized(src, docs)

    a = digest('''
        def f(x):
            """Say why."""
            return x + "#not a comment"  # a comment
    ''')
    assert a == digest('''
        # a header
        def f(x):
            """Say something else,
            over two lines."""

            return x + "#not a comment"
    ''')
    assert a != digest('''
        def f(x):
            """Say why."""
            return x + "#not a comment!"
    ''')
    words = 'W = [\n    "the",\n    "and"\n]\n'  # a string on a line of its own is data
    assert digest(words) != digest(words.replace('"and"', '"or"'))


def test_every_builtin_stage_has_its_own_module_in_its_code_identity():
    from curator.core.registry import builtin_stages

    for name, target in builtin_stages().items():
        mods = code_identity(resolve(name), builtin=True)["modules"]
        own = target.split(":")[0].replace(".", "/") + ".py"
        assert mods.get(own, "missing") != "missing", (name, own)
        assert not any(k.startswith(("curator/core/", "curator/storage/shards"))
                       for k in mods), name


def test_explain_names_the_module_and_the_version_salt():
    old = {"format": 3, "stage": "s", "code": {"version": 1, "modules": {
        "curator/filters/rules.py": "a", "curator/text/words.py": "b"}}}
    new = {"format": 3, "stage": "s", "code": {"version": 2, "modules": {
        "curator/filters/rules.py": "c", "curator/text/words.py": "b",
        "curator/text/sentences.py": "d"}}}
    assert explain(old, new) == [
        "code version 1 -> 2",
        "code of curator/filters/rules.py, curator/text/sentences.py changed"]


def test_explain_tells_a_parameter_curator_added_from_one_the_user_changed():
    """A parameter a new curator takes was set by nobody: "new in this curator", not
    "changed (null -> default)" once per field (13 lines for the WARC sources' options)."""
    old = {"format": 3, "stage": "read_warc", "params": {
        "paths": "a.warc.gz", "old_knob": 1, "redis": {"db": 0}}}
    new = {"format": 3, "stage": "read_warc", "params": {
        "paths": "b.warc.gz", "fast": "auto", "balance": "recall", "redis": {"db": 0, "tls": None}}}
    assert explain(old, new) == [
        "parameters new in this curator: balance, fast, redis.tls",
        "parameter no longer taken: old_knob",
        """parameter 'paths' changed ("a.warc.gz" -> "b.warc.gz")"""]
    # an explicit null is a value, not an absence
    assert explain({**old, "params": {"x": None}}, {**old, "params": {"x": 1}}) == [
        "parameter 'x' changed (null -> 1)"]


def test_explain_names_a_changed_max_doc_mb():
    """A source's fingerprint holds a non-default run-wide max_doc_mb; the reason said
    'global stage(s) above it changed' with no stage named."""
    old = {"format": 3, "stage": "read_jsonl", "code": {"version": 1}}
    assert explain(old, {**old, "max_doc_mb": 2}) == ["max_doc_mb changed (default -> 2)"]


def test_code_deps_module_of_a_custom_stage_is_hashed_and_an_edit_is_seen_in_process(
        tmp_path, monkeypatch):
    """A custom stage declares a module it loads by a computed name; editing it changes the
    stage's code identity, also within one long-lived process (a notebook)."""
    from curator.core.stage import Filter

    (tmp_path / "rules_by_name.py").write_text("LIMIT = 5\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class ByName(Filter):
        name = "by_name"
        code_deps = ("rules_by_name",)

        def check(self, doc):
            return None

    before = code_identity(ByName, builtin=False)["modules"]
    # with the user's modules this test module imports (helpers.py...), followed too
    assert "rules_by_name.py" in before
    (tmp_path / "rules_by_name.py").write_text("# why\nLIMIT = 5\n")  # a comment only
    assert code_identity(ByName, builtin=False)["modules"] == before
    (tmp_path / "rules_by_name.py").write_text("LIMIT = 50\n")
    after = code_identity(ByName, builtin=False)["modules"]
    assert after["rules_by_name.py"] != before["rules_by_name.py"]


def test_a_source_too_large_to_parse_is_keyed_on_its_bytes(tmp_path):
    """A generated module over the parse cap is hashed as bytes (no syntax tree of GBs)."""
    from curator.core import codehash

    big = tmp_path / "gen.py"
    body = b"x = 1\n" * ((codehash._MAX_PARSE // 6) + 1)
    big.write_bytes(body)
    a = codehash.source_digest(str(big))
    big.write_bytes(body + b"# comment\n")
    assert a is not None and codehash.source_digest(str(big)) != a  # bytes, not comment-blind
