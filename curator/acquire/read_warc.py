"""``read_warc``: extract HTML main text from any local or remote web archives (WARC, gzip or
LZ4 compressed or not, and ARC; reading and extraction are shared with ``common_crawl``:
:mod:`curator.acquire.warc`, :mod:`curator.acquire.warc_pages`)."""

from __future__ import annotations

from typing import Any

from curator.acquire.base import FetchParams
from curator.acquire.warc import ARCHIVE_SUFFIXES, archive_kind
from curator.acquire.warc_pages import WarcExtracting, WarcParams
from curator.base.errors import ConfigError
from curator.core.context import StageContext
from curator.core.stage import DocumentPaths
from curator.storage.paths import expand_paths


class ReadWarc(WarcExtracting):
    """Extract HTML main text from web archives (local or remote paths or globs)."""

    name = "read_warc"
    # no delete_after_read / http_timeout_s: it reads in place
    class Params(FetchParams, WarcParams):
        paths: DocumentPaths | list[DocumentPaths]
        """Web archives (.warc, .warc.gz, .arc, .arc.gz, .warc.lz4...): paths, globs or URLs."""

    def setup(self) -> None:
        self.setup_extraction()

    def urls(self, ctx: StageContext) -> list[str]:
        found = expand_paths(self.paths, self.storage_options, f"{ctx.stage_id}.paths")
        bad = [p for p in found if archive_kind(p) is None]
        if bad:
            raise ConfigError(f"{ctx.stage_id}.paths: '{bad[0]}' is not a web archive (names "
                              f"end in {', '.join(ARCHIVE_SUFFIXES)})")
        return found

    def specs(self, ctx: StageContext) -> list[dict[str, Any]]:
        return [{"url": u, "verify": "gzip" if u.lower().endswith(".gz") else "none"}
                for u in self.urls(ctx)]
