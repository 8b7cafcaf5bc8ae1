"""Extraction quality: token F1 of every extractor and option set against gold main text.

    python bench/extraction_quality.py               # all gold pages
    python bench/extraction_quality.py --small       # 60 doc pages + the news pages, quicker

Two gold sets, both from packages on the registries (nothing in this repository):

* **news**: the article pages of the ``newspaper4k`` sdist on PyPI (MIT licence):
  ``tests/data/html/<name>.html`` with ``tests/data/txt/<name>.txt``, the article text its
  maintainers committed as the expected output of their extraction tests (CNN, Time, Wired,
  Fox 13, cleveland.com, Yonhap, Spanish, Latvian, Arabic, Chinese, Thai... pages). The sdist
  is fetched once with ``pip download --no-deps --no-binary :all: newspaper4k==0.9.6`` into
  ``~/.cache/curator-bench`` (or give ``--newspaper-sdist PATH``). Pages whose gold has fewer
  than 50 tokens are left out (some gold files hold a headline only).
* **docs**: the Python documentation as Debian's ``python3.x-doc`` package installs it
  (``/usr/share/doc/python3*/html``). Gold is a documented, checkable rule, not a hand edit:
  the text of Sphinx's main-content element ``div[role=main]`` (what Sphinx renders from the
  page's reStructuredText source: headings, prose, code, tables), with the "¶" permalink
  signs removed. Navigation, sidebars, header and footer are outside that element.

Score: bag-of-tokens F1 per page (tokens: lower-cased ``\\w+`` runs; CJK/Thai/Burmese runs are
split into characters), averaged over the pages of a set; precision and recall likewise. Speed
is the CPU time of this process (docs/s on one core), so other load on the machine counts less.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

NEWSPAPER = "newspaper4k==0.9.6"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "curator-bench")
_TOKEN = re.compile(r"\w+")
# Scripts written without spaces: score them per character.
_NOSPACE = re.compile(r"[\u0e00-\u0e7f\u1000-\u109f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
                      r"\uac00-\ud7af]")


@dataclass
class GoldPage:
    """One page with its gold main text."""

    set: str
    name: str
    html: str
    gold: str


def tokens(text: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for t in _TOKEN.findall(text.lower()):
        if _NOSPACE.search(t):
            out.update(t)
        else:
            out[t] += 1
    return out


def prf(pred: str, gold: str) -> tuple[float, float, float]:
    """Bag-of-tokens precision, recall and F1 of ``pred`` against ``gold``."""
    p, g = tokens(pred), tokens(gold)
    common = sum((p & g).values())
    if not common:
        return 0.0, 0.0, 0.0
    prec, rec = common / sum(p.values()), common / sum(g.values())
    return prec, rec, 2 * prec * rec / (prec + rec)


# -- gold sets -----------------------------------------------------------------------------

def _newspaper_sdist(path: str | None) -> str | None:
    if path:
        return path
    found = sorted(glob.glob(os.path.join(CACHE, "newspaper4k-*.tar.gz")))
    if found:
        return found[-1]
    os.makedirs(CACHE, exist_ok=True)
    print(f"fetching the {NEWSPAPER} sdist from PyPI into {CACHE} (once)", file=sys.stderr)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                        ":all:", NEWSPAPER, "-d", CACHE, "-q"], capture_output=True, text=True)
    found = sorted(glob.glob(os.path.join(CACHE, "newspaper4k-*.tar.gz")))
    if r.returncode or not found:
        print(f"  could not fetch it ({r.stderr.strip()[-200:]}); news set skipped",
              file=sys.stderr)
        return None
    return found[-1]


def news_pages(sdist: str | None) -> list[GoldPage]:
    """The newspaper4k sdist's (html, txt) test pairs."""
    path = _newspaper_sdist(sdist)
    if not path:
        return []
    html: dict[str, bytes] = {}
    txt: dict[str, str] = {}
    with tarfile.open(path) as tf:
        for m in tf.getmembers():
            mm = re.search(r"/tests/data/(html|txt)/([^/]+)\.(html|txt)$", m.name)
            if not mm or not m.isfile():
                continue
            data = tf.extractfile(m).read()  # type: ignore[union-attr]
            if mm.group(1) == "html":
                html[mm.group(2)] = data
            else:
                txt[mm.group(2)] = data.decode("utf-8")
    from curator.extract.extract_html import decode_html

    out = []
    for name in sorted(set(html) & set(txt)):
        if sum(tokens(txt[name]).values()) < 50:
            continue
        out.append(GoldPage("news", name, decode_html(html[name])[0], txt[name]))
    return out


def sphinx_gold(html: str) -> str | None:
    """Text of Sphinx's ``div[role=main]``, permalink signs removed (None if absent)."""
    import lxml.html

    tree = lxml.html.fromstring(html)
    main = tree.xpath('//div[@role="main"]')
    if not main:
        return None
    for a in main[0].xpath('.//a[@class="headerlink"]'):
        a.drop_tree()
    return main[0].text_content()


def doc_files() -> list[str]:
    return sorted(glob.glob("/usr/share/doc/python3*/html/**/*.html", recursive=True))


def doc_pages(limit: int | None) -> list[GoldPage]:
    files = doc_files()
    out = []
    for f in files:
        with open(f, "rb") as fh:
            raw = fh.read()
        if len(raw) < 4096:
            continue
        from curator.extract.extract_html import decode_html

        html = decode_html(raw)[0]
        gold = sphinx_gold(html)
        if gold and sum(tokens(gold).values()) >= 50:
            out.append(GoldPage("docs", os.path.relpath(f, "/usr/share/doc"), html, gold))
    if limit and len(out) > limit:  # an even spread over the whole tree, not its first folder
        step = len(out) / limit
        out = [out[int(i * step)] for i in range(limit)]
    return out


# -- extractors and option sets -------------------------------------------------------------

def _traf(**kw: object) -> Callable[[str], str]:
    def run(html: str) -> str:
        import trafilatura

        return trafilatura.extract(html, include_comments=False, deduplicate=False, **kw) or ""
    return run


def configs() -> dict[str, Callable[[str], str]]:
    """Every option set scored; curator's own extractors go through ``extract_text``."""
    from curator.extract.extract_html import EXTRACTORS, extract_text

    out: dict[str, Callable[[str], str]] = {}
    for name in EXTRACTORS:
        out[f"curator:{name}"] = (lambda n: lambda h: extract_text(h, n))(name)
    out.update({
        "trafilatura default": _traf(),
        "trafilatura favor_precision": _traf(favor_precision=True),
        "trafilatura favor_recall": _traf(favor_recall=True),
        "trafilatura fast": _traf(fast=True),
        "trafilatura fast+favor_precision": _traf(fast=True, favor_precision=True),
        "trafilatura fast+favor_recall": _traf(fast=True, favor_recall=True),
        "trafilatura default no tables": _traf(include_tables=False),
    })
    return out


def score(pages: list[GoldPage], names: list[str] | None = None
          ) -> list[tuple[str, str, int, float, float, float, float]]:
    """Rows ``(config, set, pages, precision, recall, f1, docs/s)``."""
    rows = []
    for name, fn in configs().items():
        if names and name not in names:
            continue
        fn(pages[0].html)  # warm-up: imports, stop lists
        for s in sorted({p.set for p in pages}):
            sub = [p for p in pages if p.set == s]
            t0 = time.process_time()
            preds = [fn(p.html) for p in sub]
            dt = time.process_time() - t0
            ps, rs, fs = zip(*(prf(x, p.gold) for x, p in zip(preds, sub)))
            n = len(sub)
            rows.append((name, s, n, sum(ps) / n, sum(rs) / n, sum(fs) / n, n / dt))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", action="store_true", help="60 doc pages instead of all")
    ap.add_argument("--docs", type=int, default=None, help="number of doc pages (spread)")
    ap.add_argument("--newspaper-sdist", default=None, help="path of a newspaper4k sdist")
    ap.add_argument("--only", action="append", help="score only this config (repeatable)")
    args = ap.parse_args(argv)
    limit = args.docs or (60 if args.small else None)
    pages = news_pages(args.newspaper_sdist) + doc_pages(limit)
    if not pages:
        print("no gold pages found (install python3-doc, allow pip download)")
        return 1
    sets = Counter(p.set for p in pages)
    print("gold: " + ", ".join(f"{s} {n} pages" for s, n in sorted(sets.items()))
          + "; token F1 per page, averaged; docs/s = CPU time of one core\n")
    print(f"{'extractor / options':34s} {'set':5s} {'pages':>5s} {'prec':>6s} {'recall':>6s} "
          f"{'F1':>6s} {'docs/s':>8s}")
    rows = score(pages, args.only)
    for name, s, n, p, r, f, rate in rows:
        print(f"{name:34s} {s:5s} {n:5d} {p:6.3f} {r:6.3f} {f:6.3f} {rate:8.1f}")
    print("\nper config, all pages (mean of the two sets' F1):")
    by: dict[str, list[float]] = {}
    for name, _s, _n, _p, _r, f, _rate in rows:
        by.setdefault(name, []).append(f)
    for name, fs in sorted(by.items(), key=lambda kv: -sum(kv[1]) / len(kv[1])):
        print(f"  {name:34s} F1 {sum(fs) / len(fs):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
