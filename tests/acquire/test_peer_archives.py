"""Every test archive of FastWARC's and warcio's own test suites (tests/acquire/data/peers,
see its README), read by both readers and set against what warcio itself finds there:
ClueWeb09's WARC/0.18 with LF-only HTTP headers, LZ4, ARC and .arc.gz, HTML ``resource``
records, chunked and gzip-encoded payloads, truncated and clipped files."""

from __future__ import annotations

import glob
import os
from collections import Counter
from typing import Any

import pytest

from curator.acquire.warc import WarcRecord, iter_warc
from curator.core.context import ShardContext
from tests.acquire.helpers_acquire import read_output, read_side, run_pipeline, stage_stats

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "data", "peers")
ARCHIVES = sorted(p for p in glob.glob(os.path.join(PEERS, "*", "*"))
                  if not p.endswith(("LICENSE", ".html", ".md")))
HTML = ("text/html", "application/xhtml+xml")


def _name(p: str) -> str:
    return os.path.relpath(p, PEERS)


def warcio_pages(path: str) -> list[tuple[str, bytes]]:
    """What warcio itself finds: ``(url, payload)`` of every HTML response or resource record
    (ARC records: their URL), the payload as warcio's ``content_stream()`` decodes it, read
    until warcio stops. LZ4 is decompressed by python-lz4 (warcio reads no LZ4)."""
    from warcio.archiveiterator import ArchiveIterator

    out = []
    with open(path, "rb") as raw:
        f: Any = raw
        if path.endswith(".lz4"):
            import lz4.frame

            f = lz4.frame.open(raw)
        try:
            for rec in ArchiveIterator(f):
                if rec.rec_type not in ("response", "resource"):
                    continue
                arc = rec.format == "arc"
                h = rec.rec_headers
                ct = (rec.http_headers.get_header("Content-Type") if rec.http_headers else
                      h.get_header("content-type" if arc else "Content-Type")) or ""
                if not ct.lower().startswith(HTML):
                    continue
                url = h.get_header("uri" if arc else "WARC-Target-URI")
                out.append((url, rec.content_stream().read()))
        except Exception:  # warcio stops here; what it found so far counts
            pass
    return out


def _read(path: str, reader: str, tmp: str) -> tuple[list[WarcRecord], dict, dict]:
    ctx = ShardContext(shard="s", stage_id="t", work_dir=os.path.join(tmp, reader),
                       artifacts={})
    recs = list(iter_warc(path, ctx, reader=reader))  # type: ignore[arg-type]
    ctx.close()
    return recs, dict(ctx.counters), dict(ctx.quarantined)


#: Pages warcio finds in the peers' test archives (a check on the reference itself).
ISSUE_TABLE = {"fastwarc/warcfile.warc.gz": 16, "fastwarc/clueweb-quirk.warc.gz": 29,
               "fastwarc/warcfile.warc.lz4": 16, "warcio/example.arc.gz": 1,
               "warcio/example-resource.warc.gz": 1, "warcio/example-trunc.warc": 1}


def test_the_fixtures_are_all_there() -> None:
    names = {_name(p) for p in ARCHIVES}
    assert set(ISSUE_TABLE) <= names and len(names) == 23
    for name, n in ISSUE_TABLE.items():
        assert len(warcio_pages(os.path.join(PEERS, name))) == n, name


#: Whole files in one gzip member: warcio's iterator stops after the first record ("non-chunked
#: gzip file detected"); read member by member, every record of it is read.
WHOLE_FILE_GZIP = ("warcio/example-bad.warc.gz", "warcio/example-bad-non-chunked.warc.gz")


@pytest.mark.parametrize("reader", ["fastwarc", "warcio"])
@pytest.mark.parametrize("path", ARCHIVES, ids=_name)
def test_reads_every_page_warcio_finds(path: str, reader: str, tmp_path: Any) -> None:
    """Each page warcio finds is read, with warcio's decoded payload; where warcio gives up
    (a whole file in one gzip member) the records after that point are read too."""
    recs, counters, _ = _read(path, reader, str(tmp_path))
    ours = Counter((r.url, r.body) for r in recs)
    ref = Counter(warcio_pages(path))
    assert not ref - ours, f"{reader} misses {sorted(u for u, _ in ref - ours)}"
    if _name(path) not in WHOLE_FILE_GZIP:
        assert ours == ref
    # pages and skipped records add up to what was read, by kind
    skipped = {k: v for k, v in counters.items() if k.startswith("skipped:")}
    cand = sum(v for k, v in skipped.items() if not k.startswith(
        ("skipped:request", "skipped:metadata", "skipped:warcinfo", "skipped:ARC file")))
    assert counters.get("records_read", 0) == len(recs) + cand


@pytest.mark.parametrize("path", ARCHIVES, ids=_name)
def test_both_readers_give_the_same_records(path: str, tmp_path: Any) -> None:
    fast = _read(path, "fastwarc", str(tmp_path))
    slow = _read(path, "warcio", str(tmp_path))
    assert fast[0] == slow[0]
    if _name(path) == "warcio/example-wrong-chunks.warc.gz":
        # the third gzip member starts with the previous record's closing CRLFs: FastWARC
        # skips blank lines and reads the request there, warcio finds no WARC-Type
        assert fast[1]["warc_bad_records"] == 1 and slow[1]["warc_bad_records"] == 2
        assert fast[1]["skipped:request: not a page"] == 1
    elif _name(path) != "warcio/example-trunc.warc":
        assert fast[1:] == slow[1:]
    else:  # stray bytes after a record in a plain .warc: warcio warns and reads on (one
        # request follows), FastWARC's strict WARC parser quarantines the rest of the file
        assert slow[2] == {} and list(fast[2]) == [
            "bad WARC record, rest of file skipped: OSError: Invalid WARC header"]
        assert fast[1]["records_read"] == slow[1]["records_read"] == 1


def test_clueweb09_quirks(tmp_path: Any) -> None:
    """WARC/0.18, LF-only HTTP headers, EUC-JP, a ``Content-Encoding: gzip`` header over a
    payload stored decoded: 29 pages, the TREC id as the document id, Japanese text."""
    recs, _, q = _read(os.path.join(PEERS, "fastwarc", "clueweb-quirk.warc.gz"),
                       "fastwarc", str(tmp_path))
    assert len(recs) == 29 and q == {}
    assert all(r.trec_id and r.trec_id.startswith("clueweb09-ja") for r in recs)
    assert all(r.content_type.lower().endswith("charset=euc-jp") for r in recs)
    assert all(r.body.lstrip().lower().startswith(b"<html") for r in recs)


def test_read_warc_stage_on_every_peer_archive(tmp_path: Any) -> None:
    """Through the ``read_warc`` stage: .arc, .arc.gz and .warc.lz4 are accepted names;
    ClueWeb pages get their TREC id; the ARC header's URL and date fill meta."""
    for reader in ("fastwarc", "warcio"):
        work = str(tmp_path / reader)
        summary = run_pipeline(work, [{"read_warc": {
            "paths": [os.path.join(PEERS, "fastwarc", "clueweb-quirk.warc.gz"),
                      os.path.join(PEERS, "fastwarc", "warcfile.warc.lz4"),
                      os.path.join(PEERS, "warcio", "example.arc"),
                      os.path.join(PEERS, "warcio", "example.arc.gz"),
                      os.path.join(PEERS, "warcio", "example-resource.warc.gz")],
            "extractor": "resiliparse", "reader": reader}, "id": "web"}])
        docs = read_output(summary, "web")
        by_file: Counter[str] = Counter()
        for d in docs:
            by_file[d.meta["url"].split("/")[2]] += 1
        trec = [d for d in docs if d.meta.get("trec_id")]
        assert len(trec) >= 25 and all(d.id == d.meta["trec_id"] for d in trec)
        assert any("ヘッドポーター" in d.text for d in trec)
        arc = [d for d in docs if d.meta["url"] == "http://example.com/"
               and d.meta["date"] == "2014-02-16T05:02:21Z"]
        assert len(arc) == 2 and all("Example Domain" in d.text for d in arc)
        st = stage_stats(summary, "web")
        assert st["counters"]["records_read"] == 29 + 16 + 1 + 1 + 1
        assert not [r for r in read_side(work, "quarantine", "web")
                    if "bad WARC" in r["reason"]]


def test_a_source_that_keeps_little_says_what_it_skipped(tmp_path: Any) -> None:
    """Through the ``curator`` command: warcio's POST test archive holds no HTML page. The
    stage's terminal line says what was skipped, by kind, and report.html lists the kinds;
    a source that keeps most of what it read says nothing more."""
    from tests.helpers import run_cli

    post = os.path.join(PEERS, "warcio", "post-test.warc.gz")
    cw = os.path.join(PEERS, "fastwarc", "clueweb-quirk.warc.gz")
    (tmp_path / "p.yaml").write_text(
        f"name: skipped\nwork_dir: {tmp_path / 'w'}\nstages:\n"
        f"  - id: post\n    read_warc: {{paths: {post}, extractor: resiliparse}}\n"
        f"  - id: cw\n    read_warc: {{paths: {cw}, extractor: resiliparse}}\n")
    r = run_cli("run", str(tmp_path / "p.yaml"))
    out = r.stdout + r.stderr
    line = next(ln for ln in out.splitlines() if "[post] 0 -> 0 docs" in ln)
    assert line.endswith("; kept 0 of 3 candidate records: 3 requests skipped: not a page, "
                         "3 responses skipped: no HTML content type"), line
    cw_line = next(ln for ln in out.splitlines() if "[cw] 29 -> " in ln)
    assert "-> 29 docs" in cw_line and "skipped" not in cw_line, cw_line
    html = (tmp_path / "w" / "report.html").read_text()
    assert "Input records not made into documents, by kind" in html
    assert "<td>response</td><td>no HTML content type</td><td>3</td>" in html
