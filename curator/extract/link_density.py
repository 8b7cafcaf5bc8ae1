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
"""

from __future__ import annotations

import inspect
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any

from curator.extract.twins import Swap, sha256

#: SHA-256 of ``inspect.getsource(trafilatura.htmlprocessing.link_density_test)``: 2.3.1.
SOURCE_SHA256 = "0b3d71f252bf19639de358ec3f4abc7c252eefb60eeac3b1da77e6dd9d8a444e"

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
    # shortcut
    if len(links_xpath) == 1:
        len_threshold = 10 if favor_precision else 100
        link_text = h.trim(links_xpath[0].text_content())
        if len(link_text) > len_threshold and len(link_text) > len(text) * 0.9:
            return True, False
    if element.tag == "p":
        limitlen = 60 if element.getnext() is None else 30
    elif element.getnext() is None:
        limitlen = 300
    else:
        limitlen = 100
    elemlen = len(text)
    if elemlen < limitlen:
        linklen, elemnum, shortelems, _ = h.collect_link_info(links_xpath)
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
        linklen, elemnum, _, _ = h.collect_link_info(links_xpath)
        if (linklen > len(text) * h.LINK_FARM_RATIO and linklen < 100 * elemnum
                and not h.is_paragraph_listing(links_xpath)):
            return True, False
    return False, False


_SWAP = Swap("trafilatura.htmlprocessing", {"link_density_test": link_density_test})


def install(source: str | None = None) -> bool:
    """Use :func:`link_density_test` in ``trafilatura.htmlprocessing`` when ``source`` (by
    default trafilatura's own function's) is the text it was written for; True when it is in
    place."""
    h = _module()
    _H[:] = [h]
    return _SWAP.install(
        lambda: sha256(source or inspect.getsource(h.link_density_test)) == SOURCE_SHA256)


def stock() -> AbstractContextManager[None]:
    """trafilatura's own ``link_density_test`` inside the block."""
    return _SWAP.stock()
