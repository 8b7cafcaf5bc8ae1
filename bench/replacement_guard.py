"""Guards on the default's replacement of its first (fast) text, chosen leave-one-family-out.

    python -m bench.replacement_guard --split tuning            # choose: tuning pages only
    python -m bench.replacement_guard --split heldout --only "contain>=0.5"   # score once

The default extraction first runs trafilatura's fast pass; a ``fast=False`` rerun or
resiliparse's text then replaces that text when it looks short. On video, slideshow and
carousel pages the replacement is the whole page (title, breadcrumb, captions, "Share"), where
the fast text was the article. A guard keeps the replacement only when it holds the same
article and brings no chrome; otherwise the fast text stays.

Per page this bench computes the fast text (``extract_text(fast=True, fallback=False)``: the
first pass alone) and the default's final text (``extract_text()``), then applies each
candidate guard to the pair: exactly what a guard at the end of ``extract_text`` returns.
Candidates:

- ``contain>=T``: keep the replacement if it holds >= T of the fast text's distinct words;
- ``chrome<=R``: keep it if, of the words it adds (lines not in the fast text), at most R are
  in lines of three words or fewer (menus, breadcrumbs, captions, "Share", "Embed");
- ``contain>=T, chrome<=R``: both.

An empty fast text always takes the replacement. Families: both sets (bench/family_quality.py);
scores: F1 where a full gold exists, else the share of snippets judged right. Leave-one-family-
out (bench/lofo.py) reports, for each family, the guard chosen on all other families and its
score on the one left out.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from multiprocessing import Pool

from bench.common import bench_main
from bench.family_quality import Page, load_pages, score_page
from bench.lofo import format_folds, leave_one_family_out

_WORD = re.compile(r"\w+")
Guard = Callable[[str, str], bool]


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def containment(fast: str, replacement: str) -> float:
    """Share of the fast text's distinct words that the replacement holds."""
    fw = _words(fast)
    return len(fw & _words(replacement)) / len(fw) if fw else 1.0


def chrome_share(fast: str, replacement: str, short: int = 3) -> float:
    """Of the words the replacement adds (its lines that are not lines of the fast text),
    the share in lines of ``short`` words or fewer."""
    have = {" ".join(ln.split()) for ln in fast.splitlines()}
    added = [ln for ln in replacement.splitlines() if " ".join(ln.split()) not in have]
    counts = [len(_WORD.findall(ln)) for ln in added]
    total = sum(counts)
    return sum(c for c in counts if c <= short) / total if total else 0.0


def candidates() -> dict[str, Guard]:
    """Every guard scored; "none" is today's default (the replacement always kept)."""
    out: dict[str, Guard] = {"none": lambda f, r: True}
    for t in (0.3, 0.5, 0.7, 0.9):
        out[f"contain>={t}"] = lambda f, r, t=t: containment(f, r) >= t
    for c in (0.15, 0.25, 0.4):
        out[f"chrome<={c}"] = lambda f, r, c=c: chrome_share(f, r) <= c
    for t in (0.5, 0.7):
        for c in (0.25, 0.4):
            out[f"contain>={t}, chrome<={c}"] = lambda f, r, t=t, c=c: (
                containment(f, r) >= t and chrome_share(f, r) <= c
            )
    return out


def guarded(fast: str, final: str, guard: Guard) -> str:
    """The text a guard at the end of ``extract_text`` returns."""
    if final == fast or not fast.strip():
        return final
    return final if guard(fast, final) else fast


def _texts(args: tuple[str, str]) -> tuple[str, str, str, float]:
    from curator.extract.extract_html import extract_text

    pid, html = args
    t0 = time.process_time()
    fast = extract_text(html, fast=True, fallback=False)
    final = extract_text(html)
    return pid, fast, final, time.process_time() - t0


def texts(pages: list[Page], jobs: int) -> dict[str, tuple[str, str]]:
    """Fast and final text of every page."""
    with Pool(jobs) as pool:
        rows = pool.map(_texts, [(p.id, p.html) for p in pages], chunksize=4)
    return {pid: (fast, final) for pid, fast, final, _ in rows}


def main(argv: list[str] | None = None) -> int | tuple[dict, dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", dest="which", default="both", choices=["unseen", "gold", "both"])
    ap.add_argument("--split", default="tuning", choices=["heldout", "tuning", "all"])
    ap.add_argument("--only", action="append", help="score only these guards (with none)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    pages = load_pages(args.which, args.split)
    guards = candidates()
    if args.only:
        unknown = [g for g in args.only if g not in guards]
        if unknown:
            print(f"unknown guard(s) {unknown}; known: {list(guards)}")
            return 2
        guards = {k: v for k, v in guards.items() if k == "none" or k in args.only}
    got = texts(pages, args.jobs)
    replaced = sum(got[p.id][0] != got[p.id][1] for p in pages)
    print(
        f"{len(pages)} pages ({args.which}, {args.split}); the default replaced the fast "
        f"text on {replaced}"
    )
    scores: dict[str, dict[str, float]] = {}
    fams = sorted({p.family for p in pages})
    per_family: dict[str, dict[str, float]] = {}
    changed: dict[str, int] = {}
    for name, g in guards.items():
        s = {}
        n = 0
        for p in pages:
            fast, final = got[p.id]
            out = guarded(fast, final, g)
            n += out != final
            s[p.id] = score_page(p, out, 0.0).score
        scores[name] = s
        changed[name] = n
        per_family[name] = {
            f: sum(s[p.id] for p in pages if p.family == f) / sum(p.family == f for p in pages)
            for f in fams
        }
    print(
        f"\nmean score per family (F1, or snippets judged right); pages where the guard kept "
        f"the fast text\n{'guard':28s} {'kept':>5s}" + "".join(f"{f[:11]:>12s}" for f in fams)
    )
    for name in guards:
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
        for name in guards
    }
    detail = {
        "set": args.which,
        "split": args.split,
        "pages": len(pages),
        "replaced": replaced,
        "per_family": per_family,
        "kept_fast": changed,
        "lofo": [f.__dict__ for f in folds],
    }
    return figures, detail


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
