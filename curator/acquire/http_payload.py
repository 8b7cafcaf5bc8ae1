"""HTTP payloads of archived responses, decoded as a browser would see them: chunked transfer
encoding and ``Content-Encoding`` (gzip, deflate, br) undone, bounded so that a decompression
bomb stops at the page size cap. One decoder for every archive reader (FastWARC, warcio, ARC),
so they give the same bodies whichever library parsed the record.
"""

from __future__ import annotations

import zlib

#: Compressed bytes fed to the decompressor at a time.
_CHUNK_IN = 1 << 16


def decode_payload(body: bytes, transfer: str | None, content: str | None, cap: int) -> bytes:
    """Undo HTTP chunked transfer encoding and ``Content-Encoding`` (gzip, deflate, br; in the
    reverse of the order listed) as warcio's ``content_stream()`` does: a payload that does not
    decode from its first byte is kept as it is (crawlers often store the decoded page under
    the original headers, as ClueWeb09 does), one that breaks off later keeps what decoded.
    At most ``cap + 1`` bytes come out of each step (a decompression bomb stops there and is
    then "page too large")."""
    if transfer and "chunked" in transfer.lower():
        body = _dechunk(body)
    if content:
        for coding in reversed([c.strip().lower() for c in content.split(",")]):
            body = _decode_content(body, coding, cap)
    return body


def _dechunk(data: bytes) -> bytes:
    out: list[bytes] = []
    pos = 0
    n = len(data)
    while pos < n:
        eol = data.find(b"\n", pos, pos + 1024)
        if eol < 0:
            break
        size_s = data[pos:eol].split(b";", 1)[0].strip()
        try:
            size = int(size_s, 16)
        except ValueError:
            size = -1
        if size < 0:
            break
        if size == 0:
            return b"".join(out)
        start = eol + 1
        out.append(data[start:start + size])
        pos = start + size
        if data.startswith(b"\r\n", pos):
            pos += 2
        elif data.startswith(b"\n", pos):
            pos += 1
    # not chunked from the start: the payload as it is; broken later: what was read
    return b"".join(out) if out else data


def _decode_content(data: bytes, coding: str, cap: int) -> bytes:
    if coding in ("gzip", "x-gzip"):
        tries = (31,)
    elif coding == "deflate":
        tries = (15, -15)  # zlib-wrapped as the RFC says, or raw deflate as servers send
    elif coding == "br":
        return _brotli(data, cap)
    else:  # identity, or a coding no browser knows either: leave the bytes alone
        return data
    for wbits in tries:
        d = zlib.decompressobj(wbits)
        out: list[bytes] = []
        size = 0
        try:
            for i in range(0, len(data), _CHUNK_IN):
                buf = data[i:i + _CHUNK_IN]
                while buf and size <= cap:  # bounded: never more than cap + 1 bytes out
                    piece = d.decompress(buf, cap + 1 - size)
                    out.append(piece)
                    size += len(piece)
                    buf = d.unconsumed_tail
                if d.eof or size > cap:
                    break
        except zlib.error:
            if not size:  # not encoded from its first byte: the next way, or as it is
                continue
        return b"".join(out)
    return data


def _brotli(data: bytes, cap: int) -> bytes:
    try:
        import brotli
    except ImportError:  # pragma: no cover - brotli is a dependency of the extract extra
        return data
    d = brotli.Decompressor()
    try:
        out = d.process(data, output_buffer_limit=cap + 1)
    except brotli.error:
        return data
    return out[: cap + 1]

