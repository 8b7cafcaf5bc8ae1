"""The code's shape: a stage is found from its YAML name, and ``curator/`` imports one way.

(a) every built-in stage lives in ``curator/<family>/<name>.py``; only a module that holds
several stages sharing code (the ``*_filter`` rules in ``filters/*_rules.py``, the JSONL and
Parquet readers and writers) may hold a stage under another file name, and then its class says
``name = "<name>"`` literally, so ``grep -rn '"<name>"' curator`` lands on it; the families'
``STAGES`` tables are written out literally (no assembled strings), so grep of
``curator.<family>.<module>:<Class>`` lands on the registration too; (b) the module-level import
graph of ``curator/`` has no cycle (imports inside functions and under ``if TYPE_CHECKING:`` do
not count: they run after every module is loaded); (c) imports, late ones included, go down the
layers of docs/architecture.md, and a stage family imports another only where ``FAMILY_DEPS``
says why.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from collections import Counter
from pathlib import Path

from curator.core.registry import FAMILIES, builtin_stages
from curator.core.stage import Stage

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "curator"

def _literal_stages(family: str) -> dict[str, str]:
    """The family's ``STAGES`` table, which must be a dict of string literals."""
    path = PKG / family.split(".")[1] / "__init__.py"
    for node in ast.parse(path.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "STAGES":
            assert isinstance(node.value, ast.Dict), f"{path}: STAGES is not a dict literal"
            out = {}
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                assert isinstance(k, ast.Constant) and isinstance(k.value, str), \
                    f"{path}:{node.lineno}: a STAGES key is not a string literal"
                assert isinstance(v, ast.Constant) and isinstance(v.value, str), \
                    f"{path}:{v.lineno}: STAGES[{k.value!r}] is not a string literal"
                out[k.value] = v.value
            return out
    raise AssertionError(f"{path}: no STAGES table")


def test_every_stage_is_found_from_its_name() -> None:
    stages = builtin_stages()
    assert len(stages) > 40  # the registry was read, not an empty table
    tables = {fam: _literal_stages(fam) for fam in FAMILIES}
    assert {n: t for tab in tables.values() for n, t in tab.items()} == stages
    per_module = Counter(t.split(":")[0] for t in stages.values())
    wrong = []
    for fam, table in tables.items():
        for name, target in table.items():
            mod_name, cls_name = target.split(":")
            if not mod_name.startswith(fam + "."):
                wrong.append(f"{name}: {target} is outside its family {fam}")
                continue
            cls = getattr(importlib.import_module(mod_name), cls_name)
            assert isinstance(cls, type) and issubclass(cls, Stage), target
            assert cls.__module__ == mod_name, f"{name}: {target} is re-exported, not defined"
            # the name the class reports is the one it is registered under (the fingerprint of
            # a built-in stage relies on it)
            assert cls.name == name, f"{name}: {target} calls itself {cls.name!r}"
            file = Path(inspect.getfile(cls)).resolve()
            expected = PKG / fam.split(".")[1] / f"{name}.py"
            if file == expected:
                continue
            says_name = re.search(rf'^\s*name\s*=\s*"{re.escape(name)}"', inspect.getsource(cls),
                                  re.MULTILINE)
            if per_module[mod_name] == 1:
                wrong.append(f"{name}: {target} is the only stage in {file.relative_to(ROOT)}: "
                             f"name the file {expected.relative_to(ROOT)}")
            elif not says_name:
                wrong.append(f"{name}: {target} is neither in {expected.relative_to(ROOT)} nor "
                             f'says name = "{name}" in its class')
    assert not wrong, "\n".join(wrong)


def test_curator_stages_prints_module_and_class() -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-m", "curator", "stages"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip()}
    for name, target in builtin_stages().items():
        assert target in lines[name].split(), lines[name]


# -- the import graph ----------------------------------------------------------------------------


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(body: list[ast.stmt], pkg: str, mods: dict[str, Path]) -> list[str]:
    """Modules imported when ``body`` runs at import time (function bodies excluded)."""
    out: list[str] = []
    for node in body:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out += [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                    for a in node.names]
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                out += _imports(node.body, pkg, mods)
            out += _imports(node.orelse, pkg, mods)
        elif isinstance(node, ast.Try):
            for b in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                out += _imports(b, pkg, mods)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            out += _imports(node.body, pkg, mods)
    return out


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = {m for m in _imports(tree.body, pkg, mods) if m in mods and m != name}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(u: str) -> None:
        state[u] = 1
        path.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                cycles.append(path[path.index(v):] + [v])
            elif v not in state:
                visit(v)
        path.pop()
        state[u] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles


def test_cycle_finder_finds_a_cycle() -> None:
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_import_parser_skips_functions_and_type_checking() -> None:
    src = """
from __future__ import annotations
from typing import TYPE_CHECKING
import curator.base.errors
from curator.base import document
from . import stage
if TYPE_CHECKING:
    from curator.core.runner import run
else:
    from curator.core import lock
try:
    import curator.core.identity
except ImportError:
    pass
def f():
    from curator.core import pipeline
class C:
    from curator.core import progress
"""
    mods = dict.fromkeys(["curator.base.errors", "curator.base.document", "curator.core.stage",
                          "curator.core.runner", "curator.core.lock", "curator.core.identity",
                          "curator.core.pipeline", "curator.core.progress"], Path("x"))
    got = set(_imports(ast.parse(src).body, "curator.core", mods))
    assert got == {"__future__", "typing", "curator.base.errors", "curator.base.document",
                   "curator.core.stage", "curator.core.lock", "curator.core.identity",
                   "curator.core.progress"}


def test_curator_imports_have_no_cycle() -> None:
    graph = import_graph()
    assert "curator.core.context" in graph["curator.core.runner"]  # parsed for real
    cycles = find_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


# -- the layers ----------------------------------------------------------------------------------

def _contracts() -> dict[str, dict]:
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in cfg["contracts"]}


#: Bottom up, read from the import-linter contract in pyproject.toml (the one table of layers;
#: docs/architecture.md explains it). A module imports only from its own layer or lower ones, at
#: module level *and* inside functions (a late import is still a dependency). An entry covers
#: the modules under it only when no other entry lies inside it: ``curator.storage`` is one
#: layer, but ``curator.core`` and ``curator`` are split across layers, so each of their modules
#: is listed on its own and a new one is placed on purpose. The two package roots, which
#: import-linter cannot place (every module is inside them), are placed here.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (line.split()[0], tuple(m.strip() for m in line.replace("|", ":").split(":")))
    for line in reversed(_contracts()["layers"]["layers"])]
LAYERS[0] = (LAYERS[0][0], (*LAYERS[0][1], "curator.core"))     # its __init__ imports nothing
LAYERS[-1] = (LAYERS[-1][0], (*LAYERS[-1][1], "curator"))       # the public API re-exports

#: Family -> the other families it may import; the reasons are written next to the contract's
#: ``ignore_imports`` in pyproject.toml. Anything shared more widely belongs in a lower layer
#: (``meta_value`` in base/document.py, ``expand_paths`` in storage/paths.py).
FAMILY_DEPS: dict[str, set[str]] = {}
for _expr in _contracts()["families"]["ignore_imports"]:
    _a, _b = (".".join(side.strip().split(".")[:2]) for side in _expr.split("->"))
    FAMILY_DEPS.setdefault(_a, set()).add(_b)

#: Upward imports not fixed yet, each with its way out. An entry that no longer happens fails
#: the test, so the list only shrinks.
KNOWN_UPWARD: set[tuple[str, str]] = set()


def _entries() -> list[str]:
    return [p for _, prefixes in LAYERS for p in prefixes]


def _covers(entry: str, module: str) -> bool:
    """``entry`` places ``module``: itself, or one under it when no other entry is inside it."""
    if module == entry:
        return True
    return module.startswith(entry + ".") and not catch_all(entry)


def catch_all(entry: str) -> bool:
    """An entry with other entries inside it (``curator``, ``curator.core``) places only itself."""
    return any(e.startswith(entry + ".") for e in _entries())


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of the one entry that places ``module``; -1 if none does."""
    found = [i for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes if _covers(p, module)]
    assert len(found) <= 1, f"{module} is placed in several layers"
    return found[0] if found else -1


def family_of(module: str) -> str | None:
    return next((f for f in FAMILIES if module == f or module.startswith(f + ".")), None)


def _all_imports(tree: ast.AST, pkg: str, mods: dict[str, Path]) -> list[str]:
    """Every module ``tree`` imports, function bodies included, ``if TYPE_CHECKING:`` not."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.extend(_imports([node], pkg, mods))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def full_import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = {m for m in _all_imports(tree, pkg, mods) if m in mods and m != name}
    return graph


def layer_violations(graph: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """(importer, imported, why) for every import that goes up a layer or across families."""
    out = []
    for mod, deps in sorted(graph.items()):
        lm, fam = layer_of(mod), family_of(mod)
        for dep in sorted(deps):
            ld, dfam = layer_of(dep), family_of(dep)
            if ld > lm:
                out.append((mod, dep, f"layer of {LAYERS[lm][0]} imports layer of {LAYERS[ld][0]}"))
            elif (lm == ld == len(LAYERS) - 2 and fam and dfam and dfam != fam
                  and dfam not in FAMILY_DEPS.get(fam, set())):
                out.append((mod, dep, f"family {fam} imports family {dfam}"))
    return out


def test_layer_checker_sees_late_imports_and_crossed_families() -> None:
    src = """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from curator.core.runner import Runner
def f():
    from curator.core.pipeline import load
"""
    mods = dict.fromkeys(["curator.core.runner", "curator.core.pipeline"], Path("x"))
    assert set(_all_imports(ast.parse(src), "curator.core", mods)) == {
        "typing", "curator.core.pipeline"}
    assert layer_violations({"curator.core.stage": {"curator.core.pipeline"},
                             "curator.dedup.fuzzy": {"curator.filters.select",
                                                     "curator.base.document"},
                             "curator.acquire.arxiv": {"curator.extract.latex"},
                             "curator.cli": {"curator.core.runner"}}) == [
        ("curator.core.stage", "curator.core.pipeline",
         "layer of curator.core.stage imports layer of curator.core.pipeline"),
        ("curator.dedup.fuzzy", "curator.filters.select",
         "family curator.dedup imports family curator.filters")]


def unplaced(modules: list[str]) -> list[str]:
    return [m for m in modules if layer_of(m) < 0]


def test_every_module_has_a_layer() -> None:
    missing = unplaced(list(_modules()))
    assert not missing, ("place these modules in a layer of [tool.importlinter] in "
                         f"pyproject.toml: {missing}")
    assert layer_of("curator.core.registry") < layer_of("curator.core.pipeline")
    assert layer_of("curator.base.errors") < layer_of("curator.storage.atomic")
    assert layer_of("curator.storage.atomic") < layer_of("curator.core.context")
    assert layer_of("curator.dedup.backends.redis") == layer_of("curator.filters")


def test_a_new_core_or_top_module_has_no_layer_until_placed() -> None:
    """``curator`` and ``curator.core`` are split across layers, so they place only their own
    ``__init__``: a module added under them fails the test above until it is listed."""
    assert catch_all("curator.core") and catch_all("curator")
    assert not catch_all("curator.storage")
    assert unplaced(["curator.core.stage", "curator.core.newcomer", "curator.newcomer",
                     "curator.storage.newcomer", "curator.core", "curator"]) == [
        "curator.core.newcomer", "curator.newcomer"]


def test_import_contracts_hold() -> None:
    """import-linter checks the layers, the families' independence and that no package has an
    import circle between its modules; imports under ``if TYPE_CHECKING:`` count too."""
    import os
    import subprocess

    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([str(bin_dir / "lint-imports"), "--no-cache"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in out.stdout


def private_imports(tree: ast.AST) -> list[str]:
    """``from curator.x import _name``: a private name used outside its module."""
    return [f"line {n.lineno}: {a.name} from {n.module}" for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith(
                "curator")) for a in n.names
            if a.name.startswith("_") and not a.name.startswith("__")]


def test_no_private_name_is_imported_across_modules() -> None:
    assert private_imports(ast.parse("from curator.core.lock import _describe\n"
                                     "from . import _x\nfrom os import _exit\n"
                                     "from curator import __version__\n")) == [
        "line 1: _describe from curator.core.lock", "line 2: _x from None"]
    found = [f"{p.relative_to(ROOT)} {hit}" for p in sorted(PKG.rglob("*.py"))
             for hit in private_imports(ast.parse(p.read_text()))]
    assert not found, "make these public or move them where they are used:\n" + "\n".join(found)


def test_imports_go_down_the_layers() -> None:
    graph = full_import_graph()
    assert "curator.core.registry" in graph["curator.core.pipeline"]  # parsed for real
    found = layer_violations(graph)
    unexpected = [f"{a} -> {b}: {why}" for a, b, why in found if (a, b) not in KNOWN_UPWARD]
    assert not unexpected, "imports against the layers:\n" + "\n".join(unexpected)
    gone = KNOWN_UPWARD - {(a, b) for a, b, _ in found}
    assert not gone, f"fixed, remove from KNOWN_UPWARD: {sorted(gone)}"


def test_a_parameter_typo_imports_no_other_stage(tmp_path: Path) -> None:
    """The 'did you mean' hint comes from the stage's own parameter model: validating a
    pipeline imports the stages it names and no other (a heavy or broken family elsewhere
    costs nothing)."""
    import subprocess

    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: x}\n"
        "  - word_count_filter: {min_wrds: 3}\n")
    code = (
        "import sys\n"
        "from curator.core import pipeline\n"
        "from curator.base.errors import ConfigError\n"
        "try:\n"
        "    pipeline.load('p.yaml')\n"
        "except ConfigError as e:\n"
        "    print(e)\n"
        "print(sorted(m for m in sys.modules if m.startswith('curator.')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    assert "word_count_filter.min_wrds: unknown key" in out
    assert "did you mean 'min_words'" in out
    loaded = out.strip().splitlines()[-1]
    assert "'curator.filters.rules'" in loaded
    for other in ("curator.io.parquet", "curator.acquire.common_crawl",
                  "curator.extract.url_blocklist", "curator.filters.language_id"):
        assert f"'{other}'" not in loaded, other


def test_tests_mirror_the_package() -> None:
    """tests/<package>/ for every curator subpackage, and no test folder that names none
    (reliability/ and security/ are cross-cutting: their tests drive whole runs; bench/ tests
    the repository's bench/ folder)."""
    root = Path(__file__).resolve().parents[2]
    packages = {p.name for p in (root / "curator").iterdir()
                if (p / "__init__.py").exists()}
    folders = {p.name for p in (root / "tests").iterdir()
               if p.is_dir() and any(p.glob("test_*.py"))}
    cross_cutting = {"reliability", "security", "bench"}
    assert packages <= folders, sorted(packages - folders)
    assert folders - cross_cutting <= packages, sorted(folders - cross_cutting - packages)


def test_no_module_stands_in_for_another() -> None:
    """One import name per module: no ``sys.modules[__name__] = ...`` aliases."""
    root = Path(__file__).resolve().parents[2] / "curator"
    aliased = [str(p.relative_to(root)) for p in root.rglob("*.py")
               if "sys.modules[__name__]" in p.read_text(encoding="utf-8")]
    assert aliased == []


# -- room sizes ----------------------------------------------------------------------------------

#: A module past this many lines holds several things; split it along its seams.
MAX_MODULE_LINES = 700
#: A function in curator/core past this many lines does several steps; name them.
MAX_CORE_FUNCTION_LINES = 80

#: Modules over :data:`MAX_MODULE_LINES` that are being split now. This list must only shrink:
#: an entry that fits fails the test until it is removed, and no module is ever added.
OVERSIZED: set[str] = set()


def long_functions(tree: ast.AST, limit: int) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of every function or method, nested ones too, longer than
    ``limit`` lines from its ``def`` to its last line (decorators not counted)."""
    return [(n.name, n.lineno, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.end_lineno - n.lineno + 1 > limit]


def test_long_function_finder_counts_nested_functions_and_methods() -> None:
    src = """
@deco
def short():
    a = 1
    b = 2
    return a + b

class C:
    def method(self):
        def inner():
            a = 1
            b = 2
            return a + b
        return inner
"""
    assert long_functions(ast.parse(src), 5) == [("method", 9, 6)]
    assert long_functions(ast.parse(src), 3) == [("short", 3, 4), ("method", 9, 6),
                                                 ("inner", 10, 4)]


def test_no_module_is_over_700_lines() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
             for p in sorted(PKG.rglob("*.py"))}
    big = {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES}
    assert "curator/extract/extract_html.py" in sizes  # read for real
    new = [f"{path}: {n} lines" for path, n in big.items() if path not in OVERSIZED]
    assert not new, (f"split these modules along their seams (at most {MAX_MODULE_LINES} "
                     "lines each; docs/architecture.md says where things live):\n"
                     + "\n".join(new))
    fits = sorted(OVERSIZED - set(big))
    assert not fits, f"these fit now: remove them from OVERSIZED: {fits}"


def test_no_core_function_is_over_80_lines() -> None:
    found = [f"{p.relative_to(ROOT)}:{line}: {name} ({n} lines)"
             for p in sorted((PKG / "core").rglob("*.py"))
             for name, line, n in long_functions(ast.parse(p.read_text(encoding="utf-8")),
                                                 MAX_CORE_FUNCTION_LINES)]
    assert not found, ("split these functions into named steps (at most "
                       f"{MAX_CORE_FUNCTION_LINES} lines each):\n" + "\n".join(found))
