"""The documentation-UI XPath runs as its alternatives, each only on pages whose source holds
one of its strings: the same elements as the whole XPath, so the same output."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from lxml.etree import XPath
from trafilatura.utils import load_html

from curator.extract.prune_ui import _UI_XPATH, ui_elements

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.gold_set import load_gold  # noqa: E402

DOCS = Path(__file__).parent / "data" / "docpages"

# one element per branch of _UI_XPATH, in the forms generators write them
CRAFTED = [
    '<h2>Title<a class="headerlink" href="#t" title="Link">¶</a></h2>',
    '<h3 id="x"><a class="anchor" href="#x">§</a>X</h3>',
    '<h3 id="x"><a class="doc-anchor" href="#x">§</a>X</h3>',
    '<span class="since"><a class="srclink" href="../src/a.rs">source</a></span>',
    '<a class=src href="../src/a.rs">source</a>',
    "<a class='src' href='../src/a.rs'>Source</a>",
    '<a CLASS="src" href="x"> source </a>',
    '<a class="md-skip" href="#c">Skip to content</a>',
    '<a class="skip-nav" href="#c">Skip</a>',
    '<a href="#details">More...</a>',
    '<details><summary class="hideme"><span>Expand description</span></summary></details>',
    '<span class="out-of-band">1.0.0</span>',
    '<a id="toggle-all-docs" href="#">[−]</a>',
    '<div class="skipNav"><a href="#skip">Skip navigation links</a></div>',
    '<div class="top skip-nav">x</div>',
]


def _both(html: str) -> tuple[set, set]:
    """(whole XPath's elements, the alternatives' elements) on the page."""
    tree = load_html(html)
    if tree is None:
        return set(), set()
    return set(XPath(_UI_XPATH)(tree)), set(ui_elements(tree, html))


@pytest.mark.parametrize("snippet", CRAFTED)
def test_each_ui_kind_is_found_by_its_alternative(snippet) -> None:
    html = f"<html><body><main><p>Some text of the page.</p>{snippet}</main></body></html>"
    whole, parts = _both(html)
    assert whole and parts == whole


def test_same_elements_as_the_whole_xpath_on_real_pages() -> None:
    pages = [p.html for p in load_gold("all")]
    pages += [gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
              for f in sorted(DOCS.glob("*.html.gz"))]
    found = 0
    for html in pages:
        whole, parts = _both(html)
        assert parts == whole
        found += bool(whole)
    assert found >= 5  # the doc pages have UI elements: the comparison is not all empty
