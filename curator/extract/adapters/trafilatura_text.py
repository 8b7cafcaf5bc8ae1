"""trafilatura's main text of a page: one parse, curator's edits of the tree
(curator/extract/tree_edits.py), trafilatura's extraction as curator's fast path runs it
(curator/extract/fastpath/: trafilatura's algorithm in curator's own modules, trafilatura
itself left as it ships), the text shaped (curator/extract/shape.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from curator.extract.shape import shape_text
from curator.extract.tree_edits import prepare_tree

if TYPE_CHECKING:
    from curator.extract.fastpath import Stash

Balance = Literal["precision", "default", "recall"]


def page_text(html: str, fast: bool = True, balance: Balance = "recall",
                 include_comments: bool = False, include_tables: bool = True,
                 shape: bool = True, post_meta: bool = False,
                 stash: Stash | None = None, screen_reader_text: bool = False,
                 collapsed_panels: bool = True) -> str:
    """trafilatura's text of the page (``trafilatura.extract`` with these options and
    ``deduplicate=False``: its dedup cache is per process state, so the output would depend
    on which documents a worker saw before); ``stash``: a fast pass records into it, a
    ``fast=False`` rerun with the same options continues from it, one in another balance
    (not precision) starts from its pruned raw tree (curator/extract/fastpath/core.py)."""
    from curator.extract.fastpath import extract, load_html, rerun

    options = {"favor_precision": balance == "precision", "favor_recall": balance == "recall",
               "include_comments": include_comments, "include_tables": include_tables}
    # fastpath.KEY_FIELDS names them
    key = (balance, include_comments, include_tables, shape, post_meta, screen_reader_text,
           collapsed_panels)
    text = None if fast else rerun(stash, key, **options)
    if text is None:
        tree = load_html(html)
        if tree is None:
            return ""
        prepare_tree(tree, shape, html, post_meta, screen_reader_text, collapsed_panels)
        text = extract(tree, fast=fast, record=stash if fast else None, key=key, **options)
    return shape_text(text, html) if shape else text


def prepare() -> None:
    """Import trafilatura and the fast path (its XPath lists are built at import)."""
    import trafilatura  # noqa: F401

    import curator.extract.fastpath  # noqa: F401
