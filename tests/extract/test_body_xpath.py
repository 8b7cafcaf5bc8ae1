"""trafilatura's BODY_XPATH (the content frame) evaluated in Python
(curator/extract/fastpath/xpaths.py, :class:`FirstFrame`): the first element of every
expression equals the XPath's, on crafted attributes for each branch and on gold and
documentation pages; the fast path's ``_extract`` reads only that first element."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from bench.gold_set import load_gold
from curator.extract.fastpath import main_extractor
from curator.extract.fastpath import xpaths as discard
from curator.extract.fastpath.xpaths import FirstFrame
from tests.extract.test_discard import _trees, replacement

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


def test_extract_reads_only_the_first_element() -> None:
    """What :class:`FirstFrame` relies on: ``_extract`` takes the first element of each
    expression's result and nothing else."""
    import inspect

    source = inspect.getsource(main_extractor._extract)
    assert discard.BODY_USE in source
    assert source.count("expr(tree)") == 1
