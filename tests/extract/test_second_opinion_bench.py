"""bench/second_opinion.py's line vote and comment prune (the measurement that rejected both,
docs/extract.md#a-second-opinion-per-line): each does what the docs say it measured."""

from __future__ import annotations

from bench.second_opinion import add, drop, prune_comments

ARTICLE = ("The council approved the new budget on Tuesday after a long debate about school "
           "funding and the repair of the old bridge over the river.")
COMMENT = "What a waste of money, they should fix the roads in the north first."


def test_drop_removes_only_short_lines_the_other_text_lacks() -> None:
    text = f"Home\n{ARTICLE}\nShare this"
    alt = f"{ARTICLE}\nShare"
    assert drop(text, alt, 0.5, 3).split("\n") == [ARTICLE, "Share this"]
    assert drop(text, "", 0.5, 3) == text  # no second opinion: nothing goes


def test_add_appends_long_lines_the_text_lacks() -> None:
    assert add(ARTICLE, f"{ARTICLE}\n{COMMENT}", 0.5, 10).split("\n") == [ARTICLE, COMMENT]
    assert add(ARTICLE, f"{ARTICLE}\n{COMMENT}", 0.5, 20) == ARTICLE  # too short to add
    assert add(ARTICLE, f"{ARTICLE}\n{COMMENT}", 0.2, 10) == ARTICLE  # 4 of its 14 tokens are there


def test_comment_sections_named_inside_a_token_go_not_the_article() -> None:
    from trafilatura.utils import load_html

    page = (f'<html><body><div class="post-comments-wrap"><h1>Budget</h1><p>{ARTICLE}</p>'
            f'<p>{ARTICLE}</p></div><div id="sf_comment_list"><p>{COMMENT}</p></div>'
            f'<section class="box kommentare"><p>{COMMENT}</p></section></body></html>')
    tree = load_html(page)
    assert prune_comments(tree) == 2
    text = " ".join(tree.itertext())
    assert ARTICLE in text and COMMENT not in text
