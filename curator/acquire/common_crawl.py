"""``common_crawl``: download a Common Crawl snapshot's WARC files and extract their HTML main
text (WARC reading and extraction are shared with ``read_warc`` in :mod:`curator.acquire.warc`)."""

from __future__ import annotations

from typing import Any

from curator.acquire.download import fetch, join_url, listed_url
from curator.acquire.warc import CC_BASE_URL, SNAPSHOT_NAME, Reader, WarcExtracting, parse_ranges
from curator.core.context import StageContext
from curator.core.errors import ConfigError, InputError
from curator.extract.extract_html import DEFAULT_EXTRACTOR, Extractor


class CommonCrawl(WarcExtracting):
    """Download a Common Crawl snapshot's WARC files and extract their HTML main text."""

    name = "common_crawl"
    #: 2: the extraction default changed (fast + favor_recall, text shaping, fallback).
    #: 3: extraction's fast="auto" and short-output fallback (issue 22: forums, listings).
    version = 3

    def __init__(self, snapshot: str, base_url: str = CC_BASE_URL, files: str | None = None,
                 limit: int | None = None, extractor: Extractor = DEFAULT_EXTRACTOR,
                 timeout_s: float = 10.0, max_page_mb: float = 10.0, reader: Reader = "fastwarc",
                 **download: Any) -> None:
        """``**download``: the :class:`~curator.acquire.base.DownloadParams`."""
        super().__init__(**download)
        if not SNAPSHOT_NAME.match(snapshot):
            raise ConfigError(f"common_crawl: snapshot '{snapshot}' is not like CC-MAIN-2024-10")
        if limit is not None and limit < 1:
            raise ConfigError("common_crawl: limit must be at least 1")
        if files:
            try:  # syntax errors now, bounds once the listing is read
                parse_ranges(files, 1 << 62)
            except ConfigError as e:
                raise ConfigError(f"common_crawl: {e}") from None
        self.snapshot = snapshot
        self.base_url = base_url
        self.files = files
        self.limit = limit
        self.extractor = extractor
        self.timeout_s = timeout_s
        self.max_bytes = int(max_page_mb * 1024 * 1024)
        self.reader = reader

    def source_name(self, ctx: StageContext) -> str:
        return self.source or "common_crawl"

    def specs(self, ctx: StageContext) -> list[dict[str, Any]]:
        import gzip
        import os

        listing = f"crawl-data/{self.snapshot}/warc.paths.gz"
        url = join_url(self.base_url, listing)
        dest = os.path.join(ctx.output_path(self.download_dir), ctx.stage_id, listing)
        res = fetch(url, dest, verify="gzip", retries=self.retries, backoff=self.backoff_s,
                    timeout=self.http_timeout_s, storage_options=self.storage_options)
        with gzip.open(res.path, "rt") as f:
            paths = [ln.strip() for ln in f if ln.strip()]
        if not paths:
            raise InputError(f"{url}: the listing is empty")
        idx = parse_ranges(self.files, len(paths)) if self.files else list(range(len(paths)))
        if self.limit is not None:
            idx = idx[: self.limit]
        return [{"url": listed_url(self.base_url, paths[i], url), "rel": paths[i].strip(),
                 "index": i} for i in idx]
