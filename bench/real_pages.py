"""Every unique real HTML page we can get offline, each once: the page source of
``bench/warc_full.py --source real``.

Two parts:

* **web**: the real crawled pages of public extraction benchmarks, read from their git mirrors
  (``/work/.mirror/<owner>+<name>/repo``, bare; ``--mirrors`` elsewhere; fetched with the
  session's ``fetch`` tool, e.g. ``github:Murrough-Foley/web-content-extraction-benchmark``):
  :data:`WEB` lists them. ``.gz`` members are unpacked, harvest's JSON records give their
  ``html``, WARC files give their ``text/html`` responses; a file counts as a page only if its
  first 4 KB hold ``<html``, ``<head``, ``<body`` or ``<!doctype html`` (chardet's RSS/XML test
  files do not). A missing mirror is skipped and said so in the manifest.
* **docs**: the HTML documentation Debian ships (:data:`DOCS`, several generators: Javadoc,
  rustdoc/mdBook, Doxygen, Sphinx, DocBook, Haddock, BoostBook, ExDoc, texinfo, QDoc,
  gtk-doc, Publican, AsciiDoc), read from ``<debs>/<package>/`` (``--debs``,
  ``$CURATOR_BENCH_DEBS``, default ``/var/tmp/cc-debs``; each ``.deb`` extracted with
  ``dpkg-deb -x``: no root, no dependencies pulled in) or, where that folder is absent, from
  the installed package's ``dpkg -L`` list. Get them with::

      mkdir -p /var/tmp/cc-debs && cd /var/tmp/cc-debs && apt-get download \\
          openjdk-17-doc rust-doc postgresql-doc-15 python-django-doc libstdc++-12-doc \\
          erlang-doc ghc-doc libgtk-3-doc libglib2.0-doc qtbase5-doc-html \\
          debian-handbook octave-doc git-doc libboost1.81-doc python-sympy-doc sphinx-doc \\
          python3.11-doc \\
        && for d in *.deb; do dpkg-deb -x "$d" "${d%%_*}"; done

  (203 MB download, 2.2 GB extracted.) Not in scripts/setup.sh: CI does not need them.

Deduplication, in a fixed order (web sources as listed, then packages as listed; files sorted
by path): a page counts once by the sha1 of its bytes, and once by the sha1 of its normalised
text (scripts/styles and tags removed, whitespace collapsed, lower-cased; only where that text
has >= 64 characters), so the same page saved twice by two benchmarks, or re-encoded, or with
other markup, is one page. Pages under 512 bytes (rustdoc's redirect stubs) and over the
reader's ``max_page_mb`` (10 MiB) are skipped.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path

MIRRORS = Path(os.environ.get("CURATOR_BENCH_MIRRORS", "/work/.mirror"))
DEBS = Path(os.environ.get("CURATOR_BENCH_DEBS", "/var/tmp/cc-debs"))
MIN_BYTES = 512
MAX_BYTES = 10 * 1024 * 1024  # read_warc's max_page_mb default
TEXT_KEY_MIN = 64

# (source name, mirror folder, path prefixes inside the repository)
WEB: list[tuple[str, str, tuple[str, ...]]] = [
    ("wceb", "Murrough-Foley+web-content-extraction-benchmark", ("dev/html/", "test/html/")),
    ("trafilatura", "adbar+trafilatura", ("tests/eval/", "tests/cache/", "tests/resources/")),
    ("readability", "mozilla+readability", ("test/test-pages/",)),
    ("scrapinghub", "scrapinghub+article-extraction-benchmark", ("html/",)),
    ("harvest", "fhgr+harvest", ("corpus/goldDocuments/", "corpus/goldDocumentsPre/", "data/")),
    ("cleaning-merged", "j-szulc+html-cleaning-dataset-merged", ("",)),
    ("htmldate", "adbar+htmldate", ("tests/eval/", "tests/test_set/", "tests/cache/")),
    ("htmltotext", "leogao2+htmltotext-benchmark", ("benchmarkdata/",)),
    ("chardet", "chardet+chardet", ("tests/",)),
    ("resiliparse-warc", "chatnoir-eu+chatnoir-resiliparse", ("tests/data/",)),
    ("warcio-warc", "webrecorder+warcio", ("test/data/",)),
]

# (Debian package, generator): the folders each ships its HTML in come from its own file list
DOCS: list[tuple[str, str]] = [
    ("python3.11-doc", "Sphinx"),
    ("openjdk-17-doc", "Javadoc"),
    ("rust-doc", "rustdoc/mdBook"),
    ("postgresql-doc-15", "DocBook"),
    ("python-django-doc", "Sphinx"),
    ("libstdc++-12-doc", "Doxygen"),
    ("erlang-doc", "ExDoc/edoc"),
    ("ghc-doc", "Haddock"),
    ("libgtk-3-doc", "gtk-doc"),
    ("libglib2.0-doc", "gtk-doc"),
    ("qtbase5-doc-html", "QDoc"),
    ("debian-handbook", "Publican"),
    ("octave-doc", "texinfo"),
    ("git-doc", "AsciiDoc"),
    ("libboost1.81-doc", "BoostBook/Doxygen"),
    ("python-sympy-doc", "Sphinx"),
    ("sphinx-doc", "Sphinx"),
]

HTML_EXT = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz")
_SNIFF = re.compile(rb"<html|<head|<body|<!doctype\s+html", re.I)
_HIDDEN = re.compile(rb"<(script|style|noscript)\b.*?</\1\s*>", re.S | re.I)
_TAG = re.compile(rb"<[^>]*>")
_WS = re.compile(rb"\s+")


@dataclass(frozen=True)
class Page:
    """One unique page: where it came from (``source``, ``part`` web/docs, ``path`` inside the
    source) and its bytes as shipped: held (``blob``: a git blob, a JSON or WARC record) or
    read again from ``file`` when needed (docs pages: 1.7 GB need not stay in memory)."""

    part: str
    source: str
    path: str
    blob: bytes | None = None
    file: Path | None = None

    @property
    def data(self) -> bytes:
        if self.blob is not None:
            return self.blob
        assert self.file is not None
        raw = self.file.read_bytes()
        return gzip.decompress(raw) if self.file.name.endswith(".gz") else raw


@dataclass
class Collected:
    """The unique pages plus, per source, how many files were seen, kept and dropped why."""

    pages: list[Page] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def text_key(data: bytes) -> bytes | None:
    """sha1 of the page's normalised visible text, or None when it is too short to judge."""
    t = _WS.sub(b" ", _TAG.sub(b" ", _HIDDEN.sub(b" ", data))).strip().lower()
    return hashlib.sha1(t).digest() if len(t) >= TEXT_KEY_MIN else None


def _unpack(path: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    """The HTML pages inside one file: itself, its gunzipped bytes, a JSON record's ``html``,
    a WARC's text/html responses."""
    low = path.lower()
    if low.endswith(".gz") and not re.search(r"\.warc\.gz$|\.arc\.gz$", low):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            return
        low, path = low[:-3], path[:-3]
    if re.search(r"\.w?arc(\.gz)?$", low):
        yield from _warc_pages(path, data)
        return
    if low.endswith(".json"):
        try:
            rec = json.loads(data)
        except ValueError:
            return
        html = rec.get("html") if isinstance(rec, dict) else None
        if isinstance(html, str):
            yield path, html.encode("utf-8")
        return
    if _SNIFF.search(data[:4096]):
        yield path, data


def _warc_pages(path: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    from warcio.archiveiterator import ArchiveIterator

    found: list[tuple[str, bytes]] = []
    # warcio writes notes on the deliberately odd test archives to stderr: keep them quiet
    with redirect_stderr(io.StringIO()):
        try:
            for k, rec in enumerate(ArchiveIterator(io.BytesIO(data), arc2warc=True)):
                if rec.rec_type != "response" or rec.http_headers is None:
                    continue
                ctype = (rec.http_headers.get_header("Content-Type") or "").lower()
                body = rec.content_stream().read()
                if "html" in ctype and _SNIFF.search(body[:4096]):
                    found.append((f"{path}#{k}", body))
        except Exception:  # a deliberately broken test archive: keep what was read
            pass
    yield from found


def _git_files(gitdir: Path, prefixes: tuple[str, ...]) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of the blobs under ``prefixes`` at HEAD, sorted by path; blobs the
    mirror lacks (its largest files may be absent) are skipped."""
    ls = subprocess.run(["git", "--git-dir", str(gitdir), "ls-tree", "-r", "-z", "HEAD"],
                        capture_output=True, check=True).stdout
    entries = []
    for ent in ls.split(b"\0"):
        if not ent:
            continue
        meta, name = ent.split(b"\t", 1)
        path = name.decode("utf-8", "surrogateescape")
        if meta.split()[1] == b"blob" and path.startswith(prefixes):
            entries.append((path, meta.split()[2].decode()))
    entries.sort()
    if not entries:
        return
    proc = subprocess.Popen(["git", "--git-dir", str(gitdir), "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    try:
        for path, sha in entries:
            proc.stdin.write(sha.encode() + b"\n")
            proc.stdin.flush()
            head = proc.stdout.readline().split()
            if len(head) < 3 or head[1] == b"missing":
                continue
            data = proc.stdout.read(int(head[2]))
            proc.stdout.read(1)
            yield path, data
    finally:
        proc.stdin.close()
        proc.wait()


def _pkg_files(pkg: str, debs: Path) -> tuple[Path, list[Path]] | None:
    """(root, files) of a package's HTML: ``debs/pkg`` if extracted there, else the installed
    package's own file list; None when neither."""
    root = debs / pkg
    if root.is_dir():
        files = [p for p in root.rglob("*") if p.name.lower().endswith(HTML_EXT)
                 and not p.is_symlink() and p.is_file()]
        return root, sorted(files)
    r = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
    if r.returncode:
        return None
    files = [Path(x) for x in r.stdout.splitlines() if x.lower().endswith(HTML_EXT)]
    return Path("/"), sorted(p for p in files if not p.is_symlink() and p.is_file())


def missing_packages(debs: Path | None = None) -> list[str]:
    """The packages of :data:`DOCS` neither extracted under ``debs`` nor installed."""
    return [p for p, _ in DOCS if _pkg_files(p, DEBS if debs is None else debs) is None]


def collect(mirrors: Path | None = None, debs: Path | None = None,
            web: list[tuple[str, str, tuple[str, ...]]] | None = None,
            docs: list[tuple[str, str]] | None = None) -> Collected:
    """Read every source and keep each page once (see the module docstring)."""
    mirrors = MIRRORS if mirrors is None else mirrors
    debs = DEBS if debs is None else debs
    out = Collected()
    seen: set[bytes] = set()

    def offer(part: str, source: str, path: str, data: bytes, file: Path | None = None) -> None:
        c = out.counts.setdefault(source, {"files": 0, "pages": 0, "duplicate": 0,
                                           "too_small": 0, "too_large": 0})
        c["files"] += 1
        if len(data) < MIN_BYTES:
            c["too_small"] += 1
            return
        if len(data) > MAX_BYTES:
            c["too_large"] += 1
            return
        keys = [hashlib.sha1(data).digest()]
        tk = text_key(data)
        if tk is not None:
            keys.append(b"t" + tk)
        if any(k in seen for k in keys):
            c["duplicate"] += 1
            seen.update(keys)
            return
        seen.update(keys)
        c["pages"] += 1
        out.pages.append(Page(part, source, path, None if file else data, file))

    for name, folder, prefixes in WEB if web is None else web:
        gitdir = mirrors / folder / "repo"
        if not gitdir.is_dir():
            out.missing.append(f"mirror {folder}")
            continue
        for path, data in _git_files(gitdir, prefixes):
            for sub, page in _unpack(path, data):
                offer("web", name, sub, page)
    for pkg, _gen in DOCS if docs is None else docs:
        found = _pkg_files(pkg, debs)
        if found is None:
            out.missing.append(f"package {pkg}")
            continue
        root, files = found
        for p in files:
            if p.stat().st_size > MAX_BYTES * 4:
                continue
            for sub, page in _unpack(str(p.relative_to(root)), p.read_bytes()):
                offer("docs", pkg, sub, page, p)  # one page per file: read again when written
    return out
