"""cc_index: a Parquet index of a WARC built from the bundled Common Crawl sample, the WARC
served by a real Range-capable HTTP server that logs every request."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from tests.acquire.helpers_acquire import (
    Mirror,
    read_output,
    read_side,
    run_pipeline,
    warc_response,
)
from tests.helpers import run_cli

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE_WARCS = os.path.join(
    REPO,
    "data",
    "sample",
    "commoncrawl",
    "crawl-data",
    "CC-MAIN-2024-10",
    "segments",
    "1707947473347.0",
    "warc",
)
DOMAINS = ["example.com", "example.org", "python.org"]
LANGS = ["eng", "deu,eng", "fra"]
REL = "crawl-data/CC-MAIN-2024-10/segments/1/warc/CC-MAIN-{}.warc.gz"


def _sample_pages() -> list[tuple[str, bytes]]:
    """(url, HTML body) of the sample's HTML responses, read with warcio."""
    from warcio.archiveiterator import ArchiveIterator

    out = []
    for name in sorted(os.listdir(SAMPLE_WARCS)):
        with open(os.path.join(SAMPLE_WARCS, name), "rb") as f:
            for r in ArchiveIterator(f):
                if r.rec_type == "response":
                    out.append(
                        (r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                    )
    return out


def _build(root: str, pages: int = 24) -> list[dict]:
    """Two WARC files of request + response records (the sample's pages under varied
    domains) and ``root/index.parquet`` listing their responses; returns the index rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    src = _sample_pages()[:pages]
    for part in range(2):
        rel = REL.format(part)
        data = b""
        for i in range(part * len(src) // 2, (part + 1) * len(src) // 2):
            path = src[i][0].split("/", 3)[3]
            url = f"https://www.{DOMAINS[i % 3]}/{path}?sid=s3cret"
            data += warc_response(url, b"", rec_type="request")
            rec = warc_response(url, src[i][1])
            rows.append(
                {
                    "url": url,
                    "url_host_registered_domain": DOMAINS[i % 3],
                    "content_mime_detected": "application/pdf" if i % 5 == 4 else "text/html",
                    "content_languages": LANGS[i % 3],
                    "fetch_status": 404 if i % 4 == 3 else 200,
                    "warc_filename": rel,
                    "warc_record_offset": len(data),
                    "warc_record_length": len(rec),
                }
            )
            data += rec
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
    schema = pa.schema(
        [
            ("url", pa.string()),
            ("url_host_registered_domain", pa.string()),
            ("content_mime_detected", pa.string()),
            ("content_languages", pa.string()),
            ("fetch_status", pa.int16()),
            ("warc_filename", pa.string()),
            ("warc_record_offset", pa.int32()),
            ("warc_record_length", pa.int32()),
        ]
    )
    pq.write_table(
        pa.Table.from_pylist(rows, schema), os.path.join(root, "index.parquet"), row_group_size=4
    )
    return rows


WHERE = (
    "url_host_registered_domain IN ('example.com', 'python.org') AND "
    "content_mime_detected = 'text/html' AND content_languages LIKE '%eng%' AND "
    "NOT fetch_status = 404"
)


def _wanted(rows: list[dict]) -> list[dict]:
    return [
        r
        for r in rows
        if r["url_host_registered_domain"] in ("example.com", "python.org")
        and r["content_mime_detected"] == "text/html"
        and "eng" in r["content_languages"]
        and r["fetch_status"] != 404
    ]


def _cc(mirror: Mirror, **kw) -> dict:
    return {
        "cc_index": {
            "index": os.path.join(mirror.root, "index.parquet"),
            "where": WHERE,
            "base_url": mirror.url + "/",
            "extractor": "resiliparse",
            "backoff_s": 0.01,
            **kw,
        },
        "id": "cc",
    }


def _docs(summary: dict, stage: str = "cc") -> list[tuple]:
    return [
        (d.id, d.text, {k: v for k, v in d.meta.items() if k != "source"})
        for d in read_output(summary, stage)
    ]


def test_only_chosen_records_by_range_requests_same_text_as_read_warc(tmp_path, mirror) -> None:
    rows = _build(mirror.root)
    want = _wanted(rows)
    assert 2 < len(want) < len(rows) / 2
    summary = run_pipeline(str(tmp_path / "w"), [_cc(mirror)])
    docs = _docs(summary)
    assert sorted(d[2]["url"] for d in docs) == sorted(r["url"] for r in want)
    # exactly what read_warc extracts from the same records of the whole files
    whole = run_pipeline(
        str(tmp_path / "r"),
        [
            {
                "read_warc": {
                    "paths": os.path.join(mirror.root, "crawl-data", "**", "*.warc.gz"),
                    "extractor": "resiliparse",
                },
                "id": "r",
            }
        ],
    )
    by_url = {d[2]["url"]: d for d in _docs(whole, "r")}
    assert sorted(docs) == sorted(by_url[r["url"]] for r in want)
    # only Range requests, for the chosen records' bytes: one per file (default gap)
    assert mirror.log and all(
        rng and rng.startswith("bytes=") and status == 206 for _, rng, status in mirror.log
    )
    files = {r["warc_filename"] for r in want}
    assert len(mirror.log) == len(files)
    for path, rng, _ in mirror.log:
        chosen = [r for r in want if "/" + r["warc_filename"] == path]
        lo, hi = (int(x) for x in rng.removeprefix("bytes=").split("-"))
        assert lo == min(r["warc_record_offset"] for r in chosen)
        assert hi + 1 == max(r["warc_record_offset"] + r["warc_record_length"] for r in chosen)
    # no gap allowed: one request per record (each response follows a request record)
    mirror.log.clear()
    run_pipeline(str(tmp_path / "w0"), [_cc(mirror, merge_gap_kb=0)])
    got = sorted((p, rng) for p, rng, _ in mirror.log)
    assert got == sorted(
        (
            "/" + r["warc_filename"],
            f"bytes={r['warc_record_offset']}-"
            f"{r['warc_record_offset'] + r['warc_record_length'] - 1}",
        )
        for r in want
    )


@pytest.mark.parametrize(
    ("where", "keep"),
    [
        (
            "url_host_registered_domain = 'example.org'",
            lambda r: r["url_host_registered_domain"] == "example.org",
        ),
        (
            "content_mime_detected != 'text/html'",
            lambda r: r["content_mime_detected"] != "text/html",
        ),
        (
            "content_languages LIKE 'deu%' OR content_languages = 'fra'",
            lambda r: r["content_languages"] in ("deu,eng", "fra"),
        ),
        ("fetch_status >= 300", lambda r: r["fetch_status"] >= 300),
        (
            "NOT (fetch_status = 200 AND url_host_registered_domain NOT IN ('python.org'))",
            lambda r: (
                not (r["fetch_status"] == 200 and r["url_host_registered_domain"] != "python.org")
            ),
        ),
        (
            "url like '%/library/a%' and content_languages is not null",
            lambda r: "/library/a" in r["url"],
        ),
    ],
)
def test_where_filters_the_index_columnar(tmp_path, where, keep) -> None:
    import pyarrow.dataset as ds

    from curator.acquire.cc_index import parse_where

    rows = _build(str(tmp_path))
    data = ds.dataset(str(tmp_path / "index.parquet"), format="parquet")
    got = data.to_table(filter=parse_where(where).compile(data.schema)).column("url")
    want = [r["url"] for r in rows if keep(r)]
    assert want and len(want) < len(rows)
    assert sorted(got.to_pylist()) == sorted(want)


@pytest.mark.parametrize(
    ("where", "pos", "why"),
    [
        ("fetch_status = ", 16, "expected a 'string' or a number"),
        ("fetch_status == 200", 15, "expected a 'string' or a number"),
        ("fetch_status = '200'", 16, "compare it with a number"),
        ("status = 200", 1, "no column 'status'"),
        ("url = 'a' OR (url = 'b'", 24, "expected ')'"),
        ("url = 'a'; DROP", 10, "unexpected ';'"),
        ("__import__('os')", 11, "expected a comparison"),
        ("fetch_status = 999", None, "no row of"),
    ],
)
def test_bad_where_is_one_line_with_key_and_position(tmp_path, mirror, where, pos, why) -> None:
    from curator.base.errors import CuratorError

    _build(mirror.root)
    with pytest.raises(CuratorError) as e:
        run_pipeline(str(tmp_path / "w"), [_cc(mirror, where=where)])
    msg = str(e.value)
    assert "\n" not in msg and ("cc_index.where: " in msg or "cc.where: " in msg), msg
    assert why in msg and (pos is None or f"(at character {pos})" in msg), msg
    assert mirror.log == []


def test_server_ignoring_range_is_refused_and_5xx_retried(tmp_path, mirror) -> None:
    from curator.base.errors import CuratorError

    rows = _build(mirror.root)
    rel = _wanted(rows)[0]["warc_filename"]
    mirror.faults[rel] = ["503", "503"]
    summary = run_pipeline(str(tmp_path / "a"), [_cc(mirror)])
    assert len(read_output(summary, "cc")) == len(_wanted(rows))
    assert [s for _, _, s in mirror.requests_for(rel)] == [503, 503, 206]
    mirror.faults[rel] = ["ignore_range"]
    with pytest.raises(CuratorError, match="ignores Range"):
        run_pipeline(str(tmp_path / "b"), [_cc(mirror)])


def test_rerun_after_kill_reuses_finished_groups(tmp_path, mirror) -> None:
    rows = _build(mirror.root)
    want = _wanted(rows)
    last = max(r["warc_filename"] for r in want)
    first_file = [r for r in want if r["warc_filename"] != last]
    assert first_file
    mirror.faults[last] = [("stall", 10)]  # the first group of the second file hangs
    yml = tmp_path / "p.yaml"
    import yaml

    work = tmp_path / "w"
    yml.write_text(
        yaml.safe_dump(
            {"name": "t", "work_dir": str(work), "stages": [_cc(mirror, merge_gap_kb=0)]}
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "curator", "run", str(yml)],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=REPO),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not mirror.requests_for(last):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = os.listdir(work / "stages" / "cc" / "_done")
    assert len(done) == len(first_file)  # one finished group per record of the first file
    mirror.log.clear()
    summary = run_pipeline(str(work), [_cc(mirror, merge_gap_kb=0)])
    assert sorted(d.meta["url"] for d in read_output(summary, "cc")) == sorted(
        r["url"] for r in want
    )
    assert {p for p, _, _ in mirror.log} == {"/" + last}  # the first file's groups reused
    assert len(mirror.log) == len(want) - len(first_file)
    assert read_side(str(work), "quarantine", "cc") == []


def test_dask_gives_the_local_output(tmp_path, mirror) -> None:
    _build(mirror.root)
    local = run_pipeline(str(tmp_path / "l"), [_cc(mirror, merge_gap_kb=0)])
    dask = run_pipeline(
        str(tmp_path / "d"), [_cc(mirror, merge_gap_kb=0)], executor={"type": "dask", "workers": 2}
    )
    assert _docs(local) and _docs(dask) == _docs(local)


def test_mpi_ranks_give_the_local_output_by_range_requests(tmp_path, mirror) -> None:
    """``curator run`` under ``mpiexec -n 2`` with the YAML of docs/acquire.md: the ranks
    share the range groups, fetch only ranges, and write what the local executor does."""
    import yaml

    rows = _build(mirror.root)
    local = run_pipeline(str(tmp_path / "l"), [_cc(mirror, merge_gap_kb=0)])
    mirror.log.clear()
    work = tmp_path / "m"
    (tmp_path / "m.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "t",
                "work_dir": str(work),
                "executor": {"type": "mpi"},
                "progress": "off",
                "stages": [_cc(mirror, merge_gap_kb=0)],
            }
        )
    )
    run_cli("run", str(tmp_path / "m.yaml"), mpi=2)
    assert _docs(local) and _docs({"work_dir": str(work)}) == _docs(local)
    warcs = [r for r in mirror.log if r[0].endswith(".warc.gz")]
    assert len(warcs) == len(_wanted(rows))  # one request per record (no merging) ...
    assert all(rng and status == 206 for _, rng, status in warcs)  # ... each a range


def _raw_member(url: str, html: bytes) -> bytes:
    """One gzip member holding a WARC response without a WARC-Record-ID (as some crawlers
    write them): its document id falls back to the WARC's location and offset."""
    import gzip

    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + html
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
        f"WARC-Date: 2024-02-20T00:00:00Z\r\n"
        f"Content-Type: application/http; msgtype=response\r\n"
        f"Content-Length: {len(http)}\r\n\r\n"
    ).encode()
    return gzip.compress(head + http + b"\r\n\r\n")


def test_index_over_http_ids_without_credentials_bad_rows_quarantined(tmp_path, mirror) -> None:
    """The index read over HTTP; a record without a WARC-Record-ID gets ``<WARC URL>:<offset>``
    as its id, without the user info of ``base_url``; an index row whose offset is not a
    record's start is quarantined with the WARC's public URL and that offset."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rel = "crawl-data/x/a.warc.gz"
    page = _sample_pages()[0][1]
    members = [
        _raw_member("https://a.example/one", page),
        _raw_member("https://a.example/two", page),
    ]
    os.makedirs(os.path.join(mirror.root, "crawl-data", "x"))
    with open(os.path.join(mirror.root, rel), "wb") as f:
        f.write(b"".join(members))
    rows = [
        {
            "warc_filename": rel,
            "warc_record_offset": 0,
            "warc_record_length": len(members[0]),
            "fetch_status": 200,
        },
        {
            "warc_filename": rel,
            "warc_record_offset": len(members[0]) + 5,
            "warc_record_length": len(members[1]) - 5,
            "fetch_status": 200,
        },
    ]
    pq.write_table(pa.Table.from_pylist(rows), os.path.join(mirror.root, "idx.parquet"))
    base = mirror.url.replace("http://", "http://reader:pa55word@") + "/"
    work = str(tmp_path / "w")
    summary = run_pipeline(
        work,
        [
            {
                "cc_index": {
                    "index": mirror.url + "/idx.parquet",
                    "where": "fetch_status = 200",
                    "base_url": base,
                    "extractor": "resiliparse",
                    "merge_gap_kb": 0,
                },
                "id": "cc",
            }
        ],
    )
    docs = read_output(summary, "cc")
    assert [d.id for d in docs] == [f"{mirror.url}/{rel}:0"]
    q = read_side(work, "quarantine", "cc")
    assert len(q) == 1 and q[0]["file"] == f"{mirror.url}/{rel}"
    assert q[0]["offset"] == len(members[0]) + 5 and "gzip" in q[0]["reason"]
    warc = [r for r in mirror.log if r[0] == "/" + rel]
    assert len(warc) == 2 and all(rng and status == 206 for _, rng, status in warc)


def test_fetch_byte_range_resumes_a_cut_transfer_over_http_fsspec_and_local(
    tmp_path, mirror
) -> None:
    """A part of a file, over HTTP (a dropped connection resumes inside the range), through
    fsspec (``memory://``) and from a local path: exactly those bytes, nothing more asked."""
    import fsspec

    from curator.acquire.download import fetch

    blob = os.urandom(20000)
    with open(os.path.join(mirror.root, "f.bin"), "wb") as f:
        f.write(blob)
    mirror.faults["f.bin"] = [("drop", 1000)]
    res = fetch(mirror.url + "/f.bin", str(tmp_path / "h"), byte_range=(100, 5000), backoff=0.01)
    assert pathlib.Path(res.path).read_bytes() == blob[100:5100] and res.resumed == 1
    assert [r for _, r, _ in mirror.log] == ["bytes=100-5099", "bytes=1100-5099"]
    with fsspec.open("memory://cc/f.bin", "wb") as f:
        f.write(blob)
    res = fetch("memory://cc/f.bin", str(tmp_path / "m"), byte_range=(19000, 1000))
    assert pathlib.Path(res.path).read_bytes() == blob[19000:]
    res = fetch(os.path.join(mirror.root, "f.bin"), str(tmp_path / "l"), byte_range=(7, 9))
    assert pathlib.Path(res.path).read_bytes() == blob[7:16] and not res.local
