"""curator's wikitext converter against two established ones on a real dump excerpt.

The dump: ``data/sample/wikimedia/enwiki/20160501/...bz2`` (gensim's shortened English
Wikipedia test dump, 106 real articles; data/sample/SOURCES.md). References: wikiextractor
(``wikiextractor.extract.Extractor``, what many corpora were built with) and mwparserfromhell's
``strip_code()`` (the parser curator uses, without curator's rules).

For each article, the word diff rate against a reference is ``1 - difflib ratio`` of the two
word sequences (0 = the same words in the same order). Also counted: words of markup left in
the text (``{{``, ``}}``, ``{|``, ``|}``, ``[[``, ``]]``, ``<ref``, ``|-``, ``=``-runs;
wikiextractor keeps ``== Heading ==`` lines, so its count is mostly headings), and sentences
cut at a line break (a line ending in a lower-case letter or comma, the next starting in
lower case).

    python bench/wikitext_compare.py [--json out.json] [--old old_wikitext.py]
"""

from __future__ import annotations

import argparse
import difflib
import glob
import io
import json
import os
import re
import statistics
import sys

from bench.common import bench_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DUMP = glob.glob(os.path.join(ROOT, "data/sample/wikimedia/enwiki/*/*.bz2"))[0]
_MARKUP = re.compile(r"\{\{|\}\}|\{\||\|\}|\[\[|\]\]|<ref|^\s*\|-|={2,}", re.M)
_WORD = re.compile(r"\w+", re.U)
# a line ending inside a sentence (a letter or comma) followed by one starting in lower case:
# a sentence cut in two by a dropped template (headings and list items aside)
_BROKEN = re.compile(r"[a-z,][ \t]*\n\n?[ \t]*[a-z]")


def articles() -> list[tuple[str, str, str]]:
    """(id, title, wikitext) of the main-namespace, non-redirect pages of the dump."""
    import tempfile

    from curator.acquire.wikipedia import iter_pages
    from curator.core.context import ShardContext

    ctx = ShardContext(shard="s", stage_id="bench", work_dir=tempfile.mkdtemp(), artifacts={})
    return [(p["id"], p["title"], p.get("text", "")) for p in iter_pages(DUMP, ctx)
            if "siteinfo" not in p and p.get("ns") == 0 and not p["redirect"]]


def wikiextractor_text(pid: str, title: str, text: str) -> str:
    from wikiextractor.extract import Extractor

    out = io.StringIO()
    Extractor(int(pid), 0, "https://en.wikipedia.org/wiki/", title, text.split("\n")).extract(out)
    body = out.getvalue().split("\n", 1)[1].rsplit("</doc>", 1)[0]
    return body.split("\n", 2)[-1] if body.startswith(title) else body  # title line first


def strip_code_text(text: str) -> str:
    import mwparserfromhell as mwp

    return mwp.parse(text).strip_code(normalize=True, collapse=True)


def diff_rate(a: str, b: str) -> float:
    wa, wb = _WORD.findall(a.lower()), _WORD.findall(b.lower())
    if not wa and not wb:
        return 0.0
    return 1.0 - difflib.SequenceMatcher(None, wa, wb, autojunk=False).ratio()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--old", help="an older wikitext.py to compare too (git show "
                                  "main:curator/extract/wikitext.py > old.py)")
    args = ap.parse_args()
    old = None
    if args.old:
        import importlib.util

        spec = importlib.util.spec_from_file_location("old_wikitext", args.old)
        assert spec and spec.loader
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
    from curator.extract.wikitext import drop_sections_for, wikitext_to_text

    rows = []
    for pid, title, text in articles():
        ours = wikitext_to_text(text, drop_sections=drop_sections_for("en"))
        if old is not None:
            extra = {"old": old.wikitext_to_text(text)}
        rows.append({"id": pid, "title": title, "ours": ours, **(extra if old else {}),
                     "wikiextractor": wikiextractor_text(pid, title, text),
                     "strip_code": strip_code_text(text)})
    out: dict[str, object] = {"dump": os.path.relpath(DUMP, ROOT), "articles": len(rows)}
    mine = ("ours", "old") if old is not None else ("ours",)
    for me in mine:
        for ref in ("wikiextractor", "strip_code"):
            rates = [diff_rate(r[me], r[ref]) for r in rows]
            out[f"{me}_vs_{ref}"] = {"mean_diff_rate": round(statistics.mean(rates), 4),
                                     "median_diff_rate": round(statistics.median(rates), 4),
                                     "articles_under_10pct": sum(x < 0.10 for x in rates)}
    for k in (*mine, "wikiextractor", "strip_code"):
        out[f"markup_{k}"] = sum(len(_MARKUP.findall(r[k])) for r in rows)
        out[f"words_{k}"] = sum(len(_WORD.findall(r[k])) for r in rows)
        out[f"broken_lines_{k}"] = sum(len(_BROKEN.findall(r[k])) for r in rows)
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
