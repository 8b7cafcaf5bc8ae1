"""Real pages the twin tests (repair, link density, jusText) run trafilatura's own function
and curator's twin on: every ``every``-th gold page (all types and languages) and the
documentation and collection pages of tests/extract/data."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

from bench.extraction_quality import load_gold

DATA = Path(__file__).parent / "data"


def gold_and_doc_pages(every: int, gold: Callable[[str], str] = lambda html: html) -> list[str]:
    """The sampled gold pages (each through ``gold``) followed by the data pages."""
    picked = [gold(p.html) for p in load_gold("all")[::every]]
    for path in sorted(DATA.glob("*/*.html.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            picked.append(f.read())
    return picked
