"""``wikipedia``: a Wikimedia ``pages-articles`` dump -> one document per article.

Dump files you already have are read directly with ``paths`` (local or remote paths or
globs, like ``read_warc``). Without ``paths`` the dump is found the way the Wikimedia mirror
lays it out::

    <base_url>/<lang>wiki/<date>/dumpstatus.json
    <base_url>/<lang>wiki/<date>/<lang>wiki-<date>-pages-articles1.xml-p1p41242.bz2 ...

``dumpstatus.json`` lists the ``articlesdump`` job's files (the split parts, one shard each, so
workers share a wiki) with their sha1 checksums, which are checked after download. With
``dump_date: latest`` the newest date folder whose articles job is ``done`` is used. The bz2
XML is streamed and cut into pages, each parsed on its own, so a 20 GB dump never sits in
memory and no page is held beyond ``max_doc_mb``; main-namespace pages are kept, redirects
dropped, wikitext turned into plain text.
"""

from __future__ import annotations

import bz2
import os
import re
import xml.etree.ElementTree as ET  # types only: parsing goes through defusedxml
from collections.abc import Iterator
from typing import IO, Any

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as safe_xml
from pydantic import field_validator

from curator.acquire.base import DownloadParams, DownloadSource
from curator.acquire.download import fetch, join_url, listed_url
from curator.base.document import Document
from curator.base.errors import ConfigError, InputError
from curator.core.context import ShardContext, StageContext
from curator.core.params import NonNegInt, PositiveFloat, PositiveInt
from curator.core.stage import DocumentPaths
from curator.extract.timeout import ExtractTimeout, time_limit
from curator.storage.encoding import is_utf8, utf8_stream
from curator.storage.limits import TOO_LARGE
from curator.storage.paths import expand_paths

WIKIMEDIA_BASE_URL = "https://dumps.wikimedia.org"
_DATE = re.compile(r"^\d{8}$")
_LANG = re.compile(r"^[a-z][a-z0-9_-]*$")
_FILE_LANG = re.compile(r"^([a-z][a-z0-9_]*?)wiki-")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


_PAGE_OPEN, _PAGE_CLOSE = b"<page>", b"</page>"
_HEADER_MAX = 4 << 20  # <siteinfo> is a few KB
_CHUNK = 1 << 20
_TITLE = re.compile(rb"<title>([^<]{0,1000})</title>")
_PAGE_ID = re.compile(rb"<id>(\d{1,20})</id>")


def split_pages(fh: IO[bytes], cap: int) -> Iterator[tuple[str, int, bytes]]:
    """Cut a MediaWiki XML stream into ``("header", 0, bytes before the first page)``, then
    ``("page", offset, <page>...</page>)`` per page. A page longer than ``cap`` bytes comes
    back as ``("too_large", offset, its first 64 KB)`` and is read past in 1 MB chunks, never
    held whole; a stream ending inside a page ends with ``("truncated", offset, b"")``.
    Offsets are in the decompressed XML. ``<page>`` cannot occur inside text (XML escapes
    ``<``), so the cut is exact."""
    buf = bytearray()
    base = 0  # stream offset of buf[0]
    state, scan = "head", 0

    read = getattr(fh, "read1", fh.read)  # read1: what is decoded so far comes out before a
    # corrupt or truncated block raises, so pages before the damage are kept

    def fill() -> bool:
        b = read(_CHUNK)
        buf.extend(b)
        return bool(b)

    while True:
        if state in ("head", "out"):
            i = buf.find(_PAGE_OPEN, scan)
            if i < 0:
                if state == "head" and len(buf) > _HEADER_MAX:
                    yield "header", 0, b""
                    state = "out"
                if state == "out":
                    drop = max(0, len(buf) - len(_PAGE_OPEN))
                    del buf[:drop]
                    base += drop
                scan = max(0, len(buf) - len(_PAGE_OPEN))
                if not fill():
                    if state == "head":
                        yield "header", 0, bytes(buf)
                    return
                continue
            if state == "head":
                yield "header", 0, bytes(buf[:i])
            del buf[:i]
            base += i
            state, scan = "in", len(_PAGE_OPEN)
        elif state == "in":
            j = buf.find(_PAGE_CLOSE, scan)
            if j >= 0:
                end = j + len(_PAGE_CLOSE)
                if end > cap:  # the whole page came in one read, still too big to keep
                    yield "too_large", base, bytes(buf[: 1 << 16])
                else:
                    yield "page", base, bytes(buf[:end])
                del buf[:end]
                base += end
                state, scan = "out", 0
                continue
            if len(buf) > cap:
                yield "too_large", base, bytes(buf[: 1 << 16])
                state = "skip"
                continue
            scan = max(len(_PAGE_OPEN), len(buf) - len(_PAGE_CLOSE))
            if not fill():
                yield "truncated", base, b""
                return
        else:  # skip: read past an oversized page
            j = buf.find(_PAGE_CLOSE)
            if j >= 0:
                del buf[: j + len(_PAGE_CLOSE)]
                base += j + len(_PAGE_CLOSE)
                state, scan = "out", 0
                continue
            drop = max(0, len(buf) - len(_PAGE_CLOSE))
            del buf[:drop]
            base += drop
            if not fill():
                return


def _open_dump(path: str) -> IO[bytes]:
    p = path.lower()
    if p.endswith(".bz2"):
        return bz2.open(path, "rb")
    if p.endswith(".gz"):
        import gzip

        return gzip.open(path, "rb")
    return open(path, "rb")


def iter_pages(path: str, ctx: ShardContext, max_page_bytes: int | None = None
               ) -> Iterator[dict[str, Any]]:
    """Stream ``{title, ns, id, redirect, text, timestamp, revision_id}`` per page of a
    (bz2) MediaWiki XML dump; also ``{"siteinfo": {...}}`` first. Each page is parsed on its
    own, so no page is held beyond ``max_page_bytes`` (default: the run's ``max_doc_mb``): a
    bigger one is read past and quarantined ``too_large`` with its title and offset; a page
    that is not well-formed XML is quarantined alone. A truncated or corrupt stream ends the
    file with one quarantine record. A dump in UTF-16/32 (by its BOM or first characters) or in
    an encoding its XML declaration names is transcoded to UTF-8 first (offsets are then in
    the UTF-8 text)."""
    cap = ctx.max_doc_bytes if max_page_bytes is None else max_page_bytes
    n = 0
    enc = "utf-8"
    try:
        with _open_dump(path) as raw:
            fh, enc = utf8_stream(raw, xml=True)
            if not is_utf8(enc):
                ctx.count(f"encoding:{enc}")
            for kind, offset, data in split_pages(fh, cap):
                if kind == "page":
                    try:
                        el = safe_xml.fromstring(data)  # no entity expansion, no DTD fetch
                    except (ET.ParseError, DefusedXmlException) as e:
                        ctx.quarantine(data[:2000], f"bad page XML: {e}", file=path,
                                       offset=offset)
                        ctx.count("wiki_bad_pages")
                        continue
                    n += 1
                    yield _page_record(el)
                elif kind == "header":
                    yield {"siteinfo": _siteinfo(data)}
                elif kind == "too_large":
                    t, i = _TITLE.search(data), _PAGE_ID.search(data)
                    ctx.quarantine(
                        {"title": t.group(1).decode("utf-8", "replace") if t else "",
                         "page_id": i.group(1).decode() if i else ""}, TOO_LARGE,
                        detail=f"page XML longer than max_doc_mb ({cap} bytes); read past "
                               "without being held", file=path, offset=offset)
                    ctx.count("wiki_too_large")
                else:  # truncated
                    raise EOFError(f"the file ends inside a page (at byte {offset} of the XML)")
    except UnicodeDecodeError as e:
        ctx.quarantine(b"", f"text not valid {enc} after {n} pages: {e}", file=path)
        ctx.count("wiki_corrupt_files")
    except (EOFError, OSError) as e:
        ctx.quarantine(b"", f"truncated or corrupt dump after {n} pages: "
                       f"{type(e).__name__}: {e}", file=path)
        ctx.count("wiki_corrupt_files")


def _page_record(el: ET.Element) -> dict[str, Any]:
    revs = el.findall("revision")
    rev = revs[-1] if revs else None
    page: dict[str, Any] = {"redirect": el.find("redirect") is not None,
                            "title": el.findtext("title") or "",
                            "ns": int((el.findtext("ns") or "0").strip() or 0),
                            "id": el.findtext("id") or ""}
    if rev is not None:
        page["revision_id"] = revs[0].findtext("id") or ""
        page["timestamp"] = rev.findtext("timestamp") or ""
        page["text"] = rev.findtext("text") or ""
    return page


def _siteinfo(header: bytes) -> dict[str, Any]:
    a, b = header.find(b"<siteinfo"), header.find(b"</siteinfo>")
    names: dict[str, str] = {}
    base = ""
    if a >= 0 and b > a:
        try:
            si = safe_xml.fromstring(header[a: b + len(b"</siteinfo>")])
        except (ET.ParseError, DefusedXmlException):
            return {"namespaces": names, "base": base}
        for ns in si.iter():
            if _local(ns.tag) == "namespace":
                names[ns.get("key", "")] = ns.text or ""
            elif _local(ns.tag) == "base":
                base = ns.text or ""
    return {"namespaces": names, "base": base}


class Wikipedia(DownloadSource):
    """Download a Wikipedia pages-articles dump and turn articles into plain text."""

    name = "wikipedia"
    verify = "bz2"

    class Params(DownloadParams):
        language: str | None = None
        """Wiki code (`en`, `zh_yue`...); `null`: from the file name with `paths`, else `en`."""
        dump_date: str = "latest"
        """`YYYYMMDD`, or `latest`: the newest date folder (listed from the mirror) whose articles
        job is `done`."""
        base_url: str = WIKIMEDIA_BASE_URL
        """Where the dumps are (a mirror: HTTP(S), S3 or a local folder)."""
        limit_per_file: PositiveInt | None = None
        """Stop after this many articles per dump file (tests, previews)."""
        min_chars: NonNegInt = 1
        """Shorter articles are rejected (`wiki_too_short`)."""
        timeout_s: PositiveFloat = 30.0
        """Time limit of converting one article's wikitext, in seconds."""
        paths: DocumentPaths | list[DocumentPaths] | None = None
        """Dump files (paths, globs, URLs, or a list); when set, `dump_date` and `base_url` are not
        used."""
        max_doc_mb: PositiveFloat | None = None
        """Articles larger than this are quarantined as too large (default: the run's)."""
        drop_sections: list[str] | None = None
        """Section titles (any case) removed with their content up to the next heading of the same
        level; `null`: the names for the wiki's language (`SECTIONS`, 29 languages, above) plus
        the English ones (References, External links, Further reading, See also, Notes,
        Bibliography, Sources, Footnotes, Citations, ...); `[]` keeps every section."""

        @field_validator("language")
        @classmethod
        def _wiki_code(cls, v: str | None) -> str | None:
            if v is not None and not _LANG.match(v):
                raise ValueError(f"'{v}' is not a wiki code (en, zh_yue)")
            return v

        @field_validator("dump_date")
        @classmethod
        def _date(cls, v: str) -> str:
            if v != "latest" and not _DATE.match(v):
                raise ValueError(f"'{v}' must be YYYYMMDD or 'latest'")
            return v

    def setup(self) -> None:
        self.explicit_language = self.language
        self.language = self.language or "en"
        self.drop_sections = (frozenset(x.lower() for x in self.drop_sections)  # type: ignore[assignment]
                              if self.drop_sections is not None else None)

    @property
    def wiki(self) -> str:
        return f"{self.language}wiki"

    def source_name(self, ctx: StageContext) -> str:
        return self.source or "wikipedia"

    # -- listing (root) ------------------------------------------------------------------------
    def _status(self, date: str, ctx: StageContext) -> dict[str, Any] | None:
        import orjson

        url = join_url(self.base_url, self.wiki, date, "dumpstatus.json")
        dest = os.path.join(ctx.stage_dir, "listing", self.wiki, date, "dumpstatus.json")
        if os.path.exists(dest):
            os.unlink(dest)  # a status changes while a dump runs: always fetch it again
        try:
            res = fetch(url, dest, retries=self.retries, backoff=self.backoff_s,
                        timeout=self.http_timeout_s, copy_local=True)
        except InputError:
            return None
        with open(res.path, "rb") as f:
            try:
                return orjson.loads(f.read())
            except orjson.JSONDecodeError as e:
                raise InputError(f"{url}: not valid JSON: {e}") from None

    def _dates(self) -> list[str]:
        import fsspec

        root = join_url(self.base_url, self.wiki)
        try:
            fs, path = fsspec.core.url_to_fs(root)
            names = [os.path.basename(p.rstrip("/")) for p in fs.ls(path, detail=False)]
        except (OSError, ValueError) as e:
            raise InputError(f"{root}: cannot list dump dates: {e}") from None
        return sorted((n for n in names if _DATE.match(n)), reverse=True)

    def specs(self, ctx: StageContext) -> list[dict[str, Any]]:
        if self.paths is not None:
            return self._path_specs(ctx)
        dates = [self.dump_date] if self.dump_date != "latest" else self._dates()[:10]
        for date in dates:
            status = self._status(date, ctx)
            if status is None:
                continue
            jobs = status.get("jobs", {})
            for job in ("articlesdump", "articlesdumprecombine"):
                j = jobs.get(job) or {}
                if j.get("status") == "done" and j.get("files"):
                    return self._file_specs(date, j["files"])
        raise InputError(
            f"{join_url(self.base_url, self.wiki)}: no finished pages-articles dump for "
            f"{'dates ' + ', '.join(dates[:3]) if dates else 'any date'}")

    def _path_specs(self, ctx: StageContext) -> list[dict[str, Any]]:
        """Dump files given directly: one shard each, the language from ``language`` or the
        file name (``dewiki-20240101-pages-articles.xml.bz2`` is German), else English."""
        found = expand_paths(self.paths or [], self.storage_options, f"{ctx.stage_id}.paths")
        bad = [p for p in found if ".xml" not in os.path.basename(p).lower()
               or not p.lower().endswith((".xml", ".bz2", ".gz"))]
        if bad:
            raise ConfigError(f"{ctx.stage_id}.paths: '{bad[0]}' is not a MediaWiki XML dump "
                              "(a .xml file, bz2 or gzip compressed or not)")
        out = []
        for u in found:
            m = _FILE_LANG.match(os.path.basename(u))
            lang = self.explicit_language or (m.group(1) if m else "en")
            out.append({"url": u, "language": lang,
                        "verify": "bz2" if u.lower().endswith(".bz2") else "none"})
        return out

    def _file_specs(self, date: str, files: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for fname in sorted(files, key=_part_order):
            if "pages-articles" not in fname or "multistream" in fname:
                continue
            info = files[fname]
            rel = f"{self.wiki}/{date}/{fname}"
            spec: dict[str, Any] = {"url": listed_url(self.base_url, rel, join_url(
                self.base_url, self.wiki, date, "dumpstatus.json")), "rel": rel, "date": date}
            if info.get("sha1"):
                spec["checksum"] = ["sha1", info["sha1"]]
            elif info.get("md5"):
                spec["checksum"] = ["md5", info["md5"]]
            out.append(spec)
        if not out:
            raise InputError(f"{self.wiki} {date}: dumpstatus.json lists no pages-articles file")
        return out

    # -- reading (workers) ---------------------------------------------------------------------
    def read(self, shard: Any, ctx: ShardContext) -> Iterator[Document]:
        res = self.fetch_or_skip(shard, ctx)
        if res is None:
            return
        import mwparserfromhell  # noqa: F401  (imported outside the per-article time limit)

        from curator.extract.wikitext import drop_sections_for, wikitext_to_text

        drop = {"file", "image", "category", "media"}
        lang = shard.data.get("language", self.language)
        sections = (self.drop_sections if self.drop_sections is not None
                    else drop_sections_for(lang))
        wiki = f"{lang}wiki"
        host = f"https://{lang}.wikipedia.org/wiki/"
        source = self.source_name(ctx)
        kept = 0
        for page in iter_pages(res.path, ctx, ctx.doc_cap(self.max_doc_mb)):
            if "siteinfo" in page:
                names = page["siteinfo"]["namespaces"]
                drop |= {names.get(k, "").lower() for k in ("6", "14", "-2") if names.get(k)}
                base = page["siteinfo"]["base"]
                if base.startswith("http") and "/wiki/" in base:
                    host = base.split("/wiki/")[0] + "/wiki/"
                continue
            if page.get("ns") != 0:
                ctx.count("wiki_other_namespace")
                continue
            if page["redirect"]:
                ctx.count("wiki_redirects")
                continue
            title = page.get("title", "")
            meta = {"title": title, "page_id": page.get("id", ""),
                    "url": host + title.replace(" ", "_"), "language": lang,
                    "revision_id": page.get("revision_id", ""),
                    "timestamp": page.get("timestamp", "")}
            try:
                with time_limit(self.timeout_s):
                    text = wikitext_to_text(page.get("text", ""), frozenset(drop), sections)
            except ExtractTimeout:
                ctx.quarantine(meta, f"wikitext conversion timed out after {self.timeout_s}s",
                               file=res.path)
                ctx.count("extract_timeouts")
                continue
            except ImportError:  # the install, not the page (see DownloadSource.read)
                raise
            except Exception as e:
                ctx.quarantine(meta, f"wikitext conversion failed: {type(e).__name__}: {e}",
                               file=res.path)
                continue
            meta["source"] = source
            doc = Document(f"{wiki}:{meta['page_id']}", text, meta)
            if len(text) < self.min_chars:
                ctx.reject(doc, "wiki_too_short")
                continue
            yield doc
            kept += 1
            if self.limit_per_file is not None and kept >= self.limit_per_file:
                break
        if self.delete_after_read and not res.local:
            os.unlink(res.path)


def _part_order(name: str) -> tuple[int, str]:
    m = re.search(r"pages-articles(\d+)", name)
    return (int(m.group(1)) if m else 0, name)


__all__ = ["Wikipedia", "iter_pages"]
