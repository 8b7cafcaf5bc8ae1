# Derived from trafilatura 2.3.1 (trafilatura/utils.py), Copyright 2019-present, Adrien
# Barbaresi and contributors, under the Apache License 2.0 (LICENSE-trafilatura.txt here).
# Changed: see the package docstring (curator/extract/fastpath/__init__.py).
"""``load_html`` with curator's own parser (element classes chosen by a C-level tag table) and
a repair that scans a page only where it can need one."""

from __future__ import annotations

from typing import Any

from lxml.html import HtmlElement, HTMLParser, fromstring
from trafilatura.utils import (
    DOCTYPE_TAG,
    FAULTY_HTML,
    INVALID_XML_CHARS,
    LOGGER,
    decode_file,
    is_dubious_html,
)

#: The C0 controls that XML 1.0 forbids (all but tab, newline and carriage return).
_C0 = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])


def html_class_lookup() -> Any:
    """lxml.html's element classes (``FormElement`` for ``<form>``..., ``HtmlElement`` for
    the rest, ``HtmlComment``...) chosen by a C-level tag table instead of lxml.html's
    Python ``HtmlElementClassLookup.lookup``. lxml calls the lookup each time it wraps a
    node in a new Python object, and the pruning (ancestor walks, ``text_content``) wraps
    millions: the Python calls were about 2% of extraction CPU. Same class for every
    lower-case tag (libxml2's HTML parser lower-cases tag names), so the text is unchanged
    (tests/extract/test_extract_html_lookup.py checks both on real pages)."""
    from lxml import etree
    from lxml import html as lhtml

    fallback = etree.ElementDefaultClassLookup(
        element=lhtml.HtmlElement, comment=lhtml.HtmlComment,
        pi=lhtml.HtmlProcessingInstruction, entity=lhtml.HtmlEntity)
    lookup = etree.ElementNamespaceClassLookup(fallback)
    tags = lookup.get_namespace(None)
    for tag, cls in lhtml.HtmlElementClassLookup._default_element_classes.items():
        tags[tag] = cls
    return lookup


#: trafilatura's ``HTML_PARSER`` settings, with :func:`html_class_lookup`; curator's own object,
#: so trafilatura's parser is left as it ships.
HTML_PARSER = HTMLParser(collect_ids=False, default_doctype=False, encoding="utf-8",
                         remove_comments=True, remove_pis=True)
HTML_PARSER.set_element_class_lookup(html_class_lookup())


def has_illegal_chars(html: str) -> bool:
    """Whether ``INVALID_XML_CHARS`` finds a character in ``html``: C loops (``str.isascii``
    is a flag; in UTF-8 a C0 control is the byte itself and every other character's bytes
    are 0x80 or more, so ``bytes.translate``'s delete loses bytes exactly when it holds one;
    U+FFFE/U+FFFF by ``in``) instead of a regex scan of the page."""
    if "\ufffe" in html or "\uffff" in html:
        return True
    data = html.encode("ascii") if html.isascii() else html.encode("utf-8", "surrogatepass")
    return len(data.translate(None, _C0)) != len(data)


def repair_faulty_html(htmlstring: str, beginning: str) -> str:
    """trafilatura's repair, the same string out: its ``sub`` of illegal characters only when
    :func:`has_illegal_chars`; ``DOCTYPE_TAG`` (anchored at the start) matched on the first
    line in place, the page rebuilt only when it matches (a page without a newline goes
    through trafilatura's own lines, which add one). On real web pages (130,000 characters
    on average, 6 of 1,994 with an illegal character) the regex scan and the split and join
    were about 2% of the Common Crawl path's CPU."""
    if has_illegal_chars(htmlstring):
        htmlstring = INVALID_XML_CHARS.sub("", htmlstring)
    # libxml2/LXML issue: https://bugs.launchpad.net/lxml/+bug/1955915
    if "doctype" in beginning:
        end = htmlstring.find("\n")
        if end < 0:  # trafilatura's lines: they end the page with a newline
            firstline, _, rest = htmlstring.partition("\n")
            htmlstring = DOCTYPE_TAG.sub("", firstline, count=1) + "\n" + rest
        elif (m := DOCTYPE_TAG.match(htmlstring, 0, end)) is not None:
            htmlstring = htmlstring[m.end():]
    # self-closing <html/> in the first lines
    for line in htmlstring[:4096].splitlines()[:4]:
        if "<html" in line and line.endswith("/>"):
            htmlstring = FAULTY_HTML.sub(r"\1>", htmlstring, count=1)
            break
    return htmlstring


def fromstring_bytes(htmlobject: str) -> HtmlElement | None:
    "Try to pass bytes to LXML parser."
    try:
        return fromstring(htmlobject.encode("utf8", "surrogatepass"), parser=HTML_PARSER)
    except Exception as err:
        LOGGER.error("lxml parser bytestring %s", err)
    return None


def load_html(htmlobject: str | bytes) -> HtmlElement | None:
    """trafilatura's ``load_html`` of a string or bytes: decoded, repaired
    (:func:`repair_faulty_html`), parsed with :data:`HTML_PARSER`; None when it is not HTML
    (a tree too small for a page that names no ``html``)."""
    tree = None
    htmlobject = decode_file(htmlobject)
    beginning = htmlobject[:50].lower()
    check_flag = is_dubious_html(beginning)
    htmlobject = repair_faulty_html(htmlobject, beginning)
    fallback_parse = False
    try:
        tree = fromstring(htmlobject, parser=HTML_PARSER)
    except ValueError:
        # "Unicode strings with encoding declaration are not supported."
        tree = fromstring_bytes(htmlobject)
        fallback_parse = True
    except Exception as err:  # pragma: no cover
        LOGGER.error("lxml parsing failed: %s", err)
    if (tree is None or len(tree) < 1) and not fallback_parse:
        tree = fromstring_bytes(htmlobject)
    if tree is not None and check_flag is True and len(tree) < 2:
        LOGGER.error("parsed tree length: %s, wrong data type or not valid HTML", len(tree))
        tree = None
    return tree
