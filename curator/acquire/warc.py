"""Web archives -> page records, shared by ``common_crawl`` (a snapshot from a Common Crawl
mirror, ``common_crawl.py``), ``read_warc`` (any local or remote archives, ``read_warc.py``) and
``cc_index``; the pages become documents in :mod:`curator.acquire.warc_pages`.

Containers: ``.warc.gz`` and ``.arc.gz`` are read one gzip member at a time (crawlers write one
member per record), ``.warc.lz4`` (FastWARC's LZ4 frames) and uncompressed ``.warc``/``.arc``
as one stream. Reading per member costs little and isolates damage: a record with a bad header
is quarantined and the next member is read; a corrupt member is skipped by searching for the
next gzip header; a file that ends inside a record hands on what it has (marked
``warc_truncated: file_end``). In a stream there are no boundaries to resynchronise on: a bad
header ends the file with one quarantine record.

Parsers: WARC records are parsed by FastWARC (``reader: fastwarc``, the default; HTTP
headers in quirks mode, so ClueWeb's WARC/0.18 with LF-only HTTP headers parses) or by
warcio (``reader: warcio``); ARC records by warcio or, for the default reader, by
:func:`_arc_records` (FastWARC reads no ARC). Both readers give the same pages with the same
bodies: transfer and content encodings are undone by one shared decoder
(:func:`~curator.acquire.http_payload.decode_payload`, bounded), not by either library, and
the test suite checks both against warcio's own reading of FastWARC's and warcio's test
archives.

Pages are HTML ``response`` and ``resource`` records (and ARC records); the record type and
content type are checked from the headers before the payload is read or decoded, and the raw
HTML never reaches a shard. Every other record is counted by kind (``skipped:<kind>: <why>``,
and ``records_read`` for the records that could have been pages), so a source that keeps few
of them says why on its terminal line and in report.html.
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from curator.acquire.http_payload import decode_payload
from curator.base.errors import ConfigError
from curator.core.context import ShardContext
from curator.storage import read_position

CC_BASE_URL = "https://data.commoncrawl.org"
SNAPSHOT_NAME = re.compile(r"^CC-MAIN-\d{4}-\d{2}$")
HTML_TYPES = ("text/html", "application/xhtml+xml")
_READ = 1 << 20
_STEP = 1 << 24
_FEED = 1 << 16
MAX_MEMBER_BYTES = 64 << 20
Reader = Literal["fastwarc", "warcio"]


@dataclass(slots=True)
class WarcRecord:
    """The parts of a page (a WARC ``response`` or ``resource`` record, an ARC record) that
    extraction needs."""

    file: str
    offset: int  # byte offset of the record (its gzip member) in the file
    url: str
    record_id: str
    date: str
    content_type: str
    body: bytes
    truncated: str | None = None  # WARC-Truncated: the crawler cut the payload ("length"...)
    trec_id: str | None = None  # WARC-TREC-ID (ClueWeb09/12): the id TREC judgments use


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
    """Yield ``(offset, decompressed bytes)`` per complete gzip member of ``path`` (see
    :func:`_members`); a member the file ends inside is quarantined."""
    for start, data, complete in _members(path, ctx, max_bytes):
        if complete:
            yield start, data
        else:
            ctx.quarantine(b"", "truncated gzip member (file ends inside a record)",
                           file=path, offset=start)


def _members(path: str, ctx: ShardContext, max_bytes: int = MAX_MEMBER_BYTES
             ) -> Iterator[tuple[int, bytes, bool]]:
    """Yield ``(offset, decompressed bytes, complete)`` per gzip member of ``path``. A corrupt
    member is quarantined and skipped up to the next gzip header; a member the file ends inside
    is counted (``warc_truncated_files``) and yielded as far as it goes, ``complete=False``;
    one that inflates beyond ``max_bytes`` (a gzip bomb) is inflated in bounded steps,
    discarded and quarantined."""
    with open(path, "rb") as f:
        # progress: the offset of the member after the one yielded (f.tell() runs ahead by up
        # to a 1 MiB read, a coarse step on a small file)
        at = _Offset()
        read_position.track(at, read_position.size_of(f))
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
                    if pos >= len(buf):
                        more = f.read(_READ)
                        if not more:
                            eof = True
                            break
                        base += len(buf)
                        buf, pos = memoryview(more), 0
                    # At most _FEED bytes per call: at a member's end zlib copies the rest of
                    # its input into unused_data, which for the whole 1 MiB buffer cost 40%
                    # of the reading time (bench/warc_reader.py).
                    data = buf[pos:pos + _FEED]
                    fed = len(data)
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
                        pos += fed - len(d.unused_data)
                        break
                    pos += fed
            except zlib.error as e:
                ctx.quarantine(b"", f"corrupt gzip member: {e}", file=path, offset=start)
                ctx.count("warc_corrupt_members")
                # Resynchronise on the next gzip magic after the damaged one.
                buf, base = _resync(f, buf, base, start)
                if not buf:
                    return
                continue
            if eof:
                ctx.count("warc_truncated_files")
                if size > max_bytes:
                    ctx.quarantine(b"", f"record inflates to more than {max_bytes} bytes",
                                   file=path, offset=start)
                    ctx.count("warc_oversized_records")
                else:
                    yield start, b"".join(out), False
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
            at.offset = base
            yield start, b"".join(out), True


class _Offset:
    """A position to report to :mod:`curator.storage.read_position` (``tell()``)."""

    __slots__ = ("offset",)

    def __init__(self) -> None:
        self.offset = 0

    def tell(self) -> int:
        return self.offset


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


#: Archive names read_warc and common_crawl accept, and how each is read.
ARCHIVE_SUFFIXES = (".warc.gz", ".warc", ".warc.lz4", ".arc.gz", ".arc")

#: Why a record that is not a page was skipped, by kind (the kind's noun takes an "s" in the
#: plural). ``records_read`` counts the kinds that could have been a page (``_CANDIDATE``).
SKIPPED = {
    "response": "no HTML content type",
    "resource": "no HTML content type",
    "revisit": "payload stored with an earlier capture",
    "conversion": "not a page",
    "continuation record": "not a page",
    "unknown-type record": "unknown WARC-Type",
    "request": "not a page",
    "metadata record": "not a page",
    "warcinfo record": "not a page",
    "ARC file header": "not a page",
}
_NOT_CANDIDATE = frozenset({"request", "metadata record", "warcinfo record", "ARC file header"})
_WARCIO_KINDS = {"revisit": "revisit", "request": "request", "metadata": "metadata record",
                 "warcinfo": "warcinfo record", "conversion": "conversion",
                 "continuation": "continuation record", "arc_header": "ARC file header"}


def archive_kind(path: str) -> str | None:
    """The suffix of :data:`ARCHIVE_SUFFIXES` that ``path`` ends with, or ``None``."""
    low = path.lower()
    return next((s for s in ARCHIVE_SUFFIXES if low.endswith(s)), None)


def iter_warc(path: str, ctx: ShardContext, max_member_bytes: int = MAX_MEMBER_BYTES,
              reader: Reader = "fastwarc") -> Iterator[WarcRecord]:
    """HTML pages of a web archive (``.warc.gz``, ``.warc``, ``.warc.lz4``, ``.arc.gz`` or
    ``.arc``; another name is read as an uncompressed WARC), parsed by ``reader``; every other
    record is counted by kind (:data:`SKIPPED`)."""
    if reader not in ("fastwarc", "warcio"):
        raise ConfigError(f"reader: '{reader}' is not fastwarc or warcio")
    kind = archive_kind(path) or ".warc"
    arc = kind.startswith(".arc")
    if kind.endswith(".gz"):
        yield from member_records(_members(path, ctx, max_member_bytes), path, ctx,
                                  max_member_bytes, reader, arc)
        return
    if arc:
        parse = _warcio_records if reader == "warcio" else _arc_records
    else:
        parse = _warcio_records if reader == "warcio" else _fastwarc_records
    skipped: dict[str, int] = {}
    read = 0
    # One stream: a bad header ends the file (no member boundaries to resynchronise on).
    with open(path, "rb") as raw:
        read_position.track(raw)
        f: Any = raw
        if kind == ".warc.lz4":
            f = _Lz4Stream(raw)
        try:
            for r in parse(f, path, None, max_member_bytes):
                if isinstance(r, str):
                    skipped[r] = skipped.get(r, 0) + 1
                else:
                    read += 1
                    yield r
        except Exception as e:
            ctx.quarantine(b"", f"bad WARC record, rest of file skipped: {type(e).__name__}: {e}",
                           file=path, offset=raw.tell())
            ctx.count("warc_bad_records")
        finally:
            _count_kinds(ctx, skipped, read)


def member_records(members: Iterable[tuple[int, bytes, bool]], path: str, ctx: ShardContext,
                   max_member_bytes: int = MAX_MEMBER_BYTES, reader: Reader = "fastwarc",
                   arc: bool = False) -> Iterator[WarcRecord]:
    """HTML pages of gzip members ``(offset, decompressed bytes, complete)`` of the archive
    ``path`` (one record per member, as crawlers write them); every other record is counted
    by kind (:data:`SKIPPED`). :func:`iter_warc` feeds it a whole file's members, ``cc_index``
    only the members its index chose."""
    if arc:
        parse = _warcio_records if reader == "warcio" else _arc_records
    else:
        parse = _warcio_records if reader == "warcio" else _fastwarc_records
    skipped: dict[str, int] = {}
    read = 0
    try:
        for offset, data, complete in members:
            lone = None if arc else _lone_non_page(data)
            if lone:  # two thirds of a Common Crawl file: no parser needed to skip them
                skipped[lone] = skipped.get(lone, 0) + 1
                continue
            try:
                recs = list(parse(io.BytesIO(data), path, offset, max_member_bytes))
            except Exception as e:
                if not complete:
                    ctx.quarantine(b"", "truncated gzip member (file ends inside a record)",
                                   file=path, offset=offset)
                    continue
                ctx.quarantine(data[:2000], f"bad WARC record: {type(e).__name__}: {e}",
                               file=path, offset=offset)
                ctx.count("warc_bad_records")
                continue
            if not complete:
                if not recs:
                    ctx.quarantine(b"", "truncated gzip member (file ends inside a record)",
                                   file=path, offset=offset)
                elif isinstance(recs[-1], WarcRecord) and not recs[-1].truncated:
                    recs[-1].truncated = "file_end"  # the file ends inside this record
            for r in recs:
                if isinstance(r, str):
                    skipped[r] = skipped.get(r, 0) + 1
                else:
                    read += 1
                    yield r
    finally:  # also when the consumer stops early
        _count_kinds(ctx, skipped, read)


_LONE = {b"request": "request", b"metadata": "metadata record", b"warcinfo": "warcinfo record"}


def _lone_non_page(data: bytes) -> str | None:
    """The kind of the one ``request``, ``metadata`` or ``warcinfo`` record a gzip member
    holds, read from its WARC header with a few byte searches; ``None`` (parse it) unless the
    header is in the usual form and the member holds that record and nothing else."""
    if not data.startswith(b"WARC/1."):
        return None
    end = data.find(b"\r\n\r\n", 0, 1 << 16)
    i = data.find(b"\r\nWARC-Type: ", 0, end) if end > 0 else -1
    j = data.find(b"\r\n", i + 13, end + 2) if i >= 0 else -1
    kind = _LONE.get(data[i + 13:j]) if j >= 0 else None
    k = data.find(b"\r\nContent-Length: ", 0, end) if kind else -1
    m = data.find(b"\r\n", k + 18, end + 2) if k >= 0 else -1
    if m < 0:
        return None
    length = data[k + 18:m]
    if not length.isdigit() or end + 4 + int(length) + 4 != len(data):
        return None
    return kind


class _Lz4Stream:
    """A ``.warc.lz4`` as a plain stream (FastWARC's LZ4 decoder) whose ``tell()`` is the
    position in the decompressed WARC: record offsets are then the same for both readers
    (FastWARC given its own LZ4 reader reports frame offsets, warcio decompressed ones)."""

    def __init__(self, raw: Any) -> None:
        from fastwarc.stream_io import Lz4Reader

        self._r = Lz4Reader(raw)
        self._n = 0

    def read(self, n: int = -1) -> bytes:
        b = self._r.read(n)
        self._n += len(b)
        return b

    def tell(self) -> int:
        return self._n

    def close(self) -> None:
        self._r.close()


def _target_uri(uri: str | None) -> str:
    """``WARC-Target-URI`` as warcio reads it: without the ``<>`` wget 1.19 wrote around it,
    spaces percent-encoded."""
    if not uri:
        return ""
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1]
    return uri.replace(" ", "%20") if " " in uri else uri


def _count_kinds(ctx: ShardContext, skipped: dict[str, int], read: int) -> None:
    """Counters ``skipped:<kind>: <why>`` and ``records_read`` (pages + skipped candidates)."""
    for kind, n in skipped.items():
        ctx.count(f"skipped:{kind}: {SKIPPED[kind]}", n)
        if kind not in _NOT_CANDIDATE:
            read += n
    if read:
        ctx.count("records_read", read)


def _is_html(ctype: str) -> bool:
    return ctype.lower().lstrip().startswith(HTML_TYPES)


def _warcio_records(stream: Any, path: str, offset: int | None, max_body: int
                    ) -> Iterator[WarcRecord | str]:
    """Pages (:class:`WarcRecord`) and the kinds of other records (``str``) of a WARC or ARC
    stream, parsed by warcio."""
    from warcio.archiveiterator import ArchiveIterator

    it = ArchiveIterator(stream)
    for rec in it:
        rtype = rec.rec_type
        if not rtype:
            raise ValueError("record has no WARC-Type header")
        h = rec.rec_headers
        arc = rec.format == "arc"
        if rtype not in ("response", "resource"):
            yield _WARCIO_KINDS.get(rtype, "unknown-type record")
            continue
        http = rec.http_headers
        if http is not None:
            ctype = http.get_header("Content-Type") or ""
        else:
            ctype = h.get_header("content-type" if arc else "Content-Type") or ""
        if not _is_html(ctype):
            yield rtype
            continue
        body = rec.raw_stream.read(max_body + 1)  # over the cap: "page too large"
        if http is not None:
            body = decode_payload(body, http.get_header("Transfer-Encoding"),
                                  http.get_header("Content-Encoding"), max_body)
        at = offset if offset is not None else it.get_record_offset()
        if arc:
            yield WarcRecord(file=path, offset=at, url=h.get_header("uri") or "", record_id="",
                             date=arc_date(h.get_header("archive-date") or ""),
                             content_type=ctype, body=body)
            continue
        yield WarcRecord(
            file=path, offset=at, url=h.get_header("WARC-Target-URI") or "",
            record_id=h.get_header("WARC-Record-ID") or "",
            date=h.get_header("WARC-Date") or "", content_type=ctype, body=body,
            truncated=h.get_header("WARC-Truncated"), trec_id=h.get_header("WARC-TREC-ID"))


def _fastwarc_records(stream: Any, path: str, offset: int | None, max_body: int
                      ) -> Iterator[WarcRecord | str]:
    """The same as :func:`_warcio_records` for WARC, parsed by FastWARC (2.x API). WARC
    headers are parsed strictly (stray bytes between records are a bad record, as in warcio);
    HTTP headers only for possible pages, in quirks mode, which reads ClueWeb's LF-only HTTP
    headers (strict mode reads them into the page and finds no content type). The payload is
    read only for HTML, undecoded (``auto_decode`` off): :func:`decode_payload` undoes the
    encodings for both readers alike, within the cap."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    kinds = _fastwarc_kinds(WarcRecordType)
    page, bad = (WarcRecordType.response | WarcRecordType.resource,
                 (WarcRecordType.no_type,))
    for rec in ArchiveIterator(stream, parse_http=False, auto_decode="none", fsspec_args=False):
        rtype = rec.record_type
        if not rtype & page:
            if rtype in bad:
                raise ValueError("record has no WARC-Type header")
            yield kinds.get(int(rtype), "unknown-type record")
            continue
        h = rec.headers
        http = None
        if rec.is_http:
            rec.parse_http(auto_decode="none", quirks_mode=True)
            http = rec.http_headers
        ctype = ((http if http is not None else h).get("Content-Type")) or ""
        if not _is_html(ctype):
            yield kinds[int(rtype)]
            continue
        # FastWARC allocates what read() is asked for: asking for the cap (64 MiB by default)
        # cost a page fault per touched page and a munmap per page, 13% of the reading time
        body = rec.reader.read(min(max_body, max(rec.content_length, 0)) + 1)
        if http is not None:
            body = decode_payload(body, http.get("Transfer-Encoding"),
                                  http.get("Content-Encoding"), max_body)
        yield WarcRecord(
            file=path, offset=offset if offset is not None else rec.stream_pos,
            url=_target_uri(h.get("WARC-Target-URI")), record_id=h.get("WARC-Record-ID") or "",
            date=h.get("WARC-Date") or "", content_type=ctype, body=body,
            truncated=h.get("WARC-Truncated"), trec_id=h.get("WARC-TREC-ID"))


_FW_KINDS: dict[int, str] = {}


def _fastwarc_kinds(t: Any) -> dict[int, str]:
    """FastWARC's record types (as ints: they are not hashable) -> kinds of :data:`SKIPPED`."""
    if not _FW_KINDS:
        _FW_KINDS.update({int(k): v for k, v in (
            (t.response, "response"), (t.resource, "resource"), (t.revisit, "revisit"),
            (t.request, "request"), (t.metadata, "metadata record"),
            (t.warcinfo, "warcinfo record"), (t.conversion, "conversion"),
            (t.continuation, "continuation record"))})
    return _FW_KINDS


# -- ARC (the Internet Archive's format before WARC) --------------------------------------------

def arc_date(stamp: str) -> str:
    """An ARC header's ``YYYYMMDDhhmmss`` as a WARC-Date (ISO 8601, UTC), as warcio's
    arc2warc writes it; anything else is returned as it is."""
    s = stamp.strip()[:14]
    if len(s) != 14 or not s.isdigit():
        return stamp
    return f"{s[0:4]}-{s[4:6]}-{s[6:8]}T{s[8:10]}:{s[10:12]}:{s[12:14]}Z"


def _arc_records(stream: Any, path: str, offset: int | None, max_body: int
                 ) -> Iterator[WarcRecord | str]:
    """ARC (version 1) records, for the default reader (FastWARC reads no ARC), read as warcio
    reads them: a header line ``URL IP date content-type length`` (the URL may hold spaces),
    then ``length`` bytes, the HTTP response when the URL is http(s). The URL, date and
    content type fill the fields a WARC record's headers fill."""
    while True:
        start = stream.tell()
        line = stream.readline(1 << 16)
        if not line:
            return
        if not line.strip():
            continue
        parts = line.decode("utf-8", "replace").rstrip().rsplit(" ", 4)
        if len(parts) != 5:
            raise ValueError(f"bad ARC header line: {line[:200]!r}")
        url, _ip, date, arc_ctype, length = parts
        try:
            n = max(int(length), 0)
        except ValueError:
            n = 0
        if url.startswith("filedesc://"):
            # version and field-spec lines, then the rest of the block (as warcio reads it)
            used = len(stream.readline(1 << 16)) + len(stream.readline(1 << 16))
            if n > used:
                stream.seek(n - used, 1)
            yield "ARC file header"
            continue
        block = stream.read(min(n, max_body + (1 << 16)))
        stream.seek(start + len(line) + n)
        ctype, te, ce, body = arc_ctype, None, None, block
        if url.startswith(("http:", "https:")) and block.startswith(b"HTTP/"):
            head, sep, body = block.partition(b"\r\n\r\n")
            if not sep:
                head, _, body = block.partition(b"\n\n")
            fields = _http_fields(head)
            ctype = fields.get("content-type", "")
            te, ce = fields.get("transfer-encoding"), fields.get("content-encoding")
        if not _is_html(ctype):
            yield "response"
            continue
        body = decode_payload(body[: max_body + 1], te, ce, max_body)
        yield WarcRecord(file=path, offset=offset if offset is not None else start, url=url,
                         record_id="", date=arc_date(date), content_type=ctype, body=body)


def _http_fields(head: bytes) -> dict[str, str]:
    """HTTP header fields (lower-case names; the first of repeated ones) after the status
    line, CRLF or LF."""
    out: dict[str, str] = {}
    for ln in head.decode("latin-1").splitlines()[1:]:
        k, sep, v = ln.partition(":")
        if sep:
            out.setdefault(k.strip().lower(), v.strip())
    return out
