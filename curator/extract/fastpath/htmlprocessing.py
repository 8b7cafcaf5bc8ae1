# Derived from trafilatura 2.3.1 (trafilatura/htmlprocessing.py), Copyright 2019-present,
# Adrien Barbaresi and contributors, under the Apache License 2.0 (LICENSE-trafilatura.txt here).
# Changed: see the package docstring (curator/extract/fastpath/__init__.py).
"""The tree cleaning and the link density tests, with fewer walks of the tree.

:func:`tree_cleaning` deletes the elements of about fifty tags (``MANUALLY_CLEANED``) with
trafilatura's loop run only for the tags one walk finds in the tree (:func:`delete_tags`):
trafilatura walks the tree once per listed tag, for the eight or nine a page has on average.
The loop only deletes (``delete_element`` removes an element with its subtree and moves its
tail into the text before it), so a tag absent when it starts has no element later; the walks
that run are trafilatura's own, the same ``delete_element`` calls in the same order.

:func:`link_density_test` selects a block's links and images with ``iterdescendants``
(lxml's C walk; the same elements in the same order) where trafilatura's ``findall(".//ref")``
goes through lxml's Python ElementPath layer: that test runs on about 110 elements a page.
:func:`delete_by_link_density` keeps each link's trimmed text length while its loop runs:
the loop only reads the tree (its deletions come after it), and the link-farm test reads the
text of every link of each element holding more than four, so nested ``<div>``s read the same
sidebar links once per ancestor (11% of the CPU on 800 Debian docs pages).
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from lxml.etree import strip_tags
from trafilatura.htmlprocessing import (
    LOGGER,
    PRESERVE_IMG_CLEANING,
    _handle_forms,
    collect_link_info,
    is_paragraph_listing,
    prune_html,
    recover_math,
)
from trafilatura.settings import MANUALLY_CLEANED, MANUALLY_STRIPPED
from trafilatura.utils import LINK_FARM_RATIO, trim
from trafilatura.xml import delete_element


def delete_tags(tree: Any, tags: list[str]) -> None:
    """``for tag in tags: for el in tree.iter(tag): delete_element(el)``, the walks of the
    tags the tree lacks left out. When a found element's tag is not one of the names as
    written (a namespaced element: not in HTML), the whole loop runs."""
    present = {el.tag for el in tree.iter(*tags)} if tags else set()
    if not present.issubset(tags):  # a name lxml matched otherwise: the whole loop
        present = set(tags)
    for tag in tags:
        if tag in present:
            for element in tree.iter(tag):
                delete_element(element)


def tree_cleaning(tree: Any, options: Any) -> Any:
    "Prune the tree by discarding unwanted elements."
    # salvage formulas before <math> is discarded along with its subtree
    recover_math(tree)
    # determine cleaning strategy, use lists to keep it deterministic
    cleaning_list, stripping_list = MANUALLY_CLEANED.copy(), MANUALLY_STRIPPED.copy()
    # forms are handled separately below, once the rest of the noise is gone. MANUALLY_CLEANED is
    # public API users mutate in place, so honour a removed "form" instead of assuming it is there.
    clean_forms = "form" in cleaning_list
    if clean_forms:
        cleaning_list.remove("form")
    if not options.tables:
        cleaning_list.extend(["table", "td", "th", "tr"])
    else:
        # figures holding a table (trafilatura #301) and ARIA layout tables (role=presentation/none)
        for elem in tree.iter("figure", "table"):
            if (elem.find(".//table") is not None if elem.tag == "figure"
                    else elem.get("role") in ("presentation", "none")):
                elem.tag = "div"
    if options.images:
        # Many websites have <img> inside <figure> or <picture> or <source> tag
        cleaning_list = [e for e in cleaning_list if e not in PRESERVE_IMG_CLEANING]
        stripping_list.remove("img")

    # strip targeted elements
    strip_tags(tree, stripping_list)

    # recall: undo the deletions if they remove every paragraph (copy only if none can survive)
    tcopy = None
    if (
        options.focus == "recall"
        and tree.find(".//p") is not None
        and ("p" in cleaning_list or not any(next(p.iterancestors(cleaning_list), tree) is tree
                                             for p in tree.iter("p")))
    ):
        tcopy = deepcopy(tree)
    delete_tags(tree, cleaning_list)  # trafilatura's loop, for the tags the tree has
    if tcopy is not None and tree.find(".//p") is None:
        tree = tcopy

    if clean_forms:
        _handle_forms(tree)

    return prune_html(tree, options.focus)


def link_density_test(element: Any, favor_precision: bool = False,
                      lengths: dict[Any, int] | None = None) -> tuple[bool, bool]:
    """Remove sections which are rich in links (probably boilerplate), flag short linked ones.
    ``lengths``: the link text lengths :func:`delete_by_link_density`'s loop keeps."""
    links_xpath = list(element.iterdescendants("ref"))
    if not links_xpath:
        return False, False
    # preserve image containers
    if next(element.iterdescendants("graphic"), None) is not None:
        return False, False
    text = trim(element.text_content())
    # shortcut
    if len(links_xpath) == 1:
        len_threshold = 10 if favor_precision else 100
        link_len = (len(trim(links_xpath[0].text_content())) if lengths is None
                    else _link_lengths(links_xpath, lengths)[0])
        if link_len > len_threshold and link_len > len(text) * 0.9:
            return True, False
    if element.tag == "p":
        limitlen = 60 if element.getnext() is None else 30
    elif element.getnext() is None:
        limitlen = 300
    else:
        limitlen = 100
    elemlen = len(text)
    if elemlen < limitlen:
        linklen, elemnum, shortelems = _collect_link_info(links_xpath, lengths, True)
        if elemnum == 0:
            return True, False
        LOGGER.debug(
            "list link text/total: %s/%s – short elems/total: %s/%s",
            linklen,
            elemlen,
            shortelems,
            elemnum,
        )
        return linklen > elemlen * 0.8 or (elemnum > 1 and shortelems / elemnum > 0.8), True
    # large near-total-link farms ("latest news" sidebars) at/above limitlen (trafilatura #584)
    if len(links_xpath) > 4:
        linklen, elemnum, _ = _collect_link_info(links_xpath, lengths)
        # avg link len >= 100 => catalog/listing content (one link per card), not a farm
        if (linklen > len(text) * LINK_FARM_RATIO and linklen < 100 * elemnum
                and not is_paragraph_listing(links_xpath)):
            return True, False
    return False, False


def _link_lengths(links: list[Any], lengths: dict[Any, int]) -> list[int]:
    """Each link's trimmed text length, read from the tree the first time the loop meets the
    link (the lookups of those already read run in C: ``map``)."""
    out = list(map(lengths.get, links))
    if None in out:
        for i, n in enumerate(out):
            if n is None:
                link = links[i]
                out[i] = lengths[link] = len(trim(link.text_content()))
    return out


def _collect_link_info(links: list[Any], lengths: dict[Any, int] | None,
                       short: bool = False) -> tuple[int, int, int]:
    """trafilatura's ``collect_link_info`` without its list of texts (the test never reads
    it): total length of the links' trimmed texts, how many are not empty, and (``short``;
    else 0) how many of those are shorter than 10 characters."""
    if lengths is None:
        linklen, elemnum, shortelems, _ = collect_link_info(links)
        return linklen, elemnum, shortelems
    out = _link_lengths(links, lengths)
    return (sum(out), len(out) - out.count(0),
            sum(1 for n in out if 0 < n < 10) if short else 0)


def delete_by_link_density(subtree: Any, tagname: str, backtracking: bool = False,
                           favor_precision: bool = False) -> Any:
    """Determine the link density of elements with respect to their length,
    and remove the elements identified as boilerplate."""
    deletions = []
    len_threshold = 200 if favor_precision else 100
    depth_threshold = 1 if favor_precision else 3

    lengths: dict[Any, int] = {}  # read-only loop: a link's text is the same at every test
    for elem in subtree.iter(tagname):
        result, short_with_links = link_density_test(elem, favor_precision, lengths)
        if result or (
            backtracking
            and short_with_links
            and len(elem) >= depth_threshold
            and len(trim(elem.text_content())) < len_threshold
        ):
            # a paragraph that holds the content of a list item is kept: the
            # link density of the whole list is checked separately, and
            # removing it here would leave the item empty (trafilatura #788)
            parent = elem.getparent()
            if tagname == "p" and parent is not None and parent.tag in ("item", "td", "th"):
                continue
            deletions.append(elem)

    for elem in dict.fromkeys(deletions):
        delete_element(elem)

    return subtree
