"""trafilatura's ``repair_faulty_html`` without a regex pass over pages that need no repair.

``trafilatura.utils.load_html`` repairs every HTML string before lxml parses it:
``INVALID_XML_CHARS.sub("", html)`` deletes XML-illegal characters (C0 controls but tab,
newline and carriage return; U+FFFE, U+FFFF), and a page whose first 50 characters name a
doctype has its first line split off, its doctype removed by ``DOCTYPE_TAG`` (a doctype
holding a ``/``) and the page joined again. On real web pages (130,000 characters on average,
6 of 1,994 with an illegal character, most doctypes without a ``/``) the regex scan costs
0.33 ms a page and the split and join two copies of the page: about 2% of the Common Crawl
path's CPU, for a page that comes out as it went in.

:func:`repair_faulty_html` gives the same string: it looks for an illegal character with C
loops (``str.isascii`` is a flag; the page encoded to UTF-8, where a C0 control is the byte
itself and every other character's bytes are 0x80 or more, loses bytes under
``bytes.translate``'s delete exactly when it holds one; U+FFFE/U+FFFF by ``in``) and runs
trafilatura's ``sub`` only then; it matches ``DOCTYPE_TAG`` (anchored at the start) on the
first line in place and rebuilds the page only when it matches (a page without a newline
goes through trafilatura's own lines, which add one). The self-closing ``<html/>`` check is
trafilatura's own.

The argument holds for one text of the function and its three patterns only: :func:`install`
replaces it when the SHA-256 of the function's source and the patterns is
:data:`SOURCE_SHA256` (trafilatura 2.3.1); any other source keeps trafilatura's function.
:func:`stock` puts trafilatura's function back inside a block. Same strings as trafilatura's
function: tests/extract/test_repair.py.
"""

from __future__ import annotations

import inspect
from contextlib import AbstractContextManager
from types import ModuleType

from curator.extract.twins import Swap, sha256

#: SHA-256 of :func:`_source` for trafilatura 2.3.1.
SOURCE_SHA256 = "e9f6c77ac0e5263fd33614b5d7417eb71b1ff2accc2f14c583ba3276382fd47c"

#: The C0 controls that XML 1.0 forbids (all but tab, newline and carriage return).
_C0 = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])


def _utils() -> ModuleType:
    import trafilatura.utils as utils

    return utils


def _source(utils: ModuleType) -> str:
    """What the twin's argument reads: the function's text and its patterns."""
    pats = (utils.INVALID_XML_CHARS, utils.DOCTYPE_TAG, utils.FAULTY_HTML)
    return "\n".join([inspect.getsource(utils.repair_faulty_html),
                      *(f"{p.pattern!r} {p.flags}" for p in pats)])


def has_illegal_chars(html: str) -> bool:
    """Whether ``INVALID_XML_CHARS`` finds a character in ``html``."""
    if "\ufffe" in html or "\uffff" in html:
        return True
    data = html.encode("ascii") if html.isascii() else html.encode("utf-8", "surrogatepass")
    return len(data.translate(None, _C0)) != len(data)


def repair_faulty_html(htmlstring: str, beginning: str) -> str:
    "Repair faulty HTML strings to make then palatable for libxml2."
    u = _utils()
    if has_illegal_chars(htmlstring):
        htmlstring = u.INVALID_XML_CHARS.sub("", htmlstring)
    # libxml2/LXML issue: https://bugs.launchpad.net/lxml/+bug/1955915
    if "doctype" in beginning:
        end = htmlstring.find("\n")
        if end < 0:  # trafilatura's lines: they end the page with a newline
            firstline, _, rest = htmlstring.partition("\n")
            htmlstring = u.DOCTYPE_TAG.sub("", firstline, count=1) + "\n" + rest
        elif (m := u.DOCTYPE_TAG.match(htmlstring, 0, end)) is not None:
            htmlstring = htmlstring[m.end():]
    # self-closing <html/> in the first lines
    for line in htmlstring[:4096].splitlines()[:4]:
        if "<html" in line and line.endswith("/>"):
            htmlstring = u.FAULTY_HTML.sub(r"\1>", htmlstring, count=1)
            break
    return htmlstring


_SWAP = Swap("trafilatura.utils", {"repair_faulty_html": repair_faulty_html})


def install(source: str | None = None) -> bool:
    """Use :func:`repair_faulty_html` in ``trafilatura.utils`` when ``source`` (by default
    the text of trafilatura's function and patterns) is the one it was written for; True when
    it is in place."""
    return _SWAP.install(lambda: sha256(source or _source(_utils())) == SOURCE_SHA256)


def stock() -> AbstractContextManager[None]:
    """trafilatura's own ``repair_faulty_html`` inside the block."""
    return _SWAP.stock()
