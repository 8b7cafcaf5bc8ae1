"""The page's own article: the one outermost ``<article>`` or ``[itemprop=articleBody]``
element. resiliparse's whole-page text replaces a correct article on video, slideshow and
"most read" pages (docs/extract.md); where the page marks its article and the text already
lies inside it, a replacement with many more words than that element brings in what is not
the article."""

from __future__ import annotations

from curator.extract.words import TOKEN, count_words, covers

_ARTICLES = '//article | //*[@itemprop="articleBody"]'
_TEXT = './/text()[not(ancestor::script or ancestor::style or ancestor::template)]'


def article_text(html: str) -> str | None:
    """The text of the page's one outermost article element (its text nodes joined by
    spaces, scripts and styles left out), or ``None`` where the page marks none or several
    (forum posts, listing cards, teasers)."""
    from trafilatura.utils import load_html

    tree = load_html(html)
    if tree is None:
        return None
    found = tree.xpath(_ARTICLES)
    if not found:
        return None
    inside = set(found)
    outer = [el for el in found if not any(a in inside for a in el.iterancestors())]
    if len(outer) != 1:
        return None
    return " ".join(outer[0].xpath(_TEXT))


def beyond_article(html: str, text: str, n_replacement: int, ratio: float,
                   inside: float = 0.9) -> bool:
    """Whether a replacement of ``n_replacement`` words goes beyond the page's article:
    ``text`` (the fast text) has at least ``inside`` of its distinct words in the page's one
    article element, and the replacement has more than ``ratio`` times that element's
    words."""
    art = article_text(html)
    if art is None:
        return False
    if not TOKEN.search(text) or not covers(art, text, inside):
        return False
    return n_replacement > ratio * count_words(art)
