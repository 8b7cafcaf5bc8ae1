"""Thread replies marked up as comments (``comments_below``, curator/extract/extract_html.py;
off by default, 200 for a crawl of forums): kept where the text without them is a sliver and
the page does not declare itself an article; an article's reader comments stay out."""

from __future__ import annotations

from bench.family_quality import load_pages
from curator.extract.article_markup import declares_article
from curator.extract.extract_html import COMMENTS_BELOW, extract_text
from curator.extract.words import count_words

#: the forum-crawl setting (docs/extract.md#thread-replies)
FORUMS = 200
OPENING = " ".join(f"opening{i}" for i in range(20))
REPLIES = "".join(
    f'<div class="comment"><p>{" ".join(f"reply{j}x{i}" for i in range(40))}</p></div>'
    for j in range(5))


def _thread(head: str = "", opening: str = OPENING) -> str:
    return (f"<html><head><title>Thread</title>{head}</head><body><nav><a href='/'>Home</a>"
            f"</nav><main><h1>Thread</h1><div class='post'><p>{opening}</p></div>"
            f"<div class='comments'>{REPLIES}</div></main><footer>c</footer></body></html>")


def test_a_thread_of_replies_marked_up_as_comments_keeps_them() -> None:
    html = _thread()
    text = extract_text(html, comments_below=FORUMS)
    # each reply once, though trafilatura with comments gives them twice here
    assert "opening19" in text and "reply4x39" in text and count_words(text) == 220
    assert count_words(extract_text(html, include_comments=True)) == 420
    # the rule off (the default): the opening post alone, as trafilatura without comments
    assert COMMENTS_BELOW == 0 and count_words(extract_text(html)) == 20


def test_an_article_and_a_long_text_keep_their_comments_out() -> None:
    for head in ('<meta property="og:type" content="article">',
                 '<script type="application/ld+json">{"@graph": [{"@type": "WebPage"},'
                 ' {"@type": ["http://schema.org/NewsArticle"]}]}</script>'):
        html = _thread(head)
        assert declares_article(html)
        text = extract_text(html, comments_below=FORUMS)
        assert "opening19" in text and "reply0x0" not in text
    # a text of FORUMS words or more is not a sliver: its comments are not read
    long = " ".join(f"opening{i}" for i in range(FORUMS))
    text = extract_text(_thread(opening=long), comments_below=FORUMS)
    assert "opening199" in text and "reply0x0" not in text


def test_comments_that_do_not_double_the_text_stay_out() -> None:
    """A short page with one short comment: the comment is not the page's text."""
    html = ("<html><body><main><p>" + OPENING + "</p><div class='comments'>"
            "<div class='comment'><p>nice post thanks</p></div></div></main></body></html>")
    text = extract_text(html, comments_below=FORUMS)
    assert "opening19" in text and "nice post" not in text


def test_real_threads_get_their_replies() -> None:
    """Tuning forum threads (magic-html's) whose replies are comment markup: with the forum
    setting their text is trafilatura's with comments, several times the opening post."""
    want = {"magic-html/forum/87344ed138bfc3b5", "magic-html/forum/f297ca438db75f6d"}
    pages = [p for p in load_pages("unseen", "tuning") if p.id in want]
    assert len(pages) == 2
    for p in pages:
        text, before = extract_text(p.html, comments_below=FORUMS), extract_text(p.html)
        assert not declares_article(p.html)
        assert text == extract_text(p.html, include_comments=True)
        assert count_words(before) < FORUMS < count_words(text)
        assert count_words(text) > 3 * count_words(before)


def test_hostile_markup_is_read_without_blowing_up() -> None:
    """JSON-LD nested past the parser's recursion declares nothing; comment sections deep
    in a page and in their thousands are counted (the pytest timeout catches a walk that is
    quadratic in them, as iterating resiliparse's selector results was: 2,000 took 16 s)."""
    from curator.extract.article_markup import comment_words

    deep = "[" * 200_000 + "]" * 200_000
    assert not declares_article(f'<script type="application/ld+json">{deep}</script>')
    n = 20_000
    html = ("<html><body>" + "<b>" * 200 + "".join(
        f'<div class="Comment"><span class="comment-body">w{i}</span></div>' for i in range(n))
        + "</b>" * 200 + "</body></html>")
    assert comment_words(html) == n
