"""The tree preparation before trafilatura (`_prepare_tree`) runs cheaper forms of its XPaths
(distinct class/id values, the wrapped-text XPath with only the ancestor tests of the tags a
page has, the author-box candidates looked up by the values that match the rule): the
prepared tree must be the one the plain XPaths give, node for node, on real pages and on
near misses of each shortcut. The reference below is the preparation as it was written
before those forms (commit 650f51a), with today's drop (``_drop_tree``: a control character
next to a dropped element failed the page then)."""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import pytest
from lxml.etree import XPath, strip_tags, tostring
from trafilatura.utils import load_html

from bench.gold_set import load_gold
from curator.extract import html_repair, prune_ui, tree_edits

DATA = Path(__file__).parent / "data"

_REF_WRAPPED = XPath("//text()[contains(., '\n')][normalize-space()][not(ancestor::pre"
                     " or ancestor::textarea or ancestor::listing or ancestor::xmp"
                     " or ancestor::plaintext or ancestor::code[contains(., '\n')]"
                     " or ancestor::script or ancestor::style)]")
_REF_CLASS, _REF_ID = XPath("//@class", smart_strings=False), XPath("//@id", smart_strings=False)
_REF_META = XPath(prune_ui.POST_META_XPATH)


def _reference(tree: Any, shape: bool, html: str, post_meta: bool = False) -> None:
    """`_prepare_tree` with the whole XPaths, as it was."""
    for el in tree.iter("pre", "code"):
        strip_tags(el, "span")
    attrs = "\n" + "\n".join(_REF_CLASS(tree) + _REF_ID(tree)) + "\n"
    for el in prune_ui.ui_elements(tree, html, attrs):
        prune_ui.drop_tree(el)
    if "toctree-wrapper" in attrs:  # Sphinx toctrees unlinked (no cheaper form)
        prune_ui.unlink_toctrees(tree)
    if not post_meta and prune_ui._may_have_post_meta(attrs):
        for el in _REF_META(tree):
            if el.tag in ("html", "body") or el.getparent() is None:
                continue
            if not prune_ui._POST_META.search(f"{el.get('class') or ''} {el.get('id') or ''}"):
                continue
            if len(" ".join(el.itertext()).split()) <= prune_ui._POST_META_WORDS:
                prune_ui.drop_tree(el)
    if prune_ui.MASK not in html:  # screen-reader-only text masked (a later step, same XPath form)
        for el in tree.xpath(" | ".join(f"//*[{prune_ui._CLS.format(n)}]"
                                        for n in prune_ui.SCREEN_READER_CLASSES)):
            for node in el.iter():
                if node.text:
                    node.text = prune_ui._NONSPACE.sub(prune_ui.MASK, node.text)
                if node is not el and node.tail:
                    node.tail = prune_ui._NONSPACE.sub(prune_ui.MASK, node.tail)
    if "aria-controls" in html:  # collapsed panels opened (a later step, no cheaper form)
        prune_ui.open_panels(tree)
    if not shape:
        return
    for dd in tree.iter("dd"):
        if dd.find(".//table") is not None:
            dd.tag = "div"
    for node in _REF_WRAPPED(tree):
        parent = node.getparent()
        if parent is None:
            continue
        joined = tree_edits._join_lines(node)
        try:
            if node.is_text:
                parent.text = joined
            elif node.is_tail:
                parent.tail = joined
        except ValueError:
            setattr(parent, "text" if node.is_text else "tail",
                    html_repair.XML_ILLEGAL.sub("", joined))


def _document(tree: Any) -> list[str]:
    """The root element and the nodes beside it (libxml2 puts content after ``</html>`` in a
    second top-level element, which ``//text()`` reaches and the root's serialization omits)."""
    nodes = [*reversed(list(tree.itersiblings(preceding=True))), tree, *tree.itersiblings()]
    return [tostring(n, encoding="unicode", with_tail=False) for n in nodes]


OPTIONS = [(True, False), (False, False), (True, True)]  # (shape, post_meta)


def _check(html: str, options: list[tuple[bool, bool]] = OPTIONS) -> bool:
    """Assert both preparations give the same document; whether the page parsed."""
    for shape, post_meta in options:
        old, new = load_html(html), load_html(html)
        if old is None:
            return False
        _reference(old, shape, html, post_meta)
        tree_edits.prepare_tree(new, shape, html, post_meta)
        assert _document(new) == _document(old), (shape, post_meta, html[:300])
    return True


def _page(body: str, after: str = "") -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>{after}"


WORDS = "Die Rosen blühen dieses Jahr früh im Garten hinter dem Haus. " * 3
NEAR_MISSES = {
    # wrapped text against each kept-lines tag, as text and as tail, nested and not
    "pre": "<p>a\nb</p><pre>x\n  y<b>in\nb</b>t\nail</pre>after\npre",
    "code-newline": "<p>run <code>f(x)\n g(y)</code> then\nthis</p>",
    "code-inline": "<p>run <code>f(x)</code> then\nthis <code>a<i>b\nc</i></code></p>",
    "code-in-code": "<code>a<code>b\nc</code></code><code>x<!-- a\ncomment -->y<b>p\nq</b></code>",
    "code-comment-only": "<p>a <code>x<!-- one\ntwo -->y</code> b\nc</p>",
    "code-pi": "<p>a <code>x<?php echo 1;\n?>y</code> b\nc</p>",
    "textarea": "<form><textarea>one\ntwo</textarea>tail\ntext</form>",
    "listing-xmp": "<listing>l\nm</listing><xmp>x\n<b>y</b></xmp><div>d\ne</div>",
    "plaintext": "<p>p\nq</p><plaintext>r\ns <b>t\nu</b>",
    "script-style": "<script>var a = 1;\nvar b;</script><style>p {}\nb {}</style><p>c\nd</p>",
    "script-in-p": "<p>x\ny<script>if (a)\n b()</script>z\nw</p>",
    "blank-lines": "<div>\n   \n</div><div>\n\xa0\n</div><p>\u3000\nx\n\t</p>",
    "entities": "<p>a&#10;b &#26;c\nd</p><p>e&#x1a;\nf</p><pre>&#26;g\nh</pre>",
    "cdata": "<p>a<![CDATA[b\nc]]>d\ne</p>",
    "pre-in-span": "<pre><span>a\n<code>b</code></span>\nc</pre><p><span>x\ny</span></p>",
    "dd-table": "<dl><dt>k</dt><dd>v<table><tr><td>1</td></tr></table></dd><dd>w\nz</dd></dl>",
    "dd-table-dropped": "<dl><dd><div class='skipNav'><table><tr><td>c</td></tr></table>"
                        "</div>text\nhere</dd></dl>",
    "dd-in-box": "<div class='userinfo'><dl><dd><table><tr><td>Posts: 5</td></tr></table>"
                 "</dd></dl></div><p>" + WORDS + "</p>",
    # author boxes: the regex, the stems of the XPath, case, ids and classes together
    "box-class": f"<div class='post'><div class='userinfo'>Posts: 5\nJoined</div>"
                 f"<p>{WORDS}</p></div>",
    "box-upper": "<div class='USERINFO'>Posts: 6</div><div class='USERINFO' id='user'>P 7</div>"
                 "<div class='x' id='Signature'>sig</div><div id='signature'>sig 2</div>",
    "box-id": "<div id='postprofile-3' class='a'>Beiträge: 6</div><p>x\ny</p>",
    "box-long": f"<div class='userinfo'><p>{WORDS * 8}</p><div class='signature'>s</div></div>",
    "box-nested": "<div class='member-info'><div class='user-stats'>a</div></div>",
    "box-quotes": "<div class='userinfo it&#39;s'>q1</div><div id='signature \"x\"'>q2</div>",
    "box-both-quotes": "<div class='userinfo it&#39;s &quot;x&quot;'>q3</div>",
    "box-newline": "<div class='userinfo\nx'>n1</div><div class='x\nuserinfo'>n2</div>",
    "box-near": "<div class='userinformation'>n3</div><div class='my-userinfo_box'>n4</div>"
                "<div class='uſerinfo'>n5</div><div class='userınfo'>n6</div>",
    "box-html-body": "<div class='signature-wrap'>s</div>",
    # documentation UI
    "ui": "<h2>T<a class='headerlink' href='#t'>¶</a></h2><a href='#d'>More...</a>"
          "<a class='src' href='s'>source</a><p>x\ny</p>",
}


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_same_tree_on_near_misses(name: str) -> None:
    body = NEAR_MISSES[name]
    assert _check(_page(body))
    # the same content beside the root element (after </html>): //text() reaches it
    assert _check(_page("<p>a\nb</p>", after=f"<div>{body}</div>"))


def test_body_and_html_boxes_are_kept() -> None:
    html = ("<html class='userinfo'><body id='signature'><div class='userinfo'>x</div>"
            "<p>" + WORDS + "</p></body></html>")
    assert _check(html)
    tree = load_html(html)
    tree_edits.prepare_tree(tree, True, html)
    assert tree.get("class") == "userinfo" and "Rosen" in tostring(tree, encoding="unicode")


def test_a_pre_beside_the_root_keeps_its_lines() -> None:
    """A page whose only <pre> sits after ``</html>``: its lines are kept (the tags a page has
    are looked up beside the root element too), the other wrapped text is joined."""
    html = _page("<p>a\nb</p>", after="<div><pre>x\ny</pre>p\nq</div>")
    tree = load_html(html)
    tree_edits.prepare_tree(tree, True, html)
    beside = "".join(_document(tree)[1:])
    assert "<pre>x\ny</pre>p q" in beside and "<p>a b</p>" in _document(tree)[0]
    assert _check(html)


def test_author_box_candidates_match_the_whole_xpath() -> None:
    """The candidates (elements whose class or id matches the rule, with a stem as the
    XPath has it) are the whole XPath's elements that pass the rule, in document order."""
    pages = [_page(NEAR_MISSES[k]) for k in NEAR_MISSES if k.startswith("box")]
    pages += [p.html for p in load_gold("all") if p.type == "forum"]
    n = 0
    for html in pages:
        tree = load_html(html)
        sets = prune_ui.attr_sets(tree)
        cands = prune_ui._post_meta_candidates(tree, prune_ui.attr_values(tree, sets), sets)
        whole = [el for el in _REF_META(tree)
                 if prune_ui._POST_META.search(f"{el.get('class') or ''} {el.get('id') or ''}")]
        if cands is None:  # a value with a newline, or both quotes: the whole XPath runs
            values = [v for s in sets for v in s]
            assert any("\n" in v for v in values) or (any("'" in v for v in values)
                                                       and any('"' in v for v in values))
            continue
        assert cands == whole
        n += len(whole)
    assert n > 50


def test_same_tree_on_real_pages() -> None:
    """The 630 gold pages (forums with author boxes among them), the documentation pages and
    the WCXB page, with the default options, trafilatura's own text shape and boxes kept."""
    pages = [p.html for p in load_gold("all")]
    pages += [gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
              for f in sorted((DATA / "docpages").glob("*.html.gz"))]
    pages += [gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
              for f in sorted((DATA / "wcxb").glob("*.html.gz"))]
    parsed = sum(_check(html_repair.close_noscript_iframes(h), OPTIONS[:1]) for h in pages)
    assert parsed >= 600
    for h in pages[::5]:
        _check(html_repair.close_noscript_iframes(h), OPTIONS[1:])


PIECES = [
    "<p>{w}\n{w}</p>", "<pre>{w}\n{w}</pre>", "<code>{w}\n{w}</code>", "<code>{w}</code>",
    "<textarea>{w}\n{w}</textarea>", "<script>{w}\n{w}</script>", "<style>{w}\n{w}</style>",
    "<listing>{w}\n</listing>", "<xmp>{w}\n{w}</xmp>", "{w}\n{w}", "<!-- {w}\n{w} -->",
    "<?pi {w}\n{w}?>", "<![CDATA[{w}\n{w}]]>", "&#26;{w}\n", "&#10;{w}", "<span>{w}\n</span>",
    "<dd>{w}<table><tr><td>{w}</td></tr></table></dd>", "<dl><dd>{w}\n{w}</dd></dl>",
    "<a class='headerlink' href='#x'>¶</a>", "<a href='#y'>More...</a>",
    "<div class='userinfo'>{w}\n{w}</div>", "<div id='signature'>{w}</div>",
    "<div class='USER-INFO' id='user-x'>{w}</div>", "<div class='skipNav'>{w}\n</div>",
    "<span class='out-of-band'>{w}</span>", "\n  \n", "\xa0\n",
]


def _random_body(rng: random.Random, depth: int = 0) -> str:
    out = []
    for _ in range(rng.randint(1, 5)):
        piece = rng.choice(PIECES)
        if depth < 3 and rng.random() < 0.4:  # nest: the piece's first {w} holds a subtree
            piece = piece.replace("{w}", _random_body(rng, depth + 1).replace("{", "{{")
                                  .replace("}", "}}"), 1)
        out.append(piece.format(w=rng.choice(["a b", "Wort", " x ", "\ty", "z\n"])))
    return "".join(out)


def test_same_tree_on_random_nestings() -> None:
    """Seeded random nestings of the pieces above (kept-lines tags inside each other and
    inside boxes, comments, processing instructions, CDATA, character references, content
    after </html>)."""
    rng = random.Random(31)
    for _ in range(400):
        after = f"<div>{_random_body(rng)}</div>" if rng.random() < 0.2 else ""
        _check(_page(_random_body(rng), after))
