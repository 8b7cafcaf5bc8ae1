"""Does ``line_dedup`` cut sentences of the quickstart corpus? Old extraction against the default.

    python bench/line_dedup_cuts.py

The bundled sample crawl (data/sample/commoncrawl: Python documentation pages) is extracted
twice with :func:`curator.extract.extract_html.extract_text`: with the old default
(``fast=True, balance="precision", shape=False``: Sphinx's hard-wrapped paragraphs stay several
lines) and with today's default. Each result goes through ``read_jsonl -> line_dedup ->
write_jsonl``. A *cut sentence* is a place where line_dedup kept one line and removed the next
(or the reverse) while the first does not end a sentence (no ``.:!?;)]`` at its end, >= 4
words) and the second starts in lower case (>= 2 words, no tab, no ``=``: not a table row or
code). Removed whole paragraphs and repeated code lines are not counted: removing those is
what a line-level dedup is for.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import sys
import tempfile
from collections import Counter

from bench.common import bench_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SAMPLE = os.path.join(REPO, "data", "sample", "commoncrawl")
OPTIONS = {"old default (fast, precision, no shaping)":
           {"fast": True, "balance": "precision", "shape": False},
           "default": {}}


def pages() -> list[tuple[str, str]]:
    from warcio.archiveiterator import ArchiveIterator

    from curator.extract.charset import decode_html

    out = []
    for path in sorted(glob.glob(f"{SAMPLE}/**/*.warc.gz", recursive=True)):
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f):
                ctype = rec.http_headers.get_header("Content-Type") if rec.http_headers else ""
                if rec.rec_type != "response" or not (ctype or "").startswith("text/html"):
                    continue
                body = rec.content_stream().read()
                if body:
                    out.append((rec.rec_headers.get_header("WARC-Target-URI"),
                                decode_html(body, ctype)[0]))
    return out


def cuts(before: dict[str, str], after: dict[str, str]) -> tuple[int, int, list[str]]:
    removed = n = 0
    examples = []
    for key, text in before.items():
        kept = Counter(after.get(key, "").split("\n"))
        lines = text.split("\n")
        status = []
        for line in lines:
            status.append(kept[line] > 0)
            kept[line] -= status[-1]
            removed += not status[-1] and bool(line.strip())
        for i in range(1, len(lines)):
            a, b = lines[i - 1], lines[i]
            if (status[i] != status[i - 1] and len(a.split()) >= 4 and len(b.split()) >= 2
                    and not re.search(r"[.:!?;)\]]\s*$", a) and re.match(r"^[a-z(]", b.strip())
                    and "\t" not in b and "=" not in a + b and not a.startswith((">>>", " "))):
                n += 1
                examples.append(f"{a[-45:]!r} | {b[:45]!r}")
    return removed, n, examples


def main() -> int:
    import curator
    from curator.extract.extract_html import extract_text

    src = pages()
    print(f"{len(src)} HTML pages of the bundled sample crawl; line_dedup with its defaults\n")
    with tempfile.TemporaryDirectory() as tmp:
        for label, opts in OPTIONS.items():
            d = os.path.join(tmp, str(abs(hash(label))))
            os.makedirs(d)
            before = {}
            with open(os.path.join(d, "in.jsonl"), "w") as f:
                for i, (url, html) in enumerate(src):
                    text = extract_text(html, **opts)  # type: ignore[arg-type]
                    if text:
                        before[f"p{i}"] = text
                        f.write(json.dumps({"id": f"p{i}", "text": text, "url": url}) + "\n")
            with open(os.path.join(d, "p.yaml"), "w") as f:
                f.write(f"name: ld\nwork_dir: {d}/work\nexecutor: {{type: local}}\nstages:\n"
                        f"  - read_jsonl: {{paths: {d}/in.jsonl}}\n  - line_dedup: {{}}\n"
                        f"  - write_jsonl: {{path: out}}\n")
            curator.run(os.path.join(d, "p.yaml"))
            after = {}
            for path in glob.glob(f"{d}/work/**/out/*.jsonl*", recursive=True):
                op = gzip.open if path.endswith(".gz") else open
                with op(path, "rt") as f:
                    for line in f:
                        rec = json.loads(line)
                        after[rec["id"]] = rec["text"]
            removed, n, ex = cuts(before, after)
            lines = sum(len(t.split("\n")) for t in before.values())
            print(f"{label}: {len(before)} documents, {lines} lines, {removed} removed by "
                  f"line_dedup, sentences cut across a line break: {n}")
            for e in ex[:3]:
                print(f"    {e}")
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
