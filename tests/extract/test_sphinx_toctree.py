"""Sphinx toctrees (curator/extract/prune_ui.py ``unlink_toctrees``): an index page's
table of contents is its content, though it is all links; real pages from bench/gold's tuning
split (the Python documentation)."""

from __future__ import annotations

from bench.gold_set import prf
from curator.extract.extract_html import extract_text
from tests.extract.helpers_extract import tuning_pages as _tuning


def test_an_index_page_keeps_its_table_of_contents() -> None:
    """pydocs/library/archiving.html: trafilatura kept the two-line intro and dropped the
    toctree as a link list (F1 0.16); the gold, like the page, lists the chapter's modules."""
    page = _tuning()["pydocs/library/archiving.html"]
    text = extract_text(page.html)
    for entry in ("zlib — Compression compatible with gzip", "tarfile — Read and write tar "
                  "archive files", "Data Compression and Archiving"):
        assert entry in text
    assert prf(text, page.gold)[2] > 0.95


SIDEBAR = """<html><body><div class="document"><div class="body" role="main">
<h1>Networking</h1><p>The modules described in this chapter provide mechanisms for networking
and communication between processes, on one machine and across machines.</p>
<div class="toctree-wrapper compound"><ul>
<li class="toctree-l1"><a class="reference internal" href="socket.html">socket — Low-level
networking interface</a></li>
<li class="toctree-l1"><a class="reference internal" href="ssl.html">ssl — TLS/SSL wrapper
for socket objects</a></li>
<li class="toctree-l1"><a class="reference internal" href="select.html">select — Waiting for
I/O completion</a></li></ul></div></div></div>
<div class="sphinxsidebar" role="navigation"><ul><li><a href="../index.html">Sidebar home</a></li>
<li><a href="../search.html">Sidebar search</a></li><li><a href="x.html">Sidebar other</a></li>
</ul></div></body></html>"""


def test_toctree_kept_sidebar_links_not() -> None:
    text = extract_text(SIDEBAR)
    assert "socket — Low-level networking interface" in text
    assert "select — Waiting for I/O completion" in text
    assert "Sidebar" not in text


def test_pages_without_a_toctree_are_unchanged() -> None:
    """The docs pages of the tuning split without a toctree come out as before (the step is
    skipped when no class value holds ``toctree-wrapper``)."""
    from curator.extract import tree_edits

    pages = [p for p in _tuning().values() if p.source == "python-docs"
             and "toctree-wrapper" not in p.html][:8]
    assert len(pages) >= 5
    now = [extract_text(p.html) for p in pages]
    saved = tree_edits.unlink_toctrees
    tree_edits.unlink_toctrees = lambda tree: (_ for _ in ()).throw(AssertionError("called"))
    try:
        assert [extract_text(p.html) for p in pages] == now
    finally:
        tree_edits.unlink_toctrees = saved
