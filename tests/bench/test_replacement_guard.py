"""The replacement guards bench/replacement_guard.py scores: what each keeps and returns."""

from __future__ import annotations

import pytest

from bench.replacement_guard import (
    candidates,
    chrome_share,
    containment,
    declares_article,
    guarded,
    guards,
    link_share,
    link_texts,
)

ARTICLE = "The council voted on the budget.\nIt passes next week after a second reading."
# a whole-page replacement: the article plus breadcrumb, captions and share chrome
PAGE = "Home\nNews\nPolitics\n" + ARTICLE + "\nShare\nEmbed\nCLOSE\nPhoto: City Hall\nSkip"


def test_containment_and_chrome_share_of_a_whole_page_replacement() -> None:
    assert containment(ARTICLE, PAGE) == 1.0
    assert containment(ARTICLE, "Home\nNews") == 0.0
    # every added line is short: all added words are chrome
    assert chrome_share(ARTICLE, PAGE) == 1.0
    thread = ARTICLE + "\nI agree with the council, the budget needed a second reading."
    assert chrome_share(ARTICLE, thread) == 0.0


def test_guards_keep_the_fast_text_against_chrome_and_take_a_longer_thread() -> None:
    g = guards()
    thread = ARTICLE + "\nI agree with the council, the budget needed a second reading."
    # resiliparse brought the page chrome: the chrome guard keeps the rerun's text
    assert guarded((ARTICLE, ARTICLE, PAGE), g["chrome<=0.25"], rerun=False) == ARTICLE
    assert guarded((ARTICLE, ARTICLE, PAGE), g["contain>=0.5"], rerun=False) == PAGE
    # a rerun that extends the fast text passes both tests
    assert guarded((ARTICLE, thread, thread), g["contain>=0.5, chrome<=0.25"], rerun=True) == (
        thread
    )
    # a rerun that replaces the article by something else fails containment
    assert guarded((ARTICLE, "Home\nNews", "Home\nNews"), g["contain>=0.5"], rerun=True) == (
        ARTICLE
    )
    # an empty text is always replaced, whatever the guard says
    assert guarded(("", "", PAGE), g["never"], rerun=True) == PAGE
    assert guarded((ARTICLE, ARTICLE, PAGE), g["never"], rerun=False) == ARTICLE


@pytest.mark.parametrize(
    "name",
    ["none", "fallback: never", "both: chrome<=0.15", "article pages, fallback: never"],
)
def test_candidates_return_one_of_the_three_texts(name: str) -> None:
    t = (ARTICLE, ARTICLE + "\nmore words here in a sentence", PAGE, True)
    assert candidates()[name](t) in t[:3]
    assert candidates()["none"](t) == PAGE


def test_article_pages_only_guard_leaves_other_pages_alone() -> None:
    guard = candidates()["article pages, fallback: never"]
    assert guard((ARTICLE, ARTICLE, PAGE, True)) == ARTICLE
    assert guard((ARTICLE, ARTICLE, PAGE, False)) == PAGE


def test_declares_article_reads_og_type_and_json_ld() -> None:
    assert declares_article('<meta property="og:type" content="article">')
    assert declares_article("<meta content='article' property='og:type' />")
    assert declares_article('<script type="application/ld+json">{"@type": "NewsArticle"}')
    assert not declares_article('<meta property="og:type" content="website">')
    assert not declares_article('{"@type": "DiscussionForumPosting"}')


RELATED = (
    '<html><body><p>The council voted on the budget.</p><ul>'
    '<li><a href="/a">Mayor opens the new bridge</a></li>'
    '<li><a href="/b">Rain expected all week</a> <span>3h</span></li></ul>'
    '<p>I agree with the council, the budget needed a second reading.</p></body></html>'
)


def test_link_share_counts_added_lines_made_of_link_texts() -> None:
    links = link_texts(RELATED)
    assert links == {"Mayor opens the new bridge", "Rain expected all week"}
    headlines = ARTICLE + "\nMayor opens the new bridge\nRain expected all week 3h"
    # both added lines are link text (the second but for "3h", under a fifth of it)
    assert link_share(ARTICLE, headlines, links) == 1.0
    reply = ARTICLE + "\nI agree with the council, the budget needed a second reading."
    assert link_share(ARTICLE, reply, links) == 0.0
    assert link_share(ARTICLE, ARTICLE, links) == 0.0  # nothing added
    assert link_texts("") == frozenset()


def test_links_guard_keeps_the_article_against_related_headlines() -> None:
    links = link_texts(RELATED)
    headlines = ARTICLE + "\nMayor opens the new bridge\nRain expected all week 3h"
    reply = ARTICLE + "\nI agree with the council, the budget needed a second reading."
    guard = candidates()["fallback: links<=0.5"]
    assert guard((ARTICLE, ARTICLE, headlines, True, links)) == ARTICLE
    assert guard((ARTICLE, ARTICLE, reply, True, links)) == reply
