"""The documentation-UI XPath runs only on pages whose source holds one of its strings: on
every other page it matches nothing, so skipping it changes no output."""

from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import pytest
from trafilatura.utils import load_html

from curator.extract.extract_html import _compiled, _may_have_ui

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))

from extraction_quality import load_gold  # noqa: E402

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


def _matches(html: str) -> int:
    tree = load_html(html)
    return 0 if tree is None else len(_compiled()[0](tree))


@pytest.mark.parametrize("snippet", CRAFTED)
def test_each_ui_kind_is_seen_by_the_gate(snippet) -> None:
    html = f"<html><body><main><p>Some text of the page.</p>{snippet}</main></body></html>"
    assert _matches(html) >= 1  # the XPath finds it ...
    assert _may_have_ui(html)  # ... and the gate lets it run


def test_gate_never_skips_a_page_with_ui_on_real_pages() -> None:
    pages = [p.html for p in load_gold("all")]
    pages += [gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
              for f in sorted(DOCS.glob("*.html.gz"))]
    skipped = 0
    for html in pages:
        if not _may_have_ui(html):
            assert _matches(html) == 0
            skipped += 1
    # the gate is worth having: most real pages skip the XPath
    assert skipped > len(pages) // 2, (skipped, len(pages))
