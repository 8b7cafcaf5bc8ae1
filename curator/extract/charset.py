"""Bytes -> text as browsers decode a page: byte order mark, HTTP charset, ``<meta charset>``,
UTF-8, a statistical guess, labels read as the WHATWG encoding standard says."""

from __future__ import annotations

import codecs
import re

_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_:.\-]+)""", re.IGNORECASE)


_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([a-zA-Z0-9_:.\-]+)", re.IGNORECASE)


class DecodeError(ValueError):
    """No charset decodes the page cleanly."""


#: WHATWG encoding labels Python does not know.
_LABELS = {"x-sjis": "cp932", "windows-31j": "cp932", "x-gbk": "gb18030",
           "x-euc-jp": "euc_jp", "x-cp1251": "cp1251", "x-cp1250": "cp1250",
           "unicode-1-1-utf-8": "utf-8", "x-unicode20utf8": "utf-8",
           "x-mac-cyrillic": "mac-cyrillic"}


#: What browsers (the WHATWG encoding standard) decode a label's pages as: the superset the
#: servers meant. latin-1/ascii are windows-1252; GB2312/GBK pages are decoded by the GB18030
#: decoder; Shift_JIS is windows-31j (cp932), EUC-KR is windows-949, Big5 includes HKSCS.
_WHATWG = {"latin-1": "cp1252", "iso8859-1": "cp1252", "ascii": "cp1252",
           "gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949",
           "big5": "big5hkscs", "iso8859-9": "cp1254", "tis-620": "cp874",
           "iso8859-11": "cp874"}


#: Byte order marks, which decide a page's encoding before any label (WHATWG "decode").
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def _norm_codec(name: str | None) -> str | None:
    if not name:
        return None
    label = name.strip().lower()
    try:
        codec = codecs.lookup(_LABELS.get(label, label)).name
    except LookupError:
        return None
    return _WHATWG.get(codec, codec)


def decode_html(body: bytes, content_type: str | None = None) -> tuple[str, str]:
    """Decode a page as browsers do: a byte order mark, else the HTTP header's charset, else
    a ``<meta charset>`` (or ``http-equiv``), else UTF-8, else a statistical guess; labels
    mean what the WHATWG encoding standard says (GB2312 pages decode as GB18030, Shift_JIS
    as windows-31j...). Returns ``(text, charset)`` (the text without its BOM); raises
    :class:`DecodeError` only for binary content (NUL bytes) that none of them decodes; other
    pages that none decodes cleanly are read as a browser reads them (:func:`_browser_fallback`)."""
    for bom, cs in _BOMS:
        if body.startswith(bom):
            try:
                return body[len(bom):].decode(cs), cs
            except UnicodeDecodeError:
                break  # a BOM followed by something else: the labels decide
    tried: list[str] = []
    candidates: list[str | None] = []
    if content_type:
        m = _HEADER_CHARSET.search(content_type)
        candidates.append(_norm_codec(m.group(1)) if m else None)
    m2 = _META_CHARSET.search(body[:4096])
    candidates.append(_norm_codec(m2.group(1).decode("ascii", "ignore")) if m2 else None)
    candidates.append("utf-8")
    for cs in candidates:
        if cs is None or cs in tried:
            continue
        tried.append(cs)
        try:
            return body.decode(cs), cs
        except (UnicodeDecodeError, LookupError):
            continue
    from resiliparse.parse.encoding import detect_encoding

    guess = _norm_codec(detect_encoding(body[:65536]))
    if guess and guess not in tried:
        tried.append(guess)
        try:
            return body.decode(guess), guess
        except (UnicodeDecodeError, LookupError):
            pass
    if b"\x00" in body:
        raise DecodeError(f"no charset decodes the page (tried {', '.join(tried)}; NUL bytes: "
                          "binary content)")
    return _browser_fallback(body)


def _c1(err: UnicodeError) -> tuple[str, int]:
    """windows-1252's five unassigned bytes as the C1 controls the WHATWG index maps them to."""
    if not isinstance(err, UnicodeDecodeError):
        raise err
    return "".join(chr(b) for b in err.object[err.start:err.end]), err.end


codecs.register_error("curator-c1", _c1)


def _browser_fallback(body: bytes) -> tuple[str, str]:
    """What a browser shows for a page that no label or guess decodes cleanly: UTF-8 with
    U+FFFD for its broken bytes when most of its non-ASCII text is valid UTF-8 (a UTF-8 page
    with a few bad bytes), else windows-1252, the WHATWG default for unlabelled pages (a
    latin-1 page with a stray byte). The charset says so: ``utf-8+replace`` or
    ``cp1252+c1``. 25 of 7,079 unique real web pages (CleanEval, dragnet) were quarantined
    before this."""
    text = body.decode("utf-8", "replace")
    replaced = text.count("\ufffd")
    bad = replaced - body.count("\ufffd".encode())
    # non-ASCII characters other than U+FFFD, counted without a list of them (a 10 MB page)
    valid = len(text) - len(text.encode("ascii", "ignore")) - replaced
    if valid > bad:
        return text, "utf-8+replace"
    return body.decode("cp1252", "curator-c1"), "cp1252+c1"
