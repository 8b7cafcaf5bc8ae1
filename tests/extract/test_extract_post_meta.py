"""Forum posts' author boxes and signatures are dropped before trafilatura reads a thread
(``post_meta``, curator/extract/prune_ui.py), on real threads of bench/gold's tuning
split (fhgr/harvest, posts marked by hand)."""

from __future__ import annotations

from bench.gold_set import GoldPage, prf
from curator.extract.extract_html import extract_text
from tests.extract.helpers_extract import tuning_pages as _tuning


def _page(prefix: str) -> GoldPage:
    return next(p for i, p in _tuning().items() if i.startswith(prefix))


def test_phpbb_member_lines_are_not_post_text() -> None:
    """A German phpBB board: each post's postprofile box ("Beiträge: 516", "Registriert: 07
    Mär 2006") and signature were kept between the posts (F1 0.57); dropped: 0.74."""
    page = _tuning()["harvest/forum.mein-schoener-garten.de.viewtopic.php.4825193"]
    kept = extract_text(page.html, post_meta=True)
    default = extract_text(page.html)
    assert "Beiträge: 516" in kept and "Registriert: 07 Mär 2006" in kept
    assert "Beiträge:" not in default and "Registriert:" not in default
    assert prf(kept, page.gold)[2] < 0.6
    assert prf(default, page.gold)[2] > 0.7


def test_xenforo_user_details_are_not_post_text() -> None:
    """XenForo (musiker-board.de): the message-userDetails lists ("Im Board seit", "Kekse")."""
    page = _page("harvest/www.musiker-board.de.threads.kopfplattenbruch")
    default = extract_text(page.html)
    assert "Im Board seit" in extract_text(page.html, post_meta=True)
    assert "Im Board seit" not in default and "Kekse" not in default
    assert "Von Heidelberg nach Giessen zu Lakewood" in default  # the posts stay


def test_a_box_that_wraps_the_post_stays() -> None:
    """vBulletin's boxes over 150 words hold the post itself (worldofplayers.de: dropping its
    "postdetails" took F1 from 0.92 to 0.10); only small boxes go, so the thread stays."""
    page = _page("harvest/forum.worldofplayers.de.forum.threads.1553036")
    default = extract_text(page.html)
    # its small boxes did go: they held only blanks, which the shaped text no longer keeps
    assert default == extract_text(page.html, post_meta=True)
    assert extract_text(page.html, shape=False) != extract_text(page.html, shape=False,
                                                                post_meta=True)
    assert prf(default, page.gold)[2] > 0.9


def test_pages_without_post_boxes_are_unchanged() -> None:
    """Articles and shop pages of the tuning split have none of these boxes."""
    pages = [p for p in _tuning().values() if p.type in ("article", "product")][::12]
    assert len(pages) >= 10
    for page in pages:
        assert extract_text(page.html) == extract_text(page.html, post_meta=True), page.id
