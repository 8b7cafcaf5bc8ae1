"""trafilatura's BODY_XPATH (the content frame) evaluated in Python (curator/extract/discard.py,
:class:`FirstFrame`): the first element of every expression equals the XPath's, on crafted
attributes for each branch, on gold and documentation pages, and in every call trafilatura
makes while extracting; other trafilatura versions keep their XPath."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import curator.extract.discard as discard
from bench.gold_set import load_gold
from curator.extract.discard import FirstFrame, replacement, stock
from curator.extract.extract_html import extract_text, prepare
from tests.extract.test_discard import _trees

DOCS = Path(__file__).parent / "data" / "docpages"
# (expression index, the frame written as trafilatura would meet it); decoys before it
# differ by one detail (tag, case, anchor, attribute)
CRAFTED = [
    (0, "<div class='post'>hit</div>"), (0, "<section class='entry'>hit</section>"),
    (0, "<main itemprop='articleBody'>hit</main>"), (0, "<div id='articleContent'>hit</div>"),
    (0, "<article id='my-entry-content'>hit</article>"), (0, "<div class='x post_text'>hit</div>"),
    (0, "<div class='article__body'>hit</div>"), (0, "<div class='post-entry'>hit</div>"),
    (2, "<div role='article'>hit</div>"), (2, "<div id='story'>hit</div>"),
    (2, "<section class='cell'>hit</section>"), (2, "<div id='primary-col'>hit</div>"),
    (2, "<div class='x FullText'>hit</div>"), (2, "<div class='article big'>hit</div>"),
    (2, "<div class='single-post'>hit</div>"),
    (3, "<div id='content'>hit</div>"), (3, "<div class='content'>hit</div>"),
    (3, "<div id='contentBody'>hit</div>"), (3, "<div class='content__body'>hit</div>"),
    (3, "<div id='Main-Content'>hit</div>"), (3, "<div class='x Page-Content'>hit</div>"),
    (3, "<main class='content_main'>hit</main>"),
    (4, "<div class='main-col'>hit</div>"), (4, "<section role='main'>hit</section>"),
    (4, "<main>hit</main>"), (4, "<article id='mainbox'>hit</article>"),
]
DECOYS = ("<span class='post'>a</span><p class='content'>b</p><div class='posts'>c</div>"
          "<div class='MAIN-CONTENT'>d</div><div class='xarticle big'>e</div>"
          "<div class='xmain'>f</div><span class='main'>g</span><div data-id='content'>h</div>"
          "<div title='story'>i</div><div class='Post'>j</div>")


def _stock() -> list:
    import trafilatura.xpaths as xpaths

    return xpaths.BODY_XPATH


def _first(expr, tree):  # what trafilatura's _extract takes from an expression
    return next((s for s in expr(tree) if s is not None), None)


def _same(tree, new) -> list:
    out = []
    for xp, py in zip(_stock(), new):
        expected = _first(xp, tree)
        assert _first(py, tree) is expected
        out.append(expected)
    return out


@pytest.mark.parametrize(("index", "frame"), CRAFTED)
def test_each_branch_finds_the_frame_the_xpath_finds(index: int, frame: str) -> None:
    new = replacement(_stock(), "BODY_XPATH")
    assert new is not None and isinstance(new[index], FirstFrame)
    # nested: a matching frame inside the first one; the outer one is the answer
    html = (f"<html><body><div>{DECOYS}</div>"
            f"{frame.replace('>hit<', '><div class=post>inner</div>hit<', 1)}</body></html>")
    for tree in _trees(html):
        found = _same(tree, new)
        assert found[index] is not None and found[index].text_content().endswith("hit")
    for tree in _trees(f"<html><body><div>{DECOYS}</div></body></html>"):
        assert _same(tree, new)[index] is None


def test_same_frames_as_the_xpath_on_real_pages() -> None:
    """A third of the gold pages and the documentation pages (all 1,400 gold and bench pages
    were checked call by call inside trafilatura when this was written, docs/extract.md)."""
    new = replacement(_stock(), "BODY_XPATH")
    pages = [p.html for p in load_gold("all")[::3]]
    pages += [gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
              for f in sorted(DOCS.glob("*.html.gz"))]
    found = [0] * 5
    for html in pages:
        for tree in _trees(html):
            for i, el in enumerate(_same(tree, new)):
                found[i] += el is not None
    assert min(found) > 0, found  # every expression finds frames on these pages


def test_extraction_unchanged_with_the_twin() -> None:
    prepare("trafilatura")
    import trafilatura.main_extractor as main

    assert isinstance(main.BODY_XPATH[0], FirstFrame)
    for page in load_gold("all")[::15]:
        for fast in (True, False):
            ours = extract_text(page.html, fast=fast, fallback=False)
            with stock():
                assert main.BODY_XPATH is _stock()
                theirs = extract_text(page.html, fast=fast, fallback=False)
            assert ours == theirs, page.id
    assert isinstance(main.BODY_XPATH[0], FirstFrame)


def test_other_trafilatura_versions_keep_their_body_xpath(monkeypatch) -> None:
    from lxml.etree import XPath

    exprs = list(_stock())
    exprs[3] = XPath(exprs[3].path.replace("'content'", "'contents'"),
                     namespaces={"re": "http://exslt.org/regular-expressions"})
    assert replacement(exprs, "BODY_XPATH") is None
    # an _extract that reads more than the first element of a result
    monkeypatch.setattr(discard, "BODY_USE", "subtree = expr(tree)[-1]")
    assert replacement(_stock(), "BODY_XPATH") is None
