"""bench/repeated_posts.py's group finder (the measurement that rejected taking a thread's
repeated post bodies, docs/extract.md#repeated-post-bodies): it finds the post bodies, not the
post containers with their author lines, and not layout containers at different depths."""

from __future__ import annotations

from bench.repeated_posts import groups, pick

POSTS = [
    "My laptop will not start after the update and the fan keeps spinning for minutes.",
    "Did you try holding the power button for thirty seconds to reset the controller?",
    "That worked for me as well, the reset fixed the boot loop on my older model too.",
]


def _thread(n_posts: int = 3) -> str:
    posts = "".join(
        f'<div class="post"><p class="author">by user{i} on Mon Jan {i + 1}, 2024 10:00 am'
        f'</p><div class="content">{POSTS[i]}</div></div>' for i in range(n_posts))
    return (f'<html><body><ul class="nav"><li><a href="/">Home</a></li><li><a href="/f">Forum'
            f'</a></li></ul><div class="topic">{posts}</div></body></html>')


def test_the_post_bodies_are_picked_without_author_lines() -> None:
    best = pick(groups(_thread()))
    assert best is not None
    assert best["sig"] == ("div", "content") and best["n"] == 3
    assert best["text"].split("\n") == POSTS


def test_layout_containers_at_different_depths_are_not_posts() -> None:
    page = ('<html><body><div class="wrap"><p>' + POSTS[0] + " " + POSTS[1] + '</p></div>'
            '<section><div class="wrap"><p>' + POSTS[2] + '</p></div></section></body></html>')
    assert any(g["sig"] == ("div", "wrap") and not g["same_depth"] for g in groups(page))
    assert pick(groups(page)) is None


def test_one_post_is_no_group() -> None:
    assert pick(groups(_thread(1))) is None
