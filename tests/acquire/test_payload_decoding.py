"""HTTP payload decoding (chunked transfer, gzip/deflate/br content encoding) for both readers,
checked against warcio's own ``content_stream()``, and bounded against decompression bombs."""

from __future__ import annotations

import gzip
import io
import tracemalloc
import zlib

import brotli
import pytest

from curator.acquire.http_payload import decode_payload
from curator.acquire.warc import iter_warc
from curator.core.context import ShardContext
from tests.acquire.helpers_acquire import PROSE, page

HTML = page("Encoded", PROSE * 20).encode()


def _encode(data: bytes, coding: str) -> bytes:
    if coding in ("gzip", "x-gzip"):
        return gzip.compress(data, mtime=0)
    if coding == "deflate":  # zlib-wrapped, as RFC 9110 says
        return zlib.compress(data)
    if coding == "deflate-raw":  # raw deflate, as many servers send under "deflate"
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()
    if coding == "br":
        return brotli.compress(data)
    return data


def _chunk(data: bytes, size: int = 1000) -> bytes:
    parts = [b"%x;ext=1\r\n" % len(data[i:i + size]) + data[i:i + size] + b"\r\n"
             for i in range(0, len(data), size)]
    return b"".join(parts) + b"0\r\n\r\n"


def _record(url: str, payload: bytes, headers: list[tuple[str, str]]) -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    bio = io.BytesIO()
    w = WARCWriter(bio, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"), *headers],
                            protocol="HTTP/1.1")
    w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(payload),
                                        length=len(payload), http_headers=http))
    return bio.getvalue()


CASES = [  # (Content-Encoding label, how the bytes are encoded, chunked)
    ("gzip", "gzip", False), ("x-gzip", "gzip", True), ("deflate", "deflate", False),
    ("deflate", "deflate-raw", True), ("br", "br", False), ("br", "br", True),
    (None, None, True), ("gzip", None, False),  # labelled gzip, stored decoded (ClueWeb09)
    ("identity", None, False),
]


def _warcio_payloads(path: str) -> dict[str, bytes | None]:
    """warcio's ``content_stream()`` per URL; ``None`` where warcio fails (its brotli
    decoder wants ``Decompressor.unused_data``, which brotli 1.2 no longer has)."""
    from warcio.archiveiterator import ArchiveIterator

    out: dict[str, bytes | None] = {}
    with open(path, "rb") as f:
        for r in ArchiveIterator(f):
            if r.rec_type == "response":
                try:
                    out[r.rec_headers.get_header("WARC-Target-URI")] = r.content_stream().read()
                except AttributeError:
                    out[r.rec_headers.get_header("WARC-Target-URI")] = None
    return out


@pytest.mark.parametrize("reader", ["fastwarc", "warcio"])
def test_encodings_decode_as_warcio_decodes_them(reader: str, tmp_path) -> None:
    members = []
    for i, (label, how, chunked) in enumerate(CASES):
        payload = _encode(HTML, how or "")
        headers = [("Content-Encoding", label)] if label else []
        if chunked:
            payload = _chunk(payload)
            headers.append(("Transfer-Encoding", "chunked"))
        members.append(_record(f"https://enc.example/{i}", payload, headers))
    path = str(tmp_path / "enc.warc.gz")
    with open(path, "wb") as f:
        f.write(b"".join(members))
    ref = _warcio_payloads(path)
    # warcio decodes all but x-gzip (a label browsers accept) and br (see above)
    assert [u for u, v in ref.items() if v != HTML] == [
        f"https://enc.example/{i}" for i, c in enumerate(CASES) if c[0] in ("x-gzip", "br")]
    ctx = ShardContext(shard="s", stage_id="t", work_dir=str(tmp_path / "w"), artifacts={})
    got = {r.url: r.body for r in iter_warc(path, ctx, reader=reader)}  # type: ignore[arg-type]
    assert got == {u: HTML for u in ref}


@pytest.mark.parametrize("coding", ["gzip", "deflate", "deflate-raw", "br"])
def test_decompression_bombs_stop_at_the_cap(coding: str) -> None:
    """200 MB of zeros in a few hundred KB: at most cap + 1 bytes come out (the page is then
    "page too large"), and memory stays near the cap."""
    bomb = _encode(b"\0" * (200 << 20), coding)
    assert len(bomb) < 1 << 20
    label = "deflate" if coding.startswith("deflate") else coding
    cap = 1 << 20
    tracemalloc.start()
    out = decode_payload(bomb, None, label, cap)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(out) == cap + 1 and not any(out)
    assert peak < 8 * cap, peak


def test_a_bomb_in_a_warc_is_a_page_too_large_for_both_readers(tmp_path) -> None:
    from tests.acquire.helpers_acquire import read_side, run_pipeline, stage_stats

    bomb = _encode(b"<p>" + b" " * (300 << 20), "gzip")
    path = str(tmp_path / "bomb.warc.gz")
    with open(path, "wb") as f:
        f.write(_record("https://bomb.example/", bomb, [("Content-Encoding", "gzip")])
                + _record("https://ok.example/", _encode(HTML, "br"), [("Content-Encoding", "br")]))
    for reader in ("fastwarc", "warcio"):
        work = str(tmp_path / reader)
        summary = run_pipeline(work, [{"read_warc": {"paths": path, "extractor": "resiliparse",
                                                     "reader": reader, "max_page_mb": 2},
                                       "id": "web"}])
        assert stage_stats(summary, "web")["docs_out"] == 1
        q = read_side(work, "quarantine", "web")
        assert [r["record"]["url"] for r in q] == ["https://bomb.example/"]
        assert q[0]["reason"].startswith("page too large")


def test_broken_chunking_keeps_what_there_is() -> None:
    body = _chunk(HTML)
    assert decode_payload(body, "chunked", None, 1 << 30) == HTML
    # not chunked at all, though labelled so: the bytes as they are (warcio does the same)
    assert decode_payload(HTML, "chunked", None, 1 << 30) == HTML
    # cut inside the third chunk: the chunks before it and what there is of the third
    cut = body[: 2 * (1000 + 12) + 500]
    assert HTML.startswith(decode_payload(cut, "chunked", None, 1 << 30))
    assert len(decode_payload(cut, "chunked", None, 1 << 30)) > 2000

