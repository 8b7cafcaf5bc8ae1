"""HTML -> main text: charset detection and three extractors behind one function.

* ``trafilatura`` (default): highest token F1 on the held-out gold pages of bench/gold
  (fast + favor_recall, again without fast and then resiliparse when the text is short,
  shaped text; docs/extract.md).
* ``resiliparse``: a C++ DOM walk with main-content heuristics, an order of magnitude faster.
* ``justext``: paragraph classification with stop-word lists (what C4/RefinedWeb-style
  pipelines used); language-dependent.

``extract_html`` is also a stage for documents whose text is HTML (custom sources). The Common
Crawl and WARC sources call :func:`extract_text` directly so raw HTML is never written to a
shard.
"""

from __future__ import annotations

import codecs
import copy
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal

from curator.base.document import Document
from curator.core.context import ShardContext
from curator.core.params import PositiveFloat, Ratio, StageParams
from curator.core.stage import ShardStage
from curator.extract import justext_classify, resume
from curator.extract.timeout import ExtractTimeout, time_limit

Extractor = Literal["trafilatura", "resiliparse", "justext"]
#: The extractor used when a stage does not name one (chosen by bench/extraction_quality.py).
DEFAULT_EXTRACTOR: Extractor = "trafilatura"

_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_:.\-]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([a-zA-Z0-9_:.\-]+)", re.IGNORECASE)


class DecodeError(ValueError):
    """No charset decodes the page cleanly."""


class Skipped(Exception):
    """``extract_text``'s ``precheck`` turned the page down before the full extraction:
    ``reason`` is what it said, ``text`` the quick text it judged (resiliparse's)."""

    def __init__(self, reason: str, text: str) -> None:
        super().__init__(reason)
        self.reason, self.text = reason, text


#: WHATWG encoding labels Python does not know.
_LABELS = {"x-sjis": "cp932", "windows-31j": "cp932", "x-gbk": "gb18030",
           "x-euc-jp": "euc_jp", "x-cp1251": "cp1251", "x-cp1250": "cp1250",
           "unicode-1-1-utf-8": "utf-8", "x-unicode20utf8": "utf-8",
           "x-mac-cyrillic": "mac-cyrillic"}
#: What browsers (the WHATWG encoding standard) decode a label's pages as: the superset the
#: servers meant. latin-1/ascii are windows-1252; GB2312/GBK pages are decoded by the GB18030
#: decoder; Shift_JIS is windows-31j (cp932), EUC-KR is windows-949, Big5 includes HKSCS.
_WHATWG = {"latin-1": "cp1252", "iso8859-1": "cp1252", "ascii": "cp1252",
           "gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949",
           "big5": "big5hkscs", "iso8859-9": "cp1254", "tis-620": "cp874",
           "iso8859-11": "cp874"}
#: Byte order marks, which decide a page's encoding before any label (WHATWG "decode").
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def _norm_codec(name: str | None) -> str | None:
    if not name:
        return None
    label = name.strip().lower()
    try:
        codec = codecs.lookup(_LABELS.get(label, label)).name
    except LookupError:
        return None
    return _WHATWG.get(codec, codec)


def decode_html(body: bytes, content_type: str | None = None) -> tuple[str, str]:
    """Decode a page as browsers do: a byte order mark, else the HTTP header's charset, else
    a ``<meta charset>`` (or ``http-equiv``), else UTF-8, else a statistical guess; labels
    mean what the WHATWG encoding standard says (GB2312 pages decode as GB18030, Shift_JIS
    as windows-31j...). Returns ``(text, charset)`` (the text without its BOM); raises
    :class:`DecodeError` only for binary content (NUL bytes) that none of them decodes; other
    pages that none decodes cleanly are read as a browser reads them (:func:`_browser_fallback`)."""
    for bom, cs in _BOMS:
        if body.startswith(bom):
            try:
                return body[len(bom):].decode(cs), cs
            except UnicodeDecodeError:
                break  # a BOM followed by something else: the labels decide
    tried: list[str] = []
    candidates: list[str | None] = []
    if content_type:
        m = _HEADER_CHARSET.search(content_type)
        candidates.append(_norm_codec(m.group(1)) if m else None)
    m2 = _META_CHARSET.search(body[:4096])
    candidates.append(_norm_codec(m2.group(1).decode("ascii", "ignore")) if m2 else None)
    candidates.append("utf-8")
    for cs in candidates:
        if cs is None or cs in tried:
            continue
        tried.append(cs)
        try:
            return body.decode(cs), cs
        except (UnicodeDecodeError, LookupError):
            continue
    from resiliparse.parse.encoding import detect_encoding

    guess = _norm_codec(detect_encoding(body[:65536]))
    if guess and guess not in tried:
        tried.append(guess)
        try:
            return body.decode(guess), guess
        except (UnicodeDecodeError, LookupError):
            pass
    if b"\x00" in body:
        raise DecodeError(f"no charset decodes the page (tried {', '.join(tried)}; NUL bytes: "
                          "binary content)")
    return _browser_fallback(body)


def _c1(err: UnicodeError) -> tuple[str, int]:
    """windows-1252's five unassigned bytes as the C1 controls the WHATWG index maps them to."""
    if not isinstance(err, UnicodeDecodeError):
        raise err
    return "".join(chr(b) for b in err.object[err.start:err.end]), err.end


codecs.register_error("curator-c1", _c1)


def _browser_fallback(body: bytes) -> tuple[str, str]:
    """What a browser shows for a page that no label or guess decodes cleanly: UTF-8 with
    U+FFFD for its broken bytes when most of its non-ASCII text is valid UTF-8 (a UTF-8 page
    with a few bad bytes), else windows-1252, the WHATWG default for unlabelled pages (a
    latin-1 page with a stray byte). The charset says so: ``utf-8+replace`` or
    ``cp1252+c1``. 25 of 7,079 unique real web pages (CleanEval, dragnet) were quarantined
    before this."""
    text = body.decode("utf-8", "replace")
    replaced = text.count("\ufffd")
    bad = replaced - body.count("\ufffd".encode())
    # non-ASCII characters other than U+FFFD, counted without a list of them (a 10 MB page)
    valid = len(text) - len(text.encode("ascii", "ignore")) - replaced
    if valid > bad:
        return text, "utf-8+replace"
    return body.decode("cp1252", "curator-c1"), "cp1252+c1"


Balance = Literal["precision", "default", "recall"]

# Elements that documentation generators add for navigation, not content: Sphinx's and
# MkDocs' "¶" permalinks, rustdoc's "Expand description" toggle, "§" anchors, "source" links
# and "[−]" collapse-all button (with the item's version: header UI), Javadoc's "Skip
# navigation links", MkDocs' "Skip to content", Doxygen's "More..." links to the details.
# (The reference: pages run its alternatives, _UI_PARTS, through _ui_elements.)
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
# values (:func:`_attr_values`) must contain for it to match anything ("More..." is link
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


def _attr_sets(tree: Any) -> tuple[set[str], set[str]]:
    """The page's distinct class values and distinct id values."""
    if not _ATTR_XPATHS:
        from lxml.etree import XPath

        _ATTR_XPATHS.extend(XPath(f"/descendant::*/@{a}", smart_strings=False)
                            for a in ("class", "id"))
    return set(_ATTR_XPATHS[0](tree)), set(_ATTR_XPATHS[1](tree))


def _attr_values(tree: Any, sets: tuple[set[str], set[str]] | None = None) -> str:
    """The page's class and id values (``sets``: its :func:`_attr_sets`), one per line, each
    once: what the class/id-gated steps (documentation UI, forum author boxes) test for
    their strings first. A page repeats its classes, so the distinct ones are a fraction of
    the text the gates' substring searches would otherwise scan."""
    classes, ids = _attr_sets(tree) if sets is None else sets
    return "\n" + "\n".join(classes | ids) + "\n"


def _has(html: str, attrs: str, needle: str) -> bool:
    if needle == "More...":
        return needle in html
    if needle == "=src":
        return "\nsrc\n" in attrs
    return needle in attrs


def _ui_elements(tree: Any, html: str, attrs: str | None = None) -> list[Any]:
    """The elements _UI_XPATH selects on ``tree`` (parsed from ``html``; ``attrs`` its
    :func:`_attr_values`), running only the alternatives whose strings the page holds
    (document order is not kept: dropping them gives the same tree in any order)."""
    if not _UI_COMPILED:
        from lxml.etree import XPath

        _UI_COMPILED.extend((tokens, XPath(x)) for tokens, x in _UI_PARTS)
    if attrs is None:
        attrs = _attr_values(tree)
    found: dict[Any, None] = {}
    for tokens, xpath in _UI_COMPILED:
        if any(_has(html, attrs, n) for n in tokens):
            found.update(dict.fromkeys(xpath(tree)))
    return list(found)


# The same strings when they reach the text some other way (one line of their own).
_UI_LINES = frozenset({"Expand description", "Collapse description", "Skip navigation links",
                       "Skip to content", "Skip to main content", "More...", "[src]", "source",
                       "¶", "§", "Copy", "Copy to clipboard", "Hide whitespace changes"})
_PERMALINK_TAIL = re.compile(r"[ \t]*[¶§]$")
_WRAPPED_TEXT = ("//text()[contains(., '\n')][normalize-space()][not(ancestor::pre"
                 " or ancestor::textarea or ancestor::listing or ancestor::xmp"
                 " or ancestor::plaintext or ancestor::code[contains(., '\n')]"
                 " or ancestor::script or ancestor::style)]")
# _WRAPPED_TEXT as a page runs it (:func:`_wrapped_xpath`): each ancestor test walks every
# candidate's ancestors, so a page runs only those of the tags it has (about half of web pages
# have none but <script> and <style>); `/descendant::` from the document node is `//`'s node
# set without the descendant-or-self step; normalize-space() before contains() (the page's
# blank text nodes are most of those with a newline) measured ~15% less CPU for the XPath.
_KEEP_LINES = ("pre", "textarea", "listing", "xmp", "plaintext", "code", "script", "style")
_LOOKED_UP = _KEEP_LINES[:6]  # not <script>, <style>: :func:`_prepare_tree`
_WRAPPED_XPATHS: dict[frozenset[str], Any] = {}
# trafilatura's table rows are "| cell | cell | " (cell pipes escaped as "\|") and its head
# separator is exactly "|---|---|"; Markdown tables shown inside code blocks have no trailing
# space, so they are left as they are.
_TABLE_RULE = re.compile(r"^\|(---\|)+$")


# Forum posts' author boxes and signatures (phpBB's postprofile, vBulletin's userinfo and
# signature, XenForo's message-userDetails, Vanilla's AuthorInfo...): trafilatura keeps the
# member lines ("Beiträge: 6", "Registriert seit", join dates, ranks) inside a thread's text.
# A cheap XPath picks elements whose class/id holds one of the stems, then a regex on
# whole class/id tokens decides; boxes over _POST_META_WORDS words are left (a wrapper that
# holds the post, like vBulletin's "postdetails", which is not in the list for that reason).
_POST_META_STEMS = ("ser", "rofile", "ignature", "uthor", "oster", "ember")  # any case of
# the first letter (User/user...); C-level contains() on each attribute, one union: 2 ms a
# page on the tuning split, where translate() to lower case cost 8.
_POST_META_XPATH = " | ".join(
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
    """Whether some element's class or id (``attrs``: :func:`_attr_values`) can match
    :data:`_POST_META`: a necessary condition, never false for a page that has one."""
    if not attrs.isascii():
        return _POST_META_LINES.search(attrs) is not None
    low = attrs.lower()
    return any(n in low for n in _POST_META_NEEDLES)

_XPATHS: list[Any] = []

_NOSCRIPT_END = re.compile(r"</noscript\s*>", re.IGNORECASE)
_NOSCRIPT_START = re.compile(r"<noscript\b", re.IGNORECASE)
_IFRAME_OPEN = re.compile(r"<iframe\b", re.IGNORECASE)
_IFRAME_CLOSE = re.compile(r"</iframe\s*>", re.IGNORECASE)


def close_noscript_iframes(html: str) -> str:
    """Close the ``<iframe>`` left open inside a ``<noscript>`` (tag managers' snippets often
    write ``<iframe src=...>`` or ``<iframe .../>`` with no end tag). A browser runs scripts,
    so it reads a ``<noscript>``'s content as inert text; the parsers here do not: an iframe's
    content is raw text up to ``</iframe>``, so without one the rest of the page became the
    iframe's text (libxml2 for an unclosed tag: trafilatura then returned the page's raw
    markup as its text; resiliparse's HTML5 parser also for ``<iframe/>``: it kept no words).
    Each missing ``</iframe>`` is added before the ``</noscript>``; other pages are returned
    as they are (the same object).

    Linear in the page: each ``<noscript>`` is closed by the first ``</noscript>`` after it
    (one search), and once none is left no later one is looked for. A regex with a lazy
    ``(.*?)</noscript>`` took the same steps but rescanned the rest of the page from every
    unclosed ``<noscript>``: 50,000 of them (1.3 MB) took ten minutes."""
    m = _NOSCRIPT_START.search(html)
    if m is None:
        return html
    parts: list[str] = []
    pos = 0
    while m is not None:
        gt = html.find(">", m.end())
        if gt < 0:
            break
        close = _NOSCRIPT_END.search(html, gt + 1)
        if close is None:
            break
        inner = html[gt + 1:close.start()]
        missing = len(_IFRAME_OPEN.findall(inner)) - len(_IFRAME_CLOSE.findall(inner))
        if missing > 0:
            parts += [html[pos:close.start()], "</iframe>" * missing]
            pos = close.start()
        m = _NOSCRIPT_START.search(html, close.end())
    if not parts:
        return html
    parts.append(html[pos:])
    return "".join(parts)


_TITLE_START = re.compile(r"<title\b[^<>]*>", re.IGNORECASE)
_TITLE_END = re.compile(r"</title", re.IGNORECASE)


def close_open_title(html: str) -> str:
    """End a ``<title>`` that has no ``</title>`` at the first ``<`` after it.

    A title's content is raw text up to ``</title>``: without one, both parsers here (and a
    browser) make the rest of the page the title, and the page has no text. Seen on 8 of the
    621 Google News pages of page-signal (L3S-GN1; their text was cut out of the title) and on
    7 of 7,079 real web pages; titles hold no markup, so the first tag after the start tag
    ends it. Linear: on a page with a ``</title>`` (nearly every page, near its top) two
    searches that stop there."""
    m = _TITLE_START.search(html)
    if m is None or _TITLE_END.search(html, m.end()) is not None:
        return html
    lt = html.find("<", m.end())
    return html if lt < 0 else f"{html[:lt]}</title>{html[lt:]}"


def _join_lines(text: str) -> str:
    """A newline and the blanks around it become one space, as a browser renders them
    (linear: a regex of blanks, newline, blanks backtracks quadratically over long runs)."""
    parts = text.split("\n")
    inner = [p.strip() for p in parts[1:-1]]
    pieces = [parts[0].rstrip(), *(p for p in inner if p), parts[-1].lstrip()]
    out = " ".join(p for p in pieces if p)
    # keep a boundary space where the node began or ended with blanks (word separators)
    if text[:1].isspace() and not out[:1].isspace():
        out = " " + out
    if text[-1:].isspace() and not out[-1:].isspace():
        out += " "
    return out


def _wrapped_xpath(present: frozenset[str]) -> Any:
    """_WRAPPED_TEXT for a page whose elements with :data:`_KEEP_LINES` tags have the tags
    ``present`` (an ancestor test of a tag the page lacks is false for every node), compiled
    once per set of tags."""
    xpath = _WRAPPED_XPATHS.get(present)
    if xpath is None:
        from lxml.etree import XPath

        # _WRAPPED_TEXT's "ancestor::code[contains(., '\n')]" holds for every <code> above a
        # text node with a newline (its string value holds the node's text): no test needed
        tests = [f"ancestor::{t}" for t in _KEEP_LINES if t in present]
        xpath = XPath("/descendant::text()[normalize-space()][contains(., '\n')]"
                      + (f"[not({' or '.join(tests)})]" if tests else ""))
        _WRAPPED_XPATHS[present] = xpath
    return xpath


def _compiled() -> tuple[Any, Any]:
    """The wrapped-text and author-box XPaths, compiled once per process (lxml is imported
    late; _UI_XPATH runs as its gated alternatives, :func:`_ui_elements`)."""
    if not _XPATHS:
        from lxml.etree import XPath

        _XPATHS.extend([XPath(_WRAPPED_TEXT), XPath(_POST_META_XPATH)])
    return _XPATHS[0], _XPATHS[1]


def _xpath_literal(value: str) -> str | None:
    """``value`` as an XPath 1.0 string literal (None: it holds both quote characters)."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    return None


def _post_meta_candidates(tree: Any, attrs: str,
                          sets: tuple[set[str], set[str]]) -> list[Any] | None:
    """The elements of :data:`_POST_META_XPATH` that :func:`_drop_post_meta` can drop, in
    document order, found by the page's values that match :data:`_POST_META` (``sets``: the
    :func:`_attr_sets` that ``attrs`` joins): an element's "class id" string matches only
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
        # _POST_META_XPATH's own test: a stem in the class or in the id, as written
        c, i = el.get("class"), el.get("id")
        if ((c and any(st in c for st in _POST_META_STEMS))
                or (i and any(st in i for st in _POST_META_STEMS))):
            out.append(el)
    return out


def _drop_post_meta(tree: object, meta_xpath: Any, attrs: str | None = None,
                    sets: tuple[set[str], set[str]] | None = None) -> None:
    """Drop forum posts' author boxes and signatures (see :data:`_POST_META`; ``attrs``: the
    page's :func:`_attr_values` of its :func:`_attr_sets` ``sets``, which may be taken before
    other drops)."""
    if sets is None:
        sets = _attr_sets(tree)
        attrs = _attr_values(tree, sets)
    elif attrs is None:
        attrs = _attr_values(tree, sets)
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
            _drop_tree(el)


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
_MASK = "\ua7ff"
_NONSPACE = re.compile(r"\S")
_MASKED = re.compile("[ \t]*" + _MASK + "+")
#: More distinct class values holding a name than this: the plain XPath (the one-literal
#: lookup would search a literal as long as all of them for every element)
_MASK_VALUES = 64


def _mask_screen_reader(tree: Any, html: str, attrs: str, classes: set[str]) -> None:
    """Replace every character but whitespace of the screen-reader-only elements' text by
    :data:`_MASK`, which :func:`_unmask` removes from the text. Masked, not dropped: the
    elements keep their length and their words, so trafilatura's link density and length
    tests, and the word counts the reruns compare, are what they were (dropping a Shopify
    card's price labels left its title link alone, and the grid went as link-dense:
    F1 0.48 -> 0.11). ``attrs``: the page's :func:`_attr_values`, ``classes`` its distinct
    class values."""
    if not any(n in attrs for n in SCREEN_READER_CLASSES) or _MASK in html:  # cheap gates
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
                node.text = _NONSPACE.sub(_MASK, node.text)
            if node is not el and node.tail:
                node.tail = _NONSPACE.sub(_MASK, node.tail)


def _unmask(text: str) -> str:
    """``text`` without the masked words (:func:`_mask_screen_reader`), and without the lines
    (or list items) that held nothing else."""
    if _MASK not in text:
        return text
    out = []
    for line in text.split("\n"):
        if _MASK in line:
            line = _MASKED.sub("", line).rstrip()
            if not line.strip(" -\t"):
                continue
        out.append(line)
    return "\n".join(out).strip()


def _drop_tree(el: Any) -> None:
    """``el.drop_tree()`` (the element goes, its tail joins the text before it), except that
    where that text holds a character lxml refuses to set back ("&#26;" parses to U+001A) the
    joined text is set without them, as a browser shows nothing for them: a documentation
    link or author box next to one failed the page (lxml removes the old text first, so
    drop_tree cannot be retried)."""
    tail = el.tail
    if tail:
        parent, previous = el.getparent(), el.getprevious()
        before = (parent.text if previous is None else previous.tail) or ""
        if _XML_ILLEGAL.search(tail) or _XML_ILLEGAL.search(before):
            joined = _XML_ILLEGAL.sub("", before + tail)
            if previous is None:
                parent.text = joined
            else:
                previous.tail = joined
            parent.remove(el)
            return
    el.drop_tree()


#: Code blocks with more children than this (or a ``<pre>`` with a child that has more) are
#: stripped of their spans by :func:`_strip_spans`; smaller ones by ``strip_tags`` alone.
_FEW_CHILDREN = 32


def _strip_spans(el: Any) -> None:
    """``strip_tags(el, "span")``, with each run of text that leaves in one text node.

    ``strip_tags`` moves a span's content up and leaves its text, its children's texts and
    its tail as separate text nodes side by side. lxml reads such a run (``.text``, ``.tail``,
    ``itertext()``) by concatenating byte strings one node at a time, so each read of a code
    block of n tokens costs O(n * length): a 3.6 MB rustdoc source page (162,000 spans) took
    9 s to extract, 2 s for every ``itertext()``. The runs are gathered here from the spans'
    own strings before stripping (one node each, read in linear time) and set back after it:
    every element, text and tail reads as ``strip_tags`` leaves them. Blocks of at most
    :data:`_FEW_CHILDREN` children go to ``strip_tags`` alone."""
    from lxml.etree import Element, strip_tags

    # a small block's runs are short: strip_tags alone (C) is cheaper than the walk below
    if len(el) <= _FEW_CHILDREN and not (el.tag == "pre" and any(
            len(c) > _FEW_CHILDREN for c in el)):  # <pre><code>...</code></pre>
        strip_tags(el, "span")
        return
    fixes: list[tuple[Any, bool, list[str]]] = []  # (node, its tail?, the run's strings)

    def container(node: Any) -> None:
        head = [node.text] if node.text else []
        fixes.append((node, False, head))
        run = head

        def walk(parent: Any) -> None:
            nonlocal run
            for child in parent:
                if child.tag == "span":
                    if child.text:
                        run.append(child.text)
                    walk(child)
                    if child.tail:
                        run.append(child.tail)
                else:  # kept where it is (an element, a comment): its own text and tail
                    run = [child.tail] if child.tail else []
                    fixes.append((child, True, run))
                    if len(child):
                        container(child)

        walk(node)

    try:
        container(el)  # reads only: on a failure the tree is as it was
    except RecursionError:  # libxml2 nests ~255 deep, 2 frames a level: not expected
        strip_tags(el, "span")
        return
    strip_tags(el, "span")
    probe = Element("p")
    for node, tail, parts in fixes:
        if len(parts) > 1:  # one string is one text node already
            joined = "".join(parts)
            try:  # lxml removes the old text before it checks the new: tried aside first
                probe.text = joined
            except ValueError:  # "&#26;" parses to U+001A, which lxml refuses to set back
                continue  # the run stays as strip_tags left it: the same strings, read slowly
            setattr(node, "tail" if tail else "text", joined)


def _open_panels(tree: Any) -> None:
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


def _unlink_toctrees(tree: Any) -> None:
    """A Sphinx toctree (``div.toctree-wrapper``: a chapter's table of contents, in the page
    body; the sidebar is ``div.sphinxsidebar``) is the content of an index page, but it is a
    list of links, and trafilatura drops link-dense lists as navigation: an index page kept
    its intro only (F1 0.16 on pydocs/library/archiving.html). Its links become ``<span>``s,
    so their text is judged as text (docs/extract.md#sphinx-toctrees)."""
    for div in tree.iterfind(".//div[@class]"):
        if "toctree-wrapper" in div.get("class").split():
            for a in div.iter("a"):
                a.tag = "span"


_DISPLAY_NONE = re.compile(r"display\s*:\s*none", re.IGNORECASE)


def _prepare_tree(tree: object, shape: bool, html: str, post_meta: bool = False,
                  screen_reader_text: bool = False, collapsed_panels: bool = True) -> None:
    """Edit the parsed page (parsed from ``html``) before trafilatura sees it (one parse
    serves every step)."""

    # Syntax highlighting makes every token of a code block a <span>; trafilatura's XPath
    # pruning visits each one. Merging them into their <pre>/<code> first keeps the same text
    # (and the code's line breaks, which trafilatura loses on some highlighted blocks) at a
    # fifth less time.
    # The same walk notes the tags that keep their lines (for the wrapped-text XPath: drops
    # only remove elements, so these are a superset of what is left) and the <dd>s (below).
    # (<script> and <style>, on nearly every page, are not looked up: their tests always run)
    present: set[str] = {"script", "style"}
    dds: list[Any] = []
    for el in tree.iter(*_LOOKED_UP, "dd"):  # type: ignore[attr-defined]
        tag = el.tag
        if tag == "pre" or tag == "code":
            _strip_spans(el)
        elif tag == "dd":
            dds.append(el)
            continue
        present.add(tag)
    for way in (False, True):  # elements beside the root element (//text() reaches them)
        for top in tree.itersiblings(preceding=way):  # type: ignore[attr-defined]
            present.update(el.tag for el in top.iter(*_KEEP_LINES))
    _, meta = _compiled()
    sets = _attr_sets(tree)
    attrs = _attr_values(tree, sets)  # a superset of the values left after the UI drop: exact
    for el in _ui_elements(tree, html, attrs):
        _drop_tree(el)
    if "toctree-wrapper" in attrs:
        _unlink_toctrees(tree)
    if not post_meta:
        _drop_post_meta(tree, meta, attrs, sets)
    if not screen_reader_text:
        _mask_screen_reader(tree, html, attrs, sets[0])
    if collapsed_panels and "aria-controls" in html:
        _open_panels(tree)
    if not shape:
        return
    # A browser renders a newline inside a paragraph as a space: hard-wrapped HTML source
    # (Sphinx, man pages, many CMSs) otherwise leaves sentence fragments one per line, which
    # line-based filters and line dedup then judge. <pre>, <textarea> and code blocks keep
    # their lines; whitespace-only text between blocks stays (trafilatura reads structure
    # from it). One XPath finds the text nodes, so only they become Python objects.
    # trafilatura renders a definition-list item as one line, so a table inside a <dd>
    # (Sphinx API docs) came out as all its cells run together; as a <div> it keeps its rows.
    # Gold-set F1 is unchanged by this (bench/extraction_quality.py), only the shape is.
    for dd in dds:  # a dropped one is no longer in the tree: renaming it changes nothing
        if next(dd.iter("table"), None) is not None:
            dd.tag = "div"
    for node in _wrapped_xpath(frozenset(present))(tree):
        parent = node.getparent()
        if parent is None:
            continue
        joined = _join_lines(node)
        try:
            if node.is_text:
                parent.text = joined
            elif node.is_tail:
                parent.tail = joined
        except ValueError:  # "&#26;" parses to U+001A, which lxml refuses to set back
            setattr(parent, "text" if node.is_text else "tail", _XML_ILLEGAL.sub("", joined))


#: Tags whose text keeps its lines and their indentation (code, preformatted text): the tags
#: whose text the wrapped-line join leaves alone, but <script>/<style>.
_CODE_TAG = re.compile(rf"<(?:{'|'.join(_LOOKED_UP)})\b", re.IGNORECASE)
# Those with an end tag (<plaintext> runs to the end of the page). [^<>]: an open tag's scan
# stops at the next "<" (a page of "<pre<pre..." without ">" stays linear).
_CLOSED_CODE = tuple(t for t in _LOOKED_UP if t != "plaintext")
_CODE_OPEN = re.compile(rf"<({'|'.join(_CLOSED_CODE)})\b[^<>]*>", re.IGNORECASE)
_CODE_CLOSE = {t: re.compile(f"</{t}", re.IGNORECASE) for t in _CLOSED_CODE}


def _code_lines(html: str) -> set[str]:
    """The lines (stripped) of the page's code and preformatted elements, read from the source
    (tags removed, entities decoded): what may keep its indentation in the text. Linear: the
    search for an end tag scans up to it and the next element starts after it; once a tag's
    end is missing from some point on, later ones of that tag are not searched for."""
    from html import unescape

    out: set[str] = set()
    unclosed: set[str] = set()
    pos = 0
    while m := _CODE_OPEN.search(html, pos):
        tag = m.group(1).lower()
        close = None if tag in unclosed else _CODE_CLOSE[tag].search(html, m.end())
        if close is None:
            unclosed.add(tag)
            pos = m.end()
            continue
        text = unescape(_TAG.sub("", html[m.end():close.start()]))
        out.update(x.strip() for x in text.split("\n"))
        pos = close.start()
    return out


#: A nested list item as trafilatura writes it ("  - item"): its indentation is structure.
_LIST_INDENT = re.compile(r" +- ")


def _shape_text(text: str, html: str = "") -> str:
    """Tables as tab-separated cells (trafilatura writes Markdown pipes, which Gopher's
    alpha-words rule counts as symbol words), no separator rows, no UI strings, no "¶"; the
    source's blanks around lines gone (trafilatura's cascade keeps the HTML's indentation and
    whitespace-only lines between blocks). On a page with code (``html`` has a
    :data:`_CODE_TAG`) a line of its code keeps its indentation and a whitespace-only line
    becomes empty (code has blank lines) instead of going."""
    out: list[str] = []
    loose: list[int] = []  # lines with blanks around them (indices into out), not table rows
    lines = text.split("\n")
    last = len(lines) - 1
    row = False  # the line before was a table row
    for i, line in enumerate(lines):
        s = line.strip()
        was_row, row = row, False
        if line.startswith("| ") and (line.endswith(" | ") or (i == last and s.endswith(" |"))):
            cells = s[2:-2].split(" | ") if len(s) > 3 else [""]
            line = "\t".join(c.strip().replace("\\|", "|") for c in cells)
            row = True
        elif was_row and _TABLE_RULE.match(line):
            row = True
            continue
        elif s in _UI_LINES:
            continue
        elif s.endswith(("¶", "§")):
            line = _PERMALINK_TAIL.sub("", line)
            s = line.strip()
        if not row and len(s) != len(line):
            loose.append(len(out))
        out.append(line)
    if not loose:
        return "\n".join(out)
    if _CODE_TAG.search(html):
        code: set[str] | None = None  # read only where a line with text has blanks around it
        for k in loose:
            line = out[k]
            s = line.strip()
            if not s:
                out[k] = ""
                continue
            if _LIST_INDENT.match(line):
                out[k] = line.rstrip()
                continue
            if code is None:
                code = _code_lines(html)
            if s not in code:
                out[k] = s
        return "\n".join(out)
    drop = set()
    for k in loose:
        line = out[k]
        s = line.strip()
        if not s:
            drop.add(k)
        elif _LIST_INDENT.match(line):
            out[k] = line.rstrip()
        else:
            out[k] = s
    return "\n".join(x for k, x in enumerate(out) if k not in drop)


def _trafilatura(html: str, fast: bool = True, balance: Balance = "recall",
                 include_comments: bool = False, include_tables: bool = True,
                 shape: bool = True, post_meta: bool = False,
                 stash: resume.Stash | None = None, screen_reader_text: bool = False,
                 collapsed_panels: bool = True) -> str:
    """trafilatura's text of the page; ``stash`` (curator/extract/resume.py): a fast pass
    records into it, a ``fast=False`` rerun with the same options continues from it, one in
    another balance (not precision) starts from its pruned raw tree."""
    from trafilatura.utils import load_html

    # deduplicate=False: trafilatura's dedup cache is per process state, so its output would
    # depend on which documents a worker saw before (and on the worker count).
    def run(tree: Any) -> str:
        import trafilatura

        _OWNED.tree = tree  # not read after this call: trafilatura need not copy it
        try:
            return trafilatura.extract(tree, fast=fast, favor_precision=balance == "precision",
                                       favor_recall=balance == "recall",
                                       include_comments=include_comments,
                                       include_tables=include_tables, deduplicate=False) or ""
        finally:
            _OWNED.tree = None

    key = (balance, include_comments, include_tables, shape, post_meta, screen_reader_text,
           collapsed_panels)
    text = None if fast else resume.rerun(stash, key, run)
    if text is None:
        tree = load_html(html)  # what trafilatura.extract does with a string
        if tree is None:
            return ""
        _prepare_tree(tree, shape, html, post_meta, screen_reader_text, collapsed_panels)
        with resume.recording(stash if fast else None, key):
            text = run(tree)
    return _shape_text(text, html) if shape else text


#: resiliparse's main-content pass is quadratic in the nesting depth of ``<div>``s (10,000
#: nested: 3 s, 100,000: 6 minutes, in one C call that no time limit can interrupt); other
#: tags are not (10,000 nested spans, sections, lists or tables: under 0.03 s). Deeper than
#: this, the page gets no resiliparse text. The deepest of 7,709 real pages (gold and CC
#: bench) nests 311; libxml2, which trafilatura reads, keeps no element below depth 255.
DEEP_DIVS = 1_000
_DIV_TAG = re.compile(r"<(/?)div\b", re.IGNORECASE)


def _deep_divs(html: str) -> bool:
    """Whether ``html`` nests ``<div>``s deeper than :data:`DEEP_DIVS`. A page with fewer
    ``<d``/``<D`` than that cannot (two C-level counts, ~0.1 ms a page); otherwise one
    regex pass over its div tags counts depth as an HTML5 parser would for divs alone (a
    missing end tag nests the next div)."""
    if html.count("<d") + html.count("<D") <= DEEP_DIVS:
        return False
    depth = 0
    for m in _DIV_TAG.finditer(html):
        if m.group(1):
            depth = depth - 1 if depth else 0
        else:
            depth += 1
            if depth > DEEP_DIVS:
                return True
    return False


def _resiliparse_tree(html: str) -> tuple[str, Any]:
    """resiliparse's main-content text and its parsed tree (for :func:`_body_words`); no text
    for a page that nests divs deeper than :data:`DEEP_DIVS` (a nesting bomb)."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    if _deep_divs(html):
        return "", tree
    # comments/post_meta off: comment threads and "posted by ... on ..." lines are not the
    # article; measured against gold news pages this lifts token F1 from 0.89 to 0.91.
    return extract_plain_text(tree, main_content=True, alt_texts=False, links=False,
                              form_fields=False, noscript=False, comments=False,
                              post_meta=False), tree


def _resiliparse(html: str) -> str:
    return _resiliparse_tree(html)[0]


def _yardstick(html: str) -> tuple[str, Any]:
    """resiliparse's main text (stripped) and tree: what the trafilatura path measures its
    own text against."""
    prepare("resiliparse")
    alt, rtree = _resiliparse_tree(html)
    return alt.strip(), rtree


def _body_words(tree: Any) -> int:
    """Words of the text of the page's ``<body>`` (every element, navigation included)."""
    body = tree.body
    return len(body.text.split()) if body is not None else 0


_JUSTEXT_STOPLISTS: dict[str, frozenset[str]] = {}
_XML_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _justext(html: str, language: str = "English") -> str:
    import justext

    stop = _JUSTEXT_STOPLISTS.get(language)
    if stop is None:
        stop = _JUSTEXT_STOPLISTS[language] = justext.get_stoplist(language)
    from lxml.etree import ParserError

    # lxml refuses XML-illegal control characters (ValueError) and tag-free or empty input
    # (ParserError); either used to fail the whole shard from one odd page.
    html = _XML_ILLEGAL.sub(" ", html)
    try:
        paragraphs = justext.justext(html.encode("utf-8", "replace"), stop, encoding="utf-8")
    except ParserError:
        return ""
    return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "trafilatura": _trafilatura,
    "resiliparse": _resiliparse,
    "justext": _justext,
}


_PREPARED: set[str] = set()


def html_class_lookup() -> Any:
    """lxml.html's element classes (``FormElement`` for ``<form>``..., ``HtmlElement`` for
    the rest, ``HtmlComment``...) chosen by a C-level tag table instead of lxml.html's
    Python ``HtmlElementClassLookup.lookup``. lxml calls the lookup each time it wraps a
    node in a new Python object, and trafilatura's pruning (ancestor walks, ``text_content``)
    wraps millions: the Python calls were about 2% of extraction CPU. Same class for every
    lower-case tag (libxml2's HTML parser lower-cases tag names), so trafilatura's output is
    unchanged (tests/extract/test_extract_html_lookup.py checks both on real pages)."""
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


#: The tree :func:`_trafilatura` hands to ``trafilatura.extract`` and never reads again, per
#: thread (Dask workers extract in threads).
_OWNED = threading.local()
#: The line of trafilatura's ``bare_extraction`` that copies a tree given to it.
_DEFENSIVE_COPY = "if tree is filecontent:\n            tree = copy(tree)"


def _copy_unless_owned(obj: Any) -> Any:
    """``copy`` as trafilatura.core calls it, except for the one call that copies the tree
    :func:`_trafilatura` passed (``bare_extraction`` protects a caller's tree from its
    pruning; that tree is parsed for this call and dropped after it): a whole-tree copy is
    ~1 ms of ~40 ms per page. Every other call, and every call from other callers, copies."""
    if obj is not None and getattr(_OWNED, "tree", None) is obj:
        _OWNED.tree = None
        return obj
    return copy.copy(obj)


def _skip_defensive_copy() -> None:
    """Install :func:`_copy_unless_owned` when trafilatura.core is the code it was written
    for (its ``copy`` is ``copy.copy`` and ``bare_extraction`` has the copy line)."""
    import inspect

    import trafilatura.core as core

    if core.copy is copy.copy and _DEFENSIVE_COPY in inspect.getsource(core.bare_extraction):
        core.copy = _copy_unless_owned  # type: ignore[attr-defined]


def _fast_class_lookup() -> None:
    """Give trafilatura's HTML parser (the one its ``load_html`` uses) the C-level lookup."""
    from trafilatura.utils import HTML_PARSER

    from curator.extract.cleaning import install as clean_in_one_walk
    from curator.extract.copies import install as skip_unread_backup
    from curator.extract.discard import install
    from curator.extract.link_density import install as walk_link_density
    from curator.extract.repair import install as repair_only_where_needed

    HTML_PARSER.set_element_class_lookup(html_class_lookup())
    justext_classify.install()  # jusText's paragraph text read once (justext_classify.py)
    install()  # its discard XPaths without re:test callbacks (curator/extract/discard.py)
    _skip_defensive_copy()
    skip_unread_backup()  # no backup tree where nothing reads it (curator/extract/copies.py)
    walk_link_density()  # its link density test without ElementPath (link_density.py)
    resume.install()  # the fast=False rerun continues from the fast pass (resume.py)
    repair_only_where_needed()  # load_html's repair without a regex pass (repair.py)
    clean_in_one_walk()  # tree_cleaning's per-tag deletion walks as one (cleaning.py)


def prepare(extractor: str) -> None:
    """Import an extractor's modules (and stop lists) once per process, *outside* the time
    limit: importing trafilatura takes about a second, which would time out the first page
    of every worker."""
    if extractor in _PREPARED:
        return
    if extractor == "trafilatura":
        import trafilatura  # noqa: F401

        _fast_class_lookup()
    elif extractor == "resiliparse":
        import resiliparse.extract.html2text
        import resiliparse.parse.html  # noqa: F401
    elif extractor == "justext":
        import justext

        _JUSTEXT_STOPLISTS.setdefault("English", justext.get_stoplist("English"))
    _PREPARED.add(extractor)


#: Rerun trafilatura with its fallbacks (``fast="auto"``), then take resiliparse's main-content
#: text, when trafilatura keeps fewer words than this share of resiliparse's (0: resiliparse
#: only when trafilatura finds nothing). ``fast=True`` often stops at a page's first post or
#: section (forums, listings: precision 1.0, recall 0.1); this lifts tuning-split F1 from 0.821
#: to 0.859 (forums 0.65 -> 0.77) at the same CPU per page (docs/extract.md).
FALLBACK_RATIO = 0.5
#: resiliparse's main-content pass is no yardstick when it keeps under this share of
#: trafilatura's words: on boards whose markup its HTML5 parser reads differently (an unclosed
#: ``<iframe>`` in a ``<noscript>``: 14 of the 22 German tuning pages, all forum threads) it
#: keeps nothing. Then ``fast="auto"`` compares trafilatura's text with the words of the
#: page's ``<body>`` instead: under :data:`BODY_RATIO` of them, trafilatura runs again with its
#: fallbacks, in ``default`` balance, because ``favor_recall`` skips the readability/jusText
#: comparison for any text over 2,500 characters (trafilatura's ``compare_extraction``), which
#: is the case of a first post. Tuning split: German 0.703 -> 0.772, forums 0.769 -> 0.789,
#: all 0.859 -> 0.863, +2.4 ms/page (docs/extract.md).
UNRELIABLE_RATIO = 0.3
BODY_RATIO = 0.2
#: ``thin_ratio``: with ``fast="auto"``, when trafilatura's fast text *and* resiliparse's both
#: have fewer words than this share of the page's ``<body>``, both stopped at a fragment (a
#: service page's hero section, a thread's first post: precision 1.0, recall 0.05) and
#: neither is a yardstick for the other, so trafilatura runs again with its fallbacks in
#: ``default`` balance (docs/extract.md#thin-pages).
THIN_RATIO = 0.1
#: Pages larger than this (characters of HTML) skip the ``thin_ratio`` rerun: the cascade
#: costs about three times the fast pass and grows with the page (a 823 KB listing: 348 ms),
#: so the few largest pages would be most of the rule's CPU.
THIN_MAX_CHARS = 500_000
#: The ``thin_ratio`` rerun's text replaces the fast text only when it holds at least this
#: share of the fast text's distinct words (lower-cased, a word per character in scripts
#: written without spaces): the cascade should extend a fragment, not swap it for another
#: block (a shop's collection page: its product grid for the shipping banners, 0% of its
#: words, F1 0.68 -> 0.004). A listing whose rerun keeps 36% gains (0.13 -> 0.25), so "most
#: words" (0.5) would be too strict; chosen on the tuning split and 284 WCXB pages outside
#: the gold set (docs/extract.md#thin-pages).
THIN_COVER = 0.2
#: ``listing_ratio``: when the text has fewer words than this share of the page's ``<body>``,
#: look for a listing (a run of similar linked blocks, curator/extract/listing.py) that the
#: text misses and append its cards. Off by default: on the tuning split 0.1 lifted listings
#: 0.719 -> 0.795 and all pages 0.863 -> 0.872 (5 pages changed, all up), but on the held-out
#: split it changed 5 pages, 4 of them down (all 0.865 -> 0.858, listings 0.657 -> 0.610),
#: docs/extract.md#listing-pages.
LISTING_RATIO = 0.0

Fast = bool | Literal["auto"]


def _words(text: str) -> int:
    return len(text.split())


_SCRIPT_OR_STYLE = re.compile(r"<(script|style)\b", re.IGNORECASE)
_END_TAG = {t: re.compile(rf"</{t}\s*>", re.IGNORECASE) for t in ("script", "style")}
_TAG = re.compile(r"<[^<>]*>")


def _covers(new: str, old: str, share: float) -> bool:
    """Whether ``new`` holds at least ``share`` of ``old``'s distinct words (all of them when
    ``old`` has none)."""
    from curator.extract.listing import TOKEN  # a word per character in no-space scripts

    words = set(TOKEN.findall(old.lower()))
    if not words:
        return True
    return len(words & set(TOKEN.findall(new.lower()))) >= share * len(words)


def _visible_words(html: str) -> int:
    """Words of the page's source from ``<body>`` on, without tags and without the content of
    ``<script>``/``<style>`` (resiliparse's ``<body>`` text counts script code: a news page's
    300-word article sat in 38,000 "words"). Linear in the page: each element's end tag is
    searched once from its start, and a tag pattern that stops at the next ``<``."""
    m = re.search(r"<body\b", html, re.IGNORECASE)
    pos, n = (m.start() if m else 0), 0
    while True:
        m = _SCRIPT_OR_STYLE.search(html, pos)
        end = m.start() if m else len(html)
        n += len(_TAG.sub(" ", html[pos:end]).split())
        if m is None:
            return n
        close = _END_TAG[m.group(1).lower()].search(html, m.end())
        if close is None:
            return n
        pos = close.end()


def _body_rerun(html: str, n_text: int, n_alt: int, rtree: Any, body_ratio: float,
                thin_ratio: float) -> Literal["", "body", "thin"]:
    """Whether ``fast="auto"`` reruns trafilatura with its fallbacks in ``default`` balance,
    judged by the ``<body>``'s words: ``"body"`` when resiliparse kept almost nothing and
    trafilatura's text is under ``body_ratio`` of the body, ``"thin"`` when both texts are
    under ``thin_ratio`` of the body's words outside scripts and styles (resiliparse's count,
    scripts included, is the cheap first test: it is never lower), else ``""``."""
    unreliable = n_alt < UNRELIABLE_RATIO * n_text
    if not unreliable and thin_ratio <= 0:
        return ""
    body = _body_words(rtree)
    if unreliable and n_text < body_ratio * body:
        return "body"
    most = max(n_text, n_alt)
    if (most < thin_ratio * body and len(html) <= THIN_MAX_CHARS
            and most < thin_ratio * _visible_words(html)):
        return "thin"
    return ""


def extract_text(html: str, extractor: Extractor = DEFAULT_EXTRACTOR,
                 timeout_s: float | None = None, *, fast: Fast = "auto",
                 balance: Balance = "recall", include_comments: bool = False,
                 include_tables: bool = True, fallback: bool = True,
                 fallback_ratio: float = FALLBACK_RATIO, shape: bool = True,
                 body_ratio: float = BODY_RATIO, listing_ratio: float = LISTING_RATIO,
                 post_meta: bool = False, thin_ratio: float = THIN_RATIO,
                 screen_reader_text: bool = False, collapsed_panels: bool = True,
                 precheck: Callable[[str], str | None] | None = None) -> str:
    """Main text of an HTML page ('' when there is none). Raises :class:`ExtractTimeout`
    after ``timeout_s`` seconds.

    The keyword options apply to trafilatura (docs/extract.md gives their measured F1 and
    speed): ``fast`` skips its readability/jusText fallbacks (``"auto"``: fast first, and
    again with them when the text is under ``fallback_ratio`` of resiliparse's, or 0.5, or,
    where resiliparse keeps under :data:`UNRELIABLE_RATIO` of trafilatura's words, under
    ``body_ratio`` of the ``<body>``'s words, 0: never);
    ``balance`` is its precision/recall trade-off; ``fallback`` takes resiliparse's text
    when trafilatura's is empty or under ``fallback_ratio`` of it in words; ``shape`` joins
    hard-wrapped lines inside a paragraph, writes table cells tab-separated and drops
    documentation generators' UI strings; ``listing_ratio`` appends the cards of a listing
    page the text misses when the text is under that share of the ``<body>``'s words (0:
    off); ``post_meta`` keeps forum posts' author boxes and signatures; ``thin_ratio``
    (``fast="auto"``) reruns with the fallbacks when trafilatura's and resiliparse's texts are
    both under that share of the ``<body>``'s words (0: never); ``screen_reader_text`` keeps
    the text of elements only screen readers get (:data:`SCREEN_READER_CLASSES`);
    ``collapsed_panels`` keeps the text of collapsed accordion and tab panels (elements named
    in an ``aria-controls``, hidden until clicked).

    ``precheck`` sees a quick text of the page first (resiliparse's main text, which the
    trafilatura path computes anyway; another extractor's own text) and may turn the page
    down by returning a reason: :class:`Skipped` is raised before trafilatura runs (the
    language guess of ``read_warc``'s ``languages``)."""
    fn = EXTRACTORS[extractor]
    prepare(extractor)
    html = close_open_title(close_noscript_iframes(html))
    with time_limit(timeout_s):
        if extractor != "trafilatura":
            text = fn(html).strip()
            if precheck is not None and (reason := precheck(text)):
                raise Skipped(reason, text)
            return text
        alt, rtree = "", None
        if precheck is not None:
            alt, rtree = _yardstick(html)
            if reason := precheck(alt):
                # resiliparse's tree may only be freed by the thread that made it: not left to
                # the exception's traceback, which another thread may free (Dask workers)
                del rtree
                raise Skipped(reason, alt)
        # what the fast pass leaves for a fast=False rerun with the same options (resume.py)
        stash = resume.Stash() if fast == "auto" and resume.installed() else None
        text = _trafilatura(html, fast is not False, balance, include_comments,
                            include_tables, shape, post_meta, stash,
                            screen_reader_text, collapsed_panels).strip()
        if fast == "auto" or (fallback and (not text or fallback_ratio > 0)):
            if rtree is None:
                alt, rtree = _yardstick(html)
            ratio = fallback_ratio or FALLBACK_RATIO
            n_text, n_alt = _words(text), _words(alt)
            if fast == "auto" and (not text or n_text < ratio * n_alt):
                text = _trafilatura(html, False, balance, include_comments, include_tables,
                                    shape, post_meta, stash,
                                    screen_reader_text, collapsed_panels).strip() or text
            elif fast == "auto" and (why := _body_rerun(html, n_text, n_alt, rtree,
                                                       body_ratio, thin_ratio)):
                second: Balance = "default" if balance == "recall" else balance
                # starts from the fast pass's pruned raw tree, not a new parse (resume.py)
                rerun = _trafilatura(html, False, second, include_comments, include_tables,
                                     shape, post_meta, stash, screen_reader_text,
                                     collapsed_panels).strip()
                # a thin page's rerun must extend the fragment, not swap it for another block
                if rerun and (why == "body" or _covers(rerun, text, THIN_COVER)):
                    text = rerun
            if fallback and (not text or _words(text) < fallback_ratio * _words(alt)):
                text = alt
        # after every comparison of word counts: the masked words counted in them as before
        if not screen_reader_text and _MASK not in html:
            text = _unmask(text)
        # resiliparse's <body> words as a cheap first test; listing_cards decides on lxml's
        if listing_ratio > 0 and (rtree is None
                                  or _words(text) < listing_ratio * _body_words(rtree)):
            from curator.extract.listing import listing_cards

            cards = listing_cards(html, text, listing_ratio)
            if cards:
                text = f"{text}\n{cards}" if text else cards
    return text


class ExtractHtml(ShardStage):
    """Replace HTML in ``text`` by its extracted main text (for custom sources)."""

    name = "extract_html"

    class Params(StageParams):
        extractor: Extractor = "trafilatura"
        """Or `resiliparse`, `justext` (settings and measured F1 in extract.md)."""
        timeout_s: PositiveFloat = 10.0
        """Per document; timeouts are rejected `extract_timeout` and counted."""
        max_page_mb: PositiveFloat = 10.0
        """Larger pages are rejected `page_too_large`."""
        keep_html_field: str | None = None
        """Keep the HTML in this metadata field (default: dropped)."""
        fast: Fast = "auto"
        """Trafilatura's fast mode; `auto`: fast, rerun in full when the text looks short
        (see [extract.md](extract.md#options))."""
        balance: Balance = "recall"
        """Trafilatura's precision/recall balance."""
        include_comments: bool = False
        """Keep comment sections."""
        include_tables: bool = True
        """Keep the text of tables."""
        fallback: bool = True
        """Use resiliparse's text when trafilatura finds little."""
        fallback_ratio: Ratio = FALLBACK_RATIO
        """"Little": fewer words than this share of resiliparse's."""
        shape: bool = True
        """Tidy the text (paragraphs on one line, code keeps its lines), see extract.md."""
        body_ratio: Ratio = BODY_RATIO
        """With `fast: auto`, when resiliparse keeps almost nothing: rerun trafilatura in full
        when its text has fewer words than this share of the page's `<body>` (0: off)."""
        listing_ratio: Ratio = LISTING_RATIO
        """When the text has fewer words than this share of the page's `<body>`, append the
        cards of a listing it misses (0: off; measured in
        [extract.md](extract.md#listing-pages))."""
        post_meta: bool = False
        """Keep forum posts' author boxes and signatures (see
        [extract.md](extract.md#forum-posts-author-boxes))."""
        thin_ratio: Ratio = THIN_RATIO
        """With `fast: auto`: rerun trafilatura in full when its text and resiliparse's both
        have fewer words than this share of the page's `<body>` (0: off; see
        [extract.md](extract.md#thin-pages))."""
        screen_reader_text: bool = False
        """Keep the text of elements only screen readers get (`sr-only`, `visually-hidden`...;
        left out by default, see [extract.md](extract.md#screen-reader-text))."""
        collapsed_panels: bool = True
        """Keep the text of collapsed accordion and tab panels (hidden until a click; see
        [extract.md](extract.md#collapsed-panels))."""

    def setup(self) -> None:
        # trafilatura's options (docs/extract.md has the F1 and CPU of each)
        self.options = {"fast": self.fast, "balance": self.balance,
                        "include_comments": self.include_comments,
                        "include_tables": self.include_tables, "fallback": self.fallback,
                        "fallback_ratio": self.fallback_ratio, "shape": self.shape,
                        "body_ratio": self.body_ratio,
                        "listing_ratio": self.listing_ratio, "post_meta": self.post_meta,
                        "thin_ratio": self.thin_ratio,
                        "screen_reader_text": self.screen_reader_text,
                        "collapsed_panels": self.collapsed_panels}
        self.max_bytes = int(self.max_page_mb * 1024 * 1024)

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        for doc in docs:
            html = doc.text
            if len(html) > self.max_bytes:
                ctx.count("page_too_large")
                ctx.reject(Document(doc.id, "", doc.meta), "page_too_large",
                           size=len(html))
                continue
            try:
                text = extract_text(html, self.extractor, self.timeout_s,
                                    **self.options)  # type: ignore[arg-type]
            except ExtractTimeout:
                ctx.count("extract_timeouts")
                ctx.reject(Document(doc.id, "", doc.meta), "extract_timeout")
                continue
            if not text:
                ctx.reject(doc, "extract_empty")
                continue
            if self.keep_html_field:
                doc.meta[self.keep_html_field] = html
            doc.meta["extractor"] = self.extractor
            doc.text = text
            yield doc
