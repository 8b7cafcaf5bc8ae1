"""Property-based fuzzing (hypothesis) of the readers, extractors and the .idx round trip.

Bounded and reproducible for CI: ``derandomize=True`` and ``max_examples`` from
``CURATOR_FUZZ_EXAMPLES`` (default 60 per property; ``CURATOR_FUZZ_EXAMPLES=5000`` for a long
run, see docs/reliability.md). Properties:

- WARC reader: random bytes and mutated valid records never raise out of the reader; with one
  gzip member per record, damage to one record never costs another record.
- HTML / wikitext / LaTeX extractors: arbitrary markup gives a ``str`` (or the documented
  ``LatexError``), never another exception.
- JSONL reader: every non-blank line is either a document or quarantined; valid records come
  out unchanged; a truncated compressed file gives a prefix of its records and one quarantine.
- ``.bin/.idx`` writer: any token lists (empty documents included, both dtypes) read back
  exactly through megatron-core's own ``IndexedDataset``.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import tempfile
from typing import Any

import numpy as np
import orjson
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.acquire.warc import iter_warc
from curator.core.context import ShardContext
from curator.core.stage import ShardSpec
from curator.extract.charset import DecodeError, decode_html
from curator.extract.extract_html import extract_text
from curator.extract.latex import LatexError, submission_text
from curator.extract.wikitext import wikitext_to_text
from curator.io.jsonl import ReadJsonl
from curator.tokenize.megatron import IndexedWriter

EXAMPLES = int(os.environ.get("CURATOR_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Sandbox:
    """A throwaway work_dir and a shard context writing its quarantine there."""

    def __enter__(self) -> Sandbox:
        self._td = tempfile.TemporaryDirectory()
        self.dir = self._td.name
        self.ctx = ShardContext(shard="s-00000", stage_id="fuzz", work_dir=self.dir,
                                artifacts={}, save_rejected=True)
        return self

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def quarantined(self) -> list[dict[str, Any]]:
        """Close the context and read back what it quarantined (the file must be valid)."""
        self.ctx.close(ok=True)
        p = os.path.join(self.dir, "quarantine", "fuzz", "s-00000.jsonl.zst")
        if not os.path.exists(p):
            return []
        with open(p, "rb") as f:
            raw = zstandard.ZstdDecompressor().stream_reader(f).read()
        return [orjson.loads(line) for line in raw.splitlines()]

    def __exit__(self, *exc: Any) -> None:
        self.ctx.close(ok=False)
        self._td.cleanup()


# -- WARC ------------------------------------------------------------------------------------

def warc_record(i: int, body: bytes, ctype: str = "text/html; charset=utf-8") -> bytes:
    """One uncompressed WARC response record, written by hand so lengths can be broken."""
    http = (f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://ex.com/{i}\r\n"
            f"WARC-Date: 2024-01-01T00:00:00Z\r\n"
            f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{i:012d}>\r\n"
            f"Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http)}\r\n\r\n").encode()
    return head + http + b"\r\n\r\n"


def bodies(n: int) -> list[bytes]:
    return [f"<html><body><p>page {i} ".encode() + b"words " * (5 + i) + b"</p></body></html>"
            for i in range(n)]


def read_warc(path: str, sb: Sandbox) -> list[Any]:
    return list(iter_warc(path, sb.ctx))


def mutate(data: bytes, draw: Any) -> bytes:
    """Flip, insert, delete or truncate at a few positions."""
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        if not b:
            break
        i = draw(st.integers(0, len(b) - 1))
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if op == "flip":
            b[i] ^= draw(st.integers(1, 255))
        elif op == "insert":
            b[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del b[i:i + draw(st.integers(1, 16))]
        else:
            del b[i:]
    return bytes(b)


@FUZZ
@given(junk=st.binary(max_size=4000), gz=st.booleans())
def test_fuzz_warc_random_bytes_never_escape_the_reader(junk, gz):
    with Sandbox() as sb:
        name = "x.warc.gz" if gz else "x.warc"
        with open(sb.path(name), "wb") as f:
            f.write(junk)
        recs = read_warc(sb.path(name), sb)
        q = sb.quarantined()  # readable, each with a reason and the file it came from
        assert all(isinstance(r.body, bytes) for r in recs)
        assert all(r["reason"] and r["file"] == sb.path(name) for r in q)


PEERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "acquire",
                     "data", "peers")
#: Small archives of the peers' suites, one per reader path: ARC (curator's own reader for the
#: default), .arc.gz, LZ4 (a stream), an HTML resource record, a chunked payload.
PEER_FILES = ["warcio/example.arc", "warcio/example.arc.gz",
              "fastwarc/block-sized-records.warc.lz4", "warcio/example-resource.warc.gz",
              "warcio/example-iana.org-chunked.warc"]


@FUZZ
@given(data=st.data(), name=st.sampled_from(PEER_FILES),
       reader=st.sampled_from(["fastwarc", "warcio"]))
def test_fuzz_peer_archives_mutated_never_escape_the_reader(data, name, reader):
    """ARC, LZ4 and the other formats the peers' archives bring, mutated: both readers return
    (never raise, never loop), and quarantine records are readable and name the file."""
    with open(os.path.join(PEERS, name), "rb") as f:
        raw = f.read()
    with Sandbox() as sb:  # unharmed, the archive reads cleanly
        assert list(iter_warc(os.path.join(PEERS, name), sb.ctx, reader=reader)) is not None
        assert sb.quarantined() == [] and sb.ctx.counters["records_read"] > 0
    with Sandbox() as sb:
        path = sb.path(os.path.basename(name))
        with open(path, "wb") as f:
            f.write(mutate(raw, data.draw))
        recs = list(iter_warc(path, sb.ctx, reader=reader))
        q = sb.quarantined()
        assert all(isinstance(r.body, bytes) and isinstance(r.url, str) for r in recs)
        assert all(r["reason"] and r["file"] == path for r in q)


@FUZZ
@given(data=st.data(), n=st.integers(2, 5))
def test_fuzz_warc_damage_to_one_record_costs_no_other(data, n):
    """Mutate one record (before compression: the WARC parser; after: the gzip layer); all the
    other records of the file come out intact."""
    bs = bodies(n)
    victim = data.draw(st.integers(0, n - 1))
    before = data.draw(st.booleans())
    members = []
    for i, b in enumerate(bs):
        raw = warc_record(i, b)
        if i == victim and before:
            raw = mutate(raw, data.draw)
        member = gzip.compress(raw, mtime=0)
        if i == victim and not before:
            member = mutate(member, data.draw)
        members.append(member)
    with Sandbox() as sb:
        with open(sb.path("x.warc.gz"), "wb") as f:
            f.write(b"".join(members))
        recs = read_warc(sb.path("x.warc.gz"), sb)
        sb.quarantined()
        got = {r.url: r.body for r in recs}
        for i, b in enumerate(bs):
            if i != victim:
                assert got.get(f"http://ex.com/{i}") == b, f"record {i} lost (victim {victim})"


def test_warc_record_with_bad_length_is_quarantined_and_the_next_record_survives():
    """Bad-input matrix: a WARC record whose Content-Length is wrong (too short, too long)."""
    bs = bodies(3)
    for wrong in (5, 10_000):
        raw = [warc_record(i, b) for i, b in enumerate(bs)]
        head, sep, rest = raw[1].partition(b"\r\n\r\n")
        lines = [ln if not ln.startswith(b"Content-Length") else b"Content-Length: %d" % wrong
                 for ln in head.split(b"\r\n")]
        raw[1] = b"\r\n".join(lines) + sep + rest
        with Sandbox() as sb:
            with open(sb.path("x.warc.gz"), "wb") as f:
                f.write(b"".join(gzip.compress(r, mtime=0) for r in raw))
            recs = read_warc(sb.path("x.warc.gz"), sb)
            q = sb.quarantined()
            urls = [r.url for r in recs]
            # the neighbours are untouched; the bad record is quarantined or comes out cut to
            # its declared length, never with the next record's bytes
            assert "http://ex.com/0" in urls and "http://ex.com/2" in urls
            bad = [r for r in recs if r.url == "http://ex.com/1"]
            assert (q and not bad) or (bad and b"ex.com/2" not in bad[0].body)


# -- extractors ------------------------------------------------------------------------------

HTML_BITS = ["<p>", "</p>", "<div>", "</div>", "<script>", "</script>", "<style>", "<br/>",
             "<!--", "-->", "<![CDATA[", "]]>", "&amp;", "&#x0;", "&#99999999;", "<a href='",
             "'>", "<table><tr><td>", "<meta charset='", "<html>", "<body>", "\x00", "<", ">"]
WIKI_BITS = ["[[", "]]", "{{", "}}", "{|", "|}", "|-", "||", "'''", "''", "==", "<ref>",
             "</ref>", "<!--", "-->", "[[File:", "[[Category:", "<nowiki>", "__TOC__", "\n*",
             "\n#", "&nbsp;", "|", "="]
TEX_BITS = ["\\section{", "}", "{", "\\begin{document}", "\\end{document}", "\\input{",
            "\\newcommand{\\x}{", "\\x", "\\def\\y{", "\\y", "%", "$", "$$", "\\\\",
            "\\begin{thebibliography}", "\\cite{", "\\chapter{", "\\include{", "\n\n"]


def markup(bits: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(bits) | st.text(max_size=30), max_size=60).map("".join)


@FUZZ
@given(html=markup(HTML_BITS), extractor=st.sampled_from(["trafilatura", "resiliparse",
                                                          "justext"]))
def test_fuzz_html_extractors_return_text(html, extractor):
    out = extract_text(html, extractor, timeout_s=10.0)
    assert isinstance(out, str)


@FUZZ
@given(body=st.binary(max_size=2000), ctype=st.sampled_from(
    [None, "text/html", "text/html; charset=utf-8", "text/html; charset=nonsense",
     "text/html; charset=shift_jis", "text/html; charset=utf-16"]))
def test_fuzz_html_decoding_gives_text_or_a_decode_error(body, ctype):
    try:
        text, charset = decode_html(body, ctype)
    except DecodeError:
        return
    assert isinstance(text, str) and isinstance(charset, str)
    text.encode("utf-8", "surrogatepass")


@FUZZ
@given(wikitext=markup(WIKI_BITS))
def test_fuzz_wikitext_to_text(wikitext):
    assert isinstance(wikitext_to_text(wikitext), str)


@FUZZ
@given(main=markup(TEX_BITS), other=markup(TEX_BITS))
def test_fuzz_latex_submission_text(main, other):
    files = {"main.tex": "\\documentclass{article}" + main, "sec/a.tex": other}
    try:
        name, body = submission_text(files)
    except LatexError:
        return
    assert name in files and isinstance(body, str)


# -- JSONL -----------------------------------------------------------------------------------

GOOD = st.builds(lambda i, t, x: {"id": f"d{i}", "text": t, "x": x},
                 st.integers(0, 10**6), st.text(max_size=50),
                 st.integers(-2**63, 2**63 - 1) | st.none())
BAD = (st.binary(max_size=60).filter(lambda b: b"\n" not in b)
       | st.sampled_from([b"{", b"[1,2]", b'{"id": 1}', b'{"text": 5}', b"null", b'"str"',
                          b'{"text": "a\xff\xfeb"}', b"\xef\xbb\xbf{}", b'{"text": "\\ud800"}']))


def lines_of(items: list[Any]) -> list[bytes]:
    return [orjson.dumps(it) if isinstance(it, dict) else it for it in items]


def read_jsonl(path: str, sb: Sandbox) -> list[Any]:
    src = ReadJsonl(paths=path)
    return list(src.read(ShardSpec("s-00000", {"path": path}), sb.ctx))


@FUZZ
@given(items=st.lists(GOOD | BAD, max_size=40))
def test_fuzz_jsonl_every_line_is_a_document_or_quarantined(items):
    lines = lines_of(items)
    with Sandbox() as sb:
        with open(sb.path("a.jsonl"), "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
        docs = read_jsonl(sb.path("a.jsonl"), sb)
        q = sb.quarantined()
    nonblank = [ln for ln in lines if ln.strip()]
    assert len(docs) + len(q) == len(nonblank)
    good = [(it["id"], it["text"]) for it in items if isinstance(it, dict)]
    got = [(d.id, d.text) for d in docs]
    it = iter(got)
    assert all(g in it for g in good)  # every valid record, unchanged, in order


@FUZZ
@given(items=st.lists(GOOD, min_size=1, max_size=30), comp=st.sampled_from(["gz", "bz2", "zst"]),
       frac=st.floats(0.0, 1.0))
def test_fuzz_truncated_compressed_jsonl_gives_a_prefix(items, comp, frac):
    raw = b"".join(orjson.dumps(it) + b"\n" for it in items)
    packed = {"gz": lambda b: gzip.compress(b, mtime=0), "bz2": bz2.compress,
              "zst": lambda b: zstandard.ZstdCompressor().compress(b)}[comp](raw)
    cut = packed[: int(len(packed) * frac)]
    with Sandbox() as sb:
        p = sb.path(f"a.jsonl.{comp}")
        with open(p, "wb") as f:
            f.write(cut)
        docs = read_jsonl(p, sb)
        q = sb.quarantined()
    got = [(d.id, d.text) for d in docs]
    want = [(it["id"], it["text"]) for it in items]
    assert got == want[: len(got)]
    assert len(q) <= 1 and (len(got) == len(want) or len(q) == 1 or not cut)


def test_truncated_bz2_and_zstd_jsonl_keep_documents_before_the_cut():
    """Bad-input matrix: truncated bz2 / zstd (gzip: tests/io/test_jsonl_parquet.py)."""
    # 2.6 MB: several 900 KB bz2 blocks (a bz2 block is all or nothing)
    items = [{"id": f"d{i}", "text": f"some words {i} " * 100} for i in range(2000)]
    raw = b"".join(json.dumps(it).encode() + b"\n" for it in items)
    for comp, pack in (("bz2", bz2.compress), ("zst", zstandard.ZstdCompressor().compress)):
        packed = pack(raw)
        with Sandbox() as sb:
            p = sb.path(f"a.jsonl.{comp}")
            with open(p, "wb") as f:
                f.write(packed[: len(packed) * 2 // 3])
            docs = read_jsonl(p, sb)
            q = sb.quarantined()
        assert 0 < len(docs) < len(items), comp
        assert [d.id for d in docs] == [it["id"] for it in items[: len(docs)]]
        assert len(q) == 1 and "truncated or corrupt" in q[0]["reason"], comp


# -- .bin/.idx -------------------------------------------------------------------------------

@FUZZ
@given(data=st.data(), dtype=st.sampled_from([np.uint16, np.int32]),
       batches=st.integers(1, 3))
def test_fuzz_idx_round_trip_through_megatron_core(data, dtype, batches):
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    hi = 65535 if dtype is np.uint16 else 2**31 - 1
    # document -> sequences -> token ids. megatron-core cannot mmap a .bin with no token at
    # all ("cannot mmap an empty file"), so the first batch always starts with a 1-token doc.
    docs: list[list[list[int]]] = []
    with tempfile.TemporaryDirectory() as td:
        prefix = os.path.join(td, "ds")
        w = IndexedWriter(prefix, dtype)
        for _ in range(batches):
            batch = data.draw(st.lists(st.lists(st.lists(st.integers(0, hi), min_size=1,
                                                         max_size=20), max_size=3),
                                       max_size=8))
            if not docs:
                batch = [[[hi]], *batch]
            docs += batch
            seqs = [s for d in batch for s in d]
            flat = np.array([t for s in seqs for t in s], dtype=np.int64)
            w.add_batch(flat, np.array([len(s) for s in seqs], dtype=np.int64),
                        np.array([len(d) for d in batch], dtype=np.int64))
        w.close()
        ds = IndexedDataset(prefix)
        di = ds.document_indices.tolist()
        assert len(di) == len(docs) + 1
        for k, d in enumerate(docs):
            got = [ds[j].tolist() for j in range(di[k], di[k + 1])]
            assert got == d
        del ds
