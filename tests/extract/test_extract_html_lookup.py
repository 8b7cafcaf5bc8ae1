"""The C-level element class lookup of the fast path's HTML parser (a CPU saving) wraps every
node in the class lxml.html's own lookup picks, and extraction output is the same with either
(real pages of bench/gold, crafted tags); trafilatura's own parser keeps lxml.html's."""

from __future__ import annotations

import pytest

from bench.gold_set import load_gold
from curator.extract.extract_html import extract_text, prepare
from curator.extract.fastpath import utils
from curator.extract.fastpath.utils import html_class_lookup

CRAFTED = [
    "<html><body><form action='/x'><label for=a>Name</label><input id=a value=v>"
    "<select><option>1</option></select><textarea>t\nu</textarea></form>"
    "<!-- a comment --><?pi x?><p>Text &amp; more</p></body></html>",
    "<HTML><BODY><FORM><INPUT NAME=q><P>Upper case tags</P></FORM></BODY></HTML>",
    "<html><body><svg:rect xmlns:svg='http://www.w3.org/2000/svg'/><math><mi>x</mi></math>"
    "<o:p>office</o:p><article><p>" + "Some words here. " * 30 + "</p></article></body></html>",
]


def _parsers() -> tuple[object, object]:
    from lxml import html as lhtml

    opts = dict(collect_ids=False, default_doctype=False, encoding="utf-8",
                remove_comments=False, remove_pis=False)
    slow = lhtml.HTMLParser(**opts)
    fast = lhtml.HTMLParser(**opts)
    fast.set_element_class_lookup(html_class_lookup())
    return slow, fast


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return [p.html for p in load_gold("all")] + CRAFTED


def test_same_class_for_every_node(pages: list[str]) -> None:
    from lxml import html as lhtml

    slow, fast = _parsers()
    checked = set()
    for html in pages:
        data = html.encode("utf-8", "surrogatepass")
        a = lhtml.fromstring(data, parser=slow)
        b = lhtml.fromstring(data, parser=fast)
        ta = [type(e) for e in a.iter()]
        tb = [type(e) for e in b.iter()]
        assert ta == tb
        # nodes created later (trafilatura's renames and copies) too
        for e in list(a.iter()) + [a.makeelement("input"), a.makeelement("p")]:
            checked.add(type(e))
        c = b.makeelement("input")
        assert type(c) is type(a.makeelement("input")) is lhtml.InputElement
    assert {lhtml.FormElement, lhtml.InputElement, lhtml.HtmlElement,
            lhtml.HtmlComment} <= checked


def test_extraction_unchanged(pages: list[str]) -> None:
    from lxml import html as lhtml

    prepare("trafilatura")
    sample = pages[::6] + CRAFTED
    fast = [extract_text(h) for h in sample]
    utils.HTML_PARSER.set_element_class_lookup(lhtml.HtmlElementClassLookup())
    try:
        slow = [extract_text(h) for h in sample]
    finally:
        utils.HTML_PARSER.set_element_class_lookup(html_class_lookup())
    assert fast == slow
    assert sum(bool(t) for t in fast) > len(sample) // 2
