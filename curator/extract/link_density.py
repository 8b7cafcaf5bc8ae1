"""trafilatura's ``link_density_test`` with lxml's C-level descendant walk.

trafilatura tests the link density of every paragraph, list and div it meets (about 110
elements per real web page, most without a single link) and starts each test with
``element.findall(".//ref")`` and ``element.find(".//graphic")``. lxml answers those through
its Python ElementPath layer (path tokenising, a cache lookup, a generator chain) before the C
walk: about 6% of extraction CPU went to the test, most of it there.
:func:`link_density_test` is trafilatura's function with those two calls written as
``iterdescendants``, which select the same elements in the same order (descendants, not the
element itself, of that tag); the rest is unchanged.

The argument holds for one text of the function only: :func:`install` replaces it when the
SHA-256 of ``trafilatura.htmlprocessing.link_density_test``'s source is
:data:`SOURCE_SHA256` (trafilatura 2.3.1); any other source keeps trafilatura's function.
:func:`stock` puts trafilatura's function back inside a block (benchmarks time peers as they
ship). Same texts as trafilatura's function: tests/extract/test_link_density.py.

:func:`delete_by_link_density` is trafilatura's loop over a tag's elements (``div``, then
``list``, ``p``...) with one addition: each link's trimmed text is kept while the loop runs.
The link-farm test reads the text of every link of each element holding more than four, so
the nested ``<div>``s of a documentation page read the same sidebar links once per ancestor
(about a million ``text_content`` calls on 800 Debian docs pages: 11% of their extraction
CPU). The loop only reads the tree (its deletions come after it), so no link's text can
change while it is kept; the texts are dropped when the loop ends. Installed when the
digests of trafilatura's ``delete_by_link_density`` and ``collect_link_info`` match too.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from curator.extract.twins import Swap, sha256, stock_all

#: SHA-256 of ``inspect.getsource(trafilatura.htmlprocessing.link_density_test)``: 2.3.1.
SOURCE_SHA256 = "0b3d71f252bf19639de358ec3f4abc7c252eefb60eeac3b1da77e6dd9d8a444e"

#: SHA-256 of the sources of ``collect_link_info`` and ``delete_by_link_density`` (2.3.1).
LOOP_SHA256 = {
    "collect_link_info": "f19694013146ff10d5f57993169a6262be655b10ee49d477679e6e3243683def",
    "delete_by_link_density": "306ab5a31636cd08bcf09d2e4d78d538f961b30c944712c5e8f8eddf3e010fa2",
}

#: ``lengths``: link element -> its trimmed text's length, inside one :func:`delete_by_link_density`
#: loop of this thread (Dask workers extract in threads); None outside one.
_LOOP = threading.local()

#: trafilatura.htmlprocessing, once installed (its helpers are looked up there at call time).
_H: list[ModuleType] = []


def _module() -> ModuleType:
    import trafilatura.htmlprocessing as htmlprocessing

    return htmlprocessing


def link_density_test(element: Any, favor_precision: bool = False) -> tuple[bool, bool]:
    "Remove sections which are rich in links (probably boilerplate), flag short linked ones."
    h = _H[0] if _H else _module()
    links_xpath = list(element.iterdescendants("ref"))
    if not links_xpath:
        return False, False
    # preserve image containers
    if next(element.iterdescendants("graphic"), None) is not None:
        return False, False
    text = h.trim(element.text_content())
    lengths = getattr(_LOOP, "lengths", None)
    # shortcut
    if len(links_xpath) == 1:
        len_threshold = 10 if favor_precision else 100
        link_len = (len(h.trim(links_xpath[0].text_content())) if lengths is None
                    else _link_lengths(links_xpath, lengths, h)[0])
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
        linklen, elemnum, shortelems = _collect_link_info(links_xpath, lengths, h, True)
        if elemnum == 0:
            return True, False
        h.LOGGER.debug(
            "list link text/total: %s/%s – short elems/total: %s/%s",
            linklen,
            elemlen,
            shortelems,
            elemnum,
        )
        return linklen > elemlen * 0.8 or (elemnum > 1 and shortelems / elemnum > 0.8), True
    if len(links_xpath) > 4:
        linklen, elemnum, _ = _collect_link_info(links_xpath, lengths, h)
        if (linklen > len(text) * h.LINK_FARM_RATIO and linklen < 100 * elemnum
                and not h.is_paragraph_listing(links_xpath)):
            return True, False
    return False, False


def _link_lengths(links: list[Any], lengths: dict[Any, int], h: ModuleType) -> list[int]:
    """Each link's trimmed text length, read from the tree the first time the loop meets the
    link (the lookups of those already read run in C: ``map``)."""
    out = list(map(lengths.get, links))
    if None in out:
        for i, n in enumerate(out):
            if n is None:
                link = links[i]
                out[i] = lengths[link] = len(h.trim(link.text_content()))
    return out


def _collect_link_info(links: list[Any], lengths: dict[Any, int] | None, h: ModuleType,
                       short: bool = False) -> tuple[int, int, int]:
    """trafilatura's ``collect_link_info`` without its list of texts (the test never reads
    it): total length of the links' trimmed texts, how many are not empty, and (``short``;
    else 0) how many of those are shorter than 10 characters. With the loop's kept lengths
    when there are some."""
    if lengths is None:
        linklen, elemnum, shortelems, _ = h.collect_link_info(links)
        return linklen, elemnum, shortelems
    out = _link_lengths(links, lengths, h)
    return (sum(out), len(out) - out.count(0),
            sum(1 for n in out if 0 < n < 10) if short else 0)


def delete_by_link_density(subtree: Any, tagname: str, backtracking: bool = False,
                           favor_precision: bool = False) -> Any:
    """Determine the link density of elements with respect to their length,
    and remove the elements identified as boilerplate."""
    h = _H[0] if _H else _module()
    deletions = []
    len_threshold = 200 if favor_precision else 100
    depth_threshold = 1 if favor_precision else 3

    outer = getattr(_LOOP, "lengths", None)
    _LOOP.lengths = {}  # read-only loop: a link's text is the same at every test
    try:
        for elem in subtree.iter(tagname):
            result, short_with_links = h.link_density_test(elem, favor_precision)
            if result or (
                backtracking
                and short_with_links
                and len(elem) >= depth_threshold
                and len(h.trim(elem.text_content())) < len_threshold
            ):
                # a paragraph that holds the content of a list item is kept: the
                # link density of the whole list is checked separately, and
                # removing it here would leave the item empty (GH #788)
                parent = elem.getparent()
                if tagname == "p" and parent is not None and parent.tag in ("item", "td", "th"):
                    continue
                deletions.append(elem)
    finally:
        _LOOP.lengths = outer

    for elem in dict.fromkeys(deletions):
        h.delete_element(elem)

    return subtree


_SWAP = Swap("trafilatura.htmlprocessing", {"link_density_test": link_density_test})
#: the loop, where trafilatura defines it and where main_extractor imported it by name
_LOOP_SWAPS = [Swap(m, {"delete_by_link_density": delete_by_link_density})
               for m in ("trafilatura.htmlprocessing", "trafilatura.main_extractor")]


def _loop_checked(h: ModuleType, sources: dict[str, str] | None) -> bool:
    import trafilatura.main_extractor as m

    if m.delete_by_link_density is not h.delete_by_link_density:
        return False  # main_extractor does not call htmlprocessing's loop
    return all(sha256(sources[name] if sources and name in sources
                      else inspect.getsource(getattr(h, name))) == digest
               for name, digest in LOOP_SHA256.items())


def install(source: str | None = None, loop_sources: dict[str, str] | None = None) -> bool:
    """Use :func:`link_density_test` in ``trafilatura.htmlprocessing`` when ``source`` (by
    default trafilatura's own function's) is the text it was written for, and
    :func:`delete_by_link_density` when the test went in and ``loop_sources`` (name ->
    source; by default trafilatura's) are the texts it was written for; True when the test
    is in place."""
    h = _module()
    _H[:] = [h]
    if not _SWAP.install(
            lambda: sha256(source or inspect.getsource(h.link_density_test)) == SOURCE_SHA256):
        return False
    if _loop_checked(h, loop_sources):
        for swap in _LOOP_SWAPS:
            swap.install(lambda: True)
    return True


def loop_installed() -> bool:
    """Whether :func:`delete_by_link_density` is in place (both modules)."""
    return all(s.installed() for s in _LOOP_SWAPS)


@contextmanager
def stock() -> Iterator[None]:
    """trafilatura's own ``link_density_test`` and ``delete_by_link_density`` inside the
    block."""
    with stock_all(_SWAP, *_LOOP_SWAPS):
        yield
