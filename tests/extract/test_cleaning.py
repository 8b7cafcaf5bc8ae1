"""The fast path's ``tree_cleaning`` with its per-tag deletion walks run only for the tags the
tree has (curator/extract/fastpath/htmlprocessing.py): the same tree as trafilatura's function
on real pages and on random trees whose cleaned tags nest in each other (lxml's walk then stops
early), and a handful of walks instead of fifty."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from lxml import etree
from lxml import html as lhtml
from lxml.etree import tostring

from curator.extract import tree_edits
from curator.extract.fastpath import htmlprocessing, load_html
from tests.extract.helpers_extract import gold_and_doc_pages

#: the cleaned tags that nest in pages (and in each other), a few kept ones, text and tails
_TAGS = ["aside", "nav", "footer", "figure", "svg", "use", "button", "label", "noscript",
         "object", "select", "option", "script", "div", "p", "span", "table", "form"]


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return gold_and_doc_pages(every=15)


def _options(**kw: Any) -> Any:
    from trafilatura.settings import Extractor

    return Extractor(**kw)


#: every focus, tables and images on and off
OPTION_SETS = [{"fast": True, "precision": focus == "precision", "recall": focus == "recall",
                "tables": tables, "images": images}
               for focus in ("precision", "balanced", "recall") for tables in (True, False)
               for images in (False, True)]


def _state(tree: Any) -> tuple[Any, ...]:
    """What a reader sees of ``tree``: its serialisation (tails included), every element's
    tag, text and tail, and its text nodes (an XPath sees each node)."""
    return (tostring(tree, encoding="unicode", with_tail=True),
            [(el.tag if isinstance(el.tag, str) else "#other", el.text, el.tail)
             for el in tree.iter()],
            int(tree.xpath("count(descendant::text())")))


def _both(make: Any, options: Any) -> tuple[Any, Any]:
    """``tree_cleaning`` of two equal trees (``make()``): trafilatura's and curator's."""
    import trafilatura.htmlprocessing as h

    return h.tree_cleaning(make(), options), htmlprocessing.tree_cleaning(make(), options)


def test_same_tree_as_trafilatura_on_real_pages(pages: list[str]) -> None:
    """Each page parsed as extract_text parses it, cleaned under 12 option sets; the pages
    include ones where lxml's walk stops at a nested element (counted)."""
    stopped = 0
    for html in pages:
        tree = load_html(html)
        if tree is None:
            continue
        tree_edits.prepare_tree(tree, True, html)
        stopped += _stops_early(tree)
        for kw in OPTION_SETS:
            stock, ours = _both(lambda t=tree: copy.copy(t), _options(**kw))
            assert _state(stock) == _state(ours)
    assert stopped >= 3


def _stops_early(tree: Any) -> bool:
    """Whether some cleaned tag's element holds one of its own tag (the stock walk of that
    tag then ends inside the deleted subtree)."""
    from trafilatura.settings import MANUALLY_CLEANED

    return any(next(el.iterdescendants(el.tag), None) is not None
               for el in tree.iter(*MANUALLY_CLEANED) if len(el))


def _random_html(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(0, 6 if depth else 12)):
        words = rng.choice(["", " ", "x", "\n", "Text here.", "a&amp;b"])
        if depth < 5 and rng.random() < 0.6:
            tag = rng.choice(_TAGS)
            attrs = ' role="presentation"' if tag == "table" and rng.random() < 0.3 else ""
            parts.append(f"<{tag}{attrs}>{words}{_random_html(rng, depth + 1)}</{tag}>")
        elif rng.random() < 0.2:
            parts.append(f"<!-- {words} -->")
        parts.append(rng.choice(["", " ", "tail", "\n"]))
    return "".join(parts)


@pytest.mark.parametrize("seed", range(300))
def test_same_tree_as_trafilatura_on_random_trees(seed: int) -> None:
    """Random nestings of cleaned and kept tags (parsed by lxml's HTML parser, and built
    directly, where the parser would close a tag: <p> in <p>, <form> in <form>), cleaned
    from the root and from an element inside a page (the walk's top has a parent)."""
    rng = random.Random(seed)
    body = _random_html(rng)
    parsed = lhtml.document_fromstring(f"<html><body>{body}</body></html>")
    built = _built(rng)
    kw = OPTION_SETS[seed % len(OPTION_SETS)]
    for make in (lambda: copy.copy(parsed), lambda: copy.copy(built),
                 lambda: _inside(parsed)):
        stock, ours = _both(make, _options(**kw))
        assert _state(stock) == _state(ours)


def _inside(doc: Any) -> Any:
    """A copy of ``doc``'s <body> still in its document (its parent is <html>)."""
    return copy.copy(doc).find("body")


def _built(rng: random.Random) -> Any:
    """A tree built element by element: any tag in any other, itself included."""
    root = lhtml.Element("html")
    nodes = [etree.SubElement(root, "body")]
    for _ in range(rng.randint(1, 40)):
        el = etree.SubElement(rng.choice(nodes), rng.choice(_TAGS))
        el.text = rng.choice([None, "", "x", "some text"])
        el.tail = rng.choice([None, "", "t", " tail "])
        nodes.append(el)
    return root


def test_the_stock_walk_ends_inside_a_nested_element() -> None:
    """What the twin emulates: the aside after a nested one stays (trafilatura's own
    function, and curator's)."""
    html = ("<html><body><aside>a<aside>b</aside></aside><p>keep</p><aside>c</aside>"
            "</body></html>")
    stock, ours = _both(lambda: lhtml.document_fromstring(html), _options())
    assert _state(stock) == _state(ours)
    assert [el.text for el in ours.iter("aside")] == ["c"]


class _Counting(lhtml.HtmlElement):
    walks: list[tuple[Any, ...]] = []

    def iter(self, *tags: Any) -> Any:  # type: ignore[override]
        _Counting.walks.append(tags)
        return super().iter(*tags)


def test_walks_only_for_the_tags_the_page_has(pages: list[str]) -> None:
    """trafilatura's function walks the tree once per cleaned tag (about fifty times);
    curator's once for all of them, then once per cleaned tag the page has."""
    import trafilatura.htmlprocessing as h
    from trafilatura.settings import MANUALLY_CLEANED

    parser = lhtml.HTMLParser()
    parser.set_element_class_lookup(etree.ElementDefaultClassLookup(element=_Counting))
    tree = lhtml.document_fromstring(pages[0], parser=parser)
    cleaned = [t for t in MANUALLY_CLEANED if t != "form"]  # forms: _handle_forms
    has = {el.tag for el in tree.iter(*cleaned)}
    assert 0 < len(has) < len(cleaned) / 3

    def walks(fn: Any) -> list[tuple[Any, ...]]:
        _Counting.walks = []
        fn(copy.copy(tree), _options(recall=True))
        found = [w for w in _Counting.walks if w and set(w) <= set(cleaned)]
        assert found[0] == ("math",)  # recover_math's, before the loop
        return found[1:]

    assert walks(h.tree_cleaning) == [(t,) for t in cleaned]
    assert walks(htmlprocessing.tree_cleaning) == [tuple(cleaned)] + [(t,) for t in cleaned
                                                                      if t in has]
