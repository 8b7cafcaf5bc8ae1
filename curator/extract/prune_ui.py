"""Page furniture dropped from the parsed tree before trafilatura reads it: documentation
generators' UI (permalinks, skip links, collapse buttons), forum posts' author boxes and
signatures, screen-reader-only text (masked, not dropped), collapsed panels opened, Sphinx
toctrees unlinked. Each step is gated by the page's class and id values
(:func:`attr_values`), so a page without the strings it looks for costs one set lookup."""

from __future__ import annotations

import re
from typing import Any

from curator.extract.html_repair import XML_ILLEGAL

# Elements that documentation generators add for navigation, not content: Sphinx's and
# MkDocs' "¶" permalinks, rustdoc's "Expand description" toggle, "§" anchors, "source" links
# and "[−]" collapse-all button (with the item's version: header UI), Javadoc's "Skip
# navigation links", MkDocs' "Skip to content", Doxygen's "More..." links to the details.
# (The reference: pages run its alternatives, _UI_PARTS, through ui_elements.)
_UI_XPATH = (
    "//a[(@class and (contains(concat(' ', normalize-space(@class), ' '), ' headerlink ')"
    " or ((contains(concat(' ', normalize-space(@class), ' '), ' anchor ')"
    " or contains(concat(' ', normalize-space(@class), ' '), ' doc-anchor '))"
    " and string-length(normalize-space()) <= 2)"
    " or contains(@class, 'srclink')"
    " or (@class = 'src' and (normalize-space() = 'source' or normalize-space() = 'Source'))"
    " or contains(@class, 'md-skip') or contains(@class, 'skip-nav')))"
    " or (contains(@href, '#') and normalize-space() = 'More...')]"
    " | //summary[contains(@class, 'hideme')] | //span[@class = 'out-of-band']"
    " | //a[@id = 'toggle-all-docs']"
    " | //div[contains(@class, 'skipNav') or contains(@class, 'skip-nav')]"
)


# _UI_XPATH split into its alternatives, each with the strings that the page's class and id
# values (:func:`attr_values`) must contain for it to match anything ("More..." is link
# text: the page's source is searched for it; ``=src`` means a class that is exactly "src"):
# a page runs only the alternatives whose strings it holds (a Sphinx page: the headerlink
# one), most pages of the web none. Each alternative walks the whole tree (~0.4 ms on a large
# page; `descendant::` from the root element walks it once, `//` twice). The values are the
# parsed attributes the XPath reads, so the gate is exact (a case-insensitive regex for
# ``class=src`` over the source cost ~1 ms a page). Same elements as _UI_XPATH
# (tests/extract/test_ui_gate.py).
_CLS = "contains(concat(' ', normalize-space(@class), ' '), ' {} ')"


_UI_PARTS: tuple[tuple[tuple[str, ...], str], ...] = (
    # the plain contains() first: normalize-space() and concat() only for the few candidates
    (("headerlink",), "descendant::a[contains(@class, 'headerlink') and "
     + _CLS.format("headerlink") + "]"),
    (("anchor",), "descendant::a[contains(@class, 'anchor') and (" + _CLS.format("anchor") + " or "
     + _CLS.format("doc-anchor") + ") and string-length(normalize-space()) <= 2]"),
    (("srclink",), "descendant::a[@class and contains(@class, 'srclink')]"),
    (("=src",), "descendant::a[@class = 'src' and (normalize-space() = 'source'"
     " or normalize-space() = 'Source')]"),
    (("md-skip", "skip-nav"), "descendant::a[@class and (contains(@class, 'md-skip')"
     " or contains(@class, 'skip-nav'))]"),
    (("More...",), "descendant::a[contains(@href, '#') and normalize-space() = 'More...']"),
    (("hideme",), "descendant::summary[contains(@class, 'hideme')]"),
    (("out-of-band",), "descendant::span[@class = 'out-of-band']"),
    (("toggle-all-docs",), "descendant::a[@id = 'toggle-all-docs']"),
    (("skipNav", "skip-nav"), "descendant::div[contains(@class, 'skipNav')"
     " or contains(@class, 'skip-nav')]"),
)


_UI_COMPILED: list[tuple[tuple[str, ...], Any]] = []


#: Every class and every id attribute's value (two C-level XPaths, plain strings). From the
#: document node, as ``//@class`` (a page can have elements beside its root element), but
#: with ``descendant::*``, which libxml2 walks faster than ``//`` (descendant-or-self::node()).
_ATTR_XPATHS: list[Any] = []


def attr_sets(tree: Any) -> tuple[set[str], set[str]]:
    """The page's distinct class values and distinct id values."""
    if not _ATTR_XPATHS:
        from lxml.etree import XPath

        _ATTR_XPATHS.extend(XPath(f"/descendant::*/@{a}", smart_strings=False)
                            for a in ("class", "id"))
    return set(_ATTR_XPATHS[0](tree)), set(_ATTR_XPATHS[1](tree))


def attr_values(tree: Any, sets: tuple[set[str], set[str]] | None = None) -> str:
    """The page's class and id values (``sets``: its :func:`attr_sets`), one per line, each
    once: what the class/id-gated steps (documentation UI, forum author boxes) test for
    their strings first. A page repeats its classes, so the distinct ones are a fraction of
    the text the gates' substring searches would otherwise scan."""
    classes, ids = attr_sets(tree) if sets is None else sets
    return "\n" + "\n".join(classes | ids) + "\n"


def _has(html: str, attrs: str, needle: str) -> bool:
    if needle == "More...":
        return needle in html
    if needle == "=src":
        return "\nsrc\n" in attrs
    return needle in attrs


def ui_elements(tree: Any, html: str, attrs: str | None = None) -> list[Any]:
    """The elements _UI_XPATH selects on ``tree`` (parsed from ``html``; ``attrs`` its
    :func:`attr_values`), running only the alternatives whose strings the page holds
    (document order is not kept: dropping them gives the same tree in any order)."""
    if not _UI_COMPILED:
        from lxml.etree import XPath

        _UI_COMPILED.extend((tokens, XPath(x)) for tokens, x in _UI_PARTS)
    if attrs is None:
        attrs = attr_values(tree)
    found: dict[Any, None] = {}
    for tokens, xpath in _UI_COMPILED:
        if any(_has(html, attrs, n) for n in tokens):
            found.update(dict.fromkeys(xpath(tree)))
    return list(found)


# Forum posts' author boxes and signatures (phpBB's postprofile, vBulletin's userinfo and
# signature, XenForo's message-userDetails, Vanilla's AuthorInfo...): trafilatura keeps the
# member lines ("Beiträge: 6", "Registriert seit", join dates, ranks) inside a thread's text.
# A cheap XPath picks elements whose class/id holds one of the stems, then a regex on
# whole class/id tokens decides; boxes over _POST_META_WORDS words are left (a wrapper that
# holds the post, like vBulletin's "postdetails", which is not in the list for that reason).
_POST_META_STEMS = ("ser", "rofile", "ignature", "uthor", "oster", "ember")  # any case of


# the first letter (User/user...); C-level contains() on each attribute, one union: 2 ms a
# page on the tuning split, where translate() to lower case cost 8.
POST_META_XPATH = " | ".join(
    f"//*[@{a}][" + " or ".join(f"contains(@{a}, '{s}')" for s in _POST_META_STEMS) + "]"
    for a in ("class", "id"))


_POST_META = re.compile(
    r"(?:^|[-_ ])(?:postprofile|userinfo|user-info|user_info|userdetails|user-details"
    r"|messageuserinfo|message-userdetails|message-user|postbit-user|postbituser|signature"
    r"|usertitle|user-title|author-?info|poster-?info|postauthor|memberinfo|member-info"
    r"|user-stats|userstats)(?:[-_ ]|$)", re.IGNORECASE)


_POST_META_WORDS = 150


# A page's class/id values (lower-cased) hold one of these when any element's can match
# _POST_META (each of its tokens contains one): most pages hold none and skip the XPath
# (~2 ms a page). Values with other than ASCII letters are searched with _POST_META itself
# (its IGNORECASE also matches "ſ" to "s" and the Kelvin sign to "k", which lower() does not).
_POST_META_NEEDLES = (
    "postprofile", "userinfo", "user-info", "user_info", "userdetails", "user-details",
    "message-user", "postbit", "signature", "usertitle", "user-title", "authorinfo",
    "author-info", "posterinfo", "poster-info", "postauthor", "memberinfo", "member-info",
    "user-stats", "userstats")


_POST_META_LINES = re.compile(_POST_META.pattern, re.IGNORECASE | re.MULTILINE)


def _may_have_post_meta(attrs: str) -> bool:
    """Whether some element's class or id (``attrs``: :func:`attr_values`) can match
    :data:`_POST_META`: a necessary condition, never false for a page that has one."""
    if not attrs.isascii():
        return _POST_META_LINES.search(attrs) is not None
    low = attrs.lower()
    return any(n in low for n in _POST_META_NEEDLES)


def _xpath_literal(value: str) -> str | None:
    """``value`` as an XPath 1.0 string literal (None: it holds both quote characters)."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    return None


def _post_meta_candidates(tree: Any, attrs: str,
                          sets: tuple[set[str], set[str]]) -> list[Any] | None:
    """The elements of :data:`POST_META_XPATH` that :func:`drop_post_meta` can drop, in
    document order, found by the page's values that match :data:`_POST_META` (``sets``: the
    :func:`attr_sets` that ``attrs`` joins): an element's "class id" string matches only
    where its class or its id does (no token holds a space), so one XPath that looks each
    class and id attribute up in those few values replaces twelve ``contains()`` on every
    element of the page (None: a value holds a newline, or the values both quote characters;
    the caller runs the whole XPath)."""
    classes, ids = sets
    if attrs.count("\n") != len(classes | ids) + 1:  # a value holds a newline
        return None
    lines = set()  # the values (one per line) that hold a match
    for m in _POST_META_LINES.finditer(attrs):
        lines.add(attrs[attrs.rfind("\n", 0, m.start()) + 1:attrs.find("\n", m.start())])
    tests = []
    for name, hits in (("class", classes & lines), ("id", ids & lines)):
        if hits:
            # "\nvalue\n" in "\nv1\nv2\n": equal to one of them (no value holds a newline)
            lit = _xpath_literal("\n" + "\n".join(sorted(hits)) + "\n")
            if lit is None:
                return None
            tests.append(f"/descendant::*/@{name}[contains({lit}, concat('\n', ., '\n'))]")
    if not tests:
        return []
    from lxml.etree import XPath

    # the attributes in document order: their elements in document order, an element with
    # both a matching class and a matching id twice in a row
    out = []
    for el in dict.fromkeys(a.getparent() for a in XPath(" | ".join(tests))(tree)):
        # POST_META_XPATH's own test: a stem in the class or in the id, as written
        c, i = el.get("class"), el.get("id")
        if ((c and any(st in c for st in _POST_META_STEMS))
                or (i and any(st in i for st in _POST_META_STEMS))):
            out.append(el)
    return out


def drop_post_meta(tree: object, meta_xpath: Any, attrs: str | None = None,
                    sets: tuple[set[str], set[str]] | None = None) -> None:
    """Drop forum posts' author boxes and signatures (see :data:`_POST_META`; ``attrs``: the
    page's :func:`attr_values` of its :func:`attr_sets` ``sets``, which may be taken before
    other drops)."""
    if sets is None:
        sets = attr_sets(tree)
        attrs = attr_values(tree, sets)
    elif attrs is None:
        attrs = attr_values(tree, sets)
    if not _may_have_post_meta(attrs):
        return
    candidates = _post_meta_candidates(tree, attrs, sets)
    if candidates is None:
        candidates = meta_xpath(tree)
    for el in candidates:
        if el.tag in ("html", "body") or el.getparent() is None:
            continue
        if not _POST_META.search(f"{el.get('class') or ''} {el.get('id') or ''}"):
            continue
        if len(" ".join(el.itertext()).split()) <= _POST_META_WORDS:
            drop_tree(el)


#: Class names that CSS frameworks and CMSs define for text only screen readers get (positioned
#: off screen or clipped to one pixel): Bootstrap 3-4 and Tailwind ``sr-only``, Bootstrap 5,
#: Drupal 8+ and Shopify ``visually-hidden``, HTML5 Boilerplate ``visuallyhidden``, WordPress
#: ``screen-reader-text``, Drupal 7 ``element-invisible``, Foundation ``show-for-sr``. Their
#: text ("Regular price", "Sale price", "Unit price", "per" in every card of a Shopify
#: collection; "Open Menu", "Share") is not on the page a reader sees
#: (docs/extract.md#screen-reader-text).
SCREEN_READER_CLASSES = ("sr-only", "visually-hidden", "visuallyhidden", "screen-reader-text",
                         "element-invisible", "show-for-sr")


#: What screen-reader-only text is masked with before trafilatura runs: a letter (so
#: trafilatura keeps a masked element as text) that web pages do not use (U+A7FF, LATIN
#: EPIGRAPHIC LETTER ARCHAIC M); a page that holds it is not masked.
MASK = "\ua7ff"


_NONSPACE = re.compile(r"\S")


_MASKED = re.compile("[ \t]*" + MASK + "+")


#: More distinct class values holding a name than this: the plain XPath (the one-literal
#: lookup would search a literal as long as all of them for every element)
_MASK_VALUES = 64


def mask_screen_reader(tree: Any, html: str, attrs: str, classes: set[str]) -> None:
    """Replace every character but whitespace of the screen-reader-only elements' text by
    :data:`MASK`, which :func:`unmask` removes from the text. Masked, not dropped: the
    elements keep their length and their words, so trafilatura's link density and length
    tests, and the word counts the reruns compare, are what they were (dropping a Shopify
    card's price labels left its title link alone, and the grid went as link-dense:
    F1 0.48 -> 0.11). ``attrs``: the page's :func:`attr_values`, ``classes`` its distinct
    class values."""
    if not any(n in attrs for n in SCREEN_READER_CLASSES) or MASK in html:  # cheap gates
        return
    names = frozenset(SCREEN_READER_CLASSES)
    values = [v for v in classes if not names.isdisjoint(v.split())]
    if not values:
        return
    # the elements whose class attribute is one of those values, looked up in one literal of
    # them (the contains(concat(normalize-space())) form cost ~1 ms a page on large pages);
    # that form where the lookup could be wrong (a value with a newline or both quote
    # characters) or slow (a page of thousands of such values)
    lit = _xpath_literal("\n" + "\n".join(values) + "\n")
    if lit is None or len(values) > _MASK_VALUES or any("\n" in v for v in values):
        xpath = " | ".join(f"/descendant::*[@class and {_CLS.format(n)}]"
                           for n in SCREEN_READER_CLASSES)
    else:
        xpath = f"/descendant::*[@class and contains({lit}, concat('\n', @class, '\n'))]"
    for el in tree.xpath(xpath):  # type: ignore[attr-defined]
        for node in el.iter():
            if node.text:
                node.text = _NONSPACE.sub(MASK, node.text)
            if node is not el and node.tail:
                node.tail = _NONSPACE.sub(MASK, node.tail)


def unmask(text: str) -> str:
    """``text`` without the masked words (:func:`mask_screen_reader`), and without the lines
    (or list items) that held nothing else."""
    if MASK not in text:
        return text
    out = []
    for line in text.split("\n"):
        if MASK in line:
            line = _MASKED.sub("", line).rstrip()
            if not line.strip(" -\t"):
                continue
        out.append(line)
    return "\n".join(out).strip()


def drop_tree(el: Any) -> None:
    """``el.drop_tree()`` (the element goes, its tail joins the text before it), except that
    where that text holds a character lxml refuses to set back ("&#26;" parses to U+001A) the
    joined text is set without them, as a browser shows nothing for them: a documentation
    link or author box next to one failed the page (lxml removes the old text first, so
    drop_tree cannot be retried)."""
    tail = el.tail
    if tail:
        parent, previous = el.getparent(), el.getprevious()
        before = (parent.text if previous is None else previous.tail) or ""
        if XML_ILLEGAL.search(tail) or XML_ILLEGAL.search(before):
            joined = XML_ILLEGAL.sub("", before + tail)
            if previous is None:
                parent.text = joined
            else:
                previous.tail = joined
            parent.remove(el)
            return
    el.drop_tree()


_DISPLAY_NONE = re.compile(r"display\s*:\s*none", re.IGNORECASE)


def open_panels(tree: Any) -> None:
    """Un-hide collapsed disclosure panels: the elements another element names in
    ``aria-controls`` (accordions, tabs, "read more" sections), which a page hides with
    ``aria-hidden="true"`` or ``display:none`` until a click shows them.
    trafilatura drops hidden elements as it should for popups and menus, and with them an
    FAQ's answers or a product's tabs that a reader opens (docs/extract.md#collapsed-panels)."""
    ids = {v for el in tree.iterfind(".//*[@aria-controls]")
           for v in el.get("aria-controls").split()}
    if not ids:
        return
    for el in tree.iterfind(".//*[@id]"):
        if el.get("id") not in ids:
            continue
        if el.get("aria-hidden") == "true":
            del el.attrib["aria-hidden"]
        style = el.get("style")
        if style and "none" in style:
            el.set("style", _DISPLAY_NONE.sub("", style))


def unlink_toctrees(tree: Any) -> None:
    """A Sphinx toctree (``div.toctree-wrapper``: a chapter's table of contents, in the page
    body; the sidebar is ``div.sphinxsidebar``) is the content of an index page, but it is a
    list of links, and trafilatura drops link-dense lists as navigation: an index page kept
    its intro only (F1 0.16 on pydocs/library/archiving.html). Its links become ``<span>``s,
    so their text is judged as text (docs/extract.md#sphinx-toctrees)."""
    for div in tree.iterfind(".//div[@class]"):
        if "toctree-wrapper" in div.get("class").split():
            for a in div.iter("a"):
                a.tag = "span"
