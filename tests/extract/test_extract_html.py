"""Extractor settings: output independent of what a worker extracted before, and the
resiliparse settings that leave comment threads out."""

from __future__ import annotations

import pytest

from curator.extract.extract_html import DEFAULT_EXTRACTOR, EXTRACTORS, extract_text
from tests.acquire.helpers_acquire import PROSE

SHARED = ("Every page of this site repeats this long paragraph about the harbour, the old "
          "market and the river crossing, so a cross-document cache would see it many times.")


def _page(i: int) -> str:
    body = "".join(f"<p>{p} (page {i})</p>" for p in PROSE)
    return (f"<html><head><title>Page {i}</title></head><body><main><article>"
            f"<h1>Page {i}</h1><p>{SHARED}</p>{body}</article></main></body></html>")


@pytest.mark.parametrize("extractor", list(EXTRACTORS))
def test_output_does_not_depend_on_pages_seen_before(extractor) -> None:
    """trafilatura's deduplicate cache is per process: with it on, a paragraph seen on
    earlier pages disappears from later ones, so the result would depend on which worker saw
    which page first. Forwards, backwards and fresh must agree."""
    pages = [_page(i) for i in range(6)]
    forwards = [extract_text(p, extractor) for p in pages]
    backwards = [extract_text(p, extractor) for p in reversed(pages)][::-1]
    again = [extract_text(p, extractor) for p in pages]
    assert forwards == backwards == again
    if extractor != "justext":  # justext's stop-word scoring may drop the short heading only
        assert all(SHARED in t for t in forwards)


def test_default_extractor_is_trafilatura() -> None:
    # chosen by bench/extraction_quality.py: best token F1 on the held-out gold pages
    assert DEFAULT_EXTRACTOR == "trafilatura"


def test_resiliparse_leaves_comment_threads_out() -> None:
    comments = "".join(f'<div class="comment"><p>Reader {i} wrote: great post, thanks for '
                       f'sharing all of this with us, number {i}.</p></div>' for i in range(8))
    html = (f"<html><body><main><article><h1>Story</h1>"
            f"{''.join(f'<p>{p}</p>' for p in PROSE)}</article>"
            f'<section id="comments" class="comments">{comments}</section></main></body></html>')
    text = extract_text(html, "resiliparse")
    assert PROSE[0] in text
    assert "great post" not in text


def test_fast_auto_reruns_trafilatura_with_its_fallbacks_on_a_truncated_thread() -> None:
    """fast=auto: trafilatura fast first; when that keeps under half of resiliparse's words
    (wcxb/0172, a forum thread: first post only) it runs again with fast=False, which finds
    the whole thread, without resiliparse's text (fallback off)."""

    from bench.gold_set import load_gold, prf

    page = next(p for p in load_gold("tuning") if p.id == "wcxb/0172")
    fast = extract_text(page.html, fast=True, fallback=False)
    auto = extract_text(page.html, fast="auto", balance="default", fallback=False)
    assert prf(fast, page.gold)[2] < 0.3
    assert prf(auto, page.gold)[2] > 0.9


@pytest.mark.parametrize("ratio", [-0.1, 1.5])
def test_fallback_ratio_outside_0_1_is_a_config_error(ratio) -> None:
    from curator.base.errors import ConfigError
    from curator.extract.extract_html import ExtractHtml

    with pytest.raises(ConfigError, match="fallback_ratio"):
        ExtractHtml(fallback_ratio=ratio)


def test_fast_auto_uses_the_body_when_resiliparse_keeps_nothing() -> None:
    """A German board (med1.de, harvest gold): resiliparse's main-content pass keeps no word
    of it, so "under half of resiliparse's words" never fires and fast=True's first post
    stayed the answer (F1 0.23). The default then judges trafilatura's text against the
    words of the <body> and reruns its cascade in default balance (favor_recall skips the
    cascade on any text over 2,500 characters): the whole thread."""

    from bench.gold_set import load_gold, prf
    from curator.extract.adapters.resiliparse_text import page_text

    page = next(p for p in load_gold("tuning") if p.id.startswith(
        "harvest/www.med1.de.forum.beruf-alltag-und-umwelt.corona"))
    assert page_text(page.html).strip() == ""
    default = extract_text(page.html)
    without = extract_text(page.html, body_ratio=0.0)
    assert prf(without, page.gold)[2] < 0.3
    assert prf(default, page.gold)[2] > 0.9
    # recall balance in the rerun would not help: trafilatura bypasses its cascade
    assert extract_text(page.html, fast=False, fallback=False) == extract_text(
        page.html, fast=True, fallback=False)


def test_body_yardstick_leaves_pages_resiliparse_reads_alone() -> None:
    """Where resiliparse finds the main text, body_ratio changes nothing (the rule only
    replaces a yardstick that failed)."""
    html = _page(1).replace("</article>", "</article><nav>" + " ".join(
        f"<a href='/{i}'>link {i}</a>" for i in range(400)) + "</nav>")
    assert extract_text(html) == extract_text(html, body_ratio=0.0)


@pytest.mark.parametrize("ratio", [-0.1, 1.5])
def test_body_ratio_outside_0_1_is_a_config_error(ratio) -> None:
    from curator.base.errors import ConfigError
    from curator.extract.extract_html import ExtractHtml

    with pytest.raises(ConfigError, match="body_ratio"):
        ExtractHtml(body_ratio=ratio)


def test_a_turned_down_page_leaves_no_resiliparse_tree_to_another_thread() -> None:
    """resiliparse's trees may only be freed by the thread that made them (pyo3 'unsendable':
    another thread gets a RuntimeError and the tree leaks). A page the precheck turns down
    must not leave its tree in the Skipped exception's traceback: Dask workers extract in a
    thread and the exception was freed elsewhere (4 tracebacks in a 3,539-page run)."""
    import sys
    import threading

    from curator.extract.extract_html import Skipped

    html = ("<html><body><article>" + "<p>Das ist ein deutscher Satz über die Stadt.</p>" * 20
            + "</article></body></html>")
    caught: list[Skipped] = []

    def work() -> None:
        try:
            extract_text(html, precheck=lambda text: "language_guess:de")
        except Skipped as e:
            caught.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert caught and caught[0].reason == "language_guess:de" and "Stadt" in caught[0].text
    errors: list[BaseException | None] = []
    old, sys.unraisablehook = sys.unraisablehook, lambda u: errors.append(u.exc_value)
    try:
        caught.clear()  # the exception, and what its traceback holds, freed by this thread
    except RuntimeError as e:
        errors.append(e)
    finally:
        sys.unraisablehook = old
    assert errors == []
