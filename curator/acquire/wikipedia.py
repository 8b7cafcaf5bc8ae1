"""``wikipedia``: a Wikimedia ``pages-articles`` dump -> one document per article.

The dump is found the way the Wikimedia mirror lays it out::

    <base_url>/<lang>wiki/<date>/dumpstatus.json
    <base_url>/<lang>wiki/<date>/<lang>wiki-<date>-pages-articles1.xml-p1p41242.bz2 ...

``dumpstatus.json`` lists the ``articlesdump`` job's files (the split parts, one shard each, so
workers share a wiki) with their sha1 checksums, which are checked after download. With
``dump_date: latest`` the newest date folder whose articles job is ``done`` is used. The bz2
XML is streamed (``iterparse``, elements cleared as they are read), so a 20 GB dump never sits
in memory; main-namespace pages are kept, redirects dropped, wikitext turned into plain text.
"""

from __future__ import annotations

import bz2
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any, Literal

from curator.acquire.base import DownloadSource
from curator.acquire.download import fetch, join_url
from curator.core.context import ShardContext, StageContext
from curator.core.document import Document
from curator.core.errors import ConfigError, InputError
from curator.extract.timeout import ExtractTimeout, time_limit

WIKIMEDIA_BASE_URL = "https://dumps.wikimedia.org"
_DATE = re.compile(r"^\d{8}$")
_LANG = re.compile(r"^[a-z][a-z0-9_-]*$")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def iter_pages(path: str, ctx: ShardContext) -> Iterator[dict[str, Any]]:
    """Stream ``{title, ns, id, redirect, text, timestamp, revision_id}`` per page of a
    (bz2) MediaWiki XML dump; also ``{"siteinfo": {...}}`` first. A truncated or corrupt
    stream ends the file with one quarantine record."""
    opener = bz2.open if path.endswith(".bz2") else open
    n = 0
    try:
        with opener(path, "rb") as fh:
            events = ET.iterparse(fh, events=("start", "end"))
            _, root = next(events)
            ns_names: dict[str, str] = {}
            page: dict[str, Any] = {}
            in_rev = False
            for ev, el in events:
                tag = _local(el.tag)
                if ev == "start":
                    if tag == "page":
                        page = {"redirect": False}
                    elif tag == "revision":
                        in_rev = True
                    continue
                if tag == "namespace":
                    ns_names[el.get("key", "")] = el.text or ""
                elif tag == "siteinfo":
                    yield {"siteinfo": {"namespaces": ns_names,
                                        "base": el.findtext("{*}base") or ""}}
                    root.clear()
                elif tag == "title":
                    page["title"] = el.text or ""
                elif tag == "ns":
                    page["ns"] = int(el.text or 0)
                elif tag == "id" and not in_rev and "id" not in page:
                    page["id"] = el.text or ""
                elif tag == "id" and in_rev and "revision_id" not in page:
                    page["revision_id"] = el.text or ""
                elif tag == "redirect":
                    page["redirect"] = True
                elif tag == "timestamp" and in_rev:
                    page["timestamp"] = el.text or ""
                elif tag == "text" and in_rev:
                    page["text"] = el.text or ""
                elif tag == "revision":
                    in_rev = False
                elif tag == "page":
                    n += 1
                    yield page
                    root.clear()  # free everything parsed so far
    except (EOFError, OSError, ET.ParseError) as e:
        ctx.quarantine(b"", f"truncated or corrupt dump after {n} pages: "
                       f"{type(e).__name__}: {e}", file=path)
        ctx.count("wiki_corrupt_files")


class Wikipedia(DownloadSource):
    """Download a Wikipedia pages-articles dump and turn articles into plain text."""

    name = "wikipedia"
    verify = "bz2"

    def __init__(self, language: str = "en", dump_date: str = "latest",
                 base_url: str = WIKIMEDIA_BASE_URL, limit_per_file: int | None = None,
                 min_chars: int = 1, timeout_s: float = 30.0, download_dir: str = "downloads",
                 delete_after_read: bool = False, retries: int = 5, backoff_s: float = 1.0,
                 on_download_error: Literal["fail", "skip"] = "fail",
                 http_timeout_s: float = 60.0, source: str | None = None) -> None:
        if not _LANG.match(language):
            raise ConfigError(f"wikipedia: language '{language}' is not a wiki code (en, zh_yue)")
        if dump_date != "latest" and not _DATE.match(dump_date):
            raise ConfigError(f"wikipedia: dump_date '{dump_date}' must be YYYYMMDD or 'latest'")
        self.language = language
        self.dump_date = dump_date
        self.base_url = base_url
        self.limit_per_file = limit_per_file
        self.min_chars = min_chars
        self.timeout_s = timeout_s
        self.download_dir = download_dir
        self.delete_after_read = delete_after_read
        self.retries = retries
        self.on_download_error = on_download_error
        self.backoff_s = backoff_s
        self.http_timeout_s = http_timeout_s
        self.source = source

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

    def _file_specs(self, date: str, files: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for fname in sorted(files, key=_part_order):
            if "pages-articles" not in fname or "multistream" in fname:
                continue
            info = files[fname]
            rel = f"{self.wiki}/{date}/{fname}"
            spec: dict[str, Any] = {"url": join_url(self.base_url, rel), "rel": rel,
                                    "date": date}
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

        from curator.extract.wikitext import wikitext_to_text

        drop = {"file", "image", "category", "media"}
        host = f"https://{self.language}.wikipedia.org/wiki/"
        source = self.source_name(ctx)
        kept = 0
        for page in iter_pages(res.path, ctx):
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
                    "url": host + title.replace(" ", "_"), "language": self.language,
                    "revision_id": page.get("revision_id", ""),
                    "timestamp": page.get("timestamp", "")}
            try:
                with time_limit(self.timeout_s):
                    text = wikitext_to_text(page.get("text", ""), frozenset(drop))
            except ExtractTimeout:
                ctx.quarantine(meta, f"wikitext conversion timed out after {self.timeout_s}s",
                               file=res.path)
                ctx.count("extract_timeouts")
                continue
            except Exception as e:
                ctx.quarantine(meta, f"wikitext conversion failed: {type(e).__name__}: {e}",
                               file=res.path)
                continue
            meta["source"] = source
            doc = Document(f"{self.wiki}:{meta['page_id']}", text, meta)
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
