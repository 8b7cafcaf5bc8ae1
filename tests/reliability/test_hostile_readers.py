"""Decompression bombs against every reader, under a real address-space limit.

Each test builds its bomb at run time from a small compressed block repeated as concatenated
gzip members / bz2 streams (valid files that inflate to GBs; nothing big is committed), puts
good records before and after it, and runs ``curator run`` in a child process whose address
space is capped with ``RLIMIT_AS`` (1.5 GB). The run must complete, the bomb must be
quarantined as ``too_large`` with its file and offset, the neighbours must be kept, and the
child's peak RSS must stay far below the bomb's inflated size. The peak is the child's own
``VmHWM`` read at exit (``wait4``'s ``ru_maxrss`` would include the forked pytest process's
pages from before ``exec``).
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import os
import resource
import subprocess
import sys
import tarfile
from pathlib import Path

from curator.storage.shards import read_records
from tests.helpers import cli_env

# a cap on address space, far above the RSS bound each test asserts: virtual memory (thread
# arenas) reached 1.06 GB here with 150 MB resident, and more under a parallel suite
AS_LIMIT = 3_000_000_000
MB = 1 << 20


# Runs the curator CLI and, at exit, copies /proc/self/status (VmHWM: this process's peak RSS
# since exec) to the file named in argv[1].
_CHILD = ("import atexit, runpy, shutil, sys; out = sys.argv.pop(1); "
          "atexit.register(lambda: shutil.copy('/proc/self/status', out)); "
          "sys.argv[0] = 'curator'; runpy.run_module('curator', run_name='__main__')")


def run_limited(tmp_path: Path, stages: str) -> tuple[int, str]:
    """``curator run`` under RLIMIT_AS; returns (peak RSS in bytes, its output)."""
    (tmp_path / "p.yaml").write_text(f"name: bombs\nwork_dir: w\nprogress: log\n"
                                     f"stages:\n{stages}")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

    with open(tmp_path / "out.log", "wb") as out:
        p = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "status"), "run",
                            "p.yaml"], cwd=tmp_path, env=cli_env(), stdout=out,
                           stderr=subprocess.STDOUT, preexec_fn=limit, timeout=300)
    log = (tmp_path / "out.log").read_text()
    assert p.returncode == 0, log
    status = (tmp_path / "status").read_text()
    [hwm] = [int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")]
    return hwm * 1024, log


def side(tmp_path: Path, kind: str, sid: str) -> list[dict]:
    d = tmp_path / "w" / kind / sid
    return [r for f in sorted(d.glob("*")) for r in read_records(str(f))] if d.exists() else []


def out_docs(tmp_path: Path, sid: str) -> list[dict]:
    d = tmp_path / "w" / "stages" / sid / "data"
    return [r for f in sorted(d.glob("*")) for r in read_records(str(f))]


def gzip_bomb(prefix: bytes, block: bytes, repeat: int, suffix: bytes) -> bytes:
    """A multi-member gzip file inflating to prefix + block * repeat + suffix."""
    member = gzip.compress(block, 9)
    return gzip.compress(prefix) + member * repeat + gzip.compress(suffix)


def test_arxiv_two_gib_gzip_bomb_is_quarantined_under_a_memory_limit(tmp_path):
    paper = ("\\documentclass{article}\\begin{document}\n\\section{Intro}\n"
             + "Text of a good paper. " * 50 + "\n\\end{document}\n").encode()
    bomb = gzip_bomb(b"", b"\0" * (16 * MB), 128, b"")  # ~2 MB -> 2 GiB of "LaTeX"
    # a tar whose only .tex member claims 2 GiB: refused from its header
    head = tarfile.TarInfo("big.tex")
    head.size = 2 << 30
    tar_bomb = gzip_bomb(head.tobuf(), b"\0" * (16 * MB), 128, b"")
    members = {"2406/2406.00001.gz": gzip.compress(paper), "2406/2406.00002.gz": bomb,
               "2406/2406.00003.gz": tar_bomb, "2406/2406.00004.gz": gzip.compress(paper)}
    (tmp_path / "m" / "src").mkdir(parents=True)
    with tarfile.open(tmp_path / "m/src/arXiv_src_2406_001.tar", "w") as tf:
        for name, data in members.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    rss, log = run_limited(tmp_path, "  - arxiv: {months: '2406', base_url: m}\n")
    assert sorted(d["id"] for d in out_docs(tmp_path, "arxiv")) == ["2406.00001", "2406.00004"]
    q = side(tmp_path, "quarantine", "arxiv")
    assert sorted(r["record"]["arxiv_id"] for r in q) == ["2406.00002", "2406.00003"]
    assert {r["reason"] for r in q} == {"too_large"}
    assert all(r["file"].endswith("arXiv_src_2406_001.tar") and r["offset"] > 0 for r in q)
    assert "[arxiv] 4 -> 2 docs (0 removed, 2 quarantined)" in log
    assert rss < 600 * MB, rss


def test_wikipedia_300_mb_page_is_read_past_under_a_memory_limit(tmp_path):
    head = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">\n'
            "<siteinfo><base>https://xx.wikipedia.org/wiki/Main</base></siteinfo>\n")

    def page(title: str, pid: int, text: str) -> str:
        return (f"<page><title>{title}</title><ns>0</ns><id>{pid}</id><revision><id>{pid}0"
                f"</id><text>{text}</text></revision></page>\n")

    start = head + page("Before", 1, "The article before the bomb.")
    bomb_open = "<page><title>Bomb</title><ns>0</ns><id>2</id><revision><id>20</id><text>"
    end = "</text></revision></page>\n" + page("After", 3, "The article after it.")
    block = bz2.compress(b"a" * MB, 9)  # 300 streams of 1 MB: one 300 MB page
    data = (bz2.compress((start + bomb_open).encode()) + block * 300
            + bz2.compress((end + "</mediawiki>\n").encode()))
    assert len(data) < 100_000
    (tmp_path / "xxwiki-20240101-pages-articles.xml.bz2").write_bytes(data)
    rss, log = run_limited(tmp_path, "  - wikipedia: {paths: 'xxwiki-*.xml.bz2'}\n")
    assert "[wikipedia] 3 -> 2 docs (0 removed, 1 quarantined)" in log
    assert [d["meta"]["title"] for d in out_docs(tmp_path, "wikipedia")] == ["Before", "After"]
    [q] = side(tmp_path, "quarantine", "wikipedia")
    assert q["reason"] == "too_large" and q["record"] == {"title": "Bomb", "page_id": "2"}
    assert q["offset"] == len(start.encode()) and q["file"].endswith(".xml.bz2")
    assert rss < 600 * MB, rss


def test_jsonl_gz_with_a_one_gib_line_is_skipped_under_a_memory_limit(tmp_path):
    good_a = json.dumps({"id": "a", "text": "the line before"}) + "\n"
    data = gzip_bomb((good_a + '{"id": "bomb", "text": "').encode(), b"x" * (16 * MB), 64,
                     b'"}\n' + json.dumps({"id": "c", "text": "the line after"}).encode()
                     + b"\n")
    assert len(data) < 2 * MB  # a ~1 MB file holding one 1 GiB line
    (tmp_path / "in.jsonl.gz").write_bytes(data)
    rss, log = run_limited(tmp_path, "  - read_jsonl: {paths: in.jsonl.gz}\n")
    assert [d["id"] for d in out_docs(tmp_path, "read_jsonl")] == ["a", "c"]
    [q] = side(tmp_path, "quarantine", "read_jsonl")
    assert q["reason"] == "too_large" and q["line"] == 2 and q["offset"] == len(good_a)
    assert "1073741" in q["detail"]  # the line's length was measured while skipping it
    assert "[read_jsonl] 3 -> 2 docs (0 removed, 1 quarantined)" in log
    assert rss < 600 * MB, rss


def test_parquet_row_groups_of_texts_of_8_mb_are_read_in_bounded_batches(tmp_path):
    """A row group is the writer's choice: one of 64 texts of 8 MB (an 18 KB file) took
    1.75 GB, read whole. Rows are now read in batches of about 64 MB (from the row group's
    sizes, a dictionary page counted per row): row groups of 32 texts of 8 MB in plain pages,
    and a dictionary of one 8 MB value referred to 32 times, are read under the 3 GB
    address-space limit in 600 MB (they took 850 MB each before). The 18 KB file holds one
    512 MB page, which pyarrow can only decode whole: a decompression bomb, quarantined with
    its row group. Built from one 8 MB buffer referred to many times (nothing big in the
    test process)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = pa.array(["a" * (8 * MB)])

    def table(n: int) -> pa.Table:
        return pa.table({"id": [f"d{i}" for i in range(n)],
                         "text": pa.chunked_array([big] * n)})

    pq.write_table(table(32), str(tmp_path / "a_paged.parquet"), row_group_size=32,
                   compression="zstd", use_dictionary=False)
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(32)],
                             "text": pa.DictionaryArray.from_arrays(
                                 pa.array([0] * 32, pa.int32()), big)}),
                   str(tmp_path / "b_dictionary.parquet"), row_group_size=32,
                   compression="zstd")
    pq.write_table(table(64), str(tmp_path / "c_one_page.parquet"), row_group_size=64,
                   compression="zstd", use_dictionary=False, data_page_size=1 << 30)
    pq.write_table(pa.table({"id": ["after"], "text": ["a small one"]}),
                   str(tmp_path / "d_small.parquet"))
    assert max(os.path.getsize(f) for f in tmp_path.glob("*.parquet")) < 30_000
    rss, _ = run_limited(tmp_path, "  - read_parquet: {paths: '*.parquet'}\n")
    d = tmp_path / "w" / "stages" / "read_parquet" / "data"
    docs = [(r["id"], len(r["text"])) for f in sorted(d.glob("*")) for r in read_records(str(f))]
    assert docs == [(f"d{i}", 8 * MB) for i in range(32)] * 2 + [("after", 11)]
    [q] = side(tmp_path, "quarantine", "read_parquet")
    assert (q["reason"], q["file"], q["row_group"]) == (
        "Parquet page too large to decode", str(tmp_path / "c_one_page.parquet"), 0)
    assert "decompresses to 536871175 bytes from" in q["detail"]
    assert rss < 600 * MB, rss
