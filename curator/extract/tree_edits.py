"""The edits of the parsed page before trafilatura sees it (:func:`prepare_tree`): code
blocks' highlighting spans merged, page furniture dropped (curator/extract/prune_ui.py),
hard-wrapped text joined as a browser renders it."""

from __future__ import annotations

from typing import Any

from curator.extract.html_repair import XML_ILLEGAL
from curator.extract.prune_ui import (
    POST_META_XPATH,
    attr_sets,
    attr_values,
    drop_post_meta,
    drop_tree,
    mask_screen_reader,
    open_panels,
    ui_elements,
    unlink_toctrees,
)

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


LOOKED_UP = _KEEP_LINES[:6]  # not <script>, <style>: :func:`prepare_tree`


_WRAPPED_XPATHS: dict[frozenset[str], Any] = {}


_XPATHS: list[Any] = []


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
    late; _UI_XPATH runs as its gated alternatives, :func:`ui_elements`)."""
    if not _XPATHS:
        from lxml.etree import XPath

        _XPATHS.extend([XPath(_WRAPPED_TEXT), XPath(POST_META_XPATH)])
    return _XPATHS[0], _XPATHS[1]


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


def prepare_tree(tree: object, shape: bool, html: str, post_meta: bool = False,
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
    for el in tree.iter(*LOOKED_UP, "dd"):  # type: ignore[attr-defined]
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
    sets = attr_sets(tree)
    attrs = attr_values(tree, sets)  # a superset of the values left after the UI drop: exact
    for el in ui_elements(tree, html, attrs):
        drop_tree(el)
    if "toctree-wrapper" in attrs:
        unlink_toctrees(tree)
    if not post_meta:
        drop_post_meta(tree, meta, attrs, sets)
    if not screen_reader_text:
        mask_screen_reader(tree, html, attrs, sets[0])
    if collapsed_panels and "aria-controls" in html:
        open_panels(tree)
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
            setattr(parent, "text" if node.is_text else "tail", XML_ILLEGAL.sub("", joined))
