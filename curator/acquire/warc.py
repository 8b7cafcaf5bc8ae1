"""WARC files -> documents, shared by ``common_crawl`` (a snapshot from a Common Crawl mirror,
``common_crawl.py``) and ``read_warc`` (any local or remote WARC files, ``read_warc.py``).

Records are read one gzip member at a time (Common Crawl writes one member per record), each
parsed with FastWARC (``reader: fastwarc``, the default) or warcio (``reader: warcio``); both give
the same records. Reading per member costs little and isolates damage: a record with a bad
header is quarantined and the next member is read; a corrupt member is skipped by searching for
the next gzip header; a truncated file ends with one quarantine record. Only ``response``
records with an HTML content type are extracted, and the type is checked from the WARC and HTTP
headers before the payload is read or decoded; the raw HTML never reaches a shard.
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from curator.acquire.base import DownloadSource
from curator.core.context import ShardContext
from curator.core.document import Document
from curator.core.errors import ConfigError
from curator.extract.extract_html import (
    DEFAULT_EXTRACTOR,
    DecodeError,
    Extractor,
    decode_html,
    extract_text,
)
from curator.extract.timeout import ExtractTimeout

CC_BASE_URL = "https://data.commoncrawl.org"
_SNAPSHOT = re.compile(r"^CC-MAIN-\d{4}-\d{2}$")
HTML_TYPES = ("text/html", "application/xhtml+xml")
_READ = 1 << 20
_STEP = 1 << 24
MAX_MEMBER_BYTES = 64 << 20
Reader = Literal["fastwarc", "warcio"]


@dataclass(slots=True)
class WarcRecord:
    """The parts of a WARC ``response`` record that extraction needs."""

    file: str
    offset: int  # byte offset of the record (its gzip member) in the file
    url: str
    record_id: str
    date: str
    content_type: str
    body: bytes
    truncated: str | None = None  # WARC-Truncated: the crawler cut the payload ("length"...)


def parse_ranges(expr: str, n: int) -> list[int]:
    """Indices selected by a NeMo-launcher style range expression over ``n`` files:
    ``"0,3,5-7"`` -> ``[0, 3, 5, 6, 7]`` (inclusive ranges, sorted, unique)."""
    out: set[int] = set()
    for part in expr.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ConfigError(f"files: '{part}' is not an index or a range like 5-7")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            raise ConfigError(f"files: range '{part}' runs backwards")
        if hi >= n:
            raise ConfigError(f"files: index {hi} out of range (the listing has {n} files)")
        out.update(range(lo, hi + 1))
    return sorted(out)


# -- reading records -----------------------------------------------------------------------------

def iter_members(path: str, ctx: ShardContext, max_bytes: int = MAX_MEMBER_BYTES
                 ) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, decompressed bytes)`` per gzip member of ``path``. A corrupt member is
    quarantined and skipped up to the next gzip header; a truncated one ends the file; one that
    inflates beyond ``max_bytes`` (a gzip bomb) is inflated in bounded steps, discarded and
    quarantined."""
    with open(path, "rb") as f:
        buf = b""
        base = 0  # file offset of buf[0]
        eof = False
        while True:
            if not buf:
                buf = memoryview(f.read(_READ))
                if not buf:
                    return
            start = base
            d = zlib.decompressobj(wbits=31)
            out: list[bytes] = []
            size = 0
            pos = 0  # consumed bytes of buf for this member
            try:
                while True:
                    data = buf[pos:]
                    while True:  # bounded steps: never more than _STEP bytes at once
                        piece = d.decompress(data, _STEP)
                        size += len(piece)
                        if size <= max_bytes:
                            out.append(piece)
                        elif out:
                            out.clear()
                        data = d.unconsumed_tail
                        if d.eof or not data:
                            break
                    if d.eof:
                        used = len(buf) - pos - len(d.unused_data)
                        pos += used
                        break
                    pos = len(buf)
                    more = f.read(_READ)
                    if not more:
                        eof = True
                        break
                    base += len(buf)
                    buf, pos = memoryview(more), 0
            except zlib.error as e:
                ctx.quarantine(b"", f"corrupt gzip member: {e}", file=path, offset=start)
                ctx.count("warc_corrupt_members")
                # Resynchronise on the next gzip magic after the damaged one.
                buf, base = _resync(f, buf, base, start)
                if not buf:
                    return
                continue
            if eof:
                ctx.quarantine(b"", "truncated gzip member (file ends inside a record)",
                               file=path, offset=start)
                ctx.count("warc_truncated_files")
                # A damaged member header (e.g. FEXTRA/FNAME flags flipped on) swallows the
                # members after it as if they were its own: look for the next gzip header.
                buf, base = _resync(f, buf, base, start)
                if not buf:
                    return
                eof = False
                continue
            buf, base = buf[pos:], base + pos
            if size > max_bytes:
                ctx.quarantine(b"", f"record inflates to more than {max_bytes} bytes",
                               file=path, offset=start)
                ctx.count("warc_oversized_records")
                continue
            yield start, b"".join(out)


def _resync(f: Any, buf: bytes, base: int, bad_start: int) -> tuple[bytes, int]:
    f.seek(bad_start + 1)
    base = bad_start + 1
    while True:
        chunk = f.read(_READ)
        if not chunk:
            return b"", base
        i = chunk.find(b"\x1f\x8b\x08")
        if i >= 0:
            f.seek(base + len(chunk))
            return memoryview(chunk)[i:], base + i
        if len(chunk) < _READ:  # end of file, no further member (a 1-2 byte tail looped here)
            return b"", base + len(chunk)
        base += len(chunk) - 2
        f.seek(base)


def iter_warc(path: str, ctx: ShardContext, max_member_bytes: int = MAX_MEMBER_BYTES,
              reader: Reader = "fastwarc") -> Iterator[WarcRecord]:
    """HTML ``response`` records of a WARC file (``.warc.gz`` or ``.warc``), parsed by
    ``reader``; other records are only counted (``warc_non_response``, ``warc_non_html``)."""
    if reader == "fastwarc":
        parse = _fastwarc_records
    elif reader == "warcio":
        parse = _warcio_records
    else:
        raise ConfigError(f"reader: '{reader}' is not fastwarc or warcio")
    if path.endswith(".gz"):
        chunks: Iterator[tuple[int, bytes]] = iter_members(path, ctx, max_member_bytes)
        for offset, data in chunks:
            try:
                recs = list(parse(io.BytesIO(data), path, offset, max_member_bytes))
            except Exception as e:
                ctx.quarantine(data[:2000], f"bad WARC record: {type(e).__name__}: {e}",
                               file=path, offset=offset)
                ctx.count("warc_bad_records")
                continue
            for r in recs:
                if isinstance(r, str):
                    ctx.count(r)
                else:
                    yield r
        return
    # Uncompressed WARC: one stream; a bad header ends the file (no member boundaries).
    with open(path, "rb") as f:
        try:
            for r in parse(f, path, None, max_member_bytes):
                if isinstance(r, str):
                    ctx.count(r)
                else:
                    yield r
        except Exception as e:
            ctx.quarantine(b"", f"bad WARC record, rest of file skipped: {type(e).__name__}: {e}",
                           file=path, offset=f.tell())
            ctx.count("warc_bad_records")


def _warcio_records(stream: Any, path: str, offset: int | None, max_body: int
                    ) -> Iterator[WarcRecord | str]:
    from warcio.archiveiterator import ArchiveIterator

    it = ArchiveIterator(stream)
    for rec in it:
        if not rec.rec_type:
            raise ValueError("record has no WARC-Type header")
        if rec.rec_type != "response":
            yield "warc_non_response"
            continue
        http = rec.http_headers
        ctype = (http.get_header("Content-Type") if http else None) or ""
        if not ctype.lower().startswith(HTML_TYPES):
            yield "warc_non_html"
            continue
        h = rec.rec_headers
        body = rec.content_stream().read(max_body + 1)  # over the cap: "page too large"
        yield WarcRecord(
            file=path, offset=offset if offset is not None else it.get_record_offset(),
            url=h.get_header("WARC-Target-URI") or "",
            record_id=h.get_header("WARC-Record-ID") or "",
            date=h.get_header("WARC-Date") or "", content_type=ctype, body=body,
            truncated=h.get_header("WARC-Truncated"))


def _fastwarc_records(stream: Any, path: str, offset: int | None, max_body: int
                      ) -> Iterator[WarcRecord | str]:
    """The same records as :func:`_warcio_records`, parsed by FastWARC (2.x API): the record
    type and the HTTP content type are checked from the headers, and the payload is read only
    for HTML; ``auto_decode='all'`` undoes chunked transfer and gzip/deflate/brotli content
    encodings as warcio does."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    response, bad = WarcRecordType.response, (WarcRecordType.no_type, WarcRecordType.unknown)
    for rec in ArchiveIterator(stream, parse_http=True, auto_decode="all", fsspec_args=False):
        rtype = rec.record_type
        if rtype in bad:
            raise ValueError("record has no WARC-Type header")
        if rtype != response:
            yield "warc_non_response"
            continue
        http = rec.http_headers
        ctype = (http.get("Content-Type") if http is not None else None) or ""
        if not ctype.lower().startswith(HTML_TYPES):
            yield "warc_non_html"
            continue
        h = rec.headers
        yield WarcRecord(
            file=path, offset=offset if offset is not None else rec.stream_pos,
            url=h.get("WARC-Target-URI") or "", record_id=h.get("WARC-Record-ID") or "",
            date=h.get("WARC-Date") or "", content_type=ctype, body=rec.reader.read(max_body + 1),
            truncated=h.get("WARC-Truncated"))


# -- the sources ---------------------------------------------------------------------------------

class _WarcExtracting(DownloadSource):
    """Shared extraction of HTML response records into documents."""

    verify = "gzip"
    extractor: Extractor = DEFAULT_EXTRACTOR
    timeout_s: float = 10.0
    max_bytes: int = 10 * 1024 * 1024
    reader: Reader = "fastwarc"

    def iterate(self, path: str, ctx: ShardContext) -> Iterator[WarcRecord]:
        # Room for the largest page we accept plus headers; beyond that a record is a bomb.
        return iter_warc(path, ctx, max(MAX_MEMBER_BYTES, 2 * self.max_bytes + (1 << 20)),
                         self.reader)

    def extract(self, rec: WarcRecord, ctx: ShardContext) -> Document | None:
        rid = rec.record_id.strip("<>")
        doc_id = rid.removeprefix("urn:uuid:") or f"{rec.file}:{rec.offset}"
        meta = {"url": rec.url, "warc_record_id": rec.record_id, "date": rec.date,
                "content_type": rec.content_type}
        where = {"file": rec.file, "offset": rec.offset}
        if not rec.body.strip():
            ctx.quarantine(meta, "empty page", **where)
            ctx.count("empty_pages")
            return None
        if len(rec.body) > self.max_bytes:
            ctx.quarantine(meta, f"page too large: {len(rec.body)} bytes > {self.max_bytes}",
                           **where)
            ctx.count("pages_too_large")
            return None
        try:
            html, charset = decode_html(rec.body, rec.content_type)
        except DecodeError as e:
            ctx.quarantine(meta, str(e), **where)
            ctx.count("undecodable_pages")
            return None
        try:
            text = extract_text(html, self.extractor, self.timeout_s)
        except ExtractTimeout:
            ctx.quarantine(meta, f"extraction timed out after {self.timeout_s}s", **where)
            ctx.count("extract_timeouts")
            return None
        meta["charset"] = charset
        if rec.truncated:  # Common Crawl cuts payloads at 1 MiB; the text may be partial
            meta["warc_truncated"] = rec.truncated
            ctx.count("warc_truncated_records")
        doc = Document(doc_id, text, meta)
        if not text:
            ctx.reject(doc, "extract_empty")
            return None
        return doc
