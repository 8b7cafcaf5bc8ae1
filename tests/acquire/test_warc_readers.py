"""The FastWARC reader (default) and the warcio reader give the same records, counters and
quarantine entries, on the bundled Common Crawl sample and on damaged input (the peers' own
test archives: test_peer_archives.py)."""

from __future__ import annotations

import glob
import gzip
import io
import os
import zlib

import pytest

from curator.acquire.warc import WarcRecord, iter_warc
from curator.base.errors import ConfigError
from curator.core.context import ShardContext
from tests.acquire.helpers_acquire import PROSE, page, warc_response, write_warc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = sorted(glob.glob(os.path.join(
    ROOT, "data/sample/commoncrawl/crawl-data/CC-MAIN-2024-10/segments/*/warc/*.warc.gz")))


def _read(path: str, reader: str, tmp: str) -> tuple[list[WarcRecord], dict, dict]:
    ctx = ShardContext(shard="s", stage_id="t", work_dir=os.path.join(tmp, reader),
                       artifacts={})
    recs = list(iter_warc(path, ctx, reader=reader))
    ctx.close()
    return recs, dict(ctx.counters), dict(ctx.quarantined)


def _same(path: str, tmp: str) -> tuple[list[WarcRecord], dict, dict]:
    fast = _read(path, "fastwarc", tmp)
    slow = _read(path, "warcio", tmp)
    assert fast == slow
    return fast


def test_readers_agree_on_the_bundled_sample(tmp_path) -> None:
    assert len(SAMPLE) == 2
    recs, counters = [], {}
    for path in SAMPLE:
        r, c, q = _same(path, str(tmp_path))
        assert q == {}
        recs += r
        for k, v in c.items():
            counters[k] = counters.get(k, 0) + v
    # 60 HTML responses (one of them the sample's empty 200 page); the 62 requests/warcinfo
    # records and the robots.txt and image responses are skipped and counted
    assert len(recs) == 60 and sum(1 for r in recs if not r.body) == 1
    assert all(r.url.startswith("https://") and r.record_id.startswith("<urn:uuid:")
               for r in recs)
    assert all(r.content_type.startswith("text/html") for r in recs)
    assert counters == {"skipped:request: not a page": 62,
                        "skipped:response: no HTML content type": 2, "records_read": 62}


def _gzip_encoded_member(url: str, html: bytes) -> bytes:
    """A response whose HTTP payload is gzip Content-Encoded and chunked (as some crawlers
    store it); both readers must hand extraction the decoded HTML."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    gz = gzip.compress(html, mtime=0)
    chunked = b"%x\r\n" % len(gz) + gz + b"\r\n0\r\n\r\n"
    bio = io.BytesIO()
    w = WARCWriter(bio, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"),
                                       ("Content-Encoding", "gzip"),
                                       ("Transfer-Encoding", "chunked")], protocol="HTTP/1.1")
    w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(chunked),
                                        length=len(chunked), http_headers=http))
    return bio.getvalue()


def test_readers_agree_on_damaged_and_mixed_records(tmp_path) -> None:
    html = page("One", PROSE).encode()
    bad_header = gzip.compress(b"WARC/1.0\r\nThis is not a header\r\nContent-Length: 5\r\n\r\n"
                               b"hello\r\n\r\n", mtime=0)
    good = warc_response("https://a.example/ok", html)
    corrupt = good[:10] + bytes(b ^ 0x5A for b in good[10:40]) + good[40:]
    members = [
        warc_response("https://a.example/1", html),
        bad_header,
        warc_response("https://a.example/robots.txt", b"User-agent: *", "text/plain"),
        warc_response("https://a.example/png", b"\x89PNG....", "image/png"),
        warc_response("https://a.example/lower", html, "TEXT/HTML; charset=UTF-8"),
        warc_response("https://a.example/x", html, "application/xhtml+xml"),
        warc_response("https://a.example/req", b"", rec_type="request"),
        warc_response("https://a.example/meta", b"a: b\r\n", rec_type="metadata"),
        _gzip_encoded_member("https://a.example/gz", html),
        warc_response("https://a.example/2", html, extra={"WARC-Truncated": "length"}),
        corrupt,
        warc_response("https://a.example/cut", html)[:-30],
    ]
    path = write_warc(str(tmp_path / "in" / "mixed.warc.gz"), members)
    recs, counters, quarantined = _same(path, str(tmp_path))
    assert [r.url for r in recs] == ["https://a.example/1", "https://a.example/lower",
                                     "https://a.example/x", "https://a.example/gz",
                                     "https://a.example/2", "https://a.example/cut"]
    assert all(r.body == html for r in recs[:-1])
    assert recs[-2].truncated == "length"
    # the file ends inside the last record: what there is of it, marked
    assert recs[-1].truncated == "file_end" and html.startswith(recs[-1].body)
    # skipped records are counted by kind, never silently dropped
    assert counters["skipped:response: no HTML content type"] == 2
    assert counters["skipped:request: not a page"] == 1
    assert counters["skipped:metadata record: not a page"] == 1
    assert counters["records_read"] == 8
    assert counters["warc_bad_records"] == 1 and counters["warc_corrupt_members"] == 1
    assert counters["warc_truncated_files"] == 1
    assert sum(quarantined.values()) == 2


def test_readers_agree_on_uncompressed_warc_and_stop_at_a_bad_header(tmp_path) -> None:
    html = page("Two", PROSE).encode()
    plain = [zlib.decompress(warc_response(f"https://b.example/{i}", html), 31)
             for i in range(3)]
    bad = b"WARC/1.0\r\nThis is not a header\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n"
    p = tmp_path / "plain.warc"
    p.write_bytes(plain[0] + plain[1] + bad + plain[2])
    recs, counters, quarantined = _same(str(p), str(tmp_path))
    assert [r.url for r in recs] == ["https://b.example/0", "https://b.example/1"]
    assert [r.offset for r in recs] == [0, len(plain[0])]
    assert counters == {"warc_bad_records": 1, "records_read": 2}
    assert len(quarantined) == 1


def test_unknown_reader_is_a_config_error(tmp_path) -> None:
    from curator.acquire.read_warc import ReadWarc

    with pytest.raises(ConfigError):
        list(iter_warc(SAMPLE[0], ShardContext(shard="s", stage_id="t",
                                              work_dir=str(tmp_path), artifacts={}),
                       reader="nope"))  # type: ignore[arg-type]
    with pytest.raises(Exception, match="reader"):
        ReadWarc.from_params({"paths": SAMPLE[0], "reader": "nope"})


def test_the_lone_record_shortcut_agrees_with_both_parsers(tmp_path) -> None:
    """Members holding one request/metadata/warcinfo record are skipped by a few byte
    searches; on every member of the sample and of the peers' archives the shortcut names the
    kind both parsers name, or leaves the member to them."""
    from curator.acquire.warc import _fastwarc_records, _lone_non_page, _members, _warcio_records

    peers = os.path.join(ROOT, "tests", "acquire", "data", "peers")
    files = SAMPLE + sorted(glob.glob(os.path.join(peers, "*", "*.warc.gz")))
    ctx = ShardContext(shard="s", stage_id="t", work_dir=str(tmp_path), artifacts={})
    taken = 0
    for path in files:
        for offset, data, _ in _members(path, ctx):
            lone = _lone_non_page(data)
            if lone is None:
                continue
            taken += 1
            for parse in (_fastwarc_records, _warcio_records):
                assert list(parse(io.BytesIO(data), path, offset, 1 << 20)) == [lone]
    ctx.close()
    assert taken >= 62 + 17 + 16
