"""Test helpers for the acquire family: a real HTTP mirror with injectable faults, and
builders of WARC files, Wikipedia dumps and arXiv bundles (generated at run time)."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import os
import tarfile
import threading
import uuid
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# -- HTTP mirror ---------------------------------------------------------------------------------


class Mirror:
    """A threaded HTTP server on 127.0.0.1 serving ``root`` like a public mirror: Range
    requests (``bytes=a-`` and ``bytes=a-b``: 206/416), directory listings, and per-path
    faults consumed one per request:

    * ``"503"`` (or any status): answer with that status;
    * ``("drop", n)``: announce the full length, send ``n`` bytes, close the connection;
    * ``("truncate", n)``: serve only the first ``n`` bytes as if that were the whole file;
    * ``("stall", n)``: send ``n`` bytes, then stop sending until the test ends;
    * ``"ignore_range"``: answer 200 with the whole file even if a Range was asked;
    * ``"gzip_encoding"``: label a ``.gz`` body ``Content-Encoding: gzip`` (misconfigured
      mirrors do; a client that decodes it saves the wrong bytes);
    * ``("redirect", location)``: answer 302 with that ``Location``.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self.faults: dict[str, list[Any]] = {}
        self.log: list[tuple[str, str | None, int]] = []  # (path, Range header, status)
        self.release = threading.Event()
        mirror = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *a: Any, **kw: Any) -> None:
                super().__init__(*a, directory=mirror.root, **kw)

            def log_message(self, *a: Any) -> None:
                pass

            def do_GET(self) -> None:
                mirror._serve(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def requests_for(self, rel: str) -> list[tuple[str, str | None, int]]:
        return [r for r in self.log if r[0] == "/" + rel.lstrip("/")]

    def _serve(self, h: SimpleHTTPRequestHandler) -> None:
        path = h.path.split("?", 1)[0]
        rng = h.headers.get("Range")
        fault = None
        queue = self.faults.get(path.lstrip("/"))
        if queue:
            fault = queue.pop(0)
        full = os.path.join(self.root, path.lstrip("/"))
        if os.path.isdir(full) or (fault is None and not os.path.isfile(full)):
            self.log.append((path, rng, 200 if os.path.isdir(full) else 404))
            SimpleHTTPRequestHandler.do_GET(h)
            return
        if isinstance(fault, tuple) and fault[0] == "redirect":
            self.log.append((path, rng, 302))
            h.send_response(302)
            h.send_header("Location", fault[1])
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if isinstance(fault, str) and fault.isdigit():
            self.log.append((path, rng, int(fault)))
            h.send_response(int(fault))
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        with open(full, "rb") as f:
            data = f.read()
        if isinstance(fault, tuple) and fault[0] == "truncate":
            data = data[: fault[1]]
        start, end = 0, len(data)
        if rng and fault != "ignore_range":
            first, _, last = rng.split("=")[1].partition("-")
            start = int(first)
            end = min(len(data), int(last) + 1) if last else len(data)
            if start >= len(data):
                self.log.append((path, rng, 416))
                h.send_response(416)
                h.send_header("Content-Range", f"bytes */{len(data)}")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
            self.log.append((path, rng, 206))
            h.send_response(206)
            h.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        else:
            self.log.append((path, rng, 200))
            h.send_response(200)
        body = data[start:end]
        h.send_header("Content-Length", str(len(body)))
        h.send_header("Content-Type", "application/octet-stream")
        if fault == "gzip_encoding":
            h.send_header("Content-Encoding", "gzip")
        h.end_headers()
        if isinstance(fault, tuple) and fault[0] in ("drop", "stall"):
            h.wfile.write(body[: fault[1]])
            h.wfile.flush()
            if fault[0] == "stall":
                self.release.wait(30)
            h.close_connection = True
            return
        h.wfile.write(body)


# -- running pipelines in-process -----------------------------------------------------------------

def run_pipeline(work_dir: str, stages: list[dict[str, Any]],
                 executor: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """Run a pipeline given as a stage list in this process; return the run summary."""
    import yaml

    from curator.core import pipeline as pl
    from curator.core.executors import make_executor
    from curator.core.runner import Runner

    text = yaml.safe_dump({"name": "t", "work_dir": work_dir,
                           "executor": executor or {"type": "local"}, "stages": stages,
                           **top})
    pipe = pl.loads(text)
    with make_executor(pipe.config.executor) as ex:
        return Runner(pipe, ex).run()


def read_output(summary: dict[str, Any], stage_id: str) -> list[Any]:
    import orjson

    from curator.storage.shards import read_shard

    path = os.path.join(summary["work_dir"], "stages", stage_id, "_SUCCESS.json")
    with open(path, "rb") as f:
        done = orjson.loads(f.read())
    return [d for s in done["shards"] for d in read_shard(s["path"])]


def read_side(work_dir: str, kind: str, stage_id: str) -> list[dict[str, Any]]:
    """Records of work_dir/<kind>/<stage_id>/ (kind: quarantine or rejected)."""
    from curator.storage.shards import read_records

    d = os.path.join(work_dir, kind, stage_id)
    if not os.path.isdir(d):
        return []
    return [r for f in sorted(os.listdir(d)) for r in read_records(os.path.join(d, f))]


def stage_stats(summary: dict[str, Any], stage_id: str) -> dict[str, Any]:
    return next(s for s in summary["stages"] if s["id"] == stage_id)


# -- WARC ----------------------------------------------------------------------------------------

def warc_response(url: str, body: bytes, content_type: str = "text/html; charset=utf-8",
                  rec_type: str = "response", extra: dict[str, str] | None = None) -> bytes:
    """One gzip member holding one WARC record (the way Common Crawl writes them)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    bio = io.BytesIO()
    w = WARCWriter(bio, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", content_type),
                                       ("Content-Length", str(len(body)))],
                            protocol="HTTP/1.1")
    rid = f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, rec_type + url)}>"
    rec = w.create_warc_record(url, rec_type, payload=io.BytesIO(body), length=len(body),
                               http_headers=http if rec_type == "response" else None,
                               warc_headers_dict={"WARC-Date": "2024-02-20T00:00:00Z",
                                                  "WARC-Record-ID": rid, **(extra or {})})
    w.write_record(rec)
    return bio.getvalue()


def page(title: str, paragraphs: list[str], charset: str | None = "utf-8") -> str:
    meta = f'<meta charset="{charset}">' if charset else ""
    nav = "".join(f'<li><a href="/p{i}">Menu item {i}</a></li>' for i in range(12))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html><head>{meta}<title>{title}</title></head><body><nav><ul>{nav}</ul></nav>"
            f"<main><article><h1>{title}</h1>{body}</article></main>"
            f"<footer>Copyright 2024 Example Corp. All rights reserved.</footer></body></html>")


PROSE = [
    "The river town had grown slowly over two centuries, its wharves lengthening as trade "
    "with the upstream farms increased and the old ferry gave way to a stone bridge.",
    "Historians disagree about the exact year the bridge was finished, but the parish "
    "records mention a toll collector by name in the spring of the following decade.",
    "Today the warehouses along the water hold a library, a small museum of navigation and "
    "a market that opens every Saturday morning, whatever the weather.",
]


def write_warc(path: str, members: list[bytes]) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        for m in members:
            f.write(m)
    return path


def cc_mirror_tree(root: str, snapshot: str, files: list[list[bytes]]) -> list[str]:
    """Lay out ``crawl-data/<snapshot>/warc.paths.gz`` and the WARC files under ``root``."""
    rels = []
    for i, members in enumerate(files):
        rel = (f"crawl-data/{snapshot}/segments/1700000000000.0/warc/"
               f"{snapshot}-2024-{i:05d}.warc.gz")
        write_warc(os.path.join(root, rel), members)
        rels.append(rel)
    listing = os.path.join(root, f"crawl-data/{snapshot}/warc.paths.gz")
    with gzip.open(listing, "wb") as f:
        f.write(("\n".join(rels) + "\n").encode())
    return rels


# -- Wikipedia -----------------------------------------------------------------------------------

def wiki_xml(pages: list[dict[str, Any]]) -> bytes:
    from xml.sax.saxutils import escape

    out = ['<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">',
           "<siteinfo><sitename>Wikipedia</sitename><dbname>xxwiki</dbname>"
           "<base>https://xx.wikipedia.org/wiki/Main_Page</base><namespaces>"
           '<namespace key="0" case="first-letter" />'
           '<namespace key="6" case="first-letter">Fichier</namespace>'
           '<namespace key="14" case="first-letter">Catégorie</namespace>'
           "</namespaces></siteinfo>"]
    for p in pages:
        redirect = f'<redirect title="{escape(p["redirect"])}" />' if p.get("redirect") else ""
        out.append(
            f"<page><title>{escape(p['title'])}</title><ns>{p.get('ns', 0)}</ns>"
            f"<id>{p['id']}</id>{redirect}<revision><id>{p['id']}00</id>"
            f"<timestamp>2024-01-01T00:00:00Z</timestamp>"
            f'<text xml:space="preserve">{escape(p["text"])}</text></revision></page>')
    out.append("</mediawiki>")
    return "\n".join(out).encode("utf-8")


def wiki_mirror_tree(root: str, lang: str, date: str, xml: bytes, status: str = "done",
                     sha1: str | None = None) -> str:
    d = os.path.join(root, f"{lang}wiki", date)
    os.makedirs(d, exist_ok=True)
    fname = f"{lang}wiki-{date}-pages-articles1.xml-p1p100.bz2"
    data = bz2.compress(xml)
    with open(os.path.join(d, fname), "wb") as f:
        f.write(data)
    files = {fname: {"size": len(data), "url": f"/{lang}wiki/{date}/{fname}",
                     "sha1": sha1 or hashlib.sha1(data).hexdigest()}}
    with open(os.path.join(d, "dumpstatus.json"), "w") as f:
        json.dump({"jobs": {"articlesdump": {"status": status, "files": files}},
                   "version": "0.8"}, f)
    return f"{lang}wiki/{date}/{fname}"


# -- arXiv ---------------------------------------------------------------------------------------

def tar_bytes(files: dict[str, bytes]) -> bytes:
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w") as tf:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return bio.getvalue()


def arxiv_bundle(root: str, yymm: str, papers: dict[str, bytes], n: int = 1) -> str:
    rel = f"src/arXiv_src_{yymm}_{n:03d}.tar"
    os.makedirs(os.path.join(root, "src"), exist_ok=True)
    with open(os.path.join(root, rel), "wb") as f:
        f.write(tar_bytes(papers))
    return rel


# -- a custom source, as in docs/acquire.md ------------------------------------------------------

from curator.acquire.base import DownloadSource  # noqa: E402
from curator.base.document import Document  # noqa: E402


class GzBooks(DownloadSource):
    """Plain-text books from a Gutenberg-style mirror (the docs' custom-source example)."""

    name = "gz_books"
    verify = "gzip"

    def __init__(self, base_url: str, first: int = 1, count: int = 3) -> None:
        self.base_url, self.first, self.count = base_url, first, count

    def urls(self, ctx: Any) -> list[str]:
        return [f"{self.base_url}/{i}.txt.gz" for i in range(self.first, self.first + self.count)]

    def iterate(self, path: str, ctx: Any) -> Any:
        from curator.storage.limits import TOO_LARGE, TooLarge, read_capped

        with gzip.open(path, "rb") as f:
            try:  # never hold more than the run's max_doc_mb of one book
                data = read_capped(f, ctx.max_doc_bytes)
            except TooLarge as e:
                ctx.quarantine({"file": path}, TOO_LARGE, detail=str(e), file=path)
                return
        yield {"book": os.path.basename(path).split(".")[0],
               "text": data.decode("utf-8", "replace")}

    def extract(self, record: dict[str, Any], ctx: Any) -> Document:
        start = record["text"].index("*** START OF")  # ValueError -> quarantined
        return Document(f"gutenberg:{record['book']}", record["text"][start:].strip(),
                        {"book": record["book"]})
