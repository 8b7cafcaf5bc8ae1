"""resiliparse's text as a second opinion line by line, and comment sections named anywhere in
a class or id: measured, not kept (docs/extract.md#a-second-opinion-per-line).

    python bench/second_opinion.py                     # tuning, ~1 min on 2 cores
    python bench/second_opinion.py --split outside     # 1,544 WCXB pages, ~4 min

Question. The default already computes resiliparse's main-content text of
every page (the yardstick of its reruns). The per-page oracle over the extractors is ~0.90 on
tuning, so choosing one text per page cannot reach the goal; a line-level combination can
exceed a per-page choice. Two ways, each with a few thresholds:

* ``drop``: a line of the default's text with <= ``maxw`` tokens goes when under ``theta`` of
  its tokens occur in resiliparse's text (two extractors disagreeing on a short line: page
  furniture?);
* ``add``: a line of resiliparse's text with >= ``minw`` tokens is appended when under
  ``theta`` of its tokens occur in the default's text (prose the default missed?).

And one prune: trafilatura removes comment sections (comments off) only where the class
attribute *starts* with "comment" (``^[Cc]omment(?!ary)``); a Spanish news page keeps 30 reader
comments under ``<div id="sf_comment_list">``. ``prune`` drops div/section/details/ol/ul/aside
elements with a class or id token holding "comment(s)" (or comentario, kommentar, commentaire,
commenti, reacties, komentarz...) between separators, holding at most half of the page's text,
on pages trafilatura does not take for a forum thread (where posts are named as comments).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from multiprocessing import Pool
from typing import Any

from bench.common import bench_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.gold_set import _NOSPACE, _TOKEN, bootstrap, load_gold, prf  # noqa: E402

COMMENT_TOKEN = re.compile(
    r"(?:^|[-_])(?:comments?|comentarios?|comentários?|kommentare?|kommentarer|commentaires?"
    r"|commenti|commento|reacties|komentarze?|komentáře)(?:$|[-_])", re.IGNORECASE)
PRUNE_TAGS = ("div", "section", "details", "ol", "ul", "aside")


def toks(text: str) -> list[str]:
    """The bench's tokens in order (lower-cased words, a token per character without spaces)."""
    out: list[str] = []
    for t in _TOKEN.findall(text.lower()):
        out.extend(t) if _NOSPACE.search(t) else out.append(t)
    return out


def share_in(line: str, ref: set[str]) -> float:
    """Share of ``line``'s tokens that occur in ``ref`` (1.0 for a line without tokens)."""
    t = toks(line)
    return sum(x in ref for x in t) / len(t) if t else 1.0


def drop(text: str, alt: str, theta: float, maxw: int) -> str:
    ref = set(toks(alt))
    if not ref:
        return text
    return "\n".join(ln for ln in text.split("\n")
                     if not (0 < len(toks(ln)) <= maxw and share_in(ln, ref) < theta))


def add(text: str, alt: str, theta: float, minw: int) -> str:
    ref = set(toks(text))
    extra = [ln for ln in alt.split("\n") if len(toks(ln)) >= minw and share_in(ln, ref) < theta]
    return "\n".join([text, *extra]) if extra else text


def prune_comments(tree: Any) -> int:
    """Drop the comment sections :data:`COMMENT_TOKEN` names (see the module docstring);
    returns how many went."""
    from trafilatura.core import _forum_thread_page

    from curator.extract.prune_ui import drop_tree

    if _forum_thread_page(tree):
        return 0
    body = tree.find(".//body")
    total = sum(len(t) for t in (body if body is not None else tree).itertext())
    gone: list[Any] = []
    for el in tree.iter(*PRUNE_TAGS):
        names = (el.get("class") or "").split() + (el.get("id") or "").split()
        if not any(COMMENT_TOKEN.search(n) for n in names):
            continue
        if any(a in gone for a in el.iterancestors()):
            continue
        if sum(len(t) for t in el.itertext()) <= 0.5 * total:
            gone.append(el)
    for el in gone:
        drop_tree(el)
    return len(gone)


VARIANTS: dict[str, Callable[[dict], str]] = {
    "drop, theta 0.5, lines <= 3 tokens": lambda p: drop(p["text"], p["alt"], 0.5, 3),
    "drop, theta 0.5, lines <= 6 tokens": lambda p: drop(p["text"], p["alt"], 0.5, 6),
    "drop, theta 0.2, lines <= 12 tokens": lambda p: drop(p["text"], p["alt"], 0.2, 12),
    "drop, theta 0.5, every line": lambda p: drop(p["text"], p["alt"], 0.5, 10**9),
    "add, theta 0.2, lines >= 20 tokens": lambda p: add(p["text"], p["alt"], 0.2, 20),
    "add, theta 0.5, lines >= 10 tokens": lambda p: add(p["text"], p["alt"], 0.5, 10),
    "prune comment sections": lambda p: p["pruned"],
}


def _page(args: tuple[str, str, str, str, str]) -> dict:
    from curator.extract import extract_html as eh
    from curator.extract import html_repair
    from curator.extract.adapters import trafilatura_text

    pid, html, gold, kind, lang = args
    text = eh.extract_text(html)
    alt, rtree = eh._yardstick(html_repair.close_noscript_iframes(html))
    del rtree
    orig = trafilatura_text.prepare_tree

    def pruned(tree: Any, *a: Any, **k: Any) -> None:
        orig(tree, *a, **k)
        prune_comments(tree)

    trafilatura_text.prepare_tree = pruned
    try:
        with_prune = eh.extract_text(html)
    finally:
        trafilatura_text.prepare_tree = orig
    return {"id": pid, "gold": gold, "type": kind, "lang": lang, "text": text, "alt": alt,
            "pruned": with_prune}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", action="append", choices=["tuning", "heldout", "outside"],
                    help="outside: WCXB pages of hosts no gold page has (needs the WCXB mirror)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    for split in args.split or ["tuning"]:
        if split == "outside":
            from bench.line_filter import training_pages

            todo = [(p["id"], p["html"], p["gold"], p["type"], p["lang"])
                    for p in training_pages(args.jobs, extract=False)]
        else:
            todo = [(p.id, p.html, p.gold, p.type, p.lang) for p in load_gold(split)]
        with Pool(args.jobs) as pool:
            pages = pool.map(_page, todo, chunksize=4)
        base = [prf(p["text"], p["gold"])[2] for p in pages]
        print(f"== {split}: {len(pages)} pages, default F1 {sum(base) / len(base):.4f}")
        print("| variant | F1 | paired [95% CI] | pages up / down | worst type (paired) |")
        print("|---|---|---|---|---|")
        for name, fn in VARIANTS.items():
            f = [prf(fn(p), p["gold"])[2] for p in pages]
            d = [b - a for a, b in zip(base, f)]
            lo, hi = bootstrap(d)
            by: dict[str, list[float]] = defaultdict(list)
            for p, x in zip(pages, d):
                by[p["type"]].append(x)
                by["non-English" if p["lang"] != "en" else "English"].append(x)
            worst = min(by, key=lambda k: sum(by[k]) / len(by[k]))
            print(f"| {name} | {sum(f) / len(f):.4f} | {sum(d) / len(d):+.4f} "
                  f"[{lo:+.4f}, {hi:+.4f}] | {sum(x > 0.001 for x in d)} / "
                  f"{sum(x < -0.001 for x in d)} | {worst} "
                  f"{sum(by[worst]) / len(by[worst]):+.3f} |", flush=True)


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
