"""What the twin tests (repair, link density, jusText, copies) share: the real pages they
run trafilatura's own function and curator's twin on (every ``every``-th gold page, of all
types and languages, and the documentation and collection pages of tests/extract/data), and
the check that a twin is in place."""

from __future__ import annotations

import functools
import gzip
import subprocess
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.gold_set import load_gold

DATA = Path(__file__).parent / "data"


@functools.lru_cache(maxsize=1)
def tuning_pages() -> dict[str, Any]:
    """bench/gold's tuning pages by id (read once per test process)."""
    return {p.id: p for p in load_gold("tuning")}


def gold_and_doc_pages(every: int, gold: Callable[[str], str] = lambda html: html) -> list[str]:
    """The sampled gold pages (each through ``gold``) followed by the data pages."""
    picked = [gold(p.html) for p in load_gold("all")[::every]]
    for path in sorted(DATA.glob("*/*.html.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            picked.append(f.read())
    return picked


def assert_swapped(module: ModuleType, name: str, twin: Any,
                   stock: Callable[[], AbstractContextManager[None]]) -> None:
    """``module.name`` is curator's ``twin``; inside ``stock()`` it is trafilatura's own
    function (defined in ``module``), and the twin is back after the block."""
    assert getattr(module, name) is twin
    with stock():
        assert getattr(module, name) is not twin
        assert getattr(module, name).__module__ == module.__name__
    assert getattr(module, name) is twin


def run_extract_html(tmp_path: Path, src: str, options: str) -> subprocess.CompletedProcess:
    """``curator run`` of ``read_jsonl`` (``src``) -> ``extract_html: {options}``, unchecked:
    for the one-line error a wrong option gets."""
    from tests.helpers import run_cli

    yaml = tmp_path / "p.yaml"
    yaml.write_text(f"name: t\nwork_dir: {tmp_path / 'w3'}\nstages:\n"
                    f"  - read_jsonl: {{paths: {src}}}\n"
                    f"  - extract_html: {{{options}}}\n")
    return run_cli("run", str(yaml), check=False, timeout=120)
