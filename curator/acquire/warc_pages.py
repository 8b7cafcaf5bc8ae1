"""The HTML pages of web archives made into documents, shared by ``common_crawl``,
``read_warc`` and ``cc_index``: each page record's body is size-checked, decoded to text
(its charset) and its main text extracted (``extractor``), with an optional quick language
guess that skips the full extraction of a page in none of the wanted languages. What cannot
be a document is quarantined or rejected with its reason, and counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from curator.acquire.base import DownloadSource
from curator.acquire.warc import MAX_MEMBER_BYTES, Reader, WarcRecord, iter_warc
from curator.base.document import Document
from curator.base.urls import public_url
from curator.core.context import ShardContext
from curator.core.params import PositiveFloat, Ratio, StageParams
from curator.extract.charset import DecodeError, decode_html
from curator.extract.extract_html import (
    DEFAULT_EXTRACTOR,
    ExtractOptions,
    Extractor,
    Skipped,
    extract_options,
    extract_text,
)
from curator.extract.timeout import ExtractTimeout

#: ``language_guess_below``'s default: chosen on 7,079 unique real web pages, where every
#: page it skipped was one that ``language_id`` (``min_score`` 0.65) drops after the full
#: extraction, at four times this value too (docs/acquire.md#language-guess).
LANGUAGE_GUESS_BELOW = 0.05


#: The primary subtag of ``<html lang="...">`` (or ``xml:lang``) in a page's first 8 KiB.
_HTML_LANG = re.compile(r"<html\b[^<>]{0,1000}?(?:\s|:)lang\s*=\s*[\"']?\s*([a-z]{2,3})(?![a-z])",
                        re.IGNORECASE)


class _WarcHead(StageParams):
    """How ``read_warc``, ``common_crawl`` and ``cc_index`` turn HTML responses into documents
    (their table lists these first)."""

    extractor: Extractor = DEFAULT_EXTRACTOR
    """Main-text extractor: `trafilatura`, `resiliparse` (about 10-20x faster, lower F1) or
    `justext` (docs/extract.md)."""
    timeout_s: PositiveFloat = 10.0
    """Time limit of extracting one page, in seconds."""
    max_page_mb: PositiveFloat = 10.0
    """Larger pages (after decompression) are skipped as too large."""
    reader: Reader = "fastwarc"
    """WARC parser: `fastwarc` (FastWARC 2.x) or `warcio`; both give the same pages."""
    languages: list[str] | None = None
    """Skip the full extraction of pages whose quick text is confidently in none of these
    languages (ISO codes, as `language_id` takes them); keep `language_id` after the source
    (see [acquire.md](acquire.md#language-guess))."""
    language_guess_below: Ratio = LANGUAGE_GUESS_BELOW
    """With `languages`: "confidently": each of them has a lower probability than this."""


class WarcParams(ExtractOptions, _WarcHead):
    """The WARC sources' parameters: the page handling above, then the extraction options
    ``extract_html`` takes (:class:`ExtractOptions`)."""


class WarcExtracting(DownloadSource):
    """Shared extraction of HTML response records into documents."""

    verify = "gzip"
    extractor: Extractor = DEFAULT_EXTRACTOR
    timeout_s: float = 10.0
    max_bytes: int = 10 * 1024 * 1024
    reader: Reader = "fastwarc"
    languages: list[str] | None = None
    language_guess_below: float = LANGUAGE_GUESS_BELOW
    options: dict[str, Any] = {}

    def setup_extraction(self) -> None:
        """The largest page in bytes, the extraction options, and ``languages`` checked: codes
        the language guess's model knows (a one-line error)."""
        self.max_bytes = int(self.max_page_mb * 1024 * 1024)
        self.options = extract_options(self)
        if self.languages:
            from curator.filters.language_id import check_languages

            check_languages(self.languages, f"{self.name}.languages")

    def _precheck(self, html: str) -> Callable[[str], str | None] | None:
        """The language guess for this page, or ``None`` where there is none to make: no
        ``languages``, or a page that declares one of them (``<html lang="en-GB">``). Such a
        page is extracted in full and ``language_id`` decides, as without the guess; a wrong
        declaration costs an extraction, never a page. (On 1,994 real web pages 964 declared
        English, and the guess would have skipped 11 of them.)"""
        if not self.languages:
            return None
        m = _HTML_LANG.search(html, 0, 8192)
        if m is not None and m.group(1).lower() in self.languages:
            return None
        return self._guess

    def _guess(self, text: str) -> str | None:
        """The language guess on a page's quick text (a reason to skip it, or ``None``)."""
        from curator.filters.language_id import other_language

        lang = other_language(text, self.languages or (), self.language_guess_below)
        return None if lang is None else f"language_guess:{lang}"

    def iterate(self, path: str, ctx: ShardContext) -> Iterator[WarcRecord]:
        # Room for the largest page we accept plus headers; beyond that a record is a bomb.
        return iter_warc(path, ctx, max(MAX_MEMBER_BYTES, 2 * self.max_bytes + (1 << 20)),
                         self.reader)

    def extract(self, rec: WarcRecord, ctx: ShardContext) -> Document | None:
        rid = rec.record_id.strip("<>")
        # ClueWeb's TREC id is what its relevance judgments name; ARC records have no id
        doc_id = (rec.trec_id or rid.removeprefix("urn:uuid:")
                  or f"{public_url(rec.file)}:{rec.offset}")  # no URL credentials in ids
        meta = {"url": rec.url, "warc_record_id": rec.record_id, "date": rec.date,
                "content_type": rec.content_type}
        if rec.trec_id:
            meta["trec_id"] = rec.trec_id
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
            text = extract_text(html, self.extractor, self.timeout_s,
                                precheck=self._precheck(html),
                                **self.options)  # type: ignore[arg-type]
        except Skipped as skip:  # language_id would drop it after the full extraction
            meta["charset"] = charset
            ctx.count("language_guess_skipped")
            ctx.reject(Document(doc_id, skip.text, meta), skip.reason)
            return None
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
