"""The article-markup guard on resiliparse's replacement (curator/extract/article_markup.py):
the fast text stays where it lies in the page's one article element and the replacement
reaches far beyond that element."""

from __future__ import annotations

from bench.family_quality import load_pages
from curator.extract.article_markup import article_text, beyond_article
from curator.extract.extract_html import ARTICLE_RATIO, extract_text

PROSE = " ".join(f"word{i}" for i in range(100))


def _page(body: str) -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


def test_the_one_outermost_article_element_is_the_article() -> None:
    nested = _page(f"<nav>menu</nav><article><p>{PROSE}</p><article><p>inner</p></article>"
                   "<script>var hidden = 1;</script></article>")
    text = article_text(nested)
    assert text is not None and "word99" in text and "inner" in text
    assert "hidden" not in text and "menu" not in text
    body = _page(f'<div itemprop="articleBody"><p>{PROSE}</p></div>')
    assert article_text(body) is not None and "word0" in article_text(body)
    # forum posts, listing cards: several articles, none of them is the page's
    assert article_text(_page("<article>post one</article><article>post two</article>")) is None
    assert article_text(_page(f"<div><p>{PROSE}</p></div>")) is None


def test_a_replacement_beyond_the_article_is_refused_only_when_the_text_is_in_it() -> None:
    html = _page(f"<nav>{' '.join(f'nav{i}' for i in range(300))}</nav>"
                 f"<article><p>{PROSE}</p></article>")
    fast = " ".join(f"word{i}" for i in range(60))
    assert beyond_article(html, fast, 400, 1.1)  # 400 words > 1.1 x the article's 100
    assert not beyond_article(html, fast, 105, 1.1)  # the article and its title: kept
    # a fast text that is not the article's (a sidebar, a teaser): the guard says nothing
    assert not beyond_article(html, "nav1 nav2 nav3 nav4", 400, 1.1)
    assert not beyond_article(html, "... !!!", 400, 1.1)  # a text without words: no test
    two = _page(f"<article><p>{PROSE}</p></article><article><p>more</p></article>")
    assert not beyond_article(two, fast, 400, 1.1)


def test_real_pages_keep_their_article_instead_of_the_whole_page() -> None:
    """Tuning pages where resiliparse's text replaced a correct article: with the guard the
    text is the fast pass's (as with the fallback off), without it resiliparse's."""
    want = {"fundus/kr/HankookIlbo_2025_05_15", "fundus/jp/Nikkei_2025_01_27"}
    pages = [p for p in load_pages("unseen", "tuning") if p.id in want]
    assert len(pages) == 2 and ARTICLE_RATIO > 0
    for p in pages:
        guarded = extract_text(p.html)
        assert guarded == extract_text(p.html, fallback_ratio=0.0)
        assert guarded != extract_text(p.html, article_ratio=0.0)
        assert len(extract_text(p.html, article_ratio=0.0)) > 1.5 * len(guarded)


def test_a_page_without_article_markup_is_as_before() -> None:
    """A forum thread where the fallback recovers the replies marks no single article: the
    guard leaves it alone."""
    pages = [p for p in load_pages("gold", "tuning")
             if p.id == "harvest/forum.videolan.org.viewtopic.php.92075"]
    assert len(pages) == 1
    html = pages[0].html
    assert extract_text(html) == extract_text(html, article_ratio=0.0)
    assert extract_text(html) != extract_text(html, fallback_ratio=0.0)
