"""trafilatura's ``tree_cleaning`` with its deletion loop walking only for the tags a page has.

``trafilatura.htmlprocessing.tree_cleaning`` deletes the elements of about fifty tags
(``MANUALLY_CLEANED``: ``aside``, ``script``, ``nav``, ``footer``...) with one loop per tag::

    for expression in cleaning_list:
        for element in tree.iter(expression):
            delete_element(element)

Each ``tree.iter(tag)`` walks the whole tree (lxml skips the walk only for a name its
document's dictionary lacks, and the parser's dictionary holds every tag it has met), so each
cleaning walks it about fifty times, for the eight or nine of those tags a page has on average
(1,994 real web pages; docs/extract.md#tree-cleaning).

:func:`delete_tags` runs the same loop for the tags that one walk, ``tree.iter(*tags)``, finds
in the tree, in the list's order, and skips the others. A tag with no element in the tree when
the loop starts has none later: the loop only deletes (``delete_element`` removes an element
with its subtree and moves its tail into the text before it; it adds and renames nothing), so
that tag's walk would yield nothing and call nothing. The walks that run are trafilatura's own
(lxml's iterator, whatever it does with a tree changed under it, does it as in the stock loop):
the same ``delete_element`` calls in the same order. When a found element's tag is not one of
the names as written (a namespaced element: not in HTML), the whole stock loop runs. The rest
of :func:`tree_cleaning` is trafilatura's text, its helpers looked up in ``htmlprocessing`` at
call time as the stock function does.

The argument holds for one text of trafilatura only: :func:`install` puts :func:`tree_cleaning`
in ``htmlprocessing``, ``core`` and ``external`` (which imported it by name) when the SHA-256
of ``tree_cleaning``'s and ``delete_element``'s sources are :data:`SOURCES` (trafilatura
2.3.1); otherwise trafilatura's function stays. :func:`stock` puts trafilatura's function back
inside a block. Same trees as trafilatura's function: tests/extract/test_cleaning.py.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from curator.extract.twins import Swap, sha256, stock_all

#: SHA-256 of the sources (``inspect.getsource``) the reasoning above was checked against:
#: trafilatura 2.3.1.
SOURCES = {
    "tree_cleaning": "828e83a7393082def65c10022aa7cf43d0debfb0039e1de8ee8c9ecb2d23b903",
    "delete_element": "76e448c154eb43ba31cdc17a9ad1292b12a813d6a008e29595ee7de9f718a30d",
}


def _module() -> ModuleType:
    import trafilatura.htmlprocessing as htmlprocessing

    return htmlprocessing


def delete_tags(tree: Any, tags: list[str]) -> None:
    """``for tag in tags: for el in tree.iter(tag): delete_element(el)`` (trafilatura's
    ``delete_element``), the walks of the tags the tree lacks left out."""
    delete = _module().delete_element
    present = {el.tag for el in tree.iter(*tags)} if tags else set()
    if not present.issubset(tags):  # a name lxml matched otherwise: the whole loop
        present = set(tags)
    for tag in tags:
        if tag in present:
            for element in tree.iter(tag):
                delete(element)


def tree_cleaning(tree: Any, options: Any) -> Any:
    "Prune the tree by discarding unwanted elements."
    h = _module()
    # salvage formulas before <math> is discarded along with its subtree
    h.recover_math(tree)
    # determine cleaning strategy, use lists to keep it deterministic
    cleaning_list, stripping_list = h.MANUALLY_CLEANED.copy(), h.MANUALLY_STRIPPED.copy()
    # forms are handled separately below, once the rest of the noise is gone. MANUALLY_CLEANED is
    # public API users mutate in place, so honour a removed "form" instead of assuming it is there.
    clean_forms = "form" in cleaning_list
    if clean_forms:
        cleaning_list.remove("form")
    if not options.tables:
        cleaning_list.extend(["table", "td", "th", "tr"])
    else:
        # figures holding a table (#301) and ARIA layout tables (role=presentation/none)
        for elem in tree.iter("figure", "table"):
            if (elem.find(".//table") is not None if elem.tag == "figure"
                    else elem.get("role") in ("presentation", "none")):
                elem.tag = "div"
    if options.images:
        # Many websites have <img> inside <figure> or <picture> or <source> tag
        cleaning_list = [e for e in cleaning_list if e not in h.PRESERVE_IMG_CLEANING]
        stripping_list.remove("img")

    # strip targeted elements
    h.strip_tags(tree, stripping_list)

    # recall: undo the deletions if they remove every paragraph (copy only if none can survive)
    tcopy = None
    if (
        options.focus == "recall"
        and tree.find(".//p") is not None
        and ("p" in cleaning_list or not any(next(p.iterancestors(cleaning_list), tree) is tree
                                             for p in tree.iter("p")))
    ):
        tcopy = h.deepcopy(tree)
    delete_tags(tree, cleaning_list)  # the stock loop, for the tags the tree has
    if tcopy is not None and tree.find(".//p") is None:
        tree = tcopy

    if clean_forms:
        h._handle_forms(tree)

    return h.prune_html(tree, options.focus)


#: where trafilatura defines the function, and the modules that imported it by name
_SWAPS = [Swap(m, {"tree_cleaning": tree_cleaning})
          for m in ("trafilatura.htmlprocessing", "trafilatura.core", "trafilatura.external")]


def _checked(sources: dict[str, str] | None) -> bool:
    import trafilatura.core as core
    import trafilatura.external as external
    import trafilatura.xml as xml

    h = _module()
    if not (core.tree_cleaning is h.tree_cleaning is external.tree_cleaning
            and h.delete_element is xml.delete_element):
        return False
    found = {"tree_cleaning": h.tree_cleaning, "delete_element": h.delete_element}
    return all(sha256(sources[name] if sources and name in sources
                      else inspect.getsource(found[name])) == digest
               for name, digest in SOURCES.items())


def install(sources: dict[str, str] | None = None) -> bool:
    """Use :func:`tree_cleaning` in trafilatura when ``sources`` (name -> source; by default
    trafilatura's ``tree_cleaning`` and ``delete_element``) are the texts it was written for;
    True when it is in place."""
    if installed():
        return True
    if not _checked(sources):
        return False
    for swap in _SWAPS:
        swap.install(lambda: True)
    return True


def installed() -> bool:
    """Whether :func:`tree_cleaning` is in place (in the three modules)."""
    return all(s.installed() for s in _SWAPS)


@contextmanager
def stock() -> Iterator[None]:
    """trafilatura's own ``tree_cleaning`` inside the block."""
    with stock_all(*_SWAPS):
        yield
