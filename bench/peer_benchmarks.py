"""Six public extraction benchmarks, scored like the gold set.

    python bench/peer_benchmarks.py                      # curator default, trafilatura defaults
    python bench/peer_benchmarks.py --jobs 2 --rs-python /var/tmp/rsvenv/bin/python

A larger check than the gold set: 3,068 pages from six public extraction benchmarks
(trafilatura's defaults 0.898 token F1, curator's old default 0.811 when first measured). The
six are the ones j-szulc/html-cleaning-dataset-merged mirrors in one layout
(``<set>/input/*.html`` and ``<set>/GoldStandard/*.txt``): CleanEval dev and final,
CleanPortalEval, dragnet's corrected articles, page-signal (Google News) and Mozilla
Readability's test pages. This bench scores curator's default and trafilatura's defaults on all
of them with bench/gold_set.py's token F1 and bootstrap, per set and over all pages,
so today's default is compared on that material as well as on the gold set's
held-out pages.

Gold text: the GoldStandard file without its ``URL:`` line and with its markup removed (the
mirror's ``strip.py`` does the same with BeautifulSoup; CleanEval's ``<p>``/``<h>``/``<l>``
markers are tags there too), and without dragnet's comment section (the text after its
``!@#$%^&*() COMMENTS`` line: comments count as not main text; ``--with-comments``
keeps it). page-signal's gold files are the whole page with every
text span labelled (L3S-GN1's ``x-nc-sel0``..``5`` classes): its gold is the headline and full
text spans (:func:`annotated_text`), not the whole page. Pages whose gold has fewer than 10
tokens are left out (empty gold: F1 is undefined). Readability's pages are the same pages as
the gold set's Readability source (56 of them tuning pages): that row is not independent of
curator's tuning. dragnet's data is AGPLv3, so nothing of it is committed here; the bench
reads the mirror (``fetch github:j-szulc/html-cleaning-dataset-merged``, then
``git --git-dir <mirror>/repo archive HEAD | tar -x -C /var/tmp/hcd``, or ``--data DIR``).
"""

from __future__ import annotations

import argparse
import html as htmlmod
import os
import re
import sys

from bench.common import bench_main
from bench.extraction_quality import Result, extract_pooled, saved_config
from bench.gold_set import GoldPage, bootstrap, tokens

DATA = "/var/tmp/hcd"
SETS = ["cleaneval-dev", "cleaneval-final", "CleanPortalEval-master", "dragnet_data",
        "page-signal-master", "readability"]
CONFIGS = ["curator default", "trafilatura defaults"]
_TAG = re.compile(r"<[^>]*>")
#: dragnet's corrected gold holds the page's reader comments after this line (416 of 1,381
#: files); comment sections count as not main text, so the gold stops there
_COMMENTS = re.compile(r"^!@.{0,12}COMMENTS\s*$", re.MULTILINE)


def annotated_text(raw: bytes) -> str:
    """page-signal's gold (L3S-GN1, Kohlschütter et al. 2010): the whole page with each text
    span classed ``x-nc-sel0`` (not content) to ``x-nc-sel5``; the main text is the headline
    (``sel1``) and the full text (``sel2``). ``sel3`` (supplemental), ``sel4`` (related
    links) and ``sel5`` (user comments) are not main text."""
    import lxml.html

    tree = lxml.html.fromstring(raw)
    out = []
    for el in tree.iter():
        cls = (el.get("class") or "") if isinstance(el.tag, str) else ""
        if ("x-nc-sel1" in cls or "x-nc-sel2" in cls) and not any(
                "x-nc-sel" in (a.get("class") or "") for a in el.iterancestors()):
            out.append(el.text_content())
    return "\n".join(out)


def gold_text(raw: bytes, comments: bool = False) -> str:
    """A GoldStandard file's text: no ``URL:`` line, no markup, entities decoded, no comment
    section unless ``comments``."""
    text = raw.decode("utf-8", errors="replace")
    if text.startswith("URL"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    if not comments and (m := _COMMENTS.search(text)):
        text = text[:m.start()]
    return htmlmod.unescape(_TAG.sub(" ", text))


def load(data: str, comments: bool = False) -> list[GoldPage]:
    from curator.extract.charset import decode_html

    pages = []
    for name in SETS:
        gdir, idir = os.path.join(data, name, "GoldStandard"), os.path.join(data, name, "input")
        for f in sorted(os.listdir(gdir)):
            stem = f.removesuffix(".txt")
            src = os.path.join(idir, stem + ".html")
            if not f.endswith(".txt") or not os.path.isfile(src):
                continue
            with open(os.path.join(gdir, f), "rb") as fh:
                raw = fh.read()
            gold = annotated_text(raw) if b"x-nc-sel" in raw else gold_text(raw, comments)
            if sum(tokens(gold).values()) < 10:
                continue
            with open(src, "rb") as fh:
                page = decode_html(fh.read())[0]
            pages.append(GoldPage(f"{name}/{stem}", page, gold, source=name))
    return pages


def run(name: str, pages: list[GoldPage], jobs: int) -> Result:
    text, cpu = extract_pooled(name, [(p.id, p.html) for p in pages], jobs)
    return saved_config(name, text, cpu, pages)


def main(argv: list[str] | None = None) -> int | dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA, help="a checkout of html-cleaning-dataset-merged")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--with-comments", action="store_true",
                    help="keep dragnet's comment sections in the gold")
    ap.add_argument("--rs-python", metavar="PYTHON",
                    help="also score rs-trafilatura (bench/rs_trafilatura_row.py)")
    args = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(args.data, "readability")):
        print(f"{args.data}: no checkout of html-cleaning-dataset-merged (see the docstring)",
              file=sys.stderr)
        return 2
    pages = load(args.data, args.with_comments)
    print(f"{len(pages)} pages of {len(SETS)} benchmarks; token F1 per page, mean over pages")
    results = [run(n, pages, args.jobs) for n in CONFIGS]
    if args.rs_python:
        from bench.rs_trafilatura_row import predictions

        text, cpu = predictions([(p.id, p.html, "") for p in pages], args.rs_python)
        results.append(saved_config("rs-trafilatura", text, cpu, pages))
    lines = [f"{'set':24s} {'pages':>5s} " + " ".join(f"{r.config:>24s}" for r in results)]
    f1: dict[str, dict[str, float]] = {}
    for name in SETS + ["all"]:
        idx = [i for i, p in enumerate(pages) if name in ("all", p.source)]
        cells = []
        for r in results:
            f = [r.f[i] for i in idx]
            lo, hi = bootstrap(f)
            f1.setdefault(name, {})[r.config] = round(sum(f) / len(f), 4)
            cells.append(f"{sum(f) / len(f):.3f} [{lo:.3f},{hi:.3f}]")
        lines.append(f"{name:24s} {len(idx):5d} " + " ".join(f"{c:>24s}" for c in cells))
    cur = results[0]
    for r in results[1:]:
        d = [a - b for a, b in zip(cur.f, r.f, strict=True)]
        lo, hi = bootstrap(d)
        lines.append(f"curator default - {r.config}: {sum(d) / len(d):+.4f} [{lo:+.4f}, {hi:+.4f}] "
                     f"(paired); empty {sum(cur.empty)} vs {sum(r.empty)}; CPU per page "
                     f"{1000 * sum(cur.cpu_s) / len(pages):.1f} vs "
                     f"{1000 * sum(r.cpu_s) / len(pages):.1f} ms")
    prec = [sum(r.p) / len(pages) for r in results]
    rec = [sum(r.r) / len(pages) for r in results]
    lines.append("precision / recall: " + ", ".join(
        f"{r.config} {p:.3f} / {q:.3f}" for r, p, q in zip(results, prec, rec, strict=True)))
    print("\n" + "\n".join(lines))
    # recorded as they are printed (the table's rows state no figure that figure_lines finds)
    return {"lines": lines, "f1": f1,
            "cpu_ms_per_page": {r.config: round(1000 * sum(r.cpu_s) / len(pages), 1)
                                for r in results},
            "empty": {r.config: sum(r.empty) for r in results}}


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
