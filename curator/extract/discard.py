"""trafilatura's regex XPath prunes evaluated with Python's ``re`` instead of EXSLT
``re:test`` callbacks: the same elements in the same order, for less CPU.

trafilatura prunes navigation, share bars, hidden blocks... of every candidate content frame
with ``OVERALL_DISCARD_XPATH`` (``main_extractor.prune_unwanted_sections``), and the raw tree
of every page with ``RAW_TREE_PRUNE_XPATH`` and (comments off) ``REMOVE_COMMENTS_AND_LISTS_XPATH``.
Their predicates call ``re:test`` on the id and class of every candidate element; lxml
answers each call with a Python callback that converts the attribute node-set to strings:
the three lists were about a fifth of the default extraction's CPU (OVERALL_DISCARD_XPATH
alone 4.3 ms of ~32 ms per page on the gold set). Here a C-level XPath picks the elements of
the right tags that have the tested attributes, and the regular expressions (the very patterns
of trafilatura's XPath text, run by the same ``re`` module lxml's callbacks use) are applied in
Python. The walk itself is lxml's C tag filter (``iterdescendants``), not the XPath: libxml2's
walk with attribute predicates cost more than all the tests (on the Python docs 2.7 of 3.6 s;
the walk with the tests now ~0.5 s), and an element whose only tested attribute is its class
is decided by that value, remembered per value (a page repeats its classes). Same node lists
on the gold pages and on crafted attribute sets (tests/extract/test_discard.py).

``BODY_XPATH`` (``main_extractor._extract``: the content frame, the first element of the first
expression that has one) is evaluated the same way with a stop at the first match
(:class:`FirstFrame`, ~2 ms a page less; same frame on every call over the gold and bench
pages, tests/extract/test_body_xpath.py). The ``contains()`` prunes of image captions (every
frame, images being off) and teasers (precision and default balance) are the same walk with a
Python ``in`` (:class:`ContainsFrames`).

:func:`install` replaces a list only when its expressions are exactly the ones this was
written for (their text's SHA-256, :data:`TARGETS`); any other trafilatura version keeps its
own XPath.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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
        # marked(): @id|@class is the class; ids('') never matches (replacement() checks)
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
            # ids('') and classes('') never match (replacement() checks)
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


def digest(paths: list[str]) -> str:
    return hashlib.sha256("\0".join(paths).encode()).hexdigest()


def _overall(exprs: list[Any]) -> list[Any] | None:
    first = _RE_TEST.findall(exprs[0].path)
    second = _RE_TEST.findall(exprs[1].path)
    if ([a for a, _ in first] != ["@id|@class", "@id", "@class"]
            or [a for a, _ in second] != ["@id|@style", "@id", "@class"]):
        return None
    return [FrameDiscard(*(p for _, p in first)), HiddenDiscard(*(p for _, p in second))]


#: (trafilatura module, list name, SHA-256 of its expressions' text joined by NUL, builder):
#: the lists this was written for and checked against (trafilatura 2.3.1 as ``.[all]``
#: installs it). A list whose text differs keeps trafilatura's own XPath.
TARGETS: tuple[tuple[str, str, str, Callable[[list[Any]], list[Any] | None]], ...] = (
    ("trafilatura.main_extractor", "OVERALL_DISCARD_XPATH",
     "e0f0992fedd02ac196225237652051a55faeb25833b6f992cc290c51f4a72600", _overall),
    ("trafilatura.core", "RAW_TREE_PRUNE_XPATH",
     "06426494c87a26ace4eab8248571a59e4bbb321c9910c815a602dae30589b275", _raw_prune),
    ("trafilatura.core", "REMOVE_COMMENTS_AND_LISTS_XPATH",
     "9cc18d34e6e2d258172b5df02bc44e578c95ef709b8e06722846c7a410c3a46f", _comments_and_lists),
    ("trafilatura.main_extractor", "BODY_XPATH",
     "1cbf719d5948b3bbd5a27762b0d60452eb214d7434c84f4e67a535539c704570",
     lambda exprs: _body(exprs)),
    ("trafilatura.main_extractor", "DISCARD_IMAGE_ELEMENTS",
     "cb1ab981e44913f706048bad10e9f027314ffccb36c56ffc66c8ff5e1e340c58",
     lambda exprs: _contains(exprs)),
    ("trafilatura.main_extractor", "TEASER_DISCARD_XPATH",
     "ebb02f066626551dbb0222a6cb631691f6ccacf0477c1381263f112b0bc9cdfa",
     lambda exprs: _contains(exprs)),
)


def replacement(exprs: list[Any], name: str = "OVERALL_DISCARD_XPATH") -> list[Any] | None:
    """Python equivalents of trafilatura's expression list ``name``, or None when ``exprs``
    are not the expressions they were written for (or a pattern would match an element
    without the attribute: '' would match, and the C-level pre-selection would miss it)."""
    target = next((t for t in TARGETS if t[1] == name), None)
    paths = [getattr(e, "path", None) for e in exprs]
    if (target is None or not all(isinstance(p, str) for p in paths)
            or digest(paths) != target[2]):  # type: ignore[arg-type]
        return None
    if any(re.search(p, "") for path in paths for _, p in _RE_TEST.findall(path)):  # type: ignore[arg-type]
        return None
    return target[3](exprs)


def install() -> int:
    """Use the Python equivalents in trafilatura (returns how many lists were replaced)."""
    import importlib

    done = 0
    for module, name, _, _ in TARGETS:
        mod = importlib.import_module(module)
        current = getattr(mod, name)
        if current and isinstance(current[0], (FrameDiscard, RegexFrames, FirstFrame,
                                               ContainsFrames)):
            done += 1
            continue
        new = replacement(current, name)
        if new is not None:
            setattr(mod, name, new)
            done += 1
    return done


@contextmanager
def stock() -> Iterator[None]:
    """trafilatura's own XPaths inside the block (benchmarks time peers as they ship)."""
    import importlib

    import trafilatura.xpaths as xpaths

    saved = []
    for module, name, _, _ in TARGETS:
        mod = importlib.import_module(module)
        saved.append((mod, name, getattr(mod, name)))
        setattr(mod, name, getattr(xpaths, name))
    try:
        yield
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)


# -- trafilatura's BODY_XPATH: the content frame ------------------------------------------------

#: The line of trafilatura's ``_extract`` that reads a BODY_XPATH result: only its first
#: element (in document order) is used, so :class:`FirstFrame` returns only that one.
BODY_USE = "subtree = next((s for s in expr(tree) if s is not None), None)"


class FirstFrame:
    """The first element in document order (below the context node) whose tag is one of
    ``tags`` and that ``test(el)`` accepts, as a one-element list: what ``_extract`` takes
    from a BODY_XPATH expression. ``.//*[T][P][1]`` (the first match under each parent) and
    ``(.//*[T][P])[1]`` both start with that element. A lazy walk in C over the tags that
    stops at the first match, instead of XPath's full walk with a Python ``re:test``
    callback per candidate (BODY_XPATH was ~8% of extraction CPU)."""

    def __init__(self, path: str, tags: tuple[str, ...], test: Callable[[Any], bool]) -> None:
        self.path = path  # trafilatura's expression, for digest() and the tests
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
    import inspect

    import trafilatura.main_extractor as me

    if BODY_USE not in inspect.getsource(me._extract):
        return None
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
        self.path = xpath.path  # trafilatura's expression, for digest() and the tests
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
    """One expression: the tags and the two tests read from its text (which its digest
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
