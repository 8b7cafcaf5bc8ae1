"""A resumable downloader for public mirrors: HTTP(S) with retries, backoff and Range resume;
any other fsspec URL (``s3://``...) with retries and seek-resume; local paths used in place.

Why this shape: crawl files are ~1 GB and mirrors drop connections and answer 503 under load.
Bytes go to ``<dest>.part`` and are kept across attempts (and across runs), so a dropped
connection resumes where it stopped. A finished file is verified (complete gzip / bz2 stream,
readable tar, checksum when the mirror publishes one) *before* it is renamed to ``dest``; so a
file under its final name is always complete, and "already downloaded" is simply "exists".
"""

from __future__ import annotations

import bz2
import hashlib
import os
import random
import tarfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from curator.base.errors import InputError
from curator.base.redact import redact
from curator.storage import nofollow

Verify = Literal["gzip", "bz2", "tar", "none"]
CHUNK = 1 << 20
#: HTTP reads are smaller: a read cut by a dropped connection loses its bytes, not the file's.
HTTP_CHUNK = 1 << 16
RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504}


class DownloadError(InputError):
    """A file could not be downloaded (not found, or still failing after all retries)."""


class VerifyError(Exception):
    """A downloaded file is incomplete or corrupt."""


@dataclass
class FetchResult:
    """What :func:`fetch` did, for counters in the report."""

    path: str
    skipped: bool = False  # already downloaded and verified earlier
    local: bool = False  # a local file used in place
    attempts: int = 0
    resumed: int = 0  # attempts that continued a partial file
    bytes: int = 0  # bytes transferred in this call
    errors: list[str] = field(default_factory=list)


def is_local_url(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def join_url(base: str, *parts: str) -> str:
    """Join a base (local path, ``file://``, ``http(s)://``, ``s3://``) and relative parts."""
    out = base.rstrip("/")
    for p in parts:
        out = f"{out}/{p.strip('/')}"
    if out.startswith("file://"):
        return out[len("file://"):]
    return out


#: what an entry of a remote listing may resolve to
REMOTE_SCHEMES = ("http://", "https://", "s3://")


def listed_url(base: str, entry: str, listing: str) -> str:
    """The URL of ``entry``, a line or field of an index file (``warc.paths.gz``,
    ``dumpstatus.json``, arXiv's manifest) read from ``listing``: it must be a plain relative
    path under ``base``, so that a hostile or broken index can make curator fetch only objects
    of the mirror it came from (http(s) or s3 when the mirror is remote), never a local file
    (``file://``, ``/etc/...``), another scheme, or a path that climbs out with ``..`` (which
    would also write outside the download folder). Raises :class:`InputError` naming both."""
    why = None
    text = entry.strip()
    segs = text.split("/")
    if not text:
        why = "is empty"
    elif ":" in segs[0] or "://" in text:
        why = "names a URL or scheme, not a path under the mirror"
    elif text.startswith(("/", "~")) or "\\" in text:
        why = "is an absolute or local path"
    elif ".." in segs:
        why = "climbs out of the mirror with '..'"
    elif any(ord(c) < 32 or ord(c) == 127 for c in text):
        why = "holds control characters"
    url = join_url(base, text) if why is None else ""
    if why is None and not is_local_url(base) and not url.startswith(REMOTE_SCHEMES):
        why = f"resolves to '{url}', not an http(s) or s3 object"
    if why:
        raise InputError(f"{redact(listing)}: refusing entry {text[:200]!r}: it {why}; an index "
                         f"may only name files under {redact(base)}")
    return url


def require_protocol(url: str) -> None:
    """Fail early, with the package to install, when fsspec has no driver for ``url``."""
    if is_local_url(url) or url.startswith(("http://", "https://")):
        return
    import fsspec

    proto = url.split("://", 1)[0]
    try:
        fsspec.get_filesystem_class(proto)
    except (ImportError, ValueError) as e:
        raise InputError(f"{url}: cannot read '{proto}://' URLs here: {e}") from None


def fetch(url: str, dest: str, *, verify: Verify = "none", retries: int = 5,
          backoff: float = 1.0, max_backoff: float = 60.0, timeout: float = 60.0,
          checksum: tuple[str, str] | None = None, copy_local: bool = False,
          storage_options: dict[str, Any] | None = None,
          log: Callable[[str], None] | None = None,
          byte_range: tuple[int, int] | None = None) -> FetchResult:
    """Make ``url`` available as a complete local file and return where it is.

    Local sources are used in place unless ``copy_local``. ``byte_range`` is ``(start,
    length)``: ``dest`` becomes those bytes of ``url`` only (local sources are then copied),
    fetched over HTTP with ``Range`` requests alone; a server that answers with the whole
    file is refused, never read. ``checksum`` is ``(algo, hexdigest)``
    (``md5``/``sha1``/``sha256``) when the mirror publishes one. Raises :class:`DownloadError`
    with one line naming the URL when the file is missing or keeps failing.
    """
    if is_local_url(url) and not copy_local and byte_range is None:
        path = url[len("file://"):] if url.startswith("file://") else url
        if not os.path.exists(path):
            raise DownloadError(f"{url}: file not found")
        return FetchResult(path=path, local=True)
    res = FetchResult(path=dest)
    if os.path.exists(dest):
        res.skipped = True
        return res
    require_protocol(url)
    nofollow.makedirs(os.path.dirname(dest) or ".")
    part = dest + ".part"
    for attempt in range(retries + 1):
        res.attempts += 1
        try:
            if is_local_url(url):
                _copy_local(url, part, res, byte_range)
            elif url.startswith(("http://", "https://")):
                _http_attempt(url, part, timeout, res, byte_range)
            else:
                _fsspec_attempt(url, part, storage_options or {}, res, byte_range)
            if byte_range is not None and os.path.getsize(part) != byte_range[1]:
                got = os.path.getsize(part)
                if got > byte_range[1]:
                    _unlink(part)
                raise _Retry(f"got {got} of the {byte_range[1]} bytes asked for")
            _verify(part, verify, checksum)
            os.replace(part, dest)
            return res
        except DownloadError:
            raise
        except VerifyError as e:
            # A complete-looking but corrupt file: start over rather than resume garbage.
            res.errors.append(f"verify: {e}")
            _unlink(part)
        except _Retry as e:
            res.errors.append(str(e))
        except Exception as e:  # dropped connection, timeout, fsspec I/O error
            res.errors.append(f"{type(e).__name__}: {e}")
        if attempt < retries:
            delay = min(max_backoff, backoff * (2 ** attempt)) * (0.5 + random.random() / 2)  # noqa: S311 - retry jitter, not a secret
            if log:
                log(f"{url}: {res.errors[-1]}; retry {attempt + 1}/{retries} in {delay:.2f}s")
            time.sleep(delay)
    raise DownloadError(f"{url}: failed after {res.attempts} attempts: {res.errors[-1]}")


class _Retry(Exception):
    pass


def _http_attempt(url: str, part: str, timeout: float, res: FetchResult,
                  byte_range: tuple[int, int] | None = None) -> None:

    have = os.path.getsize(part) if os.path.exists(part) else 0
    # identity: the bytes on disk must be the file's bytes, so a Range offset means the same
    # thing in every attempt (and a .gz is never silently gunzipped by the client).
    headers = {"Accept-Encoding": "identity"}
    first = have
    if byte_range is not None and have >= byte_range[1]:
        return  # an earlier attempt got it all (more: the size check restarts it)
    if byte_range is not None:
        first = byte_range[0] + have
        headers["Range"] = f"bytes={first}-{byte_range[0] + byte_range[1] - 1}"
    elif have:
        headers["Range"] = f"bytes={have}-"
    with _get(url, headers, timeout) as r:
        if byte_range is not None and r.status_code < 300 and r.status_code != 206:
            # the whole file is coming: close before reading a byte of it
            raise DownloadError(f"{redact(url)}: HTTP {r.status_code} to a Range request "
                                "(the server ignores Range); whole files are never fetched")
        if r.status_code == 416 and have and byte_range is None:
            # Range not satisfiable: the partial file is already whole (or bigger than the
            # remote file, i.e. stale). Verification decides.
            total = _content_range_total(r.headers.get("Content-Range", ""))
            if total is not None and total == have:
                return
            _unlink(part)
            raise _Retry(f"HTTP 416 with {have} bytes on disk; restarting")
        if r.status_code in RETRY_STATUS:
            raise _Retry(f"HTTP {r.status_code}")
        if r.status_code == 404 or r.status_code == 410:
            raise DownloadError(f"{url}: HTTP {r.status_code} (not found)")
        if r.status_code >= 400:
            raise DownloadError(f"{url}: HTTP {r.status_code}")
        if r.status_code == 206:
            start = _content_range_start(r.headers.get("Content-Range", ""))
            if start != first:
                _unlink(part)
                raise _Retry(f"server resumed at byte {start}, expected {first}; restarting")
            res.resumed += 1 if have else 0
            mode = "ab"
        else:  # 200: the server ignored Range (or there was nothing to resume)
            have, mode = 0, "wb"
        expected = r.headers.get("Content-Length")
        got = 0
        with open(part, mode) as f:
            for chunk in r.raw.stream(HTTP_CHUNK, decode_content=False):
                f.write(chunk)
                got += len(chunk)
                res.bytes += len(chunk)
        if expected is not None and got != int(expected):
            raise _Retry(f"connection ended after {got} of {expected} bytes")


#: redirects followed for one request (requests' own default is 30)
MAX_REDIRECTS = 10


def _get(url: str, headers: dict[str, str], timeout: float) -> Any:
    """``requests.get`` that follows redirects to http(s) URLs only: a mirror (or whoever sits
    in front of it) cannot send curator to ``file://``, ``ftp://`` or any other scheme."""
    import requests

    for _ in range(MAX_REDIRECTS + 1):
        r = requests.get(url, headers=headers, stream=True, timeout=timeout,
                         allow_redirects=False)
        if not r.is_redirect:
            return r
        target = requests.compat.urljoin(url, r.headers.get("Location", ""))
        r.close()
        if not target.lower().startswith(("http://", "https://")):
            raise DownloadError(f"{redact(url)}: redirected to {redact(target)[:200]!r}, not an "
                                "http(s) URL; refused")
        url = target
    raise DownloadError(f"{url}: more than {MAX_REDIRECTS} redirects")


def _fsspec_attempt(url: str, part: str, storage_options: dict[str, Any],
                    res: FetchResult, byte_range: tuple[int, int] | None = None) -> None:
    import fsspec

    have = os.path.getsize(part) if os.path.exists(part) else 0
    try:
        opened = fsspec.open(url, "rb", **storage_options).open()
    except FileNotFoundError:
        raise DownloadError(f"{url}: file not found") from None
    with opened as src:
        size = getattr(src, "size", None)
        left = None if byte_range is None else byte_range[1] - have
        if have or byte_range is not None:
            src.seek(have + (byte_range[0] if byte_range else 0))
            res.resumed += 1 if have else 0
        with nofollow.open_file(part, "ab" if have else "wb") as f:
            while left is None or left > 0:
                chunk = src.read(CHUNK if left is None else min(CHUNK, left))
                if not chunk:
                    break
                f.write(chunk)
                res.bytes += len(chunk)
                left = None if left is None else left - len(chunk)
    if byte_range is None and size is not None and os.path.getsize(part) != size:
        raise _Retry(f"got {os.path.getsize(part)} of {size} bytes")


def _copy_local(url: str, part: str, res: FetchResult,
                byte_range: tuple[int, int] | None = None) -> None:
    src = url[len("file://"):] if url.startswith("file://") else url
    if not os.path.exists(src):
        raise DownloadError(f"{url}: file not found")
    left = None if byte_range is None else byte_range[1]
    with open(src, "rb") as fi, nofollow.open_file(part, "wb") as fo:
        if byte_range is not None:
            fi.seek(byte_range[0])
        while left is None or left > 0:
            chunk = fi.read(CHUNK if left is None else min(CHUNK, left))
            if not chunk:
                break
            fo.write(chunk)
            res.bytes += len(chunk)
            left = None if left is None else left - len(chunk)


def _content_range_start(value: str) -> int | None:
    # "bytes 100-199/200"
    try:
        return int(value.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None


def _content_range_total(value: str) -> int | None:
    try:
        return int(value.rsplit("/", 1)[1])
    except (IndexError, ValueError):
        return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# -- verification ------------------------------------------------------------------------------

def _verify(path: str, kind: Verify, checksum: tuple[str, str] | None) -> None:
    if checksum:
        algo, want = checksum
        h = hashlib.new(algo)
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                h.update(chunk)
        if h.hexdigest() != want.lower():
            raise VerifyError(f"{algo} mismatch: got {h.hexdigest()}, expected {want}")
    if kind == "gzip":
        verify_gzip(path)
    elif kind == "bz2":
        verify_bz2(path)
    elif kind == "tar":
        verify_tar(path)


def verify_gzip(path: str) -> int:
    """Check that ``path`` is a sequence of complete gzip members (WARC files are one member
    per record); return the number of members. Raises :class:`VerifyError`."""
    return _verify_streams(path, lambda: zlib.decompressobj(wbits=31), zlib.error,
                           "gzip", "member")


def verify_bz2(path: str) -> int:
    """Like :func:`verify_gzip` for (multi-stream) bz2 files."""
    return _verify_streams(path, bz2.BZ2Decompressor, OSError, "bz2", "stream")


def _verify_streams(path: str, new: Any, error: type[Exception], kind: str, unit: str) -> int:
    """Decompress concatenated streams to the end without keeping the output; count them."""
    n = 0
    d = new()
    with open(path, "rb") as f:
        buf = f.read(CHUNK)
        if not buf:
            raise VerifyError("empty file")
        while buf:
            try:
                d.decompress(buf)
            except error as e:
                raise VerifyError(f"corrupt {kind} data in {unit} {n + 1}: {e}") from None
            if d.eof:
                n += 1
                rest = d.unused_data
                d = new()
                buf = rest if rest else f.read(CHUNK)
                if not buf:
                    return n
            else:
                buf = f.read(CHUNK)
    raise VerifyError(f"truncated {kind} stream ({unit} {n + 1} has no end)")


def verify_tar(path: str) -> int:
    """Check that a tar archive can be read to its end; return the number of members."""
    n = 0
    try:
        with tarfile.open(path, "r:") as tf:  # arXiv bundles are plain tars
            for m in tf:
                if m.isfile():
                    fh = tf.extractfile(m)
                    if fh is None:  # a regular member always has a file object
                        continue
                    got = 0
                    while chunk := fh.read(CHUNK):
                        got += len(chunk)
                    if got != m.size:
                        raise VerifyError(f"member {m.name} truncated ({got} of {m.size} bytes)")
                n += 1
            end = tf.offset
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise VerifyError(f"unreadable tar: {e}") from None
    if n == 0:
        raise VerifyError("empty tar archive")
    # tarfile stops quietly at a cut header; a complete archive ends with two zero blocks.
    with open(path, "rb") as f:
        f.seek(end)
        tail = f.read(1024)
    if len(tail) < 1024 or tail.strip(b"\0"):
        raise VerifyError("tar archive has no end marker (truncated)")
    return n
