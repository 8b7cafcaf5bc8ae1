"""The custom-source API: list URLs -> download -> iterate records -> extract.

Every built-in acquire source (Common Crawl, WARC files, Wikipedia, arXiv) is a
:class:`DownloadSource`; a new public data set needs only the three methods below::

    class GutenbergTexts(DownloadSource):
        name = "gutenberg"

        def __init__(self, base_url: str = "https://example.org/books", limit: int = 10):
            self.base_url, self.limit = base_url, limit

        def urls(self, ctx):                       # on the root, cheap
            return [f"{self.base_url}/{i}.txt.gz" for i in range(self.limit)]

        def iterate(self, path, ctx):              # on a worker, streaming
            with gzip.open(path, "rt") as f:
                yield {"name": os.path.basename(path), "text": f.read()}

        def extract(self, record, ctx):            # one record -> Document | None
            return Document(record["name"], record["text"], {})

``read`` then downloads each URL resumably (retries, backoff, HTTP Range resume, verification
before the file counts as done) into ``<work_dir>/<download_dir>/<stage id>/``, streams the
records and turns them into documents. An exception in ``extract`` quarantines that one record
(with the file and the reason) instead of failing the shard; downloads live outside the stage
folder, so changing an extraction parameter does not download again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field

from curator.acquire.download import DownloadError, FetchResult, Verify, fetch, is_local_url
from curator.base.document import Document
from curator.base.redact import redact
from curator.core.context import ShardContext, StageContext
from curator.core.params import NonNegInt, PositiveFloat, StageParams
from curator.core.stage import OutputDir, ShardSpec, Source


class FetchParams(StageParams):
    """How files are fetched: parameters of every built-in source that reads files."""

    download_dir: OutputDir = "downloads"
    """Folder (relative: under work_dir) for downloads."""
    retries: NonNegInt = 5
    """Attempts after the first failed one, with exponential backoff from ``backoff_s``."""
    backoff_s: Annotated[float, Field(ge=0)] = 1.0
    """First wait between attempts, in seconds (doubled each time)."""
    on_download_error: Literal["fail", "skip"] = "fail"
    """fail: a file that cannot be downloaded fails the run (a rerun retries it; finished
    shards are kept). skip: quarantine the URL, count ``files_failed`` and go on."""
    source: str | None = None
    """``meta.source`` of the documents (default: the source's name, or the stage id)."""
    storage_options: dict[str, Any] | None = None
    """fsspec options for remote URLs (``{anon: true}``, a credentials profile...)."""


class DownloadParams(FetchParams):
    """The download settings of the sources that fetch over HTTP(S), S3 or local paths."""

    delete_after_read: bool = False
    """Delete a downloaded file once its shard has been read (saves disk on big crawls)."""
    http_timeout_s: PositiveFloat = 60.0
    """Connect/read timeout of one HTTP request, in seconds (a stalled one is retried)."""


class DownloadSource(Source):
    """Base class of sources that download files and extract documents from their records.
    A built-in source declares ``class Params(DownloadParams)``; a custom one written with its
    own ``__init__`` keeps the download settings below as fixed class attributes."""

    #: How a finished download is checked before it counts as done.
    verify: Verify = "none"

    # -- the three methods a custom source implements -----------------------------------------
    def urls(self, ctx: StageContext) -> list[str]:
        """The files to fetch (runs once, on the root)."""
        raise NotImplementedError

    def iterate(self, path: str, ctx: ShardContext) -> Iterator[Any]:
        """Stream raw records from one downloaded file."""
        raise NotImplementedError

    def extract(self, record: Any, ctx: ShardContext) -> Document | None:
        """One raw record to a document (``None``: skip it)."""
        raise NotImplementedError

    # -- optional hooks --------------------------------------------------------------------------
    def specs(self, ctx: StageContext) -> list[dict[str, Any]]:
        """Per-file shard data; by default ``{"url": u}`` for each of :meth:`urls`. Override
        to attach checksums (``"checksum": [algo, hex]``), a relative path (``"rel"``), a
        verification kind (``"verify"``) or a byte range (``"range": [start, length]``: only
        those bytes are fetched, with HTTP Range requests)."""
        return [{"url": u} for u in self.urls(ctx)]

    def source_name(self, ctx: StageContext) -> str:
        return self.source or ctx.stage_id

    def shard_records(self, shard: ShardSpec, path: str, ctx: ShardContext) -> Iterator[Any]:
        """The raw records of ``shard`` from its downloaded file; by default
        :meth:`iterate` (a source whose shards are parts of files picks its records here)."""
        return self.iterate(path, ctx)

    # -- Source API ---------------------------------------------------------------------------
    def shards(self, ctx: StageContext) -> list[ShardSpec]:
        specs = self.specs(ctx)
        for d in specs:  # workers may run elsewhere: pin local paths down on the root
            if is_local_url(d["url"]):
                d["url"] = os.path.abspath(d["url"].removeprefix("file://"))
        return [ShardSpec(ctx.shard_name(i), d) for i, d in enumerate(specs)]

    def download(self, spec: ShardSpec, ctx: ShardContext) -> FetchResult:
        url = spec.data["url"]
        rel = spec.data.get("rel") or _url_rel_path(url)
        root = os.path.join(ctx.output_path(self.download_dir), ctx.stage_id)
        dest = os.path.normpath(os.path.join(root, rel))
        if not dest.startswith(os.path.normpath(root) + os.sep):  # a spec from a custom source
            raise DownloadError(f"{redact(url)}: its download path '{rel}' leaves {root}")
        cs = spec.data.get("checksum")
        rng = spec.data.get("range")
        res = fetch(url, dest, verify=spec.data.get("verify", self.verify),
                    retries=self.retries, backoff=self.backoff_s, timeout=self.http_timeout_s,
                    checksum=tuple(cs) if cs else None,
                    storage_options=self.storage_options,
                    byte_range=(int(rng[0]), int(rng[1])) if rng else None)
        ctx.count("files_downloaded" if not (res.skipped or res.local) else
                  ("files_already_downloaded" if res.skipped else "files_local"))
        if res.bytes:
            ctx.count("download_bytes", res.bytes)
        if res.attempts > 1:
            ctx.count("download_retries", res.attempts - 1)
        if res.resumed:
            ctx.count("download_resumes", res.resumed)
        return res

    def fetch_or_skip(self, shard: ShardSpec, ctx: ShardContext) -> FetchResult | None:
        """:meth:`download`, or ``None`` when it failed and ``on_download_error`` is skip."""
        try:
            return self.download(shard, ctx)
        except DownloadError as e:
            if self.on_download_error != "skip":
                raise
            ctx.quarantine({"url": redact(shard.data["url"])}, f"download failed: {e}")
            ctx.count("files_failed")
            return None

    def read(self, shard: ShardSpec, ctx: ShardContext) -> Iterator[Document]:
        res = self.fetch_or_skip(shard, ctx)
        if res is None:
            return
        source = self.source_name(ctx)
        for record in self.shard_records(shard, res.path, ctx):
            try:
                doc = self.extract(record, ctx)
            except ImportError:
                # the install, not the record: a broken or partial install had every record
                # of a run quarantined and the run go on without them
                raise
            except Exception as e:  # one bad record never fails the shard
                ctx.quarantine(_describe(record), f"extract failed: {type(e).__name__}: {e}",
                               file=res.path)
                continue
            if doc is None:
                continue
            doc.meta.setdefault("source", source)
            yield doc
        if self.delete_after_read and not res.local:
            os.unlink(res.path)


def _url_rel_path(url: str) -> str:
    """A download's path under the stage's download folder: the URL's path, made safe."""
    if is_local_url(url):
        return os.path.basename(url)
    parts = urlsplit(url)
    segs = [s for s in (parts.netloc + "/" + parts.path).split("/") if s not in ("", ".", "..")]
    return os.path.join(*segs)


def _describe(record: Any) -> Any:
    if isinstance(record, dict):
        return {k: v for k, v in record.items() if not isinstance(v, bytes)}
    if isinstance(record, bytes):
        return record[:2000]
    return repr(record)[:2000]


# The download settings' defaults, as attributes of every source (a custom source that does not
# take them as parameters reads these; a built-in one gets them set from its Params).
for _name, _field in DownloadParams.model_fields.items():
    setattr(DownloadSource, _name, _field.default)
