"""Text encodings of input files: UTF-8 (with or without a byte order mark), UTF-16 and UTF-32
announced by a byte order mark, and XML files that declare their encoding (or reveal UTF-16/32
by their first characters, XML 1.0 appendix F).

Readers split lines and pages on ASCII bytes (``\\n``, ``<page>``), which UTF-16/32 text does
not contain as such: a UTF-16 JSONL file was quarantined whole and a UTF-16 MediaWiki dump gave
no page at all. :func:`utf8_stream` puts a transcoder in front of such a stream, so every
reader keeps working on UTF-8 bytes; offsets it reports are then offsets in the UTF-8 text.
Bytes that are not valid in the announced encoding raise ``UnicodeDecodeError`` (a reader
quarantines the rest of the file with that reason), never silently replaced.
"""

from __future__ import annotations

import codecs
import io
import re
from typing import IO, Any

#: Byte order marks, longest first (the UTF-32-LE mark starts with the UTF-16-LE one).
BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)
#: ``<?xml`` without a byte order mark, in each wide encoding (XML 1.0, appendix F).
_XML_WIDE: tuple[tuple[bytes, str], ...] = (
    (b"\x00\x00\x00<", "utf-32-be"),
    (b"<\x00\x00\x00", "utf-32-le"),
    (b"\x00<\x00?", "utf-16-be"),
    (b"<\x00?\x00", "utf-16-le"),
)
_XML_DECL = re.compile(rb"""^<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']""")
#: How many bytes :func:`sniff` wants to see.
HEAD = 256


def sniff(head: bytes, xml: bool = False) -> tuple[str, int]:
    """``(encoding, length of its byte order mark)`` of a file starting with ``head``; UTF-8
    when nothing says otherwise. With ``xml``, a BOM-less UTF-16/32 ``<?xml`` and the
    declaration's ``encoding="..."`` count too (the BOM wins over the declaration)."""
    for bom, enc in BOMS:
        if head.startswith(bom):
            return enc, len(bom)
    if xml:
        for start, enc in _XML_WIDE:
            if head.startswith(start):
                return enc, 0
        m = _XML_DECL.match(head)
        if m:
            name = m.group(1).decode("ascii").lower()
            try:
                enc = codecs.lookup(name).name
            except LookupError:
                return "utf-8", 0  # an unknown name: the parser of each page says so
            if enc.startswith(("utf-16", "utf-32")):  # declared wide but no BOM, no wide '<'
                return "utf-8", 0
            return enc, 0
    return "utf-8", 0


def is_utf8(encoding: str) -> bool:
    return codecs.lookup(encoding).name in ("utf-8", "ascii")


class _Transcoder(io.RawIOBase):
    """Reads ``encoding`` from ``raw`` (after ``skip`` BOM bytes of ``head``), gives UTF-8."""

    def __init__(self, raw: IO[bytes], head: bytes, encoding: str) -> None:
        self._raw = raw
        self._pending = head
        self._enc = encoding
        self._dec = codecs.getincrementaldecoder(encoding)("strict")
        self._out = b""
        self._eof = False
        self._error: UnicodeDecodeError | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._out and not self._eof:
            if self._error is not None:
                raise self._error
            chunk = self._pending or self._raw.read(1 << 20)
            self._pending = b""
            try:
                if not chunk:
                    self._eof = True
                    self._out = self._dec.decode(b"", final=True).encode("utf-8")
                else:
                    self._out = self._dec.decode(chunk).encode("utf-8")
            except UnicodeDecodeError as e:  # what came before the bad bytes still comes out
                self._eof = False
                good = codecs.getincrementaldecoder(self._enc)("strict").decode(
                    bytes(e.object[: e.start]))
                self._out, self._error = good.encode("utf-8"), e
        n = min(len(b), len(self._out))
        b[:n] = self._out[:n]
        self._out = self._out[n:]
        return n


class _Prefixed(io.RawIOBase):
    """``head`` then the rest of ``raw``: puts back what was read to sniff the encoding."""

    def __init__(self, raw: IO[bytes], head: bytes) -> None:
        self._raw, self._head = raw, head

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = getattr(self._raw, "read1", self._raw.read)(len(b))
        b[: len(data)] = data
        return len(data)


def utf8_stream(fh: IO[bytes], xml: bool = False) -> tuple[IO[bytes], str]:
    """``(stream of UTF-8 bytes, the file's encoding)`` for a binary stream at its start. A UTF-8
    file comes back as it is (its BOM, if any, left for the reader, whose offsets then stay
    byte offsets in the file); another encoding is transcoded, its BOM dropped."""
    peek = getattr(fh, "peek", None)
    head = b""
    if peek is not None:
        try:
            head = peek(HEAD)[:HEAD]
        except (OSError, ValueError):
            peek = None
    if peek is None:
        head = fh.read(HEAD)
    enc, bom = sniff(head, xml)
    if is_utf8(enc):
        if peek is not None:
            return fh, "utf-8"
        return io.BufferedReader(_Prefixed(fh, head), 1 << 20), "utf-8"  # type: ignore[arg-type]
    rest = b"" if peek is not None else head[bom:]
    if peek is not None:
        fh.read(bom)
    return io.BufferedReader(_Transcoder(fh, rest, enc), 1 << 20), enc  # type: ignore[arg-type]


def decode_text(data: bytes, fallback: str | None = None) -> str:
    """Whole-file decoding by BOM: UTF-8 (BOM dropped), UTF-16/32; bytes that are not UTF-8
    decode as ``fallback`` when given, else raise ``UnicodeDecodeError``."""
    enc, bom = sniff(data[:4])
    try:
        return data[bom:].decode(enc)
    except UnicodeDecodeError:
        if fallback is None or not is_utf8(enc):
            raise
        return data.decode(fallback)


__all__ = ["BOMS", "decode_text", "is_utf8", "sniff", "utf8_stream"]
