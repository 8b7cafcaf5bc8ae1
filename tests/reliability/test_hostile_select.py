"""``select`` on hostile expressions and documents: a 3,000-deep expression is one
line naming the YAML key, not a 32-line RecursionError traceback; a document the expression
cannot be evaluated on is a counted rejection with its reason, not the end of the run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import cli_env


def _curator(tmp, *args):
    return subprocess.run([sys.executable, "-m", "curator", *args], cwd=tmp, env=cli_env(),
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("expr", [
    "not " * 3000 + "meta.x",
    "-" * 3000 + "meta.x > 1",
    "meta" + ".a" * 3000 + " > 1",
    "(" * 3000 + "meta.x" + ")" * 3000,
    "meta.x" + "['k']" * 3000 + " == 1",
    "not " * 120 + "meta.x",  # parses, but deeper than the limit
], ids=["not", "minus", "attribute", "brackets", "subscript", "just-over-the-limit"])
def test_deep_select_expression_is_one_line_naming_the_key(tmp_path, expr):
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "t", "x": 1}\n')
    (tmp_path / "p.yaml").write_text(
        "name: deep\nwork_dir: w\nstages:\n  - read_jsonl: {paths: in.jsonl}\n"
        f"  - select: {{expr: {json.dumps(expr)}}}\n")
    for cmd in ("validate", "run"):
        p = _curator(tmp_path, cmd, "p.yaml")
        assert p.returncode != 0
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr[-3000:]
        assert lines[0].startswith("curator: error: p.yaml:5: stages[1].select.expr: '")
        assert "nested deeper than 100 levels" in lines[0] and len(lines[0]) < 400


def test_a_shallow_expression_at_the_limit_still_works(tmp_path):
    from curator.base.document import Document
    from curator.filters.select import compile_expr

    assert compile_expr("not " * 90 + "meta.x")(Document("a", "t", {"x": 1})) is True


def test_an_evaluation_error_rejects_that_document_and_the_run_goes_on(tmp_path):
    """``-meta.x`` on a missing or text ``x`` raised TypeError and stopped the run."""
    recs = [{"id": "pos", "text": "t", "x": 5}, {"id": "missing", "text": "t"},
            {"id": "text", "text": "t", "x": "five"}, {"id": "neg", "text": "t", "x": -3},
            {"id": "pos2", "text": "t", "x": 2.5}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "p.yaml").write_text(
        "name: eval\nwork_dir: w\nstages:\n  - read_jsonl: {paths: in.jsonl}\n"
        "  - select: {expr: '-meta.x < 0'}\n    id: sel\n"
        "  - write_jsonl: {path: out, compression: none}\n")
    p = _curator(tmp_path, "run", "p.yaml")
    assert p.returncode == 0, p.stderr[-3000:]
    kept = [json.loads(x)["id"] for f in sorted((tmp_path / "w" / "out").glob("*.jsonl"))
            for x in f.read_text().splitlines()]
    assert kept == ["pos", "pos2"]
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    [st] = [s for s in rep["stages"] if s["id"] == "sel"]
    assert st["rejected"] == {"select_error": 2, "select:-meta.x < 0": 1}
    import zstandard

    with zstandard.open(next((tmp_path / "w" / "rejected" / "sel").glob("*.zst")), "rt") as f:
        rej = {r["id"]: r["rejected"] for r in map(json.loads, f)}
    assert rej["missing"]["reason"] == rej["text"]["reason"] == "select_error"
    assert "TypeError" in rej["missing"]["error"] and "NoneType" in rej["missing"]["error"]
    assert "str" in rej["text"]["error"]
