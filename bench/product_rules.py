"""Rules tried for product and collection pages (tuning split only).

    python bench/product_rules.py    # ~2 min on one core; prints the table in docs/extract.md

Each candidate changes one step of :func:`curator.extract.extract_html.extract_text` and is
scored with the bench's token F1 against the default on the 379 tuning pages (per type,
pages up/down). None was kept (docs/extract.md#products-and-collections), so the held-out
split was not run.
"""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.common import bench_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.gold_set import GoldPage, load_gold, prf  # noqa: E402
from curator.extract import extract_html as E  # noqa: E402
from curator.extract import html_repair, prune_ui  # noqa: E402
from curator.extract.adapters import trafilatura_text  # noqa: E402

#: a page that declares itself a product: Open Graph ``og:type`` product, or schema.org
#: ``Product`` (JSON-LD or microdata). Tuning: 29 of 35 product pages, 5 of 22 collections,
#: 2 of 27 listings, 1 of 161 articles.
PRODUCT = re.compile(
    r"<meta[^>]+property=[\"']og:type[\"'][^>]*content=[\"'](?:og:)?product"
    r"|<meta[^>]+content=[\"'](?:og:)?product[\"'][^>]*property=[\"']og:type"
    r"|\"@type\"\s*:\s*\"Product\"|itemtype=[\"']https?://schema\.org/Product[\"']", re.I)
#: screen-reader-only text (shown to assistive technology, not on screen)
SCREEN_READER = frozenset({
    "sr-only", "screen-reader-text", "visually-hidden", "visuallyhidden", "element-invisible",
    "screen-reader-only", "u-visually-hidden", "visually-hidden--inline", "u-hiddenvisually",
    "wt-screen-reader-only", "u-sr-only"})
#: customer reviews, ratings, Q&A and seller feedback widgets
REVIEWS = re.compile(r"(?:^|[-_])reviews?(?:$|[-_])|yotpo|okendo|jdgm|stamped|trustpilot|feefo"
                     r"|^bv[-_]|bvseo|feedback|testimonial|^ugc|qna|questions", re.I)


@contextmanager
def dropping(test: Callable[[list[str]], bool]) -> Iterator[None]:
    """Drop the elements whose class/id tokens pass ``test`` before trafilatura runs (not one
    that holds the ``<h1>``)."""
    orig = trafilatura_text.prepare_tree

    def prep(tree: Any, shape: bool, html: str, post_meta: bool = False) -> None:
        for el in tree.xpath("//body//*[@class or @id]"):
            if el.tag in ("main", "article") or el.getparent() is None:
                continue
            toks = (el.get("class") or "").split() + (el.get("id") or "").split()
            if test(toks) and not el.xpath(".//h1"):
                prune_ui.drop_tree(el)
        orig(tree, shape, html, post_meta)

    trafilatura_text.prepare_tree = prep
    try:
        yield
    finally:
        trafilatura_text.prepare_tree = orig


def first_rerun_in_default_balance(html: str) -> str:
    """The default, but the rerun for a text under half of resiliparse's words runs in
    trafilatura's default balance (as the ``<body>`` and thin-page reruns do)."""
    html = html_repair.close_noscript_iframes(html)
    E.prepare("trafilatura")
    fast = trafilatura_text.page_text(html, True).strip()
    alt, rtree = E._yardstick(html)
    del rtree
    if fast and E.count_words(fast) >= 0.5 * E.count_words(alt):
        return E.extract_text(html)
    text = trafilatura_text.page_text(html, False, "default").strip() or fast
    return alt if not text or E.count_words(text) < 0.5 * E.count_words(alt) else text


def candidates() -> dict[str, tuple[Callable[[GoldPage], bool], Callable[[str], str]]]:
    """name -> (which pages it applies to, extraction)."""
    every: Callable[[GoldPage], bool] = lambda p: True  # noqa: E731
    product: Callable[[GoldPage], bool] = lambda p: bool(PRODUCT.search(p.html))  # noqa: E731

    def with_drop(test: Callable[[list[str]], bool]) -> Callable[[str], str]:
        def run(html: str) -> str:
            with dropping(test):
                return E.extract_text(html)
        return run

    return {
        "screen-reader-only text dropped": (
            every, with_drop(lambda t: any(x.lower() in SCREEN_READER for x in t))),
        "declared products: default balance": (
            product, lambda h: E.extract_text(h, balance="default")),
        "declared products: precision balance": (
            product, lambda h: E.extract_text(h, balance="precision")),
        "declared products: fast=True, default balance": (
            product, lambda h: E.extract_text(h, fast=True, balance="default")),
        "declared products: fast=False, default balance": (
            product, lambda h: E.extract_text(h, fast=False, balance="default")),
        "declared products: reviews/Q&A dropped": (
            product, with_drop(lambda t: any(REVIEWS.search(x) for x in t))),
        "first rerun in default balance": (every, first_rerun_in_default_balance),
    }


def main() -> int:
    pages = load_gold("tuning")
    base = {p.id: prf(E.extract_text(p.html), p.gold)[2] for p in pages}
    types = ["product", "collection", "listing", "forum", "article"]
    print(f"{'candidate':48s} {'all':>7s} " + " ".join(f"{t:>10s}" for t in types)
          + "   up/down")
    row = {t: [base[p.id] for p in pages if p.type == t] for t in types}
    print(f"{'default':48s} {sum(base.values()) / len(pages):7.4f} "
          + " ".join(f"{sum(v) / len(v):10.4f}" for v in row.values()))
    for name, (applies, fn) in candidates().items():
        f1 = dict(base)
        for p in pages:
            if applies(p):
                f1[p.id] = prf(fn(p.html), p.gold)[2]
        by: dict[str, list[float]] = defaultdict(list)
        for p in pages:
            by[p.type].append(f1[p.id])
        up = sum(f1[k] > base[k] + 0.003 for k in base)
        down = sum(f1[k] < base[k] - 0.003 for k in base)
        print(f"{name:48s} {sum(f1.values()) / len(pages):7.4f} "
              + " ".join(f"{sum(by[t]) / len(by[t]):10.4f}" for t in types) + f"   {up}/{down}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
