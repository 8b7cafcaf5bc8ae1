"""bench/warc_full.py's WARC builder: deterministic, one unique URL and distinct content per
record even where pages repeat, Common Crawl's request/response/metadata layout."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bench import warc_full

PAGES = [(f"p{i}.html", (f'<html><body><div class="body" role="main"><h1>Page {i}</h1>'
                         f"<p>{'Some text about the page. ' * 40}</p></div></body></html>"
                         ).encode()) for i in range(3)]


@pytest.fixture
def three_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warc_full, "pages", lambda root=warc_full.DOCS: PAGES)


def _records(path: Path) -> list[tuple[str, str, bytes]]:
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as f:
        return [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"),
                 r.content_stream().read()) for r in ArchiveIterator(f)]


def test_build_is_deterministic_with_unique_urls_and_distinct_pages(
        three_pages: None, tmp_path: Path) -> None:
    a = warc_full.build(tmp_path / "a", records=9, files=2)
    b = warc_full.build(tmp_path / "b", records=9, files=2)
    assert a == b and a["records"] == 9 and a["files"] == 2
    fa = sorted((tmp_path / "a").glob("*.warc.gz"))
    fb = sorted((tmp_path / "b").glob("*.warc.gz"))
    assert [p.read_bytes() for p in fa] == [p.read_bytes() for p in fb]
    recs = [r for p in fa for r in _records(p)]
    assert [t for t, _, _ in recs] == ["request", "response", "metadata"] * 9
    resp = [(u, body) for t, u, body in recs if t == "response"]
    assert len({u for u, _ in resp}) == 9
    # 3 pages, 9 records: each page 3 times, yet every payload differs (the seeded paragraph)
    assert len({hashlib.sha1(b).digest() for _, b in resp}) == 9
    for _, body in resp:
        assert body.startswith(b"<html><body><p>") and body.endswith(PAGES[0][1][-40:])


def test_another_seed_gives_other_content(three_pages: None, tmp_path: Path) -> None:
    warc_full.build(tmp_path / "a", records=3, seed=0)
    warc_full.build(tmp_path / "b", records=3, seed=1)
    a = [b for t, _, b in _records(next((tmp_path / "a").glob("*.gz"))) if t == "response"]
    b = [b for t, _, b in _records(next((tmp_path / "b").glob("*.gz"))) if t == "response"]
    assert a != b
