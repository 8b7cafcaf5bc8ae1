# Derived from trafilatura 2.3.1 (trafilatura/xpaths.py: the expressions' text), Copyright
# 2019-present, Adrien Barbaresi and contributors, under the Apache License 2.0
# (LICENSE-trafilatura.txt here). Changed: see the package docstring.
"""trafilatura's regex XPath lists evaluated with Python's ``re`` instead of EXSLT ``re:test``
callbacks: the same elements in the same order, for less CPU.

trafilatura prunes navigation, share bars, hidden blocks... of every candidate content frame
with ``OVERALL_DISCARD_XPATH`` (``prune_unwanted_sections``), and the raw tree of every page
with ``RAW_TREE_PRUNE_XPATH`` and (comments off) ``REMOVE_COMMENTS_AND_LISTS_XPATH``. Their
predicates call ``re:test`` on the id and class of every candidate element; lxml answers each
call with a Python callback that converts the attribute node-set to strings: the three lists
were about a fifth of the default extraction's CPU. Here lxml's C tag filter
(``iterdescendants``) walks the elements of the right tags, and the regular expressions (the
very patterns of the XPath text, :data:`PATHS`, run by the same ``re`` module lxml's callbacks
use) are applied in Python; an element whose only tested attribute is its class is decided by
that value, remembered per value (a page repeats its classes).

``BODY_XPATH`` (``_extract``: the content frame, the first element of the first expression
that has one) is evaluated the same way with a stop at the first match (:class:`FirstFrame`).
The ``contains()`` prunes of image captions (every frame, images being off) and teasers
(precision and default balance) are the same walk with a Python ``in``
(:class:`ContainsFrames`). Same node lists as the XPath on the gold pages and on crafted
attribute sets: tests/extract/test_discard.py, tests/extract/test_body_xpath.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: The text of trafilatura 2.3.1's expression lists (trafilatura/xpaths.py) that this module
#: evaluates in Python (tests/extract/test_discard.py: the same text as the installed
#: trafilatura's, and the same elements as the XPath).
PATHS: dict[str, tuple[str, ...]] = {
    "OVERALL_DISCARD_XPATH": (
        '\n        .//*[self::div or self::item or self::list or self::p or self::'
        'section or self::span][\n        @data-lp-replacement-content or\n        '
        "contains(translate(@role, 'N', 'n'), 'nav') or\n        contains(@data-co"
        "mponent, 'MostPopularStories') or\n        re:test(@id|@class, 'cookie') "
        "or\n        re:test(@id, '^shar|social|viral|newsletter|syndication|tags|"
        'sidebar|banner|bread-?crumb|button|author|^(?:jp-|dpsp-content)|bmdh|foo'
        'ter|Footer|share|Share|nav|Nav|menu|related|message-container|premium|^a'
        "d-') or\n        re:test(@class, '^shar|social|viral|newsletter|syndicati"
        'on|tags|sidebar|banner|bread-?crumb|button|author|^(?:nav|post-nav|Zende'
        'skForm)|subnav|avigation|navbar|navbox|menu|bar| ad |-ad-|(?:^| )ad-|dfp'
        '[Aa]d|outbrain|taboola|criteo|paid-?content|widget|footer|Footer|byline|'
        'Byline|share-|sociable|embedded|embed|tag-list|consent|modal-content|per'
        'mission|elated|next-|-stories|most-popular|more-on|meta|rating|attachmen'
        't|timestamp|user-info|user-profile|-icon|article-infos|message-container'
        '|slide|viewport|overlay|options|expand|obfuscated|blurred|mol-factbox|yi'
        "n|zlylin|nfoline')]\n        ",
        "\n        .//*[@class='comments-title' or\n        starts-with(@id|@class,"
        " 'reply-') or\n        re:test(@id|@style, 'hidden') or\n        contains("
        "@style, 'display:none') or contains(@style, 'display: none') or\n        "
        "re:test(@id, 'reader-comments|akismet') or\n        re:test(@class, '^hid"
        'e-|comments-title|nocomments|-reply-|message|akismet|suggest-links|-hide'
        "-|hide-print| hidden| hide|noprint|notloaded') or @aria-hidden='true']\n "
        '       ',
    ),
    "RAW_TREE_PRUNE_XPATH": (
        '\n        .//*[self::div or self::section or self::aside][\n        re:tes'
        "t(@id, 'mvp-post-add-(?:box|wrap)|infinite-?scroll') or\n        re:test("
        "@class, 'mvp-post-add-(?:box|wrap)|infinite-?scroll')][\n        not(.//h"
        "1) or re:test(@id, 'mvp-post-add-(?:box|wrap)') or re:test(@class, 'mvp-"
        "post-add-(?:box|wrap)')]\n        ",
        ".//*[self::div or self::section or self::aside][contains(@class, 'elemen"
        "tor-share-buttons')]",
    ),
    "REMOVE_COMMENTS_AND_LISTS_XPATH": (
        '\n        .//*[self::div or self::list or self::section or self::details '
        "or self::ol or self::ul][\n        re:test(@id, '^(?:[Cc]omment(?!ary)|co"
        "mol|disqus_thread|dsq-comments)') or\n        re:test(@class, '^[Cc]ommen"
        "t(?!ary)|(?:article|post)-comments')][\n        not(self::ol or self::ul)"
        " or re:test(@id, '^(?:[Cc]omment(?!ary)|comol)') or re:test(@class, '^[C"
        "c]omment(?!ary)|(?:article|post)-comments')]\n        ",
    ),
    "BODY_XPATH": (
        '\n        .//*[self::article or self::div or self::main or self::section]'
        "[\n        @class='post' or @class='entry' or\n        @itemprop='articleB"
        "ody' or @id='articleContent' or\n        re:test(@id, '(?:entry|article|a"
        "rt)-content|article__content|article(?:-|__)?body|articleBody|body-text'"
        ") or\n        re:test(@class, 'post[-_]text|post-body|post-?entry|post[-_"
        ']?content|postContent|post_inner_wrapper|article-?text|articleText|(?:en'
        'try|page|text|article|art)-content|article__content|article(?:-|__)?body'
        "|articleBody|ArticleContent|body-text|article__container')\n        ][1]\n"
        '        ',
        '(.//article)[1]',
        '\n        (.//*[self::article or self::div or self::main or self::section'
        "][\n        @role='article' or\n        @id='article' or @id='story' or\n  "
        "      @class='postarea' or @class='art-postcontent' or @class='text' or "
        "@class='cell' or @class='story' or\n        re:test(@id, '^primary|story-"
        "body') or\n        re:test(@class, 'fulltext', 'i') or\n        re:test(@c"
        "lass, '^article |post-bodycopy|story-?content|(?:theme|blog|section|sing"
        'le)-content|single-post|main-column|wpb_text_column|story-body|field-bod'
        "y')\n        ])[1]\n        ",
        '\n        (.//*[self::article or self::div or self::main or self::section'
        "][\n        @id='content' or @class='content' or\n        re:test(@id, 'co"
        "ntent-main|content-body|contentBody') or\n        re:test(@class, 'conten"
        "t[-_]main|content(?:-|__)body') or\n        contains(translate(@id, 'CM',"
        "'cm'), 'main-content') or contains(translate(@class, 'CM','cm'), 'main-c"
        "ontent') or\n        contains(translate(@class, 'CP','cp'), 'page-content"
        "')\n        ])[1]\n        ",
        '\n        (.//*[self::article or self::div or self::section][\n        sta'
        "rts-with(@class, 'main') or starts-with(@id, 'main') or starts-with(@rol"
        "e, 'main')])[1]|(.//main)[1]\n        ",
    ),
    "DISCARD_IMAGE_ELEMENTS": (
        '\n    .//*[self::div or self::item or self::list or self::p or self::sect'
        "ion or self::span][\n    contains(@id, 'caption') or contains(@class, 'ca"
        "ption')]\n    ",
    ),
    "TEASER_DISCARD_XPATH": (
        '\n    .//*[self::div or self::item or self::list or self::p or self::sect'
        "ion or self::span][\n    contains(translate(@id, 'T', 't'), 'teaser') or "
        "contains(translate(@class, 'T', 't'), 'teaser')]\n    ",
    ),
}


_RE_TEST = re.compile(r"re:test\((@[\w|@-]+), '([^']*)'\)")


def _first(attrib: Any, a: str, b: str) -> str:
    """XPath's string value of ``@a|@b``: the first of the two in the element's attribute
    order (libxml2 keeps source order), '' when neither is there."""
    for k in attrib:
        if k in (a, b):
            return attrib[k]  # type: ignore[no-any-return]
    return ""


#: Per-instance memo of a regex test by attribute value: bounded (a page's values repeat, a
#: corpus's do not always), cleared when full.
_MEMO_MAX = 65_536


def _memo(test: Callable[[str], Any]) -> Callable[[str], bool]:
    """``bool(test(value))``, remembered per value (cleared past :data:`_MEMO_MAX` values)."""
    seen: dict[str, bool] = {}

    def cached(value: str) -> bool:
        r = seen.get(value)
        if r is None:
            if len(seen) >= _MEMO_MAX:
                seen.clear()
            r = seen[value] = test(value) is not None
        return r
    return cached


class _AttributeDiscard:
    """Elements a C-level XPath pre-selects (``PRE``) whose id matches ``ids``, whose class
    matches ``classes``, or that :meth:`marked` (the rest of the expression) accepts.

    :meth:`__call__` walks the tree with lxml's C tag filter (``TAGS``; None: every element)
    instead of evaluating ``PRE``: libxml2's XPath walk with its attribute predicates cost more
    than the Python tests themselves (0.8 of 1.3 s on the Python docs' frames). An element
    whose only tested attribute is ``class`` (85-94% of the candidates) is decided by its
    class value alone (:meth:`by_class`), remembered per value. Same elements in the same
    (document) order as ``PRE`` + the tests; ``PRE`` itself still serves an ElementTree
    context (whose ``.//*`` includes the root element)."""

    PRE = ""
    TAGS: tuple[str, ...] | None = None
    #: The attributes besides id and class that PRE or :meth:`marked` read.
    OTHER: tuple[str, ...] = ()

    def __init__(self, special: str, ids: str, classes: str) -> None:
        from lxml.etree import XPath

        self.pre = XPath(self.PRE)
        self.special = re.compile(special).search
        self.ids = re.compile(ids).search
        self.classes = re.compile(classes).search
        self._class_test = _memo(lambda c: True if self.by_class(c) else None)
        self._full = frozenset(("id", *self.OTHER))  # any of them: the whole test

    def marked(self, a: Any) -> bool:
        raise NotImplementedError

    def by_class(self, c: str) -> bool:
        """The whole test for an element with a class and none of the other attributes."""
        raise NotImplementedError

    def _tested(self, el: Any) -> bool:
        a = el.attrib
        return bool(self.marked(a) or self.ids(a.get("id") or "")
                    or self.classes(a.get("class") or ""))

    def __call__(self, tree: Any) -> list[Any]:
        if not hasattr(tree, "iterdescendants"):
            return [el for el in self.pre(tree) if self._tested(el)]
        from lxml.etree import Element

        out = []
        by_class = self._class_test
        full = self._full
        for el in tree.iterdescendants(*(self.TAGS or (Element,))):
            names = el.keys()
            if not names:
                continue
            if not full.isdisjoint(names):
                if self._tested(el):
                    out.append(el)
            elif "class" in names and by_class(el.get("class")):
                out.append(el)
        return out


class FrameDiscard(_AttributeDiscard):
    """The first expression: div/item/list/p/section/span elements with a navigation role,
    a "most popular" component, a consent id/class (``special``), or an id or class of
    boilerplate."""

    PRE = (".//*[self::div or self::item or self::list or self::p or self::section"
           " or self::span][@data-lp-replacement-content or @role"
           " or @data-component or @id or @class]")
    TAGS = ("div", "item", "list", "p", "section", "span")
    OTHER = ("data-lp-replacement-content", "role", "data-component")

    def marked(self, a: Any) -> bool:
        role = a.get("role")
        dc = a.get("data-component")
        return bool("data-lp-replacement-content" in a
                    or (role is not None and "nav" in role.replace("N", "n"))
                    or (dc is not None and "MostPopularStories" in dc)
                    or self.special(_first(a, "id", "class")))

    def by_class(self, c: str) -> bool:
        # marked(): @id|@class is the class; ids('') never matches (_lists() checks)
        return bool(self.special(c) or self.classes(c))


class HiddenDiscard(_AttributeDiscard):
    """The second expression: comment titles, reply blocks, an id/style of hidden blocks
    (``special``), not displayed or aria-hidden elements, any tag."""

    PRE = ".//*[@class or @id or @style or @aria-hidden]"
    OTHER = ("style", "aria-hidden")

    def marked(self, a: Any) -> bool:
        s = a.get("style")
        return bool(a.get("class") == "comments-title"
                    or _first(a, "id", "class").startswith("reply-")
                    or self.special(_first(a, "id", "style"))
                    or (s is not None and ("display:none" in s or "display: none" in s))
                    or a.get("aria-hidden") == "true")

    def by_class(self, c: str) -> bool:
        # marked(): @id|@class is the class, @id|@style is '' (special('') never matches)
        return bool(c == "comments-title" or c.startswith("reply-") or self.classes(c))


class RegexFrames:
    """``.//*[<tags>][re:test(@id, I) or re:test(@class, C)][<extra>]``: elements of some tags
    whose id or class matches; ``last(el, id, class)`` is the expression's last predicate
    (trafilatura's raw-tree prune of infinite-scroll containers, and its comment-section
    prune). Walked with lxml's C tag filter (as :class:`_AttributeDiscard`), the class test
    remembered per value."""

    def __init__(self, tags: tuple[str, ...], ids: str, classes: str,
                 last: Callable[[Any, str, str], bool]) -> None:
        from lxml.etree import XPath

        self.tags = tags
        self.pre = XPath(".//*[" + " or ".join(f"self::{t}" for t in tags) + "][@id or @class]")
        self.ids = re.compile(ids).search
        self.classes = re.compile(classes).search
        self._class_test = _memo(self.classes)
        self.last = last

    def __call__(self, tree: Any) -> list[Any]:
        out = []
        if not hasattr(tree, "iterdescendants"):
            for el in self.pre(tree):
                i = el.get("id") or ""
                c = el.get("class") or ""
                if (self.ids(i) or self.classes(c)) and self.last(el, i, c):
                    out.append(el)
            return out
        ids, classes = self.ids, self._class_test
        for el in tree.iterdescendants(*self.tags):
            i = el.get("id")
            c = el.get("class")
            if i is None and c is None:
                continue
            i = i or ""
            c = c or ""
            # ids('') and classes('') never match (_lists() checks)
            if ((i and ids(i)) or (c and classes(c))) and self.last(el, i, c):
                out.append(el)
        return out


def _paired_tests(expr: Any) -> tuple[str, str, Callable[[str], Any], Callable[[str], Any]] | None:
    """An expression testing ``@id`` or ``@class``, then ``@id`` or ``@class`` again in its
    last predicate: the first two patterns, and searches with the last two (None when the
    expression has other tests)."""
    tests = _RE_TEST.findall(expr.path)
    if [a for a, _ in tests] != ["@id", "@class", "@id", "@class"]:
        return None
    (_, a1), (_, a2), (_, b1), (_, b2) = tests
    return a1, a2, re.compile(b1).search, re.compile(b2).search


def _raw_prune(exprs: list[Any]) -> list[Any] | None:
    """RAW_TREE_PRUNE_XPATH: infinite-scroll containers without an <h1> (or named as Zox
    News' appended posts); its second expression has no regex and stays as it is."""
    tests = _paired_tests(exprs[0])
    if tests is None:
        return None
    ids, classes, post_id, post_class = tests

    def extra(el: Any, i: str, c: str) -> bool:
        return (next(el.iterdescendants("h1"), None) is None or bool(post_id(i))
                or bool(post_class(c)))
    return [RegexFrames(("div", "section", "aside"), ids, classes, extra), exprs[1]]


def _comments_and_lists(exprs: list[Any]) -> list[Any] | None:
    """REMOVE_COMMENTS_AND_LISTS_XPATH: comment sections (comments off), lists only when
    named as comments."""
    tests = _paired_tests(exprs[0])
    if tests is None:
        return None
    ids, classes, list_id, list_class = tests

    def extra(el: Any, i: str, c: str) -> bool:
        return el.tag not in ("ol", "ul") or bool(list_id(i)) or bool(list_class(c))
    return [RegexFrames(("div", "list", "section", "details", "ol", "ul"), ids, classes, extra)]


def _overall(exprs: list[Any]) -> list[Any] | None:
    first = _RE_TEST.findall(exprs[0].path)
    second = _RE_TEST.findall(exprs[1].path)
    if ([a for a, _ in first] != ["@id|@class", "@id", "@class"]
            or [a for a, _ in second] != ["@id|@style", "@id", "@class"]):
        return None
    return [FrameDiscard(*(p for _, p in first)), HiddenDiscard(*(p for _, p in second))]


# -- trafilatura's BODY_XPATH: the content frame ------------------------------------------------

#: The line of ``_extract`` (fastpath/main_extractor.py) that reads a BODY_XPATH result: only
#: its first element (in document order) is used, so :class:`FirstFrame` returns only that one.
BODY_USE = "subtree = next((s for s in expr(tree) if s is not None), None)"


class FirstFrame:
    """The first element in document order (below the context node) whose tag is one of
    ``tags`` and that ``test(el)`` accepts, as a one-element list: what ``_extract`` takes
    from a BODY_XPATH expression. ``.//*[T][P][1]`` (the first match under each parent) and
    ``(.//*[T][P])[1]`` both start with that element. A lazy walk in C over the tags that
    stops at the first match, instead of XPath's full walk with a Python ``re:test``
    callback per candidate (BODY_XPATH was ~8% of extraction CPU)."""

    def __init__(self, path: str, tags: tuple[str, ...], test: Callable[[Any], bool]) -> None:
        self.path = path  # the expression's text, for the tests
        self.tags = tags
        self.test = test

    def __call__(self, tree: Any) -> list[Any]:
        test = self.test
        for el in tree.iterdescendants(*self.tags):
            if test(el):
                return [el]
        return []


_FRAME_TAGS = ("article", "div", "main", "section")


def _body(exprs: list[Any]) -> list[Any] | None:
    """BODY_XPATH: expressions 0, 2, 3 and 4 as :class:`FirstFrame` (1, ``(.//article)[1]``,
    stays an XPath), their patterns read from trafilatura's text."""
    tests = [[(a, p) for a, p, _ in re.findall(r"re:test\((@\w+), '([^']*)'(?:, '(i)')?\)",
                                                e.path)] for e in exprs]
    flags = [re.findall(r"re:test\(@\w+, '[^']*', '(i)'\)", e.path) for e in exprs]
    if ([[a for a, _ in t] for t in tests] != [["@id", "@class"], [], ["@id", "@class", "@class"],
                                               ["@id", "@class"], []] or flags[2] != ["i"]):
        return None
    id0, cls0 = (re.compile(p).search for _, p in tests[0])
    id2, full2, cls2 = (re.compile(p, re.IGNORECASE if n == 1 else 0).search
                        for n, (_, p) in enumerate(tests[2]))
    id3, cls3 = (re.compile(p).search for _, p in tests[3])

    def article(el: Any) -> bool:
        c, i = el.get("class"), el.get("id")
        return (c == "post" or c == "entry" or el.get("itemprop") == "articleBody"
                or i == "articleContent" or (i is not None and id0(i) is not None)
                or (c is not None and cls0(c) is not None))

    def story(el: Any) -> bool:
        c, i = el.get("class"), el.get("id")
        return (el.get("role") == "article" or i == "article" or i == "story"
                or c in ("postarea", "art-postcontent", "text", "cell", "story")
                or (i is not None and id2(i) is not None)
                or (c is not None and (full2(c) is not None or cls2(c) is not None)))

    def main_content(el: Any) -> bool:
        c, i = el.get("class"), el.get("id")
        return (i == "content" or c == "content"
                or (i is not None and (id3(i) is not None
                                       or "main-content" in i.replace("C", "c").replace("M", "m")))
                or (c is not None and (cls3(c) is not None
                                       or "main-content" in c.replace("C", "c").replace("M", "m")
                                       or "page-content" in c.replace("C", "c").replace("P", "p"))))

    def main(el: Any) -> bool:
        if el.tag == "main":
            return True
        return any((el.get(a) or "").startswith("main") for a in ("class", "id", "role"))

    return [FirstFrame(exprs[0].path, _FRAME_TAGS, article), exprs[1],
            FirstFrame(exprs[2].path, _FRAME_TAGS, story),
            FirstFrame(exprs[3].path, _FRAME_TAGS, main_content),
            FirstFrame(exprs[4].path, _FRAME_TAGS, main)]


# -- contains() prunes: image captions (images off), teasers (precision and default balance) --

_CONTAINS = re.compile(r"contains\((?:translate\()?@(\w+)(?:, '(\w)', '(\w)'\))?, '(\w+)'\)")


class ContainsFrames:
    """``.//*[<tags>][contains(F(@id), N) or contains(F(@class), N)]``, F a one-letter
    ``translate`` or none: trafilatura's ``DISCARD_IMAGE_ELEMENTS`` (every candidate frame of
    every page, images being off) and ``TEASER_DISCARD_XPATH`` (not in recall balance).
    libxml2 walks every element to test the tags and attributes (~1.2 ms a Python docs
    frame); lxml's C tag filter and a Python ``in`` on the two values is a fifth of that.
    Same elements, document order (an ElementTree context keeps the XPath: its ``.//*``
    includes the root element)."""

    def __init__(self, xpath: Any, tags: tuple[str, ...], needle: str,
                 fold: tuple[str, str] | None) -> None:
        self.xpath = xpath
        self.path = xpath.path  # the expression's text, for the tests
        self.tags = tags
        self.needle = needle
        self.fold = fold

    def __call__(self, tree: Any) -> list[Any]:
        if not hasattr(tree, "iterdescendants"):
            return self.xpath(tree)  # type: ignore[no-any-return]
        needle, fold = self.needle, self.fold
        out = []
        for el in tree.iterdescendants(*self.tags):
            for v in (el.get("id"), el.get("class")):
                if v is not None:
                    if fold is not None:
                        v = v.replace(*fold)
                    if needle in v:
                        out.append(el)
                        break
        return out


def _contains(exprs: list[Any]) -> list[Any] | None:
    """One expression: the tags and the two tests read from its text (which :data:`PATHS`
    pins): the same needle and translation on @id then @class."""
    if len(exprs) != 1:
        return None
    path = exprs[0].path
    tests = _CONTAINS.findall(path)
    tags = tuple(re.findall(r"self::(\w+)", path))
    if ([t[0] for t in tests] != ["id", "class"] or tests[0][1:] != tests[1][1:]
            or not tags or path.count("contains(") != 2):
        return None
    _, a, b, needle = tests[0]
    return [ContainsFrames(exprs[0], tags, needle, (a, b) if a else None)]


def _lists() -> dict[str, list[Any]]:
    """Each list of :data:`PATHS` built: its expressions compiled as trafilatura compiles them,
    then the Python equivalents; a list whose text the builders do not read as written (or a
    pattern that would match an element without the attribute: '' would match, and the
    C-level walk would miss it) is an error at import, not a slower path."""
    from lxml.etree import XPath

    builders: dict[str, Callable[[list[Any]], list[Any] | None]] = {
        "OVERALL_DISCARD_XPATH": _overall, "RAW_TREE_PRUNE_XPATH": _raw_prune,
        "REMOVE_COMMENTS_AND_LISTS_XPATH": _comments_and_lists, "BODY_XPATH": _body,
        "DISCARD_IMAGE_ELEMENTS": _contains, "TEASER_DISCARD_XPATH": _contains}
    out = {}
    for name, paths in PATHS.items():
        exprs = [XPath(p, namespaces={"re": REGEXP_NS}) for p in paths]
        if any(re.search(p, "") for path in paths for _, p in _RE_TEST.findall(path)):
            raise RuntimeError(f"{name}: a pattern matches the empty string")
        built = builders[name](exprs)
        if built is None:
            raise RuntimeError(f"{name}: the expressions are not the ones the builders read")
        out[name] = built
    return out


REGEXP_NS = "http://exslt.org/regular-expressions"
_LISTS = _lists()
OVERALL_DISCARD_XPATH = _LISTS["OVERALL_DISCARD_XPATH"]
RAW_TREE_PRUNE_XPATH = _LISTS["RAW_TREE_PRUNE_XPATH"]
REMOVE_COMMENTS_AND_LISTS_XPATH = _LISTS["REMOVE_COMMENTS_AND_LISTS_XPATH"]
BODY_XPATH = _LISTS["BODY_XPATH"]
DISCARD_IMAGE_ELEMENTS = _LISTS["DISCARD_IMAGE_ELEMENTS"]
TEASER_DISCARD_XPATH = _LISTS["TEASER_DISCARD_XPATH"]
