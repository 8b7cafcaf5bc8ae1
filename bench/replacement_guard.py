"""Guards on the default's replacement of its first (fast) text, chosen leave-one-family-out.

    python -m bench.replacement_guard --split tuning            # choose: tuning pages only
    python -m bench.replacement_guard --split heldout --only "contain>=0.5"   # score once

The default extraction first runs trafilatura's fast pass; a ``fast=False`` rerun or
resiliparse's text then replaces that text when it looks short. On video, slideshow and
carousel pages the replacement is the whole page (title, breadcrumb, captions, "Share"), where
the fast text was the article. A guard keeps the replacement only when it holds the same
article and brings no chrome; otherwise the fast text stays.

Per page this bench computes three texts: the fast pass alone
(``extract_text(fast=True, fallback=False)``), the default without resiliparse's text
(``extract_text(fallback=False)``: the fast pass and its ``fast=False`` reruns) and the
default's (``extract_text()``), and applies each candidate guard to them: what guards at the
two replacements inside ``extract_text`` would return. Guards (a replacement is kept when):

- ``contain>=T``: it holds >= T of the replaced text's distinct words;
- ``chrome<=R``: of the words it adds (lines not in the replaced text), at most R are in lines
  of three words or fewer (menus, breadcrumbs, captions, "Share", "Embed");
- ``contain>=T, chrome<=R``: both; ``never``: resiliparse for empty output only;
- ``links<=L``: of the word characters it adds, at most L are in lines made of the page's link
  texts (related headlines, menus, breadcrumbs: each line whose word characters are at least
  80% covered by the text of ``<a>`` elements of the page).

``fallback: G`` guards resiliparse's replacement only, ``both: G`` the rerun's too. An empty
text is always replaced. Families: both sets (bench/family_quality.py); scores: F1 where a
full gold exists, else the share of snippets judged right. Leave-one-family-out
(bench/lofo.py) reports, for each family, the guard chosen on all other families and its score
on the one left out.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from multiprocessing import Pool

from bench.common import bench_main
from bench.family_quality import Page, load_pages, score_page
from bench.lofo import format_folds, leave_one_family_out

_WORD = re.compile(r"\w+")
Guard = Callable[[str, str], bool]


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _flat(text: str) -> str:
    return " ".join(text.split())


def containment(fast: str, replacement: str) -> float:
    """Share of the fast text's distinct words that the replacement holds."""
    fw = _words(fast)
    return len(fw & _words(replacement)) / len(fw) if fw else 1.0


def chrome_share(fast: str, replacement: str, short: int = 3) -> float:
    """Of the words the replacement adds (its lines that are not lines of the fast text),
    the share in lines of ``short`` words or fewer."""
    have = {_flat(ln) for ln in fast.splitlines()}
    added = [ln for ln in replacement.splitlines() if _flat(ln) not in have]
    counts = [len(_WORD.findall(ln)) for ln in added]
    total = sum(counts)
    return sum(c for c in counts if c <= short) / total if total else 0.0


def guards() -> dict[str, Guard]:
    """The tests a replacement must pass (fast or current text, replacement) -> keep it."""
    out: dict[str, Guard] = {"never": lambda f, r: False}
    for t in (0.3, 0.5, 0.7, 0.9):
        out[f"contain>={t}"] = lambda f, r, t=t: containment(f, r) >= t
    for c in (0.15, 0.25, 0.4):
        out[f"chrome<={c}"] = lambda f, r, c=c: chrome_share(f, r) <= c
    for t in (0.5, 0.7):
        for c in (0.15, 0.25):
            out[f"contain>={t}, chrome<={c}"] = lambda f, r, t=t, c=c: (
                containment(f, r) >= t and chrome_share(f, r) <= c
            )
    return out


# fast pass, with the reruns (no resiliparse), the default's; whether the page declares itself
# an article; the texts of the page's links
Texts = tuple[str, str, str, bool, frozenset[str]]

_WCHAR = re.compile(r"\w")


def link_texts(html: str) -> frozenset[str]:
    """The text of every ``<a>`` element of the page, whitespace collapsed."""
    import lxml.html

    try:
        root = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return frozenset()
    return frozenset(t for a in root.iter("a") if len(t := _flat(a.text_content())) >= 2)


def link_share(fast: str, replacement: str, links: frozenset[str]) -> float:
    """Of the word characters the replacement adds (its lines that are not lines of the fast
    text), the share in lines whose word characters are >= 80% covered by link texts."""
    have = {_flat(ln) for ln in fast.splitlines()}
    total = linked = 0
    for ln in replacement.splitlines():
        line = _flat(ln)
        if not line or line in have:
            continue
        n = len(_WCHAR.findall(line))
        total += n
        if line in links:
            linked += n
            continue
        rest = line
        for t in sorted((t for t in links if t in line), key=len, reverse=True):
            rest = rest.replace(t, " ")
        if len(_WCHAR.findall(rest)) <= 0.2 * n:
            linked += n
    return linked / total if total else 0.0

_OG_ARTICLE = re.compile(
    r"<meta[^>]+(?:property=[\"']og:type[\"'][^>]*content=[\"']article"
    r"|content=[\"']article[\"'][^>]*property=[\"']og:type)",
    re.I,
)
_LD_ARTICLE = re.compile(
    r"\"@type\"\s*:\s*\"(?:News|Reportage|Analysis|Opinion)?Article\"|\"@type\"\s*:\s*\"BlogPosting\""
)


def declares_article(html: str) -> bool:
    """The page says it is an article: ``og:type`` article, or schema.org JSON-LD of type
    (News)Article or BlogPosting (forum posts, products and listings use other types)."""
    return bool(_OG_ARTICLE.search(html) or _LD_ARTICLE.search(html))


def candidates() -> dict[str, Callable[[Texts], str]]:
    """Every candidate: "none" is today's default (every replacement kept); "fallback: G"
    tests resiliparse's text against the text it would replace; "both: G" tests the
    ``fast=False`` rerun against the fast text too. "fallback: never" is resiliparse for
    empty output only; "article pages, fallback: G" guards only on pages that declare
    themselves articles."""
    out: dict[str, Callable[[Texts], str]] = {"none": lambda t: t[2]}
    for name, g in guards().items():
        out[f"fallback: {name}"] = lambda t, g=g: guarded(t, g, rerun=False)
        if name != "never":
            out[f"both: {name}"] = lambda t, g=g: guarded(t, g, rerun=True)
        if name in ("never", "chrome<=0.25", "contain>=0.7", "contain>=0.5, chrome<=0.25"):
            out[f"article pages, fallback: {name}"] = lambda t, g=g: (
                guarded(t, g, rerun=False) if t[3] else t[2]
            )
    for c in (0.3, 0.5, 0.7):
        out[f"fallback: links<={c}"] = lambda t, c=c: guarded(
            t, lambda f, r: link_share(f, r, t[4]) <= c, rerun=False)
    out["both: links<=0.5"] = lambda t: guarded(
        t, lambda f, r: link_share(f, r, t[4]) <= 0.5, rerun=True)
    return out


def guarded(t: Texts, guard: Guard, rerun: bool) -> str:
    """The text guards at the two replacements of ``extract_text`` return: the rerun's text
    replaces the fast text (tested when ``rerun``), resiliparse's replaces that; an empty
    text is always replaced."""
    fast, nofb, final = t[:3]
    cur = nofb
    if rerun and nofb != fast and fast.strip() and not guard(fast, nofb):
        cur = fast
    if final == nofb or not cur.strip():
        return final if final != nofb else cur
    return final if guard(cur, final) else cur


def _texts(args: tuple[str, str]) -> tuple[str, Texts]:
    from curator.extract.extract_html import extract_text

    pid, html = args
    return pid, (
        extract_text(html, fast=True, fallback=False),
        extract_text(html, fallback=False),
        extract_text(html),
        declares_article(html),
        link_texts(html),
    )


def texts(pages: list[Page], jobs: int) -> dict[str, Texts]:
    """The three texts of every page."""
    with Pool(jobs) as pool:
        return dict(pool.map(_texts, [(p.id, p.html) for p in pages], chunksize=4))


def main(argv: list[str] | None = None) -> int | tuple[dict, dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", dest="which", default="both", choices=["unseen", "gold", "both"])
    ap.add_argument("--split", default="tuning", choices=["heldout", "tuning", "all"])
    ap.add_argument("--only", action="append", help="score only these guards (with none)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    pages = load_pages(args.which, args.split)
    cands = candidates()
    if args.only:
        unknown = [g for g in args.only if g not in cands]
        if unknown:
            print(f"unknown guard(s) {unknown}; known: {list(cands)}")
            return 2
        cands = {k: v for k, v in cands.items() if k == "none" or k in args.only}
    got = texts(pages, args.jobs)
    reruns = sum(got[p.id][0] != got[p.id][1] for p in pages)
    fallbacks = sum(got[p.id][1] != got[p.id][2] for p in pages)
    replaced = sum(got[p.id][0] != got[p.id][2] for p in pages)
    print(
        f"{len(pages)} pages ({args.which}, {args.split}): the rerun changed the fast text on "
        f"{reruns}, resiliparse's text replaced it on {fallbacks}; final != fast on {replaced}"
    )
    scores: dict[str, dict[str, float]] = {}
    fams = sorted({p.family for p in pages})
    per_family: dict[str, dict[str, float]] = {}
    changed: dict[str, int] = {}
    for name, g in cands.items():
        s = {}
        n = 0
        for p in pages:
            out = g(got[p.id])
            n += out != got[p.id][2]
            s[p.id] = score_page(p, out, 0.0).score
        scores[name] = s
        changed[name] = n
        per_family[name] = {
            f: sum(s[p.id] for p in pages if p.family == f) / sum(p.family == f for p in pages)
            for f in fams
        }
    print(
        f"\nmean score per family (F1, or snippets judged right); pages where the guard returned "
        f"another text\n{'guard':34s} {'kept':>5s}" + "".join(f"{f[:11]:>12s}" for f in fams)
    )
    for name in cands:
        print(
            f"{name:28s} {changed[name]:5d}" + "".join(f"{per_family[name][f]:12.4f}" for f in fams)
        )
    fam = {p.id: p.family for p in pages}
    folds = leave_one_family_out(scores, fam, "none") if len(fams) > 1 else []
    if folds:
        print("\nleave-one-family-out (chosen by macro mean over the other families)")
        print(format_folds(folds, "none"))
    figures = {
        f"{name} ({changed[name]} pages kept fast)": " ".join(
            f"{f} {per_family[name][f]:.4f}" for f in fams
        )
        for name in cands
    }
    detail = {
        "set": args.which,
        "split": args.split,
        "pages": len(pages),
        "replaced": replaced,
        "reruns": reruns,
        "fallbacks": fallbacks,
        "per_family": per_family,
        "kept_fast": changed,
        "lofo": [f.__dict__ for f in folds],
    }
    return figures, detail


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
