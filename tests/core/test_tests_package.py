"""The test suite is one package: each helper has one import name (``tests.core.helpers_core``),
the one an IDE resolves from the repository root, and each curator package has a tests folder."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: A vendored tree run as its own ``sys.path`` root by a subprocess, not part of the suite.
VENDORED = TESTS / "tokenize" / "megatron_lm"


def _suite_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if VENDORED not in p.parents)


def test_pytest_puts_only_the_repository_root_on_the_path() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert conf.get("pythonpath", ["."]) in (["."], ".")


def test_every_folder_of_the_suite_is_a_package() -> None:
    missing = sorted(
        str(p.parent.relative_to(ROOT))
        for p in _suite_files()
        if not (p.parent / "__init__.py").exists()
    )
    assert not missing, f"folders without __init__.py: {sorted(set(missing))}"


def test_helpers_are_imported_by_their_package_name() -> None:
    """``from helpers_core import x`` works only with tests/core on sys.path, and would make a
    second copy of the module beside ``tests.core.helpers_core``."""
    local = {p.stem for p in _suite_files()} - {"__init__"}
    bare = []
    for p in _suite_files():
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            bare += [
                f"{p.relative_to(ROOT)}:{node.lineno}: {n}"
                for n in names
                if n.split(".")[0] in local
            ]
    assert not bare, "\n".join(bare)


def test_each_curator_package_has_a_tests_folder() -> None:
    packages = {p.parent.name for p in (ROOT / "curator").glob("*/__init__.py")}
    assert packages <= {p.name for p in TESTS.iterdir() if p.is_dir()}, packages
