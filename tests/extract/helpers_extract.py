"""What the extract tests share: the real pages the fast path's equality tests (repair, link
density, jusText, cleaning) run trafilatura's own function and curator's on (every
``every``-th gold page, of all types and languages, and the documentation and collection pages
of tests/extract/data), and a ``curator run`` of the ``extract_html`` stage."""

from __future__ import annotations

import functools
import gzip
import subprocess
from collections.abc import Callable
from pathlib import Path
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


def run_extract_html(tmp_path: Path, src: str, options: str) -> subprocess.CompletedProcess:
    """``curator run`` of ``read_jsonl`` (``src``) -> ``extract_html: {options}``, unchecked:
    for the one-line error a wrong option gets."""
    from tests.helpers import run_cli

    yaml = tmp_path / "p.yaml"
    yaml.write_text(f"name: t\nwork_dir: {tmp_path / 'w3'}\nstages:\n"
                    f"  - read_jsonl: {{paths: {src}}}\n"
                    f"  - extract_html: {{{options}}}\n")
    return run_cli("run", str(yaml), check=False, timeout=120)
