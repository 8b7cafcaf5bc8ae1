"""bench/warc_full.py ``--source real``: every unique real page exactly once (dedup by bytes
and by normalised text), deterministic builds, the ``--records`` cap, a one-line error when the
docs packages are absent. Real pages from bench/gold (public extraction benchmarks) stand in
for the mirrors: a bare git repository and an extracted "package" folder in a temp dir."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from bench import real_pages, warc_full

GOLD = Path(__file__).resolve().parents[2] / "bench" / "gold" / "pages.jsonl.zst"


def _gold(n: int) -> list[bytes]:
    import zstandard

    raw = zstandard.ZstdDecompressor().stream_reader(GOLD.open("rb")).read()
    out = []
    for line in raw.splitlines():
        html = json.loads(line)["html"].encode()
        if len(html) > 2000 and real_pages.text_key(html) is not None:
            out.append(html)
        if len(out) == n:
            break
    return out


@pytest.fixture
def sources(tmp_path: Path) -> tuple[Path, Path, list[bytes]]:
    """A mirror (bare git repo) of 6 real pages plus copies that must count once, and a docs
    package folder with 2 pages, one of them again a copy of a web page."""
    p = _gold(8)
    work = tmp_path / "work"
    (work / "html").mkdir(parents=True)
    for i in range(4):
        (work / "html" / f"p{i}.html").write_bytes(p[i])
    (work / "html" / "p4.html.gz").write_bytes(gzip.compress(p[4]))
    (work / "html" / "rec.json").write_bytes(json.dumps({"html": p[5].decode()}).encode())
    (work / "html" / "z-same-bytes.html").write_bytes(p[0])                 # exact copy
    (work / "html" / "z-gz-copy.html.gz").write_bytes(gzip.compress(p[1]))  # same page, gzipped
    near = p[2].replace(b"<", b"\n<").replace(b"<script", b"<script data-x=1")
    (work / "html" / "z-near.html").write_bytes(near)                      # other markup, same text
    (work / "html" / "feed.xml").write_bytes(b"<?xml version='1.0'?><rss>" + b"x" * 900 + b"</rss>")
    (work / "html" / "tiny.html").write_bytes(b"<html><body>hi</body></html>")
    (work / "other").mkdir()
    (work / "other" / "outside.html").write_bytes(p[7])                     # not under the prefix
    mirror = tmp_path / "mirrors" / "owner+bench" / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "pages"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror)], check=True)
    docs = tmp_path / "debs" / "fake-doc" / "usr" / "share" / "doc" / "fake"
    docs.mkdir(parents=True)
    (docs / "index.html").write_bytes(p[6])
    (docs / "dup.html").write_bytes(p[4])
    (docs / "style.css").write_bytes(b"body{}" * 200)
    return tmp_path / "mirrors", tmp_path / "debs", p


WEB = [("bench", "owner+bench", ("html/",))]
DOCS = [("fake-doc", "Sphinx")]


def test_each_real_page_counts_once(sources: tuple[Path, Path, list[bytes]]) -> None:
    mirrors, debs, p = sources
    c = real_pages.collect(mirrors, debs, web=WEB, docs=DOCS)
    assert [x.data for x in c.pages] == [p[0], p[1], p[2], p[3], p[4], p[5], p[6]]
    assert [x.part for x in c.pages] == ["web"] * 6 + ["docs"]
    assert c.pages[-1].blob is None  # docs pages are read again from their file, not held
    # feed.xml is no page; same-bytes, gz-copy and near are copies; tiny is under 512 bytes
    assert c.counts["bench"] == {"files": 10, "pages": 6, "duplicate": 3, "too_small": 1,
                                 "too_large": 0}
    assert c.counts["fake-doc"]["pages"] == 1 and c.counts["fake-doc"]["duplicate"] == 1
    assert c.missing == []


def _responses(folder: Path) -> list[tuple[str, bytes]]:
    from warcio.archiveiterator import ArchiveIterator

    out = []
    for f in sorted(folder.glob("*.warc.gz")):
        with open(f, "rb") as fh:
            out += [(r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                    for r in ArchiveIterator(fh) if r.rec_type == "response"]
    return out


def test_build_is_deterministic_each_page_once_and_capped(
        sources: tuple[Path, Path, list[bytes]], tmp_path: Path) -> None:
    mirrors, debs, p = sources
    c = real_pages.collect(mirrors, debs, web=WEB, docs=DOCS)
    a = warc_full.build_real(tmp_path / "a", 100, files=2, collected=c)
    b = warc_full.build_real(tmp_path / "b", 100, files=2, collected=c)
    assert a == b and a["written"] == 7 and a["web_pages"] == 6
    assert [f.read_bytes() for f in sorted((tmp_path / "a").glob("*.gz"))] == \
        [f.read_bytes() for f in sorted((tmp_path / "b").glob("*.gz"))]
    resp = _responses(tmp_path / "a")
    assert sorted(hashlib.sha1(x).digest() for _, x in resp) == \
        sorted(hashlib.sha1(x).digest() for x in p[:7])
    assert len({u for u, _ in resp}) == 7
    # a cap keeps the web pages first, then docs
    capped = warc_full.build_real(tmp_path / "c", 6, collected=c)
    assert capped["written"] == 6 and capped["web_pages"] == 6
    assert capped["per_source"] == {"web/bench": 6}
    assert warc_full.build_real(tmp_path / "d", 100, seed=1, collected=c)["written"] == 7
    assert _responses(tmp_path / "d") != resp  # another seed, another order


def test_missing_packages_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(real_pages, "DEBS", tmp_path)
    monkeypatch.setattr(real_pages, "DOCS", [("no-such-doc-package-xyz", "Sphinx")])
    with pytest.raises(SystemExit, match="no-such-doc-package-xyz"):
        warc_full.build_real(tmp_path / "w", 10)
