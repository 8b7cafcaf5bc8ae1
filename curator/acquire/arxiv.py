"""``arxiv``: arXiv source bundles -> one document per paper (its LaTeX body).

arXiv publishes sources as ``src/arXiv_src_YYMM_NNN.tar`` bundles (about 500 MB each) in the
requester-pays bucket ``s3://arxiv``, listed by ``src/arXiv_src_manifest.xml``. Inside a
bundle each paper is ``YYMM/<id>.gz``: either one gzipped ``.tex`` file or a gzipped tar of
the submission (or a PDF, skipped). The same layout under a local folder or an HTTP mirror
works through ``base_url``; without a manifest the bundles are found by listing ``src/``.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import tarfile
import zlib
from collections.abc import Iterator
from typing import IO, Any

from curator.acquire.base import DownloadParams, DownloadSource
from curator.acquire.download import fetch, join_url, listed_url, require_protocol
from curator.base.document import Document
from curator.base.errors import ConfigError, InputError
from curator.core.context import ShardContext, StageContext
from curator.core.params import NonNegInt, PositiveFloat, PositiveInt
from curator.extract.latex import LatexError, submission_text
from curator.extract.timeout import ExtractTimeout, time_limit
from curator.storage.encoding import decode_text
from curator.storage.limits import TOO_LARGE, TooLarge, read_capped

ARXIV_BASE_URL = "s3://arxiv"
_BUNDLE = re.compile(r"arXiv_src_(\d{4})_(\d{3})\.tar$")
_OLD_ID = re.compile(r"^([a-z][a-z.\-]*?)(\d{7})$")
MAX_PAPER_BYTES = 64 * 1024 * 1024
#: A paper's whole source (figures included) may inflate to this many times ``max_doc_mb``.
INFLATE_FACTOR = 8


def parse_months(expr: str) -> list[str]:
    """``"2301-2303,2310"`` -> ``["2301", "2302", "2303", "2310"]`` (YYMM, ranges inclusive,
    across year ends)."""
    out: list[str] = []
    for part in expr.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d{2})(\d{2})(?:-(\d{2})(\d{2}))?", part)
        if not m or not all(1 <= int(x) <= 12 for x in (m.group(2), m.group(4) or "01")):
            raise ConfigError(f"months: '{part}' is not YYMM or YYMM-YYMM")
        y, mo = int(m.group(1)), int(m.group(2))
        y2, mo2 = (int(m.group(3)), int(m.group(4))) if m.group(3) else (y, mo)
        # arXiv's YYMM: 91..99 are the 1990s
        a, b = _abs_month(y, mo), _abs_month(y2, mo2)
        if b < a:
            raise ConfigError(f"months: range '{part}' runs backwards")
        for t in range(a, b + 1):
            yy, mm = divmod(t, 12)
            out.append(f"{yy % 100:02d}{mm + 1:02d}")
    return sorted(set(out), key=lambda s: _abs_month(int(s[:2]), int(s[2:])))


def _abs_month(yy: int, mm: int) -> int:
    year = 1900 + yy if yy >= 91 else 2000 + yy
    return year * 12 + mm - 1


def arxiv_id(member: str) -> str:
    """``2301/2301.00001.gz`` -> ``2301.00001``; ``9901/hep-th9901001.gz`` ->
    ``hep-th/9901001``."""
    stem = os.path.basename(member)
    for ext in (".gz", ".pdf", ".tar"):
        stem = stem.removesuffix(ext)
    m = _OLD_ID.match(stem)
    return f"{m.group(1)}/{m.group(2)}" if m else stem


def paper_files(data: bytes, cap: int | None = None, gzipped: bool = False,
                inflate_cap: int | None = None) -> dict[str, str]:
    """Text files of one paper's source: a tar of files or one ``.tex`` (gunzipped first when
    ``gzipped``). Everything streams: the ``.tex`` files together may hold at most ``cap``
    bytes and the whole inflated source (figures included) ``inflate_cap`` bytes (default
    ``INFLATE_FACTOR * cap``), else
    :class:`~curator.storage.limits.TooLarge` is raised before more is read (a gzip bomb costs a
    bounded amount of memory and time)."""
    cap = len(data) * 1100 + 1024 if cap is None else cap  # zlib inflates at most ~1032x
    inflate_cap = INFLATE_FACTOR * cap if inflate_cap is None else inflate_cap
    raw: IO[bytes] = io.BytesIO(data)
    if gzipped:
        raw = gzip.GzipFile(fileobj=raw, mode="rb")
    stream = _Capped(raw, inflate_cap)
    head = stream.read(512)
    while len(head) < 512:
        more = stream.read(512 - len(head))
        if not more:
            break
        head += more
    files: dict[str, str] = {}
    if len(head) == 512 and _is_tar_header(head):
        total = 0
        whole = io.BufferedReader(_Prepend(head, stream), 1 << 16)
        with tarfile.open(fileobj=whole, mode="r|") as tf:
            for m in tf:  # streamed: members that are not LaTeX are read past, never held
                if not m.isfile() or not m.name.lower().endswith((".tex", ".ltx", ".latex")):
                    continue
                total += m.size
                if total > cap:
                    raise TooLarge(total, cap)
                fh = tf.extractfile(m)
                if fh is not None:
                    files[os.path.normpath(m.name).lstrip("./")] = _decode(fh.read())
    else:
        rest = read_capped(stream, max(cap - len(head), 0)) if len(head) == 512 else b""
        if len(head) > cap:
            raise TooLarge(len(head), cap)
        files["main.tex"] = _decode(head + rest)
    return files


def _is_tar_header(block: bytes) -> bool:
    try:
        tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


class _Capped(io.RawIOBase):
    """Reads through ``raw`` and raises :class:`TooLarge` once more than ``cap`` bytes came
    out (the inflated size of a gzip bomb is found while it streams)."""

    def __init__(self, raw: IO[bytes], cap: int) -> None:
        self.raw, self.cap, self.n = raw, cap, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = (1 << 20) if size is None or size < 0 else size
        b = self.raw.read(want)
        self.n += len(b)
        if self.n > self.cap:
            raise TooLarge(self.n, self.cap)
        return b

    def readinto(self, buf: Any) -> int:
        b = self.read(len(buf))
        buf[: len(b)] = b
        return len(b)


class _Prepend(io.RawIOBase):
    """``head`` followed by the rest of ``stream``."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        self.head, self.stream = memoryview(head), stream

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        if self.head:
            n = min(len(buf), len(self.head))
            buf[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        b = self.stream.read(len(buf))
        buf[: len(b)] = b
        return len(b)


def _decode(b: bytes) -> str:
    """UTF-8 (a BOM dropped) or UTF-16/32 by their BOM; other bytes as Latin-1 (old TeX)."""
    try:
        return decode_text(b, fallback="latin-1")
    except UnicodeDecodeError:  # a UTF-16/32 BOM over broken text
        return b.decode("latin-1")


class Arxiv(DownloadSource):
    """Download arXiv source bundles for a range of months and keep each paper's LaTeX body."""

    name = "arxiv"
    verify = "tar"

    class Params(DownloadParams):
        months: str
        """`"2301-2303,2310"` (YYMM, ranges across year ends; 91-99 are the 1990s)."""
        base_url: str = ARXIV_BASE_URL
        """Bucket root (requester pays: `storage_options` defaults to `{requester_pays: true}`
        there; needs `s3fs` and AWS credentials), or a local/HTTP mirror with the same `src/`
        layout."""
        limit: PositiveInt | None = None
        """At most this many bundles."""
        timeout_s: PositiveFloat = 30.0
        """Time limit of converting one paper's LaTeX, in seconds."""
        min_chars: NonNegInt = 500
        """Shorter bodies are rejected (`arxiv_too_short`)."""
        max_doc_mb: PositiveFloat | None = None
        """Cap on a paper's LaTeX (see above); `null`: the pipeline's `max_doc_mb`."""

    def setup(self) -> None:
        try:
            self.month_list = parse_months(self.months)
        except ConfigError as e:
            raise ConfigError(f"arxiv: {e}") from None
        if not self.month_list:
            raise ConfigError("arxiv: months: no month given")
        if self.storage_options is None and self.base_url.startswith("s3://arxiv"):
            self.storage_options = {"requester_pays": True}

    def source_name(self, ctx: StageContext) -> str:
        return self.source or "arxiv"

    # -- listing (root) ------------------------------------------------------------------------
    def specs(self, ctx: StageContext) -> list[dict[str, Any]]:
        require_protocol(self.base_url)
        wanted = set(self.month_list)
        listed = self._from_manifest(ctx)
        if listed is None:
            listed = self._from_listing()
        out = [x for x in listed if x[1] in wanted]
        if not out:
            raise InputError(f"{join_url(self.base_url, 'src')}: no bundle for months "
                             f"{self.months}")
        out.sort()
        if self.limit is not None:
            out = out[: self.limit]
        specs = []
        for rel, yymm, md5 in out:
            spec: dict[str, Any] = {"url": listed_url(self.base_url, rel, join_url(
                self.base_url, "src", "arXiv_src_manifest.xml")), "rel": rel, "yymm": yymm}
            if md5:
                spec["checksum"] = ["md5", md5]
            specs.append(spec)
        return specs

    def _from_manifest(self, ctx: StageContext) -> list[tuple[str, str, str]] | None:
        import xml.etree.ElementTree as ET

        from defusedxml import DefusedXmlException
        from defusedxml import ElementTree as safe_xml

        url = join_url(self.base_url, "src", "arXiv_src_manifest.xml")
        dest = os.path.join(ctx.stage_dir, "listing", "arXiv_src_manifest.xml")
        try:
            res = fetch(url, dest, retries=self.retries, backoff=self.backoff_s,
                        timeout=self.http_timeout_s, copy_local=True,
                        storage_options=self.storage_options)
        except InputError:
            return None
        out = []
        try:
            for f in safe_xml.parse(res.path).getroot().iter("file"):
                name = f.findtext("filename") or ""
                m = _BUNDLE.search(name)
                if m:
                    out.append((name if "/" in name else f"src/{name}", m.group(1),
                                f.findtext("md5sum") or ""))
        except (ET.ParseError, DefusedXmlException) as e:
            raise InputError(f"{url}: not a valid manifest: {e}") from None
        return out

    def _from_listing(self) -> list[tuple[str, str, str]]:
        import fsspec

        root = join_url(self.base_url, "src")
        try:
            fs, path = fsspec.core.url_to_fs(root, **(self.storage_options or {}))
            names = [os.path.basename(p.rstrip("/")) for p in fs.ls(path, detail=False)]
        except (OSError, ValueError) as e:
            raise InputError(f"{root}: cannot list bundles: {e}") from None
        out = []
        for n in names:
            m = _BUNDLE.search(n)
            if m:
                out.append((f"src/{n}", m.group(1), ""))
        return out

    # -- reading (workers) ---------------------------------------------------------------------
    def iterate(self, path: str, ctx: ShardContext) -> Iterator[dict[str, Any]]:
        try:
            with tarfile.open(path, "r:") as tf:
                for m in tf:
                    if not m.isfile():
                        continue
                    name = m.name
                    if name.endswith(".pdf"):
                        ctx.count("arxiv_pdf_only")
                        continue
                    if m.size > MAX_PAPER_BYTES:
                        ctx.quarantine({"member": name}, f"paper too large: {m.size} bytes",
                                       file=path)
                        continue
                    fh = tf.extractfile(m)
                    if fh is None:
                        continue
                    yield {"member": name, "data": fh.read(), "file": path,
                           "offset": m.offset}
        except (tarfile.TarError, EOFError, OSError) as e:
            ctx.quarantine(b"", f"truncated or corrupt bundle: {type(e).__name__}: {e}",
                           file=path)
            ctx.count("arxiv_corrupt_bundles")

    def extract(self, record: dict[str, Any], ctx: ShardContext) -> Document | None:
        name, data = record["member"], record["data"]
        aid = arxiv_id(name)
        meta = {"arxiv_id": aid, "member": name}
        where = {"file": record.get("file"), "offset": record.get("offset")}
        cap = ctx.doc_cap(self.max_doc_mb)
        try:
            with time_limit(self.timeout_s):
                files = paper_files(data, cap, gzipped=name.endswith(".gz"))
                main, body = submission_text(files)
        except TooLarge as e:
            ctx.quarantine(meta, TOO_LARGE, detail=f"paper source inflates to {e} "
                           f"(max_doc_mb: {cap} bytes of LaTeX)", **where)
            ctx.count("arxiv_too_large")
            return None
        except (OSError, EOFError, zlib.error) as e:
            ctx.quarantine(meta, f"bad gzip: {e}", **where)
            ctx.count("arxiv_bad_sources")
            return None
        except LatexError as e:
            ctx.quarantine(meta, f"no usable LaTeX: {e}", **where)
            ctx.count("arxiv_no_latex")
            return None
        except ExtractTimeout:
            ctx.quarantine(meta, f"LaTeX cleaning timed out after {self.timeout_s}s", **where)
            ctx.count("extract_timeouts")
            return None
        except tarfile.TarError as e:
            ctx.quarantine(meta, f"bad tar: {e}", **where)
            ctx.count("arxiv_bad_sources")
            return None
        meta.update(main_file=main, yymm=name.split("/", 1)[0] if "/" in name else "")
        doc = Document(aid, body, meta)
        if len(body) < self.min_chars:
            ctx.reject(doc, "arxiv_too_short")
            return None
        return doc
