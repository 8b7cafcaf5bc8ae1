"""HTML -> main text: charset detection and three extractors behind one function.

* ``trafilatura`` (default): highest token F1 on the held-out gold pages of bench/gold
  (fast + favor_recall, again without fast and then resiliparse when the text is short,
  shaped text; docs/extract.md).
* ``resiliparse``: a C++ DOM walk with main-content heuristics, an order of magnitude faster.
* ``justext``: paragraph classification with stop-word lists (what C4/RefinedWeb-style
  pipelines used); language-dependent.

``extract_html`` is also a stage for documents whose text is HTML (custom sources). The Common
Crawl and WARC sources call :func:`extract_text` directly so raw HTML is never written to a
shard.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, Literal

from curator.base.document import Document
from curator.core.context import ShardContext
from curator.core.params import NonNegFloat, NonNegInt, PositiveFloat, Ratio, StageParams
from curator.core.stage import ShardStage
from curator.extract.adapters import justext_text, resiliparse_text, trafilatura_text
from curator.extract.adapters.trafilatura_text import Balance
from curator.extract.article_markup import beyond_article, comment_words, declares_article
from curator.extract.html_repair import close_noscript_iframes, close_open_title
from curator.extract.prune_ui import MASK, unmask
from curator.extract.shape import TAG
from curator.extract.timeout import ExtractTimeout, time_limit
from curator.extract.words import count_words, covers

Extractor = Literal["trafilatura", "resiliparse", "justext"]


#: The extractor used when a stage does not name one (chosen by bench/extraction_quality.py).
DEFAULT_EXTRACTOR: Extractor = "trafilatura"


class Skipped(Exception):
    """``extract_text``'s ``precheck`` turned the page down before the full extraction:
    ``reason`` is what it said, ``text`` the quick text it judged (resiliparse's)."""

    def __init__(self, reason: str, text: str) -> None:
        super().__init__(reason)
        self.reason, self.text = reason, text


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "trafilatura": trafilatura_text.page_text,
    "resiliparse": resiliparse_text.page_text,
    "justext": justext_text.page_text,
}


_PREPARED: set[str] = set()


def prepare(extractor: str) -> None:
    """Import an extractor's modules (and stop lists) once per process, *outside* the time
    limit: importing trafilatura takes about a second, which would time out the first page
    of every worker."""
    if extractor in _PREPARED:
        return
    if extractor == "trafilatura":
        trafilatura_text.prepare()
    elif extractor == "resiliparse":
        import resiliparse.extract.html2text
        import resiliparse.parse.html  # noqa: F401
    elif extractor == "justext":
        import justext

        justext_text.STOPLISTS.setdefault("English", justext.get_stoplist("English"))
    _PREPARED.add(extractor)


def _yardstick(html: str) -> tuple[str, Any]:
    """resiliparse's main text (stripped) and tree: what the trafilatura path measures its
    own text against."""
    prepare("resiliparse")
    alt, rtree = resiliparse_text.text_and_tree(html)
    return alt.strip(), rtree


#: Rerun trafilatura with its fallbacks (``fast="auto"``), then take resiliparse's main-content
#: text, when trafilatura keeps fewer words than this share of resiliparse's (0: resiliparse
#: only when trafilatura finds nothing). ``fast=True`` often stops at a page's first post or
#: section (forums, listings: precision 1.0, recall 0.1); this lifts tuning-split F1 from 0.821
#: to 0.859 (forums 0.65 -> 0.77) at the same CPU per page (docs/extract.md).
FALLBACK_RATIO = 0.5


#: resiliparse's main-content pass is no yardstick when it keeps under this share of
#: trafilatura's words: on boards whose markup its HTML5 parser reads differently (an unclosed
#: ``<iframe>`` in a ``<noscript>``: 14 of the 22 German tuning pages, all forum threads) it
#: keeps nothing. Then ``fast="auto"`` compares trafilatura's text with the words of the
#: page's ``<body>`` instead: under :data:`BODY_RATIO` of them, trafilatura runs again with its
#: fallbacks, in ``default`` balance, because ``favor_recall`` skips the readability/jusText
#: comparison for any text over 2,500 characters (trafilatura's ``compare_extraction``), which
#: is the case of a first post. Tuning split: German 0.703 -> 0.772, forums 0.769 -> 0.789,
#: all 0.859 -> 0.863, +2.4 ms/page (docs/extract.md).
UNRELIABLE_RATIO = 0.3


BODY_RATIO = 0.2


#: ``thin_ratio``: with ``fast="auto"``, when trafilatura's fast text *and* resiliparse's both
#: have fewer words than this share of the page's ``<body>``, both stopped at a fragment (a
#: service page's hero section, a thread's first post: precision 1.0, recall 0.05) and
#: neither is a yardstick for the other, so trafilatura runs again with its fallbacks in
#: ``default`` balance (docs/extract.md#thin-pages).
THIN_RATIO = 0.1


#: Pages larger than this (characters of HTML) skip the ``thin_ratio`` rerun: the cascade
#: costs about three times the fast pass and grows with the page (a 823 KB listing: 348 ms),
#: so the few largest pages would be most of the rule's CPU.
THIN_MAX_CHARS = 500_000


#: The ``thin_ratio`` rerun's text replaces the fast text only when it holds at least this
#: share of the fast text's distinct words (lower-cased, a word per character in scripts
#: written without spaces): the cascade should extend a fragment, not swap it for another
#: block (a shop's collection page: its product grid for the shipping banners, 0% of its
#: words, F1 0.68 -> 0.004). A listing whose rerun keeps 36% gains (0.13 -> 0.25), so "most
#: words" (0.5) would be too strict; chosen on the tuning split and 284 WCXB pages outside
#: the gold set (docs/extract.md#thin-pages).
THIN_COVER = 0.2


#: ``listing_ratio``: when the text has fewer words than this share of the page's ``<body>``,
#: look for a listing (a run of similar linked blocks, curator/extract/listing.py) that the
#: text misses and append its cards. Off by default: on the tuning split 0.1 lifted listings
#: 0.719 -> 0.795 and all pages 0.863 -> 0.872 (5 pages changed, all up), but on the held-out
#: split it changed 5 pages, 4 of them down (all 0.865 -> 0.858, listings 0.657 -> 0.610),
#: docs/extract.md#listing-pages.
LISTING_RATIO = 0.0


#: ``article_ratio``: resiliparse's text does not replace the fast text when the fast text lies
#: in the page's one article element (``<article>``, ``[itemprop=articleBody]``) and the
#: replacement has more than this many times that element's words: it reaches beyond the
#: article, into the whole page of a video, slideshow or "most read" page
#: (curator/extract/article_markup.py). Chosen leave-one-family-out on the 849 tuning pages
#: (news +0.005, mixed +0.002, no family changed otherwise; 1.25, 1.5 and 2.0 gain less),
#: then scored once on the 1,602 held-out pages: news 0.913 -> 0.916 (trafilatura 0.916),
#: pages losing > 0.3 F1 to trafilatura 15 -> 12, no other family changed
#: (docs/extract.md#article-markup). ``0``: off.
ARTICLE_RATIO = 1.1


#: ``comments_below``: where the text without comment sections has fewer words than this, the
#: page does not declare itself an article (JSON-LD or ``og:type``, curator/extract/
#: article_markup.py) and its comment sections hold more words than the text, extract again
#: with them and keep that text when it has over :data:`COMMENTS_GAIN` times the words: a
#: forum thread whose replies are marked up as comments (``<div class="comment">``) comes out
#: as its opening post alone. Off by default: ``200`` raises forum threads (tuning 0.702 ->
#: 0.737, WCXB forums never chosen on 0.717 -> 0.731, held-out 0.742 -> 0.800) but takes a
#: short blog post's long comment thread for its text where the blog does not declare an
#: article (dragnet's pages: 48 of 1,372 changed, most 0.8-0.95 F1 down), so it is the
#: setting for a crawl of forums (docs/extract.md#thread-replies).
COMMENTS_BELOW = 0


#: How many times the words of the text without comments the text with them must have.
COMMENTS_GAIN = 2.0


Fast = bool | Literal["auto"]


_SCRIPT_OR_STYLE = re.compile(r"<(script|style)\b", re.IGNORECASE)


_END_TAG = {t: re.compile(rf"</{t}\s*>", re.IGNORECASE) for t in ("script", "style")}


def _visible_words(html: str) -> int:
    """Words of the page's source from ``<body>`` on, without tags and without the content of
    ``<script>``/``<style>`` (resiliparse's ``<body>`` text counts script code: a news page's
    300-word article sat in 38,000 "words"). Linear in the page: each element's end tag is
    searched once from its start, and a tag pattern that stops at the next ``<``."""
    m = re.search(r"<body\b", html, re.IGNORECASE)
    pos, n = (m.start() if m else 0), 0
    while True:
        m = _SCRIPT_OR_STYLE.search(html, pos)
        end = m.start() if m else len(html)
        n += count_words(TAG.sub(" ", html[pos:end]))
        if m is None:
            return n
        close = _END_TAG[m.group(1).lower()].search(html, m.end())
        if close is None:
            return n
        pos = close.end()


def _first_copies(text: str, min_words: int = 5) -> str:
    """``text`` without the second and later copies of a line of ``min_words`` words or more:
    where a thread's opening post is short, trafilatura's text with comments can hold the
    replies twice (the page's dump, then the comment section)."""
    seen: set[str] = set()
    out = []
    for line in text.split("\n"):
        if count_words(line) >= min_words:
            if line in seen:
                continue
            seen.add(line)
        out.append(line)
    return "\n".join(out)


def _body_rerun(html: str, n_text: int, n_alt: int, rtree: Any, body_ratio: float,
                thin_ratio: float) -> Literal["", "body", "thin"]:
    """Whether ``fast="auto"`` reruns trafilatura with its fallbacks in ``default`` balance,
    judged by the ``<body>``'s words: ``"body"`` when resiliparse kept almost nothing and
    trafilatura's text is under ``body_ratio`` of the body, ``"thin"`` when both texts are
    under ``thin_ratio`` of the body's words outside scripts and styles (resiliparse's count,
    scripts included, is the cheap first test: it is never lower), else ``""``."""
    unreliable = n_alt < UNRELIABLE_RATIO * n_text
    if not unreliable and thin_ratio <= 0:
        return ""
    body = resiliparse_text.body_words(rtree)
    if unreliable and n_text < body_ratio * body:
        return "body"
    most = max(n_text, n_alt)
    if (most < thin_ratio * body and len(html) <= THIN_MAX_CHARS
            and most < thin_ratio * _visible_words(html)):
        return "thin"
    return ""


def extract_text(html: str, extractor: Extractor = DEFAULT_EXTRACTOR,
                 timeout_s: float | None = None, *, fast: Fast = "auto",
                 balance: Balance = "recall", include_comments: bool = False,
                 include_tables: bool = True, fallback: bool = True,
                 fallback_ratio: float = FALLBACK_RATIO, shape: bool = True,
                 body_ratio: float = BODY_RATIO, listing_ratio: float = LISTING_RATIO,
                 post_meta: bool = False, thin_ratio: float = THIN_RATIO,
                 screen_reader_text: bool = False, collapsed_panels: bool = True,
                 article_ratio: float = ARTICLE_RATIO, comments_below: int = COMMENTS_BELOW,
                 precheck: Callable[[str], str | None] | None = None) -> str:
    """Main text of an HTML page ('' when there is none). Raises :class:`ExtractTimeout`
    after ``timeout_s`` seconds.

    The keyword options apply to trafilatura (docs/extract.md gives their measured F1 and
    speed): ``fast`` skips its readability/jusText fallbacks (``"auto"``: fast first, and
    again with them when the text is under ``fallback_ratio`` of resiliparse's, or 0.5, or,
    where resiliparse keeps under :data:`UNRELIABLE_RATIO` of trafilatura's words, under
    ``body_ratio`` of the ``<body>``'s words, 0: never);
    ``balance`` is its precision/recall trade-off; ``fallback`` takes resiliparse's text
    when trafilatura's is empty or under ``fallback_ratio`` of it in words; ``shape`` joins
    hard-wrapped lines inside a paragraph, writes table cells tab-separated and drops
    documentation generators' UI strings; ``listing_ratio`` appends the cards of a listing
    page the text misses when the text is under that share of the ``<body>``'s words (0:
    off); ``post_meta`` keeps forum posts' author boxes and signatures; ``thin_ratio``
    (``fast="auto"``) reruns with the fallbacks when trafilatura's and resiliparse's texts are
    both under that share of the ``<body>``'s words (0: never); ``screen_reader_text`` keeps
    the text of elements only screen readers get (:data:`SCREEN_READER_CLASSES`);
    ``collapsed_panels`` keeps the text of collapsed accordion and tab panels (elements named
    in an ``aria-controls``, hidden until clicked); ``article_ratio`` keeps the fast text
    instead of resiliparse's where it lies in the page's one article element and the
    replacement has over that many times the element's words (0: off); ``comments_below``
    extracts again with comment sections where the text without them has fewer words than
    that and the page does not declare itself an article, and keeps that text when it has
    over :data:`COMMENTS_GAIN` times the words (0: off).

    ``precheck`` sees a quick text of the page first (resiliparse's main text, which the
    trafilatura path computes anyway; another extractor's own text) and may turn the page
    down by returning a reason: :class:`Skipped` is raised before trafilatura runs (the
    language guess of ``read_warc``'s ``languages``)."""
    fn = EXTRACTORS[extractor]
    prepare(extractor)
    html = close_open_title(close_noscript_iframes(html))
    with time_limit(timeout_s):
        if extractor != "trafilatura":
            text = fn(html).strip()
            if precheck is not None and (reason := precheck(text)):
                raise Skipped(reason, text)
            return text
        alt, rtree = "", None
        if precheck is not None:
            alt, rtree = _yardstick(html)
            if reason := precheck(alt):
                # resiliparse's tree may only be freed by the thread that made it: not left to
                # the exception's traceback, which another thread may free (Dask workers)
                del rtree
                raise Skipped(reason, alt)
        # what the fast pass leaves for a fast=False rerun with the same options
        # (curator/extract/fastpath/core.py)
        from curator.extract.fastpath import Stash

        page_text = trafilatura_text.page_text

        def run(comments: bool) -> str:
            nonlocal alt, rtree
            stash = Stash() if fast == "auto" else None
            text = page_text(html, fast is not False, balance, comments, include_tables,
                             shape, post_meta, stash, screen_reader_text,
                             collapsed_panels).strip()
            if fast == "auto" or (fallback and (not text or fallback_ratio > 0)):
                if rtree is None:
                    alt, rtree = _yardstick(html)
                ratio = fallback_ratio or FALLBACK_RATIO
                n_text, n_alt = count_words(text), count_words(alt)
                if fast == "auto" and (not text or n_text < ratio * n_alt):
                    text = page_text(html, False, balance, comments, include_tables,
                                     shape, post_meta, stash,
                                     screen_reader_text, collapsed_panels).strip() or text
                elif fast == "auto" and (why := _body_rerun(html, n_text, n_alt, rtree,
                                                           body_ratio, thin_ratio)):
                    second: Balance = "default" if balance == "recall" else balance
                    # starts from the fast pass's pruned raw tree, not a new parse
                    # (fastpath/core.py)
                    rerun = page_text(html, False, second, comments, include_tables,
                                      shape, post_meta, stash, screen_reader_text,
                                      collapsed_panels).strip()
                    # a thin page's rerun must extend the fragment, not swap it for another
                    if rerun and (why == "body" or covers(rerun, text, THIN_COVER)):
                        text = rerun
                short = not text or count_words(text) < fallback_ratio * n_alt
                # a text inside the page's one article stays when resiliparse's reaches beyond
                if fallback and short and not (text and article_ratio > 0 and beyond_article(
                        html, text, n_alt, article_ratio)):
                    text = alt
            return text

        text = run(include_comments)
        # a thread whose replies are marked up as comments: without them, a sliver
        if comments_below > 0 and not include_comments:
            n_text = count_words(text)
            # comment sections too short to double the text: no second extraction
            if (n_text < comments_below and not declares_article(html)
                    and comment_words(html) > (COMMENTS_GAIN - 1) * n_text):
                replies = _first_copies(run(True))
                if count_words(replies) > COMMENTS_GAIN * n_text:
                    text = replies
        # after every comparison of word counts: the masked words counted in them as before
        if not screen_reader_text and MASK not in html:
            text = unmask(text)
        # resiliparse's <body> words as a cheap first test; listing_cards decides on lxml's
        if listing_ratio > 0 and (rtree is None or count_words(text)
                                  < listing_ratio * resiliparse_text.body_words(rtree)):
            from curator.extract.listing import listing_cards

            cards = listing_cards(html, text, listing_ratio)
            if cards:
                text = f"{text}\n{cards}" if text else cards
    return text


class ExtractOptions(StageParams):
    """trafilatura's options as curator runs it (docs/extract.md has the F1 and CPU of each),
    the same in ``extract_html``, ``read_warc``, ``common_crawl`` and ``cc_index``. They apply
    to ``extractor: trafilatura`` only: under another extractor they key nothing."""

    fast: Fast = "auto"
    """Trafilatura's fast mode; `auto`: fast, rerun in full when the text looks short
    (see [extract.md](extract.md#options))."""
    balance: Balance = "recall"
    """Trafilatura's precision/recall balance."""
    include_comments: bool = False
    """Keep comment sections."""
    include_tables: bool = True
    """Keep the text of tables."""
    fallback: bool = True
    """Use resiliparse's text when trafilatura finds little."""
    fallback_ratio: Ratio = FALLBACK_RATIO
    """"Little": fewer words than this share of resiliparse's (0: empty only, for a crawl of
    news articles: [extract.md](extract.md#news-crawls))."""
    shape: bool = True
    """Tidy the text (paragraphs on one line, code keeps its lines), see extract.md."""
    body_ratio: Ratio = BODY_RATIO
    """With `fast: auto`, when resiliparse keeps almost nothing: rerun trafilatura in full
    when its text has fewer words than this share of the page's `<body>` (0: off)."""
    listing_ratio: Ratio = LISTING_RATIO
    """When the text has fewer words than this share of the page's `<body>`, append the
    cards of a listing it misses (0: off; measured in
    [extract.md](extract.md#listing-pages))."""
    post_meta: bool = False
    """Keep forum posts' author boxes and signatures (see
    [extract.md](extract.md#forum-posts-author-boxes))."""
    thin_ratio: Ratio = THIN_RATIO
    """With `fast: auto`: rerun trafilatura in full when its text and resiliparse's both
    have fewer words than this share of the page's `<body>` (0: off; see
    [extract.md](extract.md#thin-pages))."""
    screen_reader_text: bool = False
    """Keep the text of elements only screen readers get (`sr-only`, `visually-hidden`...;
    left out by default, see [extract.md](extract.md#screen-reader-text))."""
    collapsed_panels: bool = True
    """Keep the text of collapsed accordion and tab panels (hidden until a click; see
    [extract.md](extract.md#collapsed-panels))."""
    article_ratio: NonNegFloat = ARTICLE_RATIO
    """Keep trafilatura's text instead of resiliparse's where it lies in the page's one
    `<article>` and resiliparse's has over this many times its words (0: off; see
    [extract.md](extract.md#article-markup))."""
    comments_below: NonNegInt = COMMENTS_BELOW
    """Where the text has fewer words than this without comment sections and the page does
    not declare itself an article, keep them if they more than double it: a forum thread
    whose replies are marked up as comments (0: off; 200 for a crawl of forums, see
    [extract.md](extract.md#thread-replies))."""



ExtractOptions.applies_when = {
    name: {"extractor": ("trafilatura",)} for name in ExtractOptions.model_fields
}


def extract_options(stage: object) -> dict[str, Any]:
    """The :class:`ExtractOptions` a stage was built with, as :func:`extract_text` keywords."""
    return {name: getattr(stage, name) for name in ExtractOptions.model_fields}


class ExtractHtml(ShardStage):
    """Replace HTML in ``text`` by its extracted main text (for custom sources)."""

    name = "extract_html"

    class Params(ExtractOptions):
        extractor: Extractor = "trafilatura"
        """Or `resiliparse`, `justext` (settings and measured F1 in extract.md)."""
        timeout_s: PositiveFloat = 10.0
        """Per document; timeouts are rejected `extract_timeout` and counted."""
        max_page_mb: PositiveFloat = 10.0
        """Larger pages are rejected `page_too_large`."""
        keep_html_field: str | None = None
        """Keep the HTML in this metadata field (default: dropped)."""

    def setup(self) -> None:
        self.options = extract_options(self)
        self.max_bytes = int(self.max_page_mb * 1024 * 1024)

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        for doc in docs:
            html = doc.text
            if len(html) > self.max_bytes:
                ctx.count("page_too_large")
                ctx.reject(Document(doc.id, "", doc.meta), "page_too_large",
                           size=len(html))
                continue
            try:
                text = extract_text(html, self.extractor, self.timeout_s,
                                    **self.options)  # type: ignore[arg-type]
            except ExtractTimeout:
                ctx.count("extract_timeouts")
                ctx.reject(Document(doc.id, "", doc.meta), "extract_timeout")
                continue
            if not text:
                ctx.reject(doc, "extract_empty")
                continue
            if self.keep_html_field:
                doc.meta[self.keep_html_field] = html
            doc.meta["extractor"] = self.extractor
            doc.text = text
            yield doc
