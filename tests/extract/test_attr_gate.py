"""The class/id-gated steps of the tree preparation (documentation UI, forum author boxes) look
at the page's class and id values first and skip their XPath when no value can match: the
same tree, so the same text, as running every XPath on every page."""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import pytest
from lxml.etree import XPath, tostring
from trafilatura.utils import load_html

from curator.extract import prune_ui, tree_edits

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.gold_set import load_gold  # noqa: E402

DOCS = Path(__file__).parent / "data" / "docpages"


def _tokens() -> list[str]:
    """Every class/id token _POST_META accepts, read from its pattern (``-?`` both ways), so a
    token added to the rule without a needle fails here."""
    m = re.search(r"\(\?:\^\|\[-_ \]\)\(\?:(.*)\)\(\?:\[-_ \]\|\$\)", prune_ui._POST_META.pattern)
    assert m, "the _POST_META pattern changed shape: update this test and the needles"
    out = []
    for alt in m.group(1).split("|"):
        assert re.fullmatch(r"[a-z_-]+(-\?[a-z_-]+)?", alt), alt
        out += [alt.replace("-?", "-"), alt.replace("-?", "")] if "-?" in alt else [alt]
    return out


@pytest.mark.parametrize("token", _tokens())
def test_every_author_box_token_opens_the_gate(token: str) -> None:
    for value in (token, token.upper(), token.title(), f"post {token}-box", f"x_{token}"):
        assert prune_ui._POST_META.search(value)
        assert prune_ui._may_have_post_meta(f"\nnav\n{value}\n")


@pytest.mark.parametrize("value", ["userınfo", "USERİNFO", "Signature", "uſerinfo"])
def test_values_that_only_ignorecase_matches_open_the_gate(value: str) -> None:
    """Python's IGNORECASE matches "ı"/"İ" to i and "ſ" to s, which lower() does not map:
    such values take the regex itself (a lower-and-search gate failed on these)."""
    assert prune_ui._POST_META.search(value)
    assert prune_ui._may_have_post_meta(f"\nmain\n{value}\n")


def test_a_box_with_a_dotless_i_class_is_dropped() -> None:
    html = ("<html><body><div class='post'><div class='userınfo'>Beiträge: 516</div>"
            "<p>" + "Die Rosen blühen dieses Jahr früh im Garten. " * 8 + "</p></div>"
            "</body></html>")
    tree = load_html(html)
    tree_edits.prepare_tree(tree, True, html)
    assert "Beiträge" not in tostring(tree, encoding="unicode")


def test_pages_without_candidates_skip_the_gate() -> None:
    assert not prune_ui._may_have_post_meta("\nnav\nmain-content\nuser\nprofile\n")
    assert not prune_ui._has("<a class='src'>", "\nsrcset\nmy-src\n", "=src")
    assert prune_ui._has("", "\nx\nsrc\n", "=src")


def _ungated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prune_ui, "_may_have_post_meta", lambda attrs: True)
    monkeypatch.setattr(prune_ui, "_has", lambda html, attrs, needle: True)
    # and the whole author-box XPath, not the candidates of the matching values
    monkeypatch.setattr(prune_ui, "_post_meta_candidates", lambda tree, attrs, sets: None)


def _prepared(html: str) -> str | None:
    tree = load_html(html)
    if tree is None:
        return None
    tree_edits.prepare_tree(tree, True, html)
    return tostring(tree, encoding="unicode")  # type: ignore[no-any-return]


def test_same_trees_as_without_the_gates_on_real_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gold pages (630, forums among them) and documentation pages: the prepared tree with the
    gates equals the tree with every XPath run; the gates skip the author-box XPath on most
    pages and open it on the forums that have boxes."""
    pages = [p.html for p in load_gold("all")]
    pages += [gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
              for f in sorted(DOCS.glob("*.html.gz"))]
    gated = [_prepared(h) for h in pages]
    attrs = [prune_ui.attr_values(t) for t in map(load_html, pages) if t is not None]
    with monkeypatch.context() as m:
        _ungated(m)
        ungated = [_prepared(h) for h in pages]
    assert gated == ungated
    opened = sum(map(prune_ui._may_have_post_meta, attrs))
    assert 20 <= opened <= len(pages) // 2


def test_entity_written_src_class_is_found() -> None:
    """The ``class="src"`` alternative is gated on the parsed value: a source-text regex missed
    a value written with a character reference."""
    html = ("<html><body><main><p>Some text of the page.</p>"
            "<a class='&#115;rc' href='../src/a.rs'>source</a></main></body></html>")
    tree = load_html(html)
    whole = set(XPath(prune_ui._UI_XPATH)(tree))
    assert whole and set(prune_ui.ui_elements(tree, html)) == whole
