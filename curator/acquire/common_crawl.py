"""``common_crawl``: download a Common Crawl snapshot's WARC files and extract their HTML main
text (WARC reading and extraction are shared with ``read_warc``: :mod:`curator.acquire.warc`,
:mod:`curator.acquire.warc_pages`)."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from curator.acquire.base import DownloadParams
from curator.acquire.download import fetch, join_url, listed_url
from curator.acquire.warc import CC_BASE_URL, SNAPSHOT_NAME, parse_ranges
from curator.acquire.warc_pages import WarcExtracting, WarcParams
from curator.base.errors import ConfigError, InputError
from curator.core.context import StageContext
from curator.core.params import PositiveInt


class CommonCrawl(WarcExtracting):
    """Download a Common Crawl snapshot's WARC files and extract their HTML main text."""

    name = "common_crawl"

    class Params(DownloadParams, WarcParams):
        snapshot: str
        """The crawl, like ``CC-MAIN-2024-10``."""
        base_url: str = CC_BASE_URL
        """Mirror root (`s3://commoncrawl` works with `storage_options`)."""
        files: str | None = None
        """Range expression over the listing, as in NeMo's launcher: `"0,3,5-7"`."""
        limit: PositiveInt | None = None
        """At most this many files (after `files`)."""

        @field_validator("snapshot")
        @classmethod
        def _snapshot_name(cls, v: str) -> str:
            if not SNAPSHOT_NAME.match(v):
                raise ValueError(f"'{v}' is not like CC-MAIN-2024-10")
            return v

    def setup(self) -> None:
        if self.files:
            try:  # syntax errors now, bounds once the listing is read
                parse_ranges(self.files, 1 << 62)
            except ConfigError as e:
                raise ConfigError(f"common_crawl: {e}") from None
        self.setup_extraction()

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
