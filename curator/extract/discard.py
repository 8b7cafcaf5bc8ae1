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
Python. Same node lists on the gold pages (tests/extract/test_discard.py).

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


class _AttributeDiscard:
    """Elements a C-level XPath pre-selects (``PRE``) whose id matches ``ids``, whose class
    matches ``classes``, or that :meth:`marked` (the rest of the expression) accepts."""

    PRE = ""

    def __init__(self, special: str, ids: str, classes: str) -> None:
        from lxml.etree import XPath

        self.pre = XPath(self.PRE)
        self.special = re.compile(special).search
        self.ids = re.compile(ids).search
        self.classes = re.compile(classes).search

    def marked(self, a: Any) -> bool:
        raise NotImplementedError

    def __call__(self, tree: Any) -> list[Any]:
        out = []
        for el in self.pre(tree):
            a = el.attrib
            if (self.marked(a) or self.ids(a.get("id") or "")
                    or self.classes(a.get("class") or "")):
                out.append(el)
        return out


class FrameDiscard(_AttributeDiscard):
    """The first expression: div/item/list/p/section/span elements with a navigation role,
    a "most popular" component, a consent id/class (``special``), or an id or class of
    boilerplate."""

    PRE = (".//*[self::div or self::item or self::list or self::p or self::section"
           " or self::span][@data-lp-replacement-content or @role"
           " or @data-component or @id or @class]")

    def marked(self, a: Any) -> bool:
        role = a.get("role")
        dc = a.get("data-component")
        return bool("data-lp-replacement-content" in a
                    or (role is not None and "nav" in role.replace("N", "n"))
                    or (dc is not None and "MostPopularStories" in dc)
                    or self.special(_first(a, "id", "class")))


class HiddenDiscard(_AttributeDiscard):
    """The second expression: comment titles, reply blocks, an id/style of hidden blocks
    (``special``), not displayed or aria-hidden elements, any tag."""

    PRE = ".//*[@class or @id or @style or @aria-hidden]"

    def marked(self, a: Any) -> bool:
        s = a.get("style")
        return bool(a.get("class") == "comments-title"
                    or _first(a, "id", "class").startswith("reply-")
                    or self.special(_first(a, "id", "style"))
                    or (s is not None and ("display:none" in s or "display: none" in s))
                    or a.get("aria-hidden") == "true")


class RegexFrames:
    """``.//*[<tags>][re:test(@id, I) or re:test(@class, C)][<extra>]``: elements of some tags
    whose id or class matches; ``last(el, id, class)`` is the expression's last predicate
    (trafilatura's raw-tree prune of infinite-scroll containers, and its comment-section
    prune)."""

    def __init__(self, tags: tuple[str, ...], ids: str, classes: str,
                 last: Callable[[Any, str, str], bool]) -> None:
        from lxml.etree import XPath

        self.pre = XPath(".//*[" + " or ".join(f"self::{t}" for t in tags) + "][@id or @class]")
        self.ids = re.compile(ids).search
        self.classes = re.compile(classes).search
        self.last = last

    def __call__(self, tree: Any) -> list[Any]:
        out = []
        for el in self.pre(tree):
            i = el.get("id") or ""
            c = el.get("class") or ""
            if (self.ids(i) or self.classes(c)) and self.last(el, i, c):
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
        if current and isinstance(current[0], (FrameDiscard, RegexFrames)):
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
