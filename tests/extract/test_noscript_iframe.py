"""An ``<iframe>`` left open inside a ``<noscript>`` (tag managers' snippets) swallowed the rest
of the page: libxml2 made it the iframe's text (trafilatura returned the raw markup as the
page's text), resiliparse's HTML5 parser did the same for ``<iframe .../>`` (it kept no words).
Browsers read a ``<noscript>``'s content as inert text, so the page's own text is the answer."""

from __future__ import annotations

import os
import re

import pytest

from curator.extract.extract_html import extract_text
from curator.extract.html_repair import close_noscript_iframes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.gold_set import load_gold, prf  # noqa: E402

ARTICLE = (
    "The river authority opened the new footbridge on Saturday morning after two years of "
    "work. Residents had waited a long time for a safe crossing near the school, and the "
    "mayor thanked the engineers who finished the project ahead of the winter floods.",
    "The bridge is forty metres long and carries pedestrians and bicycles. Lighting along "
    "the deck switches on at dusk, and a ramp at each end keeps it open to wheelchairs and "
    "prams throughout the year.",
)
# Google Tag Manager's body snippet with its end tag missing, as many CMS templates ship it
GTM = ('<noscript><iframe src="https://www.googletagmanager.com/ns.html?id=GTM-K4WCZG2" '
       'height="0" width="0" style="display:none;visibility:hidden"{end}</noscript>')
PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>New footbridge opens | Riverside News</title>
<script>(function(w,d,s,l,i){{w[l]=w[l]||[];}})(window,document,'script','dataLayer');</script>
</head><body class="article-page">
{gtm}
<header><nav><ul><li><a href="/">Home</a></li><li><a href="/local">Local</a></li>
<li><a href="/sport">Sport</a></li></ul></nav></header>
<main><article class="post">
<h1>New footbridge opens</h1>
<div class="entry-content"><p>{p1}</p><p>{p2}</p></div>
</article></main>
<footer><p>&copy; Riverside News</p></footer>
</body></html>"""


def _page(end: str) -> str:
    return PAGE.format(gtm=GTM.format(end=end), p1=ARTICLE[0], p2=ARTICLE[1])


@pytest.mark.parametrize("end", [">", "/>"], ids=["unclosed", "self-closed"])
@pytest.mark.parametrize("extractor", ["trafilatura", "resiliparse", "justext"])
def test_article_text_not_markup_after_an_open_noscript_iframe(extractor, end) -> None:
    text = extract_text(_page(end), extractor)  # type: ignore[arg-type]
    assert not re.search(r"</?(div|p|article|footer|body)\b", text), text[:300]
    for para in ARTICLE:
        assert para in text
    # the same page with the end tag written gives the same text
    assert text == extract_text(_page("></iframe>"), extractor)  # type: ignore[arg-type]


def test_the_old_behaviour_was_markup() -> None:
    """What the repair is for: trafilatura on the unrepaired page returns HTML as text."""
    import trafilatura

    raw = trafilatura.extract(_page(">"), deduplicate=False) or ""
    assert raw.startswith("</noscript>") and '<div class="entry-content"><p>' in raw
    fixed = trafilatura.extract(close_noscript_iframes(_page(">")), deduplicate=False) or ""
    assert ARTICLE[0] in fixed and "<p>" not in fixed


def test_only_noscript_blocks_with_open_iframes_change() -> None:
    closed = '<noscript><iframe src="a"></iframe></noscript><p>x</p>'
    text_only = "<noscript>Enable JavaScript</noscript><iframe src=b>"
    for html in (closed, text_only, "<p>no noscript</p>", ""):
        assert close_noscript_iframes(html) is html
    assert close_noscript_iframes('<NOSCRIPT><IFRAME src=a><iframe/></NOSCRIPT >') == (
        '<NOSCRIPT><IFRAME src=a><iframe/></iframe></iframe></NOSCRIPT >')


def test_gold_pages_only_the_affected_change_and_none_gets_worse() -> None:
    """On the 630 gold pages the repair touches exactly the 16 with an open iframe in a
    <noscript> (German forums built on tag-manager templates); every other page's input, so
    its output, is the same object. On those 16 no page scores lower against its gold with
    forum author boxes kept (``post_meta=True``), so the repair alone is what is compared:
    with the default drop, two held-out juraforum threads score lower repaired, because the
    broken parse had hidden their author boxes (whose class names the drop list lacks) along
    with the rest of the page (docs/extract.md)."""
    pages = load_gold("all")
    touched = [p for p in pages if close_noscript_iframes(p.html) is not p.html]
    assert len(touched) == 16
    assert {p.type for p in touched} == {"forum"}
    from curator.extract import extract_html

    gained = 0
    for p in touched:
        new = prf(extract_text(p.html, post_meta=True), p.gold)[2]
        old_fn = extract_html.close_noscript_iframes
        extract_html.close_noscript_iframes = lambda html: html  # type: ignore[assignment]
        try:
            old = prf(extract_text(p.html, post_meta=True), p.gold)[2]
        finally:
            extract_html.close_noscript_iframes = old_fn
        assert new >= old - 1e-9, (p.id, old, new)
        gained += new > old + 0.1
    assert gained >= 1


@pytest.mark.parametrize("junk", ['<noscript><iframe src="x">' * 20_000, "<noscript" * 50_000,
                                  "<noscript>" * 20_000 + "</noscript>"])
def test_the_repair_is_linear_in_unclosed_noscripts(junk: str) -> None:
    """A lazy ``<noscript...>(.*?)</noscript>`` regex rescanned the rest of the page from each
    unclosed ``<noscript>``: 5,000 took 6 s, 50,000 ten minutes, in one C call before the
    page's time limit started. The repair now searches each end tag once."""
    from curator.extract.timeout import ExtractTimeout, time_limit

    gtm = GTM.format(end=">")
    page = f"<html><body>{gtm}<p>{ARTICLE[0]}</p>{junk}</body></html>"
    try:
        with time_limit(5.0):
            out = close_noscript_iframes(page)
    except ExtractTimeout:
        pytest.fail("close_noscript_iframes took over 5 s")
    assert out.startswith(f"<html><body>{gtm[:-len('</noscript>')]}</iframe></noscript><p>")


def test_the_repair_closes_each_noscript_by_the_first_end_tag_after_it() -> None:
    """What the regex did, kept: nested ``<noscript>``s end at the first ``</noscript>``, an end
    tag with other text before its ``>`` is no end tag, and ``<noscripts>`` is no noscript."""
    assert close_noscript_iframes("<noscript>a<noscript><iframe>b</noscript>c</noscript>") == \
        "<noscript>a<noscript><iframe>b</iframe></noscript>c</noscript>"
    assert close_noscript_iframes("<NOSCRIPT\n x=1><IFRAME/></noscript x><iframe></NOSCRIPT >") \
        == "<NOSCRIPT\n x=1><IFRAME/></noscript x><iframe></iframe></iframe></NOSCRIPT >"
    page = "<noscripts><iframe></noscript><p>x</p>"
    assert close_noscript_iframes(page) is page
