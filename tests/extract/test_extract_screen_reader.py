"""Text that only screen readers get (``sr-only``, ``visually-hidden``...) is left out of the
main text (``screen_reader_text``, curator/extract/prune_ui.py), masked before trafilatura
so that trafilatura keeps the same blocks; on real pages of bench/gold's tuning split (WCXB
Shopify collections) and crafted ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.gold_set import prf
from curator.extract import prune_ui
from curator.extract.extract_html import extract_text
from tests.extract.helpers_extract import tuning_pages as _tuning


@pytest.mark.parametrize("page_id, name", [("wcxb/0638", "Chocolate Hazelnut Coffee"),
                                           ("wcxb/2897", "Sennheiser HD 800S Headphones")])
def test_shopify_price_labels_are_not_card_text(page_id: str, name: str) -> None:
    """Every card of a Shopify (Dawn theme) collection holds visually-hidden "Regular price",
    "Sale price", "Unit price" and "per" labels; the gold, written from the page as shown,
    has the product names and prices only. Left out, each card keeps its name and price."""
    page = _tuning()[page_id]
    kept = extract_text(page.html, screen_reader_text=True)
    default = extract_text(page.html)
    assert "Regular price" in kept and "Unit price" in kept
    assert "Regular price" not in default and "Unit price" not in default
    assert name in default and "$" in default
    assert prf(default, page.gold)[2] > prf(kept, page.gold)[2] + 0.15


def test_masked_not_dropped_so_trafilatura_keeps_the_same_blocks() -> None:
    """On the tuning pages that use the classes, the default's text is the text with them
    kept, less some characters (a subsequence of it): masking (not dropping) leaves
    trafilatura's link-density and length tests as they were, so it keeps the same blocks.
    Dropping the elements instead changed blocks: wcxb/2897's cards, left with only their
    title links, went as link-dense (F1 0.48 -> 0.11)."""
    pages = [p for p in _tuning().values()
             if any(f'"{n}' in p.html or f" {n}" in p.html for n in prune_ui.SCREEN_READER_CLASSES)]
    assert len(pages) > 40
    changed = 0
    for page in pages:
        kept = extract_text(page.html, screen_reader_text=True)
        default = extract_text(page.html)
        rest = iter(kept)
        assert all(c in rest for c in default), page.id
        assert len(default.split()) <= len(kept.split())
        changed += default != kept
    assert changed >= 8


def test_pages_without_the_classes_are_unchanged() -> None:
    """Every 10th tuning page without any of the classes gives the same text both ways."""
    pages = [p for p in _tuning().values()
             if not any(n in p.html for n in prune_ui.SCREEN_READER_CLASSES)][::10]
    assert len(pages) > 20
    for page in pages:
        assert extract_text(page.html) == extract_text(page.html, screen_reader_text=True)


def _shop(extra: str = "") -> str:
    card = ('<li class="card"><a href="/p/{i}">Hand-thrown stoneware mug number {i}</a>'
            '<div class="price"><span class="visually-hidden visually-hidden--inline">Regular '
            'price</span> <span>$2{i}.00</span><span class="sr-only">per item</span></div></li>')
    cards = "".join(card.format(i=i) for i in range(8))
    body = ("<h1>Mugs</h1><p>Every mug here is thrown by hand in our studio and glazed with "
            f"ash from the kiln, so no two are alike.{extra}</p><ul>{cards}</ul>")
    return f"<html><head><title>Mugs</title></head><body><main>{body}</main></body></html>"


def test_labels_go_and_the_rest_of_the_line_stays() -> None:
    text = extract_text(_shop())
    kept = extract_text(_shop(), screen_reader_text=True)
    assert "Regular price" in kept and "per item" in kept
    assert "Regular" not in text and "per item" not in text and prune_ui.MASK not in text
    assert "no two are alike" in text and "$23.00" in text


def test_a_page_that_holds_the_mask_letter_is_not_masked() -> None:
    """U+A7FF, the mask, in the page's own text: nothing is masked (or removed)."""
    html = _shop(extra=" Stamped \ua7ff on the base.")
    text = extract_text(html)
    assert "Stamped \ua7ff on the base" in text and "Regular price" in text


def test_the_stage_keeps_them_when_asked(tmp_path: Path) -> None:
    """``extract_html: {screen_reader_text: true}`` keeps them; a non-boolean is a YAML error."""
    import json

    from tests.acquire.helpers_acquire import read_output, run_pipeline
    from tests.extract.helpers_extract import run_extract_html

    src = str(tmp_path / "in.jsonl")
    Path(src).write_text(json.dumps({"id": "d", "text": _shop()}) + "\n")
    out = {}
    for keep in (False, True):
        summary = run_pipeline(str(tmp_path / f"w{keep}"), [
            {"read_jsonl": {"paths": src}},
            {"extract_html": {"screen_reader_text": keep}, "id": "x"}])
        out[keep] = read_output(summary, "x")[0].text
    assert "Regular price" in out[True] and "Regular price" not in out[False]
    assert "$23.00" in out[False]
    r = run_extract_html(tmp_path, src, "screen_reader_text: sometimes")
    assert r.returncode != 0 and "screen_reader_text" in r.stderr
    assert "Traceback" not in r.stderr


def test_many_class_values_and_a_newline_in_one() -> None:
    """A page of 10,000 distinct class values with the name (an XPath of one equality test
    each failed it: "Recursion limit exceeded"), and a class value with a newline (the
    one-literal lookup would match other values): every label goes, every word stays."""
    cards = "".join(f'<div>word{i} <span class="visually-hidden x{i}">label {i}</span></div>'
                    for i in range(10_000))
    html = (f"<html><body><main>{cards}<p class='x\nsr-only'>hidden line</p>"
            "<p class='x'>A plain line of text that stays.</p></main></body></html>")
    text = extract_text(html)
    assert "label" not in text and "hidden line" not in text
    assert "word0" in text and "word9999" in text and "A plain line of text" in text
