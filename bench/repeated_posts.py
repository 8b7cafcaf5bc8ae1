"""Repeated post bodies as a recall rescue: measured, not kept
(docs/extract.md#repeated-post-bodies).

    python bench/repeated_posts.py            # ~15 s on 2 cores: both splits

Question: forums lose the most F1 of any page type (tuning: 81 pages at 0.813,
0.040 of the 0.128 that the default loses overall). On some threads trafilatura keeps only the
first post (precision 1.0, recall 0.1-0.5), and resiliparse's main-content pass, the yardstick of
the fallbacks, drops the replies as comments. A thread's posts are elements of one (tag, class)
signature at one depth of the tree, each holding prose. Does taking those elements' text, where
the default text lies inside them and is far shorter, lift F1 without hurting other page types?

Rule (fixed on the 379 tuning pages, then the held-out pages scored once):

* candidate groups: every (tag, sorted class tokens) signature with >= 2 outermost elements, all
  at one depth, >= 20 words, distinct texts (>= 90%), link words <= 30%, no element holding
  over 80% of the group's words;
* the group picked: highest prose words (text runs of >= 5 words) - 2 x short-run words -
  link words; then the deepest group of the same count inside it that keeps >= 50% of its prose
  (post bodies rather than post containers with author lines);
* applied only when the default text is under 30% of the ``<body>``'s words, >= 80% of its
  tokens lie in the group, and the group has >= 2x its words.

Upper bound on tuning, with the page type known (forums only, best candidate per page): forums
0.813 -> 0.956. The printed result is the rule without knowing the type.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter, defaultdict
from multiprocessing import Pool
from typing import Any

from bench.common import bench_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.gold_set import bootstrap, load_gold, prf, tokens  # noqa: E402

_WORD = re.compile(r"\w+")
_SKIP = ("script", "style", "noscript", "template", "svg", "head", "button", "select", "option",
         "textarea", "iframe")


def groups(html: str) -> list[dict[str, Any]]:
    """Every candidate group of the page: elements of one (tag, class) signature, outermost
    only, with the figures the rule reads."""
    from trafilatura.utils import load_html

    root = load_html(html)
    if root is None:
        return []
    for e in list(root.iter(*_SKIP)):
        if e.getparent() is not None:
            e.drop_tree()
    by_sig: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for e in root.iter():
        cls = e.get("class") if isinstance(e.tag, str) else None
        if cls and cls.split():
            by_sig[(e.tag, " ".join(sorted(cls.split())))].append(e)
    out = []
    for sig, els in by_sig.items():
        if len(els) < 2:
            continue
        ids = {id(e) for e in els}
        top = [e for e in els if not any(id(a) in ids for a in e.iterancestors())]
        if len(top) < 2:
            continue
        texts = [" ".join(" ".join(e.itertext()).split()) for e in top]
        words = [len(_WORD.findall(t)) for t in texts]
        total = sum(words)
        if total < 20:
            continue
        link = sum(len(_WORD.findall(" ".join(a.itertext()))) for e in top for a in e.iter("a"))
        prose = short = 0
        for e in top:
            for t in e.itertext():
                k = len(_WORD.findall(t))
                prose, short = (prose + k, short) if k >= 5 else (prose, short + k)
        depths = {sum(1 for _ in e.iterancestors()) for e in top}
        out.append({"sig": sig, "n": len(top), "words": total, "link": link / total,
                    "distinct": len(set(texts)) / len(texts), "maxshare": max(words) / total,
                    "same_depth": len(depths) == 1, "depth": min(depths), "prose": prose,
                    "short": short, "text": "\n".join(texts)})
    return out


def pick(cands: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The post group by the rule in the module docstring, or None."""
    ok = [c for c in cands if c["link"] <= 0.3 and c["distinct"] >= 0.9
          and c["maxshare"] <= 0.8 and c["same_depth"]]
    if not ok:
        return None
    best = max(ok, key=lambda c: c["prose"] - 2 * c["short"] - c["link"] * c["words"])
    outer = Counter(best["text"].lower().split())
    inner = [c for c in cands
             if c["n"] == best["n"] and c["depth"] > best["depth"]
             and c["prose"] >= 0.5 * best["prose"] and c["distinct"] >= 0.8
             and sum((Counter(c["text"].lower().split()) & outer).values())
             >= 0.98 * len(c["text"].split())]
    return max(inner, key=lambda c: (c["depth"], c["prose"])) if inner else best


def apply(html: str, text: str) -> str | None:
    """The group's text where the rule fires on this page and default text, else None."""
    from curator.extract.adapters.resiliparse_text import body_words, text_and_tree

    ours = tokens(text)
    n_ours = sum(ours.values())
    if n_ours >= 0.3 * body_words(text_and_tree(html)[1]):
        return None
    best = pick(groups(html))
    if best is None or best["words"] < 2 * n_ours:
        return None
    inside = sum((ours & tokens(best["text"])).values()) / max(n_ours, 1)
    return best["text"] if inside >= 0.8 else None


def _page(args: tuple[str, str, str, str, str, str | None]
          ) -> tuple[str, str, str, float, float]:
    from curator.extract.extract_html import extract_text

    pid, html, gold, kind, lang, text = args
    text = extract_text(html) if text is None else text
    new = apply(html, text)
    f0 = prf(text, gold)[2]
    return pid, kind, lang, f0, prf(new, gold)[2] if new is not None else f0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", action="append", choices=["tuning", "heldout", "outside"],
                    help="outside: WCXB pages of hosts no gold page has (bench/line_filter.py's "
                         "training pages; needs the WCXB mirror)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    for split in args.split or ["tuning", "heldout"]:
        if split == "outside":
            from bench.line_filter import training_pages

            todo = [(p["id"], p["html"], p["gold"], p["type"], p["lang"], p["text"])
                    for p in training_pages(args.jobs)]
        else:
            todo = [(p.id, p.html, p.gold, p.type, p.lang, None) for p in load_gold(split)]
        with Pool(args.jobs) as pool:
            rows = pool.map(_page, todo, chunksize=4)
        print(f"== {split}: {len(rows)} pages; pages the rule changes (F1 before -> after):")
        for pid, kind, lang, f0, f1 in rows:
            if f1 != f0:
                print(f"   {f0:.2f} -> {f1:.2f}  {kind:8s} {lang}  {pid}")
        by: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for _, kind, lang, f0, f1 in rows:
            for key in ("ALL", kind, "English" if lang == "en" else "non-English"):
                by[key].append((f0, f1))
        for key, v in sorted(by.items(), key=lambda kv: -len(kv[1])):
            d = [b - a for a, b in v]
            lo, hi = bootstrap(d)
            print(f"   {key:12s} {len(v):4d}  {sum(a for a, _ in v) / len(v):.4f} -> "
                  f"{sum(b for _, b in v) / len(v):.4f}  paired {sum(d) / len(d):+.4f} "
                  f"[{lo:+.4f}, {hi:+.4f}]")


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
