"""The bench record is data: every bench run leaves a result file through bench/common.py,
bench/RESULTS.md is what bench/results_table.py makes of those files, and the bench scripts are
one package (``python -m bench.<name>``) that neither edits ``sys.path`` nor imports in a
circle."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import common, results_table

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
SCRIPTS = sorted(p for p in BENCH.rglob("*.py") if "results" not in p.relative_to(BENCH).parts)


def _module(p: Path) -> str:
    return ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_no_bench_script_edits_sys_path() -> None:
    """Not in its own process, nor in a child program it writes out as a string."""
    found = []
    for p in SCRIPTS:
        tree = ast.parse(p.read_text(), str(p))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "path"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                found.append(f"{p.relative_to(ROOT)}:{node.lineno}")
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "sys.path." in node.value
                and ast.get_docstring(tree) != node.value
            ):
                found.append(f"{p.relative_to(ROOT)}:{node.lineno} (in a string)")
    assert not found, found


def test_bench_modules_import_no_circle() -> None:
    """Every import, a function's included: a bench that needs another's helpers imports the
    module both share (bench/gold_set.py), not the other bench."""
    graph: dict[str, set[str]] = {}
    for p in SCRIPTS:
        me = _module(p)
        deps = graph.setdefault(me, set())
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            deps |= {n for n in names if n.startswith("bench.") and n != me}
    mods = set(graph)
    cycles = []

    def visit(m: str, stack: list[str]) -> None:
        for d in sorted(graph.get(m, set()) & mods):
            if d in stack:
                cycles.append(stack[stack.index(d) :] + [d])
            elif len(stack) < 20:
                visit(d, [*stack, d])

    for m in sorted(mods):
        visit(m, [m])
    assert not cycles, cycles[0]


def test_results_md_is_what_the_result_files_say() -> None:
    assert (BENCH / "RESULTS.md").read_text(encoding="utf-8") == results_table.render(), (
        "bench/RESULTS.md is edited by hand or stale: run python -m bench.results_table"
    )


def test_every_result_file_has_the_record_keys() -> None:
    recs = results_table.records()
    assert recs and all(p.parent.parent == common.RESULTS for p, _ in recs)
    assert {r["bench"] for _, r in recs} <= {p.stem for p in BENCH.glob("*.py")}


def test_a_bench_run_leaves_its_result_file_and_the_table_shows_it(tmp_path: Path) -> None:
    """``python -m bench.bench_core`` from the repository root, nothing on PYTHONPATH: the
    bench, its stage module (named ``bench.bench_core:long_enough`` in its pipeline) and its
    peer all import; its figures come back from the file."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BENCH_PARENT")}
    env["BENCH_RESULTS"] = str(tmp_path)
    p = subprocess.run(
        [sys.executable, "-m", "bench.bench_core", "--docs", "200"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    (path,) = (tmp_path / "bench_core").glob("*.json")
    rec = json.loads(path.read_text())
    assert rec["command"] == "python -m bench.bench_core --docs 200"
    assert rec["figures"]["documents"] == 200 and rec["figures"]["ratio_curator_datatrove"] > 0
    assert (
        rec["commit"].split("+")[0]
        in subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout
    )
    assert rec["machine"]["cpus"] == os.cpu_count() and rec["date"].endswith("Z")
    table = results_table.render(tmp_path)
    assert "| [bench_core](results/bench_core/" in table and "ratio_curator_datatrove" in table


def test_a_child_of_a_bench_or_a_failed_run_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = {k: v for k, v in os.environ.items() if k != "BENCH_PARENT"}
    base["BENCH_RESULTS"] = str(tmp_path)
    script = str(BENCH / "bench_core.py")

    def run(main: object, parent: str | None = None) -> int:
        monkeypatch.setattr(os, "environ", {**base, **({"BENCH_PARENT": parent} if parent else {})})
        return common.bench_main(script, main)  # type: ignore[arg-type]

    assert run(lambda: {"x": 1}, parent="bench/bench_shuffle.py") == 0
    assert run(lambda: 3) == 3
    assert not list(tmp_path.rglob("*.json"))
    assert run(lambda: print("ratio a/b: 2.00x")) == 0
    (path,) = tmp_path.rglob("*.json")
    assert json.loads(path.read_text())["figures"] == {"lines": ["ratio a/b: 2.00x"]}
