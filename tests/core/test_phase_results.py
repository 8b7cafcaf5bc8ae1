"""What global stages pass between their phases is typed, and saved results are never misread.

Walks every registered built-in global stage: in the modules its fingerprint covers (its code
identity, :func:`curator.core.codehash.code_digests`), every ``ctx.map(fn, ...)`` call is found
in the source, ``fn`` is resolved (a function, ``functools.partial(function, ...)`` or an
instance of a class with ``__call__``), and its return annotation must be a frozen dataclass
(or ``None``) that each of its ``return`` statements builds. The result class's module must be
part of the same code identity: a phase result saved by other code then sits under another
fingerprint and is recomputed, never read as the new type. The result's fields, and those of
the dataclasses they hold, are typed all the way down: no ``Any``, no bare container and no
string-keyed dict (a record is a dataclass, a mapping keyed by data a tuple of pairs); only a
JSON document passed on whole may be a dict, typed :data:`curator.storage.atomic.JsonDoc`.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
import types
import typing
from collections.abc import Mapping, MutableMapping
from pathlib import Path

import pytest

from curator.core.codehash import code_digests
from curator.core.registry import builtin_stages, load_object
from curator.core.stage import GlobalStage
from curator.storage.atomic import JsonDoc

REPO = Path(__file__).resolve().parents[2]

def _global_stages() -> dict[str, type[GlobalStage]]:
    out = {}
    for name, target in builtin_stages().items():
        cls = load_object(target)
        if isinstance(cls, type) and issubclass(cls, GlobalStage):
            out[name] = cls
    return out


@functools.cache
def _map_calls(module: str) -> list[tuple[ast.expr, bool, int]]:
    """``(fn expression, has phase, line)`` of each ``ctx.map(fn, ...)`` in ``module``."""
    path = REPO / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = path.with_suffix("") / "__init__.py"
    src = path.read_text()  # read, not imported: most modules here import nothing mapped
    out = []
    for node in ast.walk(ast.parse(src)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "map" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ctx" and node.args):
            phase = any(k.arg == "phase" for k in node.keywords)
            out.append((node.args[0], phase, node.lineno))
    return out


def _callable_of(module: str, expr: ast.expr) -> typing.Callable[..., object]:
    """The function a mapped ``fn`` expression runs."""
    mod = importlib.import_module(module)
    if isinstance(expr, ast.Call):
        target = expr.func
        if isinstance(target, ast.Attribute) and target.attr == "partial":
            return _callable_of(module, expr.args[0])
        obj = getattr(mod, ast.unparse(target))
        assert inspect.isclass(obj), f"{module}: {ast.unparse(expr)} is not a class"
        return obj.__call__
    if isinstance(expr, ast.Attribute):  # a module attribute: redis_watch.begin
        owner = getattr(mod, ast.unparse(expr.value))
        return getattr(owner, expr.attr)
    return getattr(mod, ast.unparse(expr))


def _problems(fn: typing.Callable[..., object], covered: set[str]) -> list[str]:
    """Why ``fn`` is not a typed phase function (empty: it is)."""
    where = f"{fn.__module__}.{fn.__qualname__}"
    ret = typing.get_type_hints(fn).get("return", "missing")
    if ret is type(None):
        types: tuple[type, ...] = ()
    elif inspect.isclass(ret) and dataclasses.is_dataclass(ret):
        if not ret.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            return [f"{where}: returns {ret.__name__}, a dataclass that is not frozen"]
        rel = f"{ret.__module__.replace('.', '/')}.py"
        if rel not in covered:
            return [f"{where}: its result class {ret.__module__}.{ret.__name__} is outside "
                    f"the stage's code identity (a changed class would be misread)"]
        types = (ret,)
        if bad_fields := _field_problems(ret, set()):
            return [f"{where}: returns {ret.__name__}, whose {b}" for b in bad_fields]
    else:
        return [f"{where}: returns {ret!r}, not a frozen dataclass"]
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    body = tree.body[0]
    bad = []
    for node in _own_returns(body):
        value = node.value
        if not types:
            if value is not None and not (isinstance(value, ast.Constant)
                                          and value.value is None):
                bad.append(f"{where}: returns a value though annotated None")
            continue
        if not (isinstance(value, ast.Call) and _builds(fn, value.func, types[0])):
            bad.append(f"{where}: 'return {ast.unparse(value) if value else ''}' does not "
                       f"build a {types[0].__name__}")
    return bad


_BARE = (dict, list, set, frozenset, tuple, Mapping, MutableMapping)


def _field_problems(cls: type, seen: set[type]) -> list[str]:
    """Fields of dataclass ``cls`` (and of the dataclasses they hold) typed loosely."""
    if cls in seen:
        return []
    seen.add(cls)
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        out += [f"field {cls.__name__}.{f.name}: {why}"
                for why in _type_problems(hints[f.name], seen)]
    return out


def _type_problems(tp: object, seen: set[type]) -> list[str]:
    """Why annotation ``tp`` is not typed all the way down (empty: it is)."""
    if tp is JsonDoc:
        return []
    if tp is typing.Any or tp is object:
        return [f"{tp!r} (name the type)"]
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is None:
        if tp in _BARE:
            return [f"a bare {tp!r} (name what it holds)"]
        if inspect.isclass(tp) and dataclasses.is_dataclass(tp):
            return _field_problems(tp, seen)
        return []
    if origin is typing.Literal:
        return []
    if origin in (dict, Mapping, MutableMapping) and args and args[0] is str:
        return [f"{_name(tp)}, a string-keyed dict (a record is a frozen dataclass, a mapping "
                "keyed by data a tuple of (name, value) pairs, a JSON document passed on "
                "whole a JsonDoc)"]
    if origin in (typing.Union, types.UnionType) or origin in _BARE or args:
        return [w for a in args if a is not Ellipsis for w in _type_problems(a, seen)]
    return []


def _name(tp: object) -> str:
    return repr(tp).replace("typing.", "")


def _builds(fn: typing.Callable[..., object], callee: ast.expr, cls: type) -> bool:
    """``callee`` (as named in ``fn``'s module) is ``cls``, or a function annotated to return
    one."""
    obj: object = importlib.import_module(fn.__module__)
    for part in ast.unparse(callee).split("."):
        obj = getattr(obj, part, None)
    if obj is cls:
        return True
    ret = getattr(obj, "__annotations__", {}).get("return")  # a string: postponed annotations
    return isinstance(ret, str) and getattr(sys.modules[obj.__module__], ret, None) is cls


def _own_returns(fn: ast.AST) -> list[ast.Return]:
    """``return`` statements of ``fn`` itself, not of functions nested in it."""
    out: list[ast.Return] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Return):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _stage_problems(cls: type[GlobalStage]) -> tuple[list[str], int]:
    """Problems of the mapped functions in ``cls``'s code identity (a module that holds
    another registered global stage is checked as that stage's), and how many maps."""
    covered = set(code_digests([cls.__module__], getattr(cls, "code_deps", ())))
    others = {c.__module__ for c in STAGES.values()} - {cls.__module__}
    problems, found = [], 0
    for rel in sorted(covered):
        module = rel[:-3].replace("/", ".").removesuffix(".__init__")
        if not rel.startswith("curator/") or module in others:
            continue
        for expr, _phase, line in _map_calls(module):
            found += 1
            try:
                fn = _callable_of(module, expr)
            except AttributeError as e:
                problems.append(f"{rel}:{line}: cannot resolve {ast.unparse(expr)} ({e})")
                continue
            problems += _problems(fn, covered)
    return problems, found


STAGES = _global_stages()


@pytest.mark.parametrize("name", sorted(STAGES))
def test_global_stage_phases_return_frozen_dataclasses(name: str) -> None:
    problems, _ = _stage_problems(STAGES[name])
    assert not problems, "\n".join(problems)


def test_the_walk_finds_the_phases() -> None:
    """The walk is not vacuous: it finds every phase of fuzzy_dedup (signatures, index_split,
    buckets, verify, components, save_index, and the four Redis steps) and rejects a
    dict-returning phase function."""
    _, found = _stage_problems(STAGES["fuzzy_dedup"])
    assert found >= 10
    assert _problems(_dict_phase, set()) == [
        f"{__name__}._dict_phase: returns dict[str, int], not a frozen dataclass"]


def _dict_phase(item: int) -> dict[str, int]:
    return {"docs": item}


@dataclasses.dataclass(frozen=True)
class _Inner:
    stats: dict[str, int]


@dataclasses.dataclass(frozen=True)
class _Loose:
    docs: int
    layout: dict[str, typing.Any]
    inner: tuple[_Inner, ...]
    anything: typing.Any
    names: list  # type: ignore[type-arg]
    config: JsonDoc
    by_hash: dict[int, int]
    by_name: tuple[tuple[str, int], ...]


def _loose_phase(item: int) -> _Loose:
    return _Loose(docs=item, layout={}, inner=(), anything=None, names=[],
                  config=JsonDoc({}), by_hash={}, by_name=())


def test_phase_results_hold_no_string_keyed_dict() -> None:
    """A result holding a dict read by string keys (directly or in a nested dataclass), an
    ``Any`` or a bare container is named field by field; a ``JsonDoc``, an int-keyed dict and
    a tuple of pairs pass."""
    covered = {f"{__name__.replace('.', '/')}.py"}
    where = f"{__name__}._loose_phase: returns _Loose, whose field"
    keyed = ("a string-keyed dict (a record is a frozen dataclass, a mapping keyed by data a "
             "tuple of (name, value) pairs, a JSON document passed on whole a JsonDoc)")
    assert _problems(_loose_phase, covered) == [
        f"{where} _Loose.layout: dict[str, Any], {keyed}",
        f"{where} _Loose.inner: field _Inner.stats: dict[str, int], {keyed}",
        f"{where} _Loose.anything: typing.Any (name the type)",
        f"{where} _Loose.names: a bare <class 'list'> (name what it holds)"]


def test_architecture_doc_names_real_phase_types() -> None:
    """Every ``path.py`` the phases section of docs/architecture.md names defines the names
    listed after it (``Name``, ``Name.attr`` or ``Name.field``), and the section's claims
    hold."""
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split("## The phases of a global stage", 1)[1].split("\n## ", 1)[0]
    refs = re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)`:\s+((?:`[A-Za-z_.]+`[^`(;)]*)+)", section)
    assert len(refs) >= 3, refs
    for path, names in refs:
        mod = importlib.import_module("curator." + path[:-3].replace("/", "."))
        for name in re.findall(r"`([A-Za-z_.]+)`", names):
            obj: object = mod
            for part in name.split("."):
                if dataclasses.is_dataclass(obj) and part in obj.__dataclass_fields__:
                    obj = typing.get_type_hints(obj)[part]  # a field: its type
                    continue
                assert hasattr(obj, part), f"docs/architecture.md: {path} has no {name}"
                obj = getattr(obj, part)


def _run(root: Path, pipeline: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, "-m", "curator.cli", "run", str(pipeline)],
                          capture_output=True, text=True, env=env, cwd=root, timeout=300)


def test_results_saved_by_other_code_are_recomputed_not_misread(tmp_path: Path) -> None:
    """A copy of curator whose ``exact_dedup`` hash phase saves the old form (a dict) stops
    after that phase; curator itself then runs on the same work_dir: it recomputes the saved
    results (another fingerprint) instead of reading dicts as ``HashedShard``, and outputs what
    a clean run outputs."""
    old = tmp_path / "old"
    shutil.copytree(REPO / "curator", old / "curator",
                    ignore=shutil.ignore_patterns("__pycache__", "*.ftz"))
    mod = old / "curator" / "dedup" / "exact_dedup.py"
    src = mod.read_text()
    assert src.count("return HashedShard(") == 1
    mod.write_text(src.replace("return HashedShard(", "return dict("))
    inp = tmp_path / "in"
    inp.mkdir()
    for k in range(2):
        (inp / f"p{k}.jsonl").write_text("".join(
            f'{{"id": "d{k}-{i}", "text": "text number {i % 7}"}}\n' for i in range(20)))
    outs = {}
    for name in ("w", "clean"):
        pipe = tmp_path / f"{name}.yaml"
        pipe.write_text(f"name: t\nwork_dir: {tmp_path / name}\nexecutor: {{type: local}}\n"
                        f"progress: 'off'\nreport: false\nstages:\n"
                        f"  - read_jsonl: {{paths: '{inp}/*.jsonl'}}\n"
                        f"  - exact_dedup: {{}}\n"
                        f"  - write_jsonl: {{path: out, compression: none}}\n")
        if name == "w":
            first = _run(old, pipe)
            assert first.returncode != 0 and "'dict' object has no attribute" in first.stderr
            saved = list((tmp_path / "w" / "stages" / "exact_dedup" / "_phases" / "hash")
                         .glob("*.pkl"))
            assert len(saved) == 2  # the old form was saved before the stop
        done = _run(REPO, pipe)
        assert done.returncode == 0, done.stderr[-2000:]
        outs[name] = sorted(p.read_bytes() for p in (tmp_path / name / "out").glob("*"))
    assert outs["w"] == outs["clean"]
    assert sum(b.count(b"\n") for b in outs["w"]) == 7  # 7 distinct texts, each kept once
