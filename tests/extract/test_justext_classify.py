"""jusText's paragraph classification with each paragraph's text built once
(curator/extract/fastpath/external.py): the same classes and headings as jusText's own
``classify_paragraphs`` on every paragraph of real pages and on any paragraphs (hypothesis), the
same texts as trafilatura's ``fast=False`` extraction, one text read per paragraph."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.gold_set import load_gold
from curator.extract.fastpath import core, external, load_html
from tests.extract.helpers_extract import gold_and_doc_pages

#: trafilatura's arguments (external.try_justext) and jusText's defaults.
SETTINGS = [(50, 150, 0.1, 0.2, 0.25, True), (70, 200, 0.30, 0.32, 0.2, False)]


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return gold_and_doc_pages(8)


def _stock() -> Any:
    from justext.core import classify_paragraphs

    return classify_paragraphs


def _classes(classify: Any, paragraphs: list[Any], stoplist: Any, args: tuple) -> list:
    for p in paragraphs:  # a fresh start: neither function may read a previous answer
        p.__dict__.pop("cf_class", None)
        p.__dict__.pop("heading", None)
    classify(paragraphs, stoplist, *args)
    return [(p.cf_class, p.heading) for p in paragraphs]


def test_same_classes_as_justext_on_real_pages(pages: list[str]) -> None:
    """Every paragraph jusText makes of trafilatura's cleaned tree of real pages, with
    trafilatura's settings and jusText's defaults, with trafilatura's stop list (all languages)
    and jusText's German one."""
    from justext import get_stoplist
    from justext.core import ParagraphMaker
    from trafilatura.external import basic_cleaning

    stock = _stock()
    stoplists = [external.jt_stoplist(), get_stoplist("German")]
    seen: set[str] = set()
    n = 0
    for html in pages:
        tree = load_html(html)
        if tree is None:
            continue
        paragraphs = ParagraphMaker.make_paragraphs(basic_cleaning(tree))
        n += len(paragraphs)
        for stoplist in stoplists:
            for args in SETTINGS:
                want = _classes(stock, paragraphs, stoplist, args)
                got = _classes(external.classify_paragraphs, paragraphs, stoplist, args)
                assert got == want, html[:200]
                seen.update(c for c, _ in want)
    assert n > 5_000
    assert seen == {"bad", "short", "neargood", "good"}


_WORDS = ["the", "and", "of", "a", "Der", "UND", "text", "word", "\xa9", "&copy;", "copy",
          "link", "x" * 30, "é", ""]
_SPACES = [" ", "  ", "\n", "\t", "\xa0", " \n ", "\r\n", "\u3000"]


@st.composite
def _paragraphs(draw: Any) -> list[Any]:
    from justext.paragraph import Paragraph

    out = []
    for _ in range(draw(st.integers(0, 6))):
        dom = draw(st.sampled_from(["body.p", "body.div.h1", "body.select.option", "h2",
                                    "body.h10", "body.table.tr.td"]))
        p = Paragraph(SimpleNamespace(dom=dom, xpath="/html/body"))
        for _ in range(draw(st.integers(0, 4))):
            node = draw(st.lists(st.sampled_from(_WORDS + _SPACES), max_size=40))
            p.append_text("".join(node) if draw(st.booleans()) else draw(st.text(max_size=30)))
        p.chars_count_in_links = draw(st.integers(0, 120))
        p.tags_count = draw(st.integers(0, 5))
        out.append(p)
    return out


@settings(max_examples=300, deadline=None)
@given(_paragraphs(), st.integers(0, 120), st.integers(0, 250), st.floats(0, 1), st.floats(0, 1),
       st.floats(0, 1), st.booleans())
def test_same_classes_as_justext_on_any_paragraphs(paragraphs, length_low, length_high,
                                                   stopwords_low, stopwords_high,
                                                   max_link_density, no_headings) -> None:
    stock = _stock()
    args = (length_low, length_high, stopwords_low, stopwords_high, max_link_density,
            no_headings)
    stoplist = frozenset({"the", "and", "of", "a", "der", "und"})
    want = _classes(stock, paragraphs, stoplist, args)
    assert _classes(external.classify_paragraphs, paragraphs, stoplist, args) == want


def test_same_text_as_trafilatura(pages: list[str], monkeypatch) -> None:
    """The fast path's ``fast=False`` extraction in default balance gives trafilatura's texts
    (gold pages 310-420, where the comparison and the recall escalation call jusText),
    through curator's function."""
    import trafilatura

    calls = 0
    ours = external.classify_paragraphs

    def counted(*a: Any, **kw: Any) -> Any:
        nonlocal calls
        calls += 1
        return ours(*a, **kw)

    monkeypatch.setattr(external, "classify_paragraphs", counted)
    for html in [p.html for p in load_gold("all")[310:420:2]] + pages[::8]:
        tree = load_html(html)
        if tree is None:
            continue
        want = trafilatura.extract(copy.copy(tree), fast=False, include_comments=False,
                                   deduplicate=False) or ""
        got = core.extract(tree, fast=False, favor_precision=False, favor_recall=False,
                           include_comments=False, include_tables=True)
        assert got == want, html[:200]
    assert calls > 5  # the comparison did run on real pages


def test_paragraph_text_is_built_once(pages: list[str], monkeypatch) -> None:
    """The point of the twin: trafilatura's classification reads each paragraph's ``text``
    (a join and a whitespace regex) once; jusText's own function reads it seven times."""
    from justext.core import ParagraphMaker
    from justext.paragraph import Paragraph
    from trafilatura.external import basic_cleaning

    paragraphs = ParagraphMaker.make_paragraphs(basic_cleaning(load_html(pages[0])))
    reads = 0
    text = Paragraph.text

    def counted(self: Any) -> str:
        nonlocal reads
        reads += 1
        return text.fget(self)

    monkeypatch.setattr(Paragraph, "text", property(counted))
    external.classify_paragraphs(paragraphs, external.jt_stoplist(), *SETTINGS[0])
    assert len(paragraphs) > 10 and reads == len(paragraphs)


class _CountedHash(tuple):
    """A stop list that counts how often it is hashed (``define_stoplist``'s cache key)."""

    hashed = 0

    def __hash__(self) -> int:
        type(self).hashed += 1
        return tuple.__hash__(self)


def test_stoplist_defined_once_per_object(pages: list[str]) -> None:
    """trafilatura hands the same tuple of every jusText stop word (~154,000) to each call;
    jusText's ``define_stoplist`` cache hashed it again on every call (~0.8 ms). The twin keeps
    the frozen set of the object it was given last, with the same classes as jusText."""
    from justext.core import ParagraphMaker
    from trafilatura.external import basic_cleaning

    stock = _stock()
    words = _CountedHash(external.jt_stoplist())
    other = _CountedHash(("the", "of", "and"))
    for html in pages[:6]:
        paragraphs = ParagraphMaker.make_paragraphs(basic_cleaning(load_html(html)))
        for stoplist in (words, words, other, words):
            _CountedHash.hashed = 0
            got = _classes(external.classify_paragraphs, paragraphs, stoplist,
                           SETTINGS[0])
            assert _CountedHash.hashed <= 1  # only when another object came in between
            assert got == _classes(stock, paragraphs, stoplist, SETTINGS[0])
    _CountedHash.hashed = 0
    external.classify_paragraphs([], words)
    external.classify_paragraphs([], words)
    assert _CountedHash.hashed == 0
    # a mutable stop list is never remembered: a set's words can change between calls
    fresh = ["the", "of"]
    with pytest.raises(TypeError):  # jusText's own cache refuses it as well
        external.classify_paragraphs([], fresh)
