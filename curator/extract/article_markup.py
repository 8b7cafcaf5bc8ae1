"""The page's own article: the one outermost ``<article>`` or ``[itemprop=articleBody]``
element. resiliparse's whole-page text replaces a correct article on video, slideshow and
"most read" pages (docs/extract.md); where the page marks its article and the text already
lies inside it, a replacement with many more words than that element brings in what is not
the article. Whether the page declares itself an article at all (its JSON-LD or ``og:type``)
decides whether a comment section may be its text (curator/extract/extract_html.py)."""

from __future__ import annotations

import json
import re

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


# schema.org types by which a page declares itself a news or blog article: Article,
# NewsArticle and its subtypes, the blog postings, SatiricalArticle. Not taken: TechArticle,
# ScholarlyArticle, Report, SocialMediaPosting, DiscussionForumPosting and the like.
NEWS_TYPES = frozenset(
    {
        "Article",
        "NewsArticle",
        "AnalysisNewsArticle",
        "AskPublicNewsArticle",
        "BackgroundNewsArticle",
        "OpinionNewsArticle",
        "ReportageNewsArticle",
        "ReviewNewsArticle",
        "BlogPosting",
        "LiveBlogPosting",
        "SatiricalArticle",
    }
)

_LD_JSON = re.compile(
    r"<script\b[^>]*\btype\s*=\s*[\"']?application/ld\+json[\"']?[^>]*>(.*?)</script\s*>",
    re.I | re.S,
)
_META = re.compile(r"<meta\b[^>]*>", re.I)
_ATTR = re.compile(r"([\w:-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'>]+))")
_LD_WRAP = re.compile(r"^\s*(?:<!--|//\s*<!\[CDATA\[|<!\[CDATA\[)|(?:-->|//\s*\]\]>|\]\]>)\s*$")


def _types(obj: dict) -> set[str]:
    t = obj.get("@type")
    names = t if isinstance(t, list) else [t]
    return {re.sub(r"^https?://schema\.org/", "", n) for n in names if isinstance(n, str)}


def _ld_objects(data: object) -> list[dict]:
    """The objects of a JSON-LD block that speak for the page: top level, ``@graph``
    members, and the ``mainEntity`` of either."""
    top = data if isinstance(data, list) else [data]
    objs = [o for o in top if isinstance(o, dict)]
    for o in list(objs):
        graph = o.get("@graph")
        objs += [g for g in (graph if isinstance(graph, list) else [graph]) if isinstance(g, dict)]
    for o in list(objs):
        main = o.get("mainEntity")
        objs += [m for m in (main if isinstance(main, list) else [main]) if isinstance(m, dict)]
    return objs


def declares_article(html: str) -> bool:
    """Whether the page says it is a news or blog article: a JSON-LD object (top level,
    ``@graph`` member, or the ``mainEntity`` of either) whose ``@type`` (a name, a list, or a
    ``schema.org`` URL) is one of :data:`NEWS_TYPES`, or ``<meta property="og:type"
    content="article">`` (``property`` or ``name``; case and spaces ignored). Forum threads,
    products and listings declare other types. Also the family rule of
    bench/gold/build_heldout4.py."""
    for m in _LD_JSON.finditer(html):
        try:
            data = json.loads(_LD_WRAP.sub("", m.group(1)))
        except (ValueError, RecursionError):
            continue  # a block that is not JSON (or nests past the parser) declares nothing
        if any(_types(o) & NEWS_TYPES for o in _ld_objects(data)):
            return True
    for tag in _META.finditer(html):
        attrs = {k.lower(): "".join(vals) for k, *vals in _ATTR.findall(tag.group(0))}
        key = attrs.get("property", attrs.get("name", "")).strip().lower()
        if key == "og:type" and attrs.get("content", "").strip().lower() == "article":
            return True
    return False


#: Every element trafilatura may take for a comment section (its ``COMMENTS_XPATH`` and
#: ``REMOVE_COMMENTS_XPATH``): an id or class holding "comment" in any case, and the ids of
#: Disqus, ``comol`` and ``social`` boxes.
_COMMENT_SECTIONS = (
    "//*[contains(translate(@class, 'COMENT', 'coment'), 'comment')"
    " or contains(translate(@id, 'COMENT', 'coment'), 'comment')"
    " or starts-with(@id, 'comol') or starts-with(@id, 'disqus_thread')"
    " or starts-with(@id, 'social')]"
)


def comment_words(html: str) -> int:
    """Words in the page's comment sections (the outermost of nested ones): a text with its
    comments can gain at most these, so where they are few, extracting again with comments
    cannot double a text (``comments_below`` in curator/extract/extract_html.py). One lxml
    parse, one XPath and one walk up per element however deep the page nests."""
    from trafilatura.utils import load_html

    tree = load_html(html)
    if tree is None:
        return 0
    found = tree.xpath(_COMMENT_SECTIONS)
    # whether an element is, or is inside, a comment section; each answer is kept
    inside: dict[object, bool] = dict.fromkeys(found, True)
    n = 0
    for el in found:
        path, up = [], el.getparent()
        while up is not None and up not in inside:
            path.append(up)
            up = up.getparent()
        covered = up is not None and inside[up]
        inside.update(dict.fromkeys(path, covered))
        if not covered:  # no comment section around it: an outermost one
            n += count_words(el.text_content())
    return n
