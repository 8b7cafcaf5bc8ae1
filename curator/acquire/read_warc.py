"""``read_warc``: extract HTML main text from any local or remote WARC files (reading and
extraction are shared with ``common_crawl`` in :mod:`curator.acquire.warc`)."""

from __future__ import annotations

from typing import Any, Literal

from curator.acquire.warc import Reader, _WarcExtracting
from curator.core.context import StageContext
from curator.core.errors import ConfigError
from curator.extract.extract_html import DEFAULT_EXTRACTOR, Extractor
from curator.storage.paths import expand_paths


class ReadWarc(_WarcExtracting):
    """Extract HTML main text from WARC files (local or remote paths or globs)."""

    name = "read_warc"

    def __init__(self, paths: str | list[str], extractor: Extractor = DEFAULT_EXTRACTOR,
                 timeout_s: float = 10.0, max_page_mb: float = 10.0, reader: Reader = "fastwarc",
                 download_dir: str = "downloads", retries: int = 5, backoff_s: float = 1.0,
                 on_download_error: Literal["fail", "skip"] = "fail",
                 source: str | None = None,
                 storage_options: dict[str, Any] | None = None) -> None:
        self.paths = paths
        self.extractor = extractor
        self.timeout_s = timeout_s
        self.max_bytes = int(max_page_mb * 1024 * 1024)
        self.reader = reader
        self.download_dir = download_dir
        self.retries = retries
        self.on_download_error = on_download_error
        self.backoff_s = backoff_s
        self.source = source
        self.storage_options = storage_options

    def source_name(self, ctx: StageContext) -> str:
        return self.source or ctx.stage_id

    def urls(self, ctx: StageContext) -> list[str]:
        found = expand_paths(self.paths, self.storage_options, f"{ctx.stage_id}.paths")
        bad = [p for p in found if not p.endswith((".warc", ".warc.gz"))]
        if bad:
            raise ConfigError(f"{ctx.stage_id}.paths: '{bad[0]}' is not a .warc or .warc.gz")
        return found

    def specs(self, ctx: StageContext) -> list[dict[str, Any]]:
        return [{"url": u, "verify": "gzip" if u.endswith(".gz") else "none"}
                for u in self.urls(ctx)]
