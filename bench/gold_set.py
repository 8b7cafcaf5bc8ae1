"""The extraction gold set and its score: ``bench/gold/pages.jsonl.zst`` (630 real pages; origins,
licences and how each gold was made in bench/gold/SOURCES.md) and bag-of-tokens precision,
recall and F1 against a page's gold text.

The benches that score extraction (extraction_quality, line_filter, peer_benchmarks, ...) and
the extraction tests read pages and score them through this module alone, so that none of them
imports another bench.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLD = os.path.join(REPO, "bench", "gold", "pages.jsonl.zst")
_TOKEN = re.compile(r"\w+")
# Scripts written without spaces: score them per character.
_NOSPACE = re.compile(
    r"[\u0e00-\u0e7f\u1000-\u109f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    r"\uac00-\ud7af]"
)


@dataclass
class GoldPage:
    """One page with its gold main text and labels."""

    id: str
    html: str
    gold: str
    lang: str = "en"
    type: str = "article"
    split: str = "tuning"
    source: str = ""
    url: str = ""


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


def bootstrap(values: list[float], n: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of the mean."""
    if not values:
        return 0.0, 0.0
    rng = random.Random(seed)
    k = len(values)
    means = sorted(sum(values[rng.randrange(k)] for _ in range(k)) / k for _ in range(n))
    return means[int(0.025 * n)], means[int(0.975 * n) - 1]


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


def load_gold(split: str = "heldout", path: str = GOLD) -> list[GoldPage]:
    """The gold pages of one split (``tuning``, ``heldout`` or ``all``)."""
    import zstandard

    with open(path, "rb") as f:
        raw = zstandard.ZstdDecompressor().stream_reader(f).read()
    rows = [json.loads(line) for line in raw.decode("utf-8").split("\n") if line]
    return [
        GoldPage(
            r["id"],
            r["html"],
            r["gold"],
            r["lang"],
            r["type"],
            r["split"],
            r["source"],
            r.get("url", ""),
        )
        for r in rows
        if split == "all" or r["split"] == split
    ]
