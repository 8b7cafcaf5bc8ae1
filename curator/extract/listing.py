"""Listing pages: the text of a run of similar linked blocks ("cards") that extractors drop.

A listing or collection page (news index, search results, a shop's product grid) is mostly a
run of sibling blocks of the same kind, each a link plus a line or two of text. trafilatura
and resiliparse see link-dense blocks as navigation and drop them, keeping a comment box or a
teaser instead (precision of the page's gold 0.1, recall 0.03). :func:`listing_cards` finds
the largest such run and returns its text, one card per line; :func:`extract_text
<curator.extract.extract_html.extract_text>` appends it, with ``listing_ratio`` > 0 (off by
default), only when its own text is a small share of the page and holds few of the cards'
words. Measured (docs/extract.md#listing-pages): with 0.1, tuning pages 0.863 -> 0.872 (5 of
379 changed, all up; listings 0.719 -> 0.795), held-out pages 0.865 -> 0.858 (5 of 251
changed, 4 down; listings 0.657 -> 0.610), hence off.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from curator.extract.words import TOKEN, count_words

#: Fewest sibling blocks of one kind (tag and first class) that make a listing.
MIN_CARDS = 4
#: Mean words per card at least this (menus and tag clouds are one or two words a link).
MIN_CARD_WORDS = 5
#: Share of the cards that hold a link (a listing's cards each point somewhere).
LINKED_SHARE = 0.8
#: The cards hold at least this share of the ``<body>``'s words...
BODY_SHARE = 0.3
#: ...and this many times the words of the extracted text...
OVER_TEXT = 3.0
#: ...of which the extracted text holds under this share (else it already has the list).
MAX_COVERED = 0.3

_SKIP = ("script", "style", "noscript", "svg", "template")
_CHROME = frozenset({"nav", "header", "footer", "aside"})


def _kind(el: Any) -> tuple[str, str]:
    cls = (el.get("class") or "").split()
    return el.tag, cls[0] if cls else ""


def _words(text: str) -> Counter[str]:
    return Counter(TOKEN.findall(text.lower()))


def listing_cards(html: str, text: str, text_ratio: float) -> str:
    """The cards' text (one per line) when ``html`` is a listing whose cards ``text`` misses,
    else ''. Called only where ``text`` is short, so its cost (a parse and a walk of the
    page, about 7 ms) is paid on few pages."""
    from lxml.etree import strip_elements
    from trafilatura.utils import load_html

    tree = load_html(html)
    if tree is None:
        return ""
    strip_elements(tree, *_SKIP, with_tail=False)
    body = tree.find("body")
    body_words = count_words((body if body is not None else tree).text_content())
    n_text = count_words(text)
    if not body_words or n_text >= text_ratio * body_words:
        return ""
    best: list[str] = []
    best_words = 0
    for el in tree.iter():
        if not isinstance(el.tag, str):
            continue
        kids = [k for k in el if isinstance(k.tag, str)]
        if len(kids) < MIN_CARDS:
            continue
        kind, n = Counter(_kind(k) for k in kids).most_common(1)[0]
        if n < MIN_CARDS:
            continue
        same = [k for k in kids if _kind(k) == kind]
        linked = sum(1 for k in same if k.tag == "a" or k.find(".//a") is not None)
        if linked < LINKED_SHARE * n:
            continue
        cards = [" ".join(" ".join(k.itertext()).split()) for k in same]
        words = sum(count_words(c) for c in cards)
        if words <= best_words or words < MIN_CARD_WORDS * n:
            continue
        if el.tag in _CHROME or any(a.tag in _CHROME for a in el.iterancestors()):
            continue
        best, best_words = cards, words
    if best_words < BODY_SHARE * body_words or best_words < OVER_TEXT * n_text:
        return ""
    card_words = _words(" ".join(best))
    covered = sum((card_words & _words(text)).values()) / max(1, sum(card_words.values()))
    if covered >= MAX_COVERED:
        return ""
    return "\n".join(c for c in best if c)
