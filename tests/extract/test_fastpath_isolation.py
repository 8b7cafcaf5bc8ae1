"""curator's extraction leaves trafilatura and jusText as they ship: after curator has
extracted pages (every path: fast pass, continued and restarted reruns, comments, precision),
every attribute of every trafilatura and jusText module is the object it was before curator
was imported, and ``trafilatura.extract`` gives the text a fresh interpreter that never
imported curator gives. Each side runs in its own interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: how many gold pages (spread over the set) each side extracts
PAGES = 6

_SNAPSHOT = """
import importlib, pkgutil, sys
import trafilatura, justext
mods = {}
for pkg in (trafilatura, justext):
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        if info.name in ("trafilatura.cli", "trafilatura.cli_utils", "trafilatura.__main__"):
            continue
        mods[info.name] = importlib.import_module(info.name)
mods["trafilatura"], mods["justext"] = trafilatura, justext
return_value = {name: dict(vars(m)) for name, m in mods.items()}
"""


def _run(code: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=REPO, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


_PAGES = f"""
import sys
from bench.gold_set import load_gold
gold = load_gold("all")
pages = [p.html for p in gold[::len(gold) // {PAGES}]]
"""


def test_curator_changes_nothing_in_trafilatura_or_justext() -> None:
    code = _PAGES + "def snapshot():\n" + "\n".join(
        "    " + line for line in _SNAPSHOT.strip().splitlines()) + """
    return return_value
before = snapshot()
from curator.extract.extract_html import extract_text
for html in pages:
    for kw in ({}, {"fast": False, "balance": "default", "include_comments": True},
               {"balance": "precision"}):
        extract_text(html, **kw)
after = snapshot()
changed = sorted(f"{mod}.{name}" for mod, attrs in before.items()
                 for name, value in attrs.items() if after[mod].get(name) is not value)
gone = sorted(m for m in before if m not in after)
import json
import trafilatura
texts = [trafilatura.extract(h, deduplicate=False) or "" for h in pages]
texts += [trafilatura.extract(h, fast=True, favor_recall=True, include_comments=False,
                              deduplicate=False) or "" for h in pages]
print(json.dumps({"changed": changed, "gone": gone, "modules": len(before), "texts": texts}))
"""
    ours = _run(code)
    assert ours["modules"] > 20  # trafilatura's and jusText's modules were all looked at
    assert ours["changed"] == [] and ours["gone"] == []
    fresh = _run(_PAGES + """
import json
import trafilatura
texts = [trafilatura.extract(h, deduplicate=False) or "" for h in pages]
texts += [trafilatura.extract(h, fast=True, favor_recall=True, include_comments=False,
                              deduplicate=False) or "" for h in pages]
print(json.dumps({"texts": texts, "curator": any(m.startswith("curator") for m in sys.modules)}))
""")
    assert fresh["curator"] is False
    assert sum(bool(t) for t in fresh["texts"]) > PAGES
    assert ours["texts"] == fresh["texts"]
