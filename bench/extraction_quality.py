"""Extraction quality: token F1 of each extractor and option set against gold main text.

    python bench/extraction_quality.py                       # held-out pages, the main configs
    python bench/extraction_quality.py --split tuning --all  # every option set, tuning pages
    python bench/extraction_quality.py --split all --only "curator default"
    python bench/extraction_quality.py --small               # 80 held-out pages, quicker
    python bench/extraction_quality.py --split outside       # 1,544 WCXB pages, no gold host

Gold: ``bench/gold/pages.jsonl.zst`` (630 real pages from seven public sources, 16 languages,
articles, forums, product, collection, listing and service pages, docs, Wikipedia, fiction;
origins, licences and how each gold was made in bench/gold/SOURCES.md). It has a fixed split:
options are chosen on ``tuning``; ``heldout`` is scored to report them and never used to choose.
``--split outside`` scores the WCXB pages outside the gold set whose host is no gold page's host
(bench/line_filter.py's training pages, read from the WCXB mirror: every WCXB page type, all
English, LLM-drafted and human-reviewed gold), a larger check that nothing was tuned on.

Score per page: bag-of-tokens precision, recall and F1 (tokens: lower-cased ``\\w+`` runs;
runs in scripts written without spaces, CJK/Thai/Burmese/Hangul, count per character), then
the mean over pages, with a 95% bootstrap interval (1,000 resamples of the pages). An empty
output scores 0 and is counted in ``empty``. Speed: CPU time of this process per page (ms),
so other load on a shared machine counts less than in wall time.

Configs: ``curator default`` is :func:`curator.extract.extract_html.extract_text` with its
defaults (what ``read_warc``/``common_crawl``/``extract_html`` run on each page), the other
``curator ...`` rows name one of its options; ``trafilatura defaults`` is
``trafilatura.extract(html)`` with only its cache off (``deduplicate=False``; it keeps
comments, as its default does); ``datatrove settings`` is what datatrove's ``Trafilatura``
step passes (``favor_precision=True, include_comments=False``; cache off here as well);
``resiliparse`` is ``extract_plain_text(main_content=True)`` with its defaults.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.common import bench_main
from bench.gold_set import (
    GoldPage,
    bootstrap,
    load_gold,
    prf,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

@dataclass
class Result:
    """Per-page scores of one config."""

    config: str
    pages: list[GoldPage]
    p: list[float] = field(default_factory=list)
    r: list[float] = field(default_factory=list)
    f: list[float] = field(default_factory=list)
    empty: list[bool] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)


def load_outside(jobs: int = 2) -> list[GoldPage]:
    """WCXB pages outside the gold set, of hosts no gold page has (needs the WCXB mirror)."""
    from bench.line_filter import WCXB, training_pages

    if not os.path.isdir(WCXB):
        raise SystemExit(f"--split outside reads the WCXB mirror at {WCXB}: not found (mirror "
                         "github:Murrough-Foley/web-content-extraction-benchmark there)")

    return [GoldPage(p["id"], p["html"], p["gold"], p["lang"], p["type"], "outside", "wcxb")
            for p in training_pages(jobs, extract=False)]


# -- extractors and option sets -------------------------------------------------------------

def _traf(**kw: object) -> Callable[[str], str]:
    def run(html: str) -> str:
        import trafilatura

        # trafilatura as it ships: curator's fast path is its own code and changes nothing here
        return trafilatura.extract(html, deduplicate=False, **kw) or ""
    return run


def _resiliparse_defaults(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse(html), main_content=True)


def _space_split_counts(fn: Callable[[str], str]) -> Callable[[str], str]:
    """The default as it was before its rules counted a word per CJK character: words split
    on spaces only (docs/extract.md#word-counts-in-every-script)."""
    def run(html: str) -> str:
        from curator.extract import extract_html
        from curator.extract.adapters import resiliparse_text

        def spaces(text: str) -> int:
            return len(text.split())

        saved = extract_html.count_words, resiliparse_text.count_words
        extract_html.count_words = resiliparse_text.count_words = spaces
        try:
            return fn(html)
        finally:
            extract_html.count_words, resiliparse_text.count_words = saved
    return run


def _comments_past(k: float) -> Callable[[str], str]:
    def run(html: str) -> str:
        from curator.extract.extract_html import extract_text

        a = extract_text(html, comments_below=0)
        b = extract_text(html, include_comments=True)
        return b if len(b) > k * len(a) else a
    return run


def _comments_when_thin(n: int, k: float) -> Callable[[str], str]:
    """Comments kept only where the text without them is a sliver (under ``n`` words) and
    with them over ``k`` times longer, on any page: the candidates before the default's
    ``comments_below`` (which also skips pages that declare themselves articles)."""
    def run(html: str) -> str:
        from curator.extract.extract_html import extract_text
        from curator.extract.words import count_words

        a = extract_text(html, comments_below=0)
        if count_words(a) >= n:
            return a
        b = extract_text(html, include_comments=True)
        return b if count_words(b) > k * count_words(a) else a
    return run


def configs() -> dict[str, Callable[[str], str]]:
    """Every option set scored. The main ones first (printed by default)."""
    from curator.extract.extract_html import EXTRACTORS, extract_text

    def cur(**kw: object) -> Callable[[str], str]:
        return lambda h: extract_text(h, **kw)  # type: ignore[arg-type]

    out: dict[str, Callable[[str], str]] = {
        "curator default": cur(),
        "trafilatura defaults": _traf(),
        "datatrove settings": _traf(favor_precision=True, include_comments=False),
        "resiliparse": _resiliparse_defaults,
    }
    for name in EXTRACTORS:
        if name != "trafilatura":
            out[f"curator {name}"] = (lambda n: cur(extractor=n))(name)
    # the candidates measured for the default (docs/extract.md: tuning and held-out F1/CPU)
    for fast in (True, False):
        for balance in ("precision", "default", "recall"):
            out[f"curator fast={fast} {balance}"] = cur(fast=fast, balance=balance)
            out[f"curator fast={fast} {balance}, fallback empty only"] = cur(
                fast=fast, balance=balance, fallback_ratio=0.0)
    for balance in ("default", "recall"):
        out[f"curator fast={False} {balance}, comments"] = cur(
            fast=False, balance=balance, include_comments=True)
        out[f"curator fast={False} {balance}, comments, fallback empty only"] = cur(
            fast=False, balance=balance, include_comments=True, fallback_ratio=0.0)
        out[f"curator fast=auto {balance}"] = cur(fast="auto", balance=balance)
        out[f"curator fast=auto {balance}, no fallback"] = cur(fast="auto", balance=balance,
                                                               fallback=False)
    # fast=auto's <body> yardstick where resiliparse keeps nothing
    out["curator default, body_ratio=0"] = cur(body_ratio=0.0)
    # round 4: cards of listing pages (curator/extract/listing.py; off by default: lost on
    # held-out pages)
    out["curator default, listing_ratio=0.1"] = cur(listing_ratio=0.1)
    out["curator default, post_meta kept"] = cur(post_meta=True)
    # round 5: rerun with the cascade where trafilatura and resiliparse both keep a sliver
    # of the <body> (docs/extract.md#thin-pages)
    out["curator default, thin_ratio=0"] = cur(thin_ratio=0.0)
    # round 7: screen-reader-only text (sr-only, visually-hidden...), left out by default since
    # (docs/extract.md#screen-reader-text); this row is the round-6 default
    out["curator default, screen-reader text kept"] = cur(screen_reader_text=True)
    for ratio in (0.3, 0.7):
        out[f"curator default, fallback_ratio={ratio}"] = cur(fallback_ratio=ratio)
    out["curator default, space-split counts"] = _space_split_counts(cur())
    out["curator default, comments"] = cur(include_comments=True)
    for k in (1.5, 2.0, 3.0):
        out[f"curator default, comments past {k}x"] = _comments_past(k)
    for n in (50, 100, 200, 400):
        out[f"curator default, comments past 2x under {n} words"] = _comments_when_thin(n, 2.0)
    out.update({
        "curator default, no fallback": cur(fallback=False),
        # the stage option a news crawl sets (`fallback_ratio: 0`): resiliparse for empty only
        "curator default, fallback empty only": cur(fallback_ratio=0.0),
        "curator default, article_ratio=1.1": cur(article_ratio=1.1),
        # thread replies, the forum-crawl setting (docs/extract.md#thread-replies); at a4a535e
        # it was the default and "curator default, comments_below=0" the row without it
        "curator default, comments_below=200": cur(comments_below=200),
        # the default before the article-markup guard (docs/extract.md#article-markup)
        "curator default, article_ratio=0": cur(article_ratio=0.0),
        "curator default, article_ratio=1.25": cur(article_ratio=1.25),
        "curator default, article_ratio=1.5": cur(article_ratio=1.5),
        "curator default, article_ratio=2.0": cur(article_ratio=2.0),
        "curator default, shape off": cur(shape=False),
        "curator default, collapsed panels off": cur(collapsed_panels=False),
        "trafilatura no comments": _traf(include_comments=False),
        "trafilatura fast": _traf(fast=True, include_comments=False),
        "trafilatura fast+favor_precision": _traf(fast=True, favor_precision=True,
                                                  include_comments=False),
        "trafilatura favor_recall": _traf(favor_recall=True, include_comments=False),
    })
    return out


MAIN = ["curator default", "trafilatura defaults", "datatrove settings", "resiliparse"]


def saved_config(name: str, text: dict[str, str], cpu_s: dict[str, float],
                 pages: list[GoldPage]) -> Result:
    """Score texts produced elsewhere (another interpreter: bench/rs_trafilatura_row.py)."""
    res = Result(name, pages)
    for page in pages:
        out = text.get(page.id, "")
        p, r, f = prf(out, page.gold)
        res.p.append(p)
        res.r.append(r)
        res.f.append(f)
        res.empty.append(not out.strip())
        res.cpu_s.append(cpu_s.get(page.id, 0.0))
    return res


def run_config(name: str, fn: Callable[[str], str], pages: list[GoldPage]) -> Result:
    fn(pages[0].html)  # warm-up: imports, stop lists
    text: dict[str, str] = {}
    cpu_s: dict[str, float] = {}
    for page in pages:
        t0 = time.process_time()
        text[page.id] = fn(page.html)
        cpu_s[page.id] = time.process_time() - t0
    return saved_config(name, text, cpu_s, pages)


_POOLED: dict[str, Callable[[str], str]] = {}


def _pooled_one(args: tuple[str, str, str]) -> tuple[str, str, float]:
    name, pid, html = args
    fn = _POOLED.get(name) or _POOLED.setdefault(name, configs()[name])
    t0 = time.process_time()
    try:
        out = fn(html)
    except Exception as exc:  # scored as an empty output, like a crash in the peers' runs
        print(f"{name} {pid}: {type(exc).__name__}: {exc}", file=sys.stderr)
        out = ""
    return pid, out, time.process_time() - t0


def extract_pooled(name: str, pages: list[tuple[str, str]], jobs: int
                   ) -> tuple[dict[str, str], dict[str, float]]:
    """Config ``name``'s text and CPU seconds of each ``(id, html)``, in ``jobs`` processes
    (the benches outside the gold set: bench/wcxb_official.py, bench/peer_benchmarks.py)."""
    from multiprocessing import Pool

    with Pool(jobs) as pool:
        rows = pool.map(_pooled_one, [(name, pid, html) for pid, html in pages], chunksize=8)
    return {pid: out for pid, out, _ in rows}, {pid: cpu for pid, _, cpu in rows}


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def report(results: list[Result], by: list[str]) -> None:
    print(f"{'config':38s} {'pages':>5s} {'F1':>6s} {'95% CI':>15s} {'prec':>6s} "
          f"{'recall':>6s} {'empty':>6s} {'ms/page':>8s}   F1 - first row [95% CI, paired]")
    for res in results:
        lo, hi = bootstrap(res.f)
        n = len(res.f)
        diff = [a - b for a, b in zip(res.f, results[0].f)]
        dlo, dhi = bootstrap(diff)
        print(f"{res.config:38s} {n:5d} {_mean(res.f):6.3f} [{lo:.3f}, {hi:.3f}] "
              f"{_mean(res.p):6.3f} {_mean(res.r):6.3f} {100 * sum(res.empty) / n:5.1f}% "
              f"{1000 * _mean(res.cpu_s):8.1f}   {_mean(diff):+.3f} [{dlo:+.3f}, {dhi:+.3f}]")
    for key in by:
        groups = sorted({getattr(p, key) for p in results[0].pages},
                        key=lambda g: -sum(getattr(p, key) == g for p in results[0].pages))
        print(f"\nF1 by {key} (pages; 95% CI where >= 10 pages)")
        print(f"{'':14s}" + "".join(f"{r.config[:22]:>24s}" for r in results))
        for g in groups:
            idx = [i for i, p in enumerate(results[0].pages) if getattr(p, key) == g]
            cells = []
            for res in results:
                fs = [res.f[i] for i in idx]
                ci = bootstrap(fs) if len(fs) >= 10 else None
                cells.append(f"{_mean(fs):.3f}" + (f" [{ci[0]:.2f},{ci[1]:.2f}]" if ci else ""))
            print(f"{g[:9]:9s} {len(idx):4d}" + "".join(f"{c:>24s}" for c in cells))


def same_types(res: Result, seed: int = 0, n: int = 1000) -> tuple[float, float, float, float]:
    """Non-English pages against English pages *of the same page types*: English F1 is
    averaged per type and weighted by the non-English pages' type counts (types without an
    English page are left out of both sides). The plain per-language means mix page types:
    most German gold pages are forum threads, most English ones articles. Returns
    (non-English mean, English reweighted, difference, and the difference's 95% bootstrap
    half-width, resampling pages within each type and language)."""
    by: dict[tuple[str, bool], list[float]] = {}
    for page, f in zip(res.pages, res.f):
        by.setdefault((page.type, page.lang == "en"), []).append(f)
    types = [t for (t, en) in by if not en and (t, True) in by]

    def stat(groups: dict[tuple[str, bool], list[float]]) -> tuple[float, float]:
        w = sum(len(groups[(t, False)]) for t in types)
        other = sum(sum(groups[(t, False)]) for t in types) / w
        en = sum(len(groups[(t, False)]) * _mean(groups[(t, True)]) for t in types) / w
        return other, en

    other, en = stat(by)
    rng = random.Random(seed)
    diffs = sorted(a - b for a, b in (stat({k: [v[rng.randrange(len(v))] for _ in v]
                                            for k, v in by.items()}) for _ in range(n)))
    half = (diffs[int(0.975 * n) - 1] - diffs[int(0.025 * n)]) / 2
    return other, en, other - en, half


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="heldout", choices=["heldout", "tuning", "all", "outside"])
    ap.add_argument("--small", action="store_true", help="80 pages of the split (spread)")
    ap.add_argument("--all", action="store_true", help="every option set, not the main four")
    ap.add_argument("--only", action="append", help="score only this config (repeatable)")
    ap.add_argument("--rs-python", metavar="PYTHON",
                    help="also score rs-trafilatura, run by this Python 3.12 interpreter "
                    "(bench/rs_trafilatura_row.py)")
    ap.add_argument("--worst", type=int, default=0,
                    help="list the N pages with the lowest F1 of the first config")
    args = ap.parse_args(argv)
    pages = load_outside() if args.split == "outside" else load_gold(args.split)
    if args.small and len(pages) > 80:
        step = len(pages) / 80
        pages = [pages[int(i * step)] for i in range(80)]
    cfgs = configs()
    names = args.only or (list(cfgs) if args.all else MAIN)
    unknown = [n for n in names if n not in cfgs]
    if unknown:
        print(f"unknown config(s) {unknown}; known: {list(cfgs)}")
        return 2
    langs = Counter(p.lang for p in pages)
    where = "WCXB outside the gold set" if args.split == "outside" else \
        "bench/gold/pages.jsonl.zst"
    print(f"gold: {len(pages)} {args.split} pages of {where}, "
          f"{len(langs)} languages; token F1 per page, mean over pages; ms/page = CPU time\n")
    results = [run_config(n, cfgs[n], pages) for n in names]
    if args.rs_python:
        from bench.rs_trafilatura_row import predictions

        text, cpu = predictions([(p.id, p.html, p.url) for p in pages], args.rs_python)
        results.append(saved_config("rs-trafilatura", text, cpu, pages))
    report(results, ["type", "lang", "source"])
    if any(p.lang != "en" for p in pages) and any(p.lang == "en" for p in pages):
        print("\nnon-English vs English pages of the same types (English F1 per type, "
              "weighted by the non-English type counts; 95% CI of the difference)")
        for res in results:
            other, en, d, half = same_types(res)
            print(f"  {res.config:38s} non-English {other:.3f}  English {en:.3f}  "
                  f"difference {d:+.3f} [{d - half:+.3f}, {d + half:+.3f}]")
    by = {r.config: r for r in results}
    cur = by.get("curator default")
    for peer in ("trafilatura defaults", "datatrove settings", "resiliparse", "rs-trafilatura"):
        if cur and peer in by:
            print(f"ratio curator default / {peer}: F1 {_mean(cur.f):.3f} vs "
                  f"{_mean(by[peer].f):.3f}, empty {sum(cur.empty)} vs {sum(by[peer].empty)} "
                  f"pages, CPU per page {_mean(by[peer].cpu_s) / _mean(cur.cpu_s):.2f}x less")
    for res in results[:1] if args.worst else []:
        order = sorted(range(len(pages)), key=lambda i: res.f[i])[:args.worst]
        print(f"\nlowest F1 of {res.config}:")
        for i in order:
            print(f"  {res.f[i]:.3f} P {res.p[i]:.2f} R {res.r[i]:.2f}  {pages[i].id}")
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
