"""Code blocks' highlighting spans stripped with each run of text in one text node
(`tree_edits._strip_spans`): the tree reads as `strip_tags` leaves it (elements, texts,
tails, serialisation), while each run is one text node, so lxml reads it in linear time."""

from __future__ import annotations

import random
from typing import Any

import pytest
from lxml import html as lhtml
from lxml.etree import strip_tags, tostring

import curator.extract.extract_html as eh
from curator.extract import tree_edits


def _state(el: Any) -> list[Any]:
    """Everything lxml lets a reader see of ``el``'s subtree."""
    out: list[Any] = [tostring(el, encoding="unicode"), list(el.itertext())]
    for node in el.iter():
        out.append((node.tag if isinstance(node.tag, str) else "#other", node.text,
                    node.tail, dict(node.attrib)))
    return out


def _text_nodes(el: Any) -> int:
    """Text nodes in ``el``'s subtree (XPath sees each node, not a run)."""
    return int(el.xpath("count(descendant::text())"))


def _block(rng: random.Random, depth: int = 0) -> str:
    """A random code block: spans (nested), links, <br>, <b>, comments, texts and tails
    (empty ones included), with entities and newlines."""
    parts = []
    for _ in range(rng.randint(0, 40 if depth == 0 else 4)):
        pick = rng.random()
        words = rng.choice(["", "fn", " ", "\n", "x&amp;y", "let  v", "é", "0x1F\n  "])
        if pick < 0.55:
            inner = _block(rng, depth + 1) if depth < 3 and rng.random() < 0.3 else ""
            parts.append(f'<span class="k{rng.randint(0, 3)}">{words}{inner}</span>')
        elif pick < 0.65:
            parts.append(f'<a href="#l{rng.randint(0, 9)}">{words}</a>')
        elif pick < 0.72:
            parts.append("<br>")
        elif pick < 0.8:
            inner = _block(rng, depth + 1) if depth < 3 else ""
            parts.append(f"<b>{words}{inner}</b>")
        elif pick < 0.85:
            parts.append(f"<!-- {words} -->")
        else:
            parts.append(words)
    return "".join(parts)


@pytest.mark.parametrize("seed", range(300))
def test_reads_as_strip_tags_leaves_it(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_edits, "_FEW_CHILDREN", 0)  # the walk on every block, small ones too
    rng = random.Random(seed)
    body = _block(rng)
    outer = rng.choice(["<pre>{}</pre>", "<pre><code>{}</code></pre>", "<code>{}</code>",
                        "<pre>head<code>{}</code>tail</pre>"])
    page = f"<html><body><p>before</p>{outer.format(body)}<p>after</p></body></html>"
    want, got = lhtml.fromstring(page), lhtml.fromstring(page)
    for el in want.iter("pre", "code"):
        strip_tags(el, "span")
    for el in got.iter("pre", "code"):
        tree_edits._strip_spans(el)
    assert _state(got) == _state(want)
    assert "<span" not in tostring(got, encoding="unicode")


def test_each_run_is_one_text_node() -> None:
    """A highlighted block of 5,000 tokens: strip_tags leaves 10,000 text nodes in one run
    (a token and the space after it), the new form one; both read the same."""
    tokens = "".join(f'<span class="k">tok{i}</span> ' for i in range(5000))
    page = f"<html><body><pre><code>{tokens}</code></pre></body></html>"
    want, got = lhtml.fromstring(page), lhtml.fromstring(page)
    code_want, code_got = next(want.iter("code")), next(got.iter("code"))
    strip_tags(code_want, "span")
    tree_edits._strip_spans(code_got)
    assert code_got.text == code_want.text
    assert _text_nodes(code_want) == 10_000
    assert _text_nodes(code_got) == 1


def test_prepare_tree_uses_it_on_large_blocks() -> None:
    """`_prepare_tree` on a page with a large highlighted block (a <pre><code> wrapper, as
    rustdoc writes source pages) leaves one text node in it; the extracted text is the same
    as with strip_tags alone."""
    from trafilatura.utils import load_html

    lines = "".join(f'<span class="kw">fn</span> <span class="ident">f{i}</span>() {{}}\n'
                    for i in range(400))
    page = (f"<html><body><h1>Source</h1><p>{'Some prose here. ' * 20}</p>"
            f"<pre class=\"rust\"><code>{lines}</code></pre></body></html>")
    tree = load_html(page)
    tree_edits.prepare_tree(tree, True, page)
    assert _text_nodes(next(tree.iter("code"))) == 1
    text = eh.extract_text(page)
    few = tree_edits._FEW_CHILDREN
    tree_edits._FEW_CHILDREN = 10**9  # strip_tags alone
    try:
        assert eh.extract_text(page) == text
    finally:
        tree_edits._FEW_CHILDREN = few
    assert "fn f399() {}" in text


def test_a_character_lxml_cannot_set_leaves_the_run_as_it_was() -> None:
    """"&#26;" parses to U+001A, which lxml refuses to set back: that run stays split, and
    every string still reads as strip_tags leaves it."""
    spans = "".join(f"<span>a{i}&#26;</span> " for i in range(50))
    page = f"<html><body><pre>{spans}<b>x</b>{spans}</pre></body></html>"
    want, got = lhtml.fromstring(page), lhtml.fromstring(page)
    strip_tags(next(want.iter("pre")), "span")
    tree_edits._strip_spans(next(got.iter("pre")))
    assert "\x1a" in next(got.iter("pre")).text
    assert _state(got) == _state(want)


def test_a_block_nested_as_deep_as_the_parser_allows() -> None:
    """libxml2 nests elements about 255 deep; the walk takes two frames a kept level and one
    a span level, and reads as strip_tags leaves it at that depth."""
    deep = "".join(f"<span>s{i} <b>b{i} " for i in range(400))
    flat = "".join(f'<span class="k">t{i}</span> ' for i in range(100))
    page = f"<html><body><pre>{flat}{deep}</pre></body></html>"
    want, got = lhtml.fromstring(page), lhtml.fromstring(page)
    strip_tags(next(want.iter("pre")), "span")
    tree_edits._strip_spans(next(got.iter("pre")))
    depth, el = 0, next(got.iter("pre"))
    while len(el):
        el, depth = el[-1], depth + 1
    assert depth > 100  # the <b>s stay nested
    assert _state(got) == _state(want)
