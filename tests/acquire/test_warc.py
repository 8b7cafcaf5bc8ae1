"""WARC -> text: bad records end as counted quarantine records, good ones as documents."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
import time
import zlib

import pytest

from curator.acquire.warc import parse_ranges
from curator.base.errors import ConfigError
from curator.extract.charset import decode_html
from curator.extract.timeout import ExtractTimeout, time_limit
from tests.acquire.helpers_acquire import (
    PROSE,
    Mirror,
    cc_mirror_tree,
    page,
    read_output,
    read_side,
    run_pipeline,
    stage_stats,
    warc_response,
    write_warc,
)

JA = ["東京は日本の首都であり、世界で最も人口の多い都市圏の一つとして知られています。",
      "江戸時代には将軍の城下町として栄え、明治維新の後に現在の名前に改められました。",
      "現在では政治と経済と文化の中心として、多くの人々が国内外から訪れています。"]


def _bad_header_member() -> bytes:
    return gzip.compress(b"WARC/1.0\r\nThis is not a header\r\nContent-Length: 5\r\n\r\n"
                         b"hello\r\n\r\n", mtime=0)


def _corrupt_member() -> bytes:
    good = warc_response("https://x.example/corrupt", page("C", PROSE).encode())
    return good[:10] + bytes(b ^ 0x5A for b in good[10:40]) + good[40:]


def test_bad_records_are_quarantined_and_counted(tmp_path) -> None:
    legacy = page("Café société", [p + " Café, naïve façade, déjà vu." for p in PROSE],
                  charset=None).encode("cp1252")
    sjis = page("東京", JA, charset="shift_jis").encode("shift_jis")
    huge = page("Huge", PROSE + ["word " * (4 * 1024 * 1024)]).encode()  # ~20 MB
    assert len(huge) > 20_000_000
    members = [
        warc_response("https://a.example/1", page("One", PROSE).encode()),
        _bad_header_member(),
        warc_response("https://legacy.example/cafe", legacy, "text/html; charset=windows-1252"),
        warc_response("https://jp.example/tokyo", sjis, "text/html"),
        warc_response("https://a.example/empty", b""),
        warc_response("https://a.example/huge", huge),
        warc_response("https://a.example/robots.txt", b"User-agent: *", "text/plain"),
        warc_response("https://a.example/req", b"", rec_type="request"),
        warc_response("https://a.example/2", page("Two", PROSE[::-1]).encode(),
                      extra={"WARC-Truncated": "length"}),
        _corrupt_member(),
        warc_response("https://a.example/3", page("Three", PROSE[1:] * 2).encode()),
        warc_response("https://a.example/cut", page("Cut", PROSE).encode())[:-30],
    ]
    path = write_warc(str(tmp_path / "in" / "crawl.warc.gz"), members)
    work = str(tmp_path / "work")
    summary = run_pipeline(work, [{"read_warc": {"paths": path, "extractor": "resiliparse"},
                                   "id": "warc"}])
    docs = {d.meta["url"]: d for d in read_output(summary, "warc")}
    # the record the file ends inside is read as far as it goes, as warcio reads it
    assert sorted(docs) == sorted(["https://a.example/1", "https://legacy.example/cafe",
                                   "https://jp.example/tokyo", "https://a.example/2",
                                   "https://a.example/3", "https://a.example/cut"])
    assert docs["https://a.example/cut"].meta["warc_truncated"] == "file_end"
    assert "Café, naïve façade, déjà vu." in docs["https://legacy.example/cafe"].text
    assert docs["https://legacy.example/cafe"].meta["charset"] == "cp1252"
    assert JA[0] in docs["https://jp.example/tokyo"].text
    one = docs["https://a.example/1"]
    assert one.meta["warc_record_id"].startswith("<urn:uuid:") and one.meta["date"]
    assert one.id in one.meta["warc_record_id"] and one.meta["source"] == "warc"
    assert "Menu item" not in one.text and PROSE[0] in one.text
    assert "warc_truncated" not in one.meta
    assert docs["https://a.example/2"].meta["warc_truncated"] == "length"

    q = read_side(work, "quarantine", "warc")
    reasons = sorted(r["reason"].split(":")[0] for r in q)
    assert reasons == sorted(["bad WARC record", "empty page", "page too large",
                              "corrupt gzip member"])
    assert all(r["file"] == path and isinstance(r["offset"], int) for r in q)
    c = stage_stats(summary, "warc")["counters"]
    assert c["warc_bad_records"] == 1 and c["empty_pages"] == 1 and c["pages_too_large"] == 1
    assert c["warc_corrupt_members"] == 1 and c["warc_truncated_files"] == 1
    assert c["skipped:response: no HTML content type"] == 1
    assert c["skipped:request: not a page"] == 1
    assert c["warc_truncated_records"] == 2

    # A larger limit turns the 20 MB page into a clean document instead.
    summary = run_pipeline(str(tmp_path / "work2"), [{"read_warc": {
        "paths": path, "extractor": "resiliparse", "max_page_mb": 30}, "id": "warc"}])
    assert "https://a.example/huge" in {d.meta["url"] for d in read_output(summary, "warc")}


def test_decode_without_declaration_uses_detection() -> None:
    text = ("Le café où nous étions était très animé; à côté, un élève répétait sa leçon "
            "de français près de la fenêtre. ") * 5
    html, cs = decode_html(f"<html><body><p>{text}</p></body></html>".encode("cp1252"))
    assert text in html and cs != "utf-8"
    assert decode_html(b"<p>ok</p>", "text/html; charset=utf-8") == ("<p>ok</p>",
                                                                              "utf-8")


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_time_limit_interrupts_worker_threads() -> None:
    """Dask runs tasks in worker threads, where SIGALRM is not available."""
    out: dict[str, object] = {}

    def work() -> None:
        t0 = time.monotonic()
        try:
            with time_limit(0.2):
                _busy(5)
            out["r"] = "finished"
        except ExtractTimeout:
            out["r"] = "timeout"
        out["t"] = time.monotonic() - t0
        with time_limit(1.0):  # a limit that is not reached leaves no exception behind
            _busy(0.05)
        out["after"] = "ok"

    th = threading.Thread(target=work)
    th.start()
    th.join(10)
    assert out["r"] == "timeout" and out["t"] < 2 and out["after"] == "ok"


def test_time_limit_main_thread_uses_sigalrm() -> None:
    code = ("import time, signal\n"
            "from curator.extract.timeout import time_limit, ExtractTimeout\n"
            "t=time.monotonic()\n"
            "try:\n"
            "    with time_limit(0.2):\n"
            "        while time.monotonic()-t < 5: pass\n"
            "    print('finished')\n"
            "except ExtractTimeout:\n"
            "    print('timeout', round(time.monotonic()-t, 1),"
            " signal.getsignal(signal.SIGALRM) is signal.SIG_DFL)\n")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    words = r.stdout.split()
    assert words[0] == "timeout" and float(words[1]) < 2 and words[2] == "True", r.stderr


def test_pathological_page_times_out_and_is_counted(tmp_path, monkeypatch) -> None:
    from curator.extract import extract_html as html_mod

    real = html_mod.EXTRACTORS["resiliparse"]

    def slow_on_marker(h: str) -> str:  # failure injection: one page that never finishes
        if "PATHOLOGICAL" in h:
            _busy(30)
        return real(h)

    monkeypatch.setitem(html_mod.EXTRACTORS, "resiliparse", slow_on_marker)
    members = [warc_response("https://a.example/ok", page("Ok", PROSE).encode()),
               warc_response("https://a.example/slow", page("PATHOLOGICAL", PROSE).encode()),
               warc_response("https://a.example/ok2", page("Ok2", PROSE[:2]).encode())]
    path = write_warc(str(tmp_path / "t.warc.gz"), members)
    t0 = time.monotonic()
    summary = run_pipeline(str(tmp_path / "w"), [{"read_warc": {
        "paths": path, "extractor": "resiliparse", "timeout_s": 0.3}, "id": "warc"}])
    assert time.monotonic() - t0 < 15
    assert [d.meta["url"] for d in read_output(summary, "warc")] == [
        "https://a.example/ok", "https://a.example/ok2"]
    assert stage_stats(summary, "warc")["counters"]["extract_timeouts"] == 1
    q = read_side(str(tmp_path / "w"), "quarantine", "warc")
    assert [r["record"]["url"] for r in q] == ["https://a.example/slow"]
    assert "timed out" in q[0]["reason"]


def test_parse_ranges() -> None:
    assert parse_ranges("0,3,5-7", 10) == [0, 3, 5, 6, 7]
    assert parse_ranges("2-2, 1", 3) == [1, 2]
    for bad in ("1-", "a", "5-3", "0-10"):
        with pytest.raises(ConfigError):
            parse_ranges(bad, 10)


def _cc_tree(root: str) -> list[str]:
    files = [[warc_response(f"https://f{i}.example/{j}", page(f"F{i} {j}", PROSE).encode())
              for j in range(3)] for i in range(3)]
    return cc_mirror_tree(root, "CC-MAIN-2024-10", files)


def test_common_crawl_over_http_with_faults_and_resume(tmp_path, mirror: Mirror) -> None:
    rels = _cc_tree(mirror.root)
    mirror.faults[rels[0]] = ["503"]
    size2 = os.path.getsize(os.path.join(mirror.root, rels[2]))
    # (a cut exactly between two gzip members would look complete: cut inside one)
    mirror.faults[rels[2]] = [("drop", size2 // 2), ("truncate", size2 // 3 + 7)]
    work = str(tmp_path / "work")
    params = {"snapshot": "CC-MAIN-2024-10", "base_url": mirror.url, "files": "0,2",
              "extractor": "resiliparse", "backoff_s": 0.01}
    summary = run_pipeline(work, [{"common_crawl": params, "id": "cc"}])
    docs = read_output(summary, "cc")
    assert sorted(d.meta["url"] for d in docs) == sorted(
        f"https://f{i}.example/{j}" for i in (0, 2) for j in range(3))
    assert all(d.meta["source"] == "common_crawl" for d in docs)
    assert not mirror.requests_for(rels[1])
    c = stage_stats(summary, "cc")["counters"]
    assert c["files_downloaded"] == 2 and c["download_retries"] == 3
    for rel in (rels[0], rels[2]):
        assert os.path.exists(os.path.join(work, "downloads", "cc", rel))
    # Another extractor: the stage reruns but the verified downloads are reused.
    before = len(mirror.log)
    summary = run_pipeline(work, [{"common_crawl": {**params, "extractor": "trafilatura"},
                                   "id": "cc"}])
    assert stage_stats(summary, "cc")["counters"]["files_already_downloaded"] == 2
    assert all(r[0].endswith("warc.paths.gz") for r in mirror.log[before:])
    assert len(read_output(summary, "cc")) == 6


def test_snapshot_is_validated(tmp_path) -> None:
    with pytest.raises(ConfigError, match="CC-MAIN-2024-10"):
        run_pipeline(str(tmp_path), [{"common_crawl": {"snapshot": "2024-10"}}])


def test_corrupt_member_resync_keeps_offsets(tmp_path) -> None:
    """After a corrupt member the reader finds the next record by its gzip header."""
    from curator.acquire.warc import iter_members
    from curator.core.context import ShardContext

    good = [warc_response(f"https://a.example/{i}", b"<p>x</p>") for i in range(3)]
    data = good[0] + _corrupt_member() + good[1] + good[2]
    p = tmp_path / "x.warc.gz"
    p.write_bytes(data)
    ctx = ShardContext(shard="s", stage_id="t", work_dir=str(tmp_path / "w"), artifacts={})
    got = list(iter_members(str(p), ctx))
    ctx.close()
    offs = [0, len(good[0]) + len(_corrupt_member()),
            len(good[0]) + len(_corrupt_member()) + len(good[1])]
    assert [o for o, _ in got] == offs
    assert [b for _, b in got] == [zlib.decompress(g, 31) for g in good]
    assert len(ctx.quarantined) == 1
    assert next(iter(ctx.quarantined)).startswith("corrupt gzip member")


def _pathological_page() -> bytes:
    """A real page trafilatura needs seconds for (40,000 paragraphs, ~8 MB); no mock."""
    import random

    rnd = random.Random(0)
    words = ["alpha", "river", "town", "bridge", "market", "history", "record", "gamma"]
    paras = "".join("<p>" + " ".join(rnd.choice(words) for _ in range(30)) + f" {i}.</p>"
                    for i in range(40000))
    return f"<html><body><div>{paras}</div></body></html>".encode()


@pytest.mark.parametrize("executor", ["dask", "mpi"])
def test_real_slow_page_times_out_under_dask_threads_and_mpi_ranks(tmp_path, executor) -> None:
    """Dask runs tasks in worker threads (watchdog path), MPI ranks in main threads (SIGALRM);
    both must stop the slow page and give the same documents as the local executor."""
    import json

    from curator.storage.shards import read_shard

    members = [warc_response(f"https://a.example/{i}", page(f"P{i}", PROSE).encode())
               for i in range(3)]
    members.insert(1, warc_response("https://a.example/slow", _pathological_page()))
    write_warc(str(tmp_path / "in" / "a.warc.gz"), members[:2])
    write_warc(str(tmp_path / "in" / "b.warc.gz"), members[2:])
    yml = tmp_path / "p.yaml"
    yml.write_text(
        f"name: t\nwork_dir: {tmp_path / 'w'}\nexecutor: {{type: {executor}, workers: 2}}\n"
        f"stages:\n  - read_warc: {{paths: '{tmp_path}/in/*.warc.gz', timeout_s: 0.5}}\n"
        "    id: warc\n")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cmd = [sys.executable, "-m", "curator", "run", str(yml)]
    if executor == "mpi":
        cmd = [os.path.join(os.path.dirname(sys.executable), "mpiexec"), "-n", "2", *cmd]
    env = dict(os.environ, PYTHONPATH=repo)
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=repo)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 60
    with open(tmp_path / "w" / "report.json") as f:
        st = json.load(f)["stages"][0]
    assert st["docs_out"] == 3, st
    assert st["counters"]["extract_timeouts"] == 1
    assert st["quarantined"] == {"extraction timed out after 0.5s": 1}
    local = run_pipeline(str(tmp_path / "local"), [{"read_warc": {
        "paths": f"{tmp_path}/in/*.warc.gz", "timeout_s": 0.5}, "id": "warc"}])
    with open(tmp_path / "w" / "stages" / "warc" / "_SUCCESS.json") as f:
        shards = json.load(f)["shards"]
    distributed = [(d.id, d.text, d.meta) for s in shards for d in read_shard(s["path"])]
    assert distributed == [(d.id, d.text, d.meta) for d in read_output(local, "warc")]


def test_missing_file_fails_or_is_skipped(tmp_path, mirror: Mirror) -> None:
    from curator.base.errors import CuratorError

    rels = _cc_tree(mirror.root)
    os.unlink(os.path.join(mirror.root, rels[1]))
    params = {"snapshot": "CC-MAIN-2024-10", "base_url": mirror.url,
              "extractor": "resiliparse", "backoff_s": 0.01}
    with pytest.raises(CuratorError, match="404"):
        run_pipeline(str(tmp_path / "a"), [{"common_crawl": params, "id": "cc"}])
    work = str(tmp_path / "b")
    summary = run_pipeline(work, [{"common_crawl": {**params, "on_download_error": "skip"},
                                   "id": "cc"}])
    assert sorted({d.meta["url"].split("/")[2] for d in read_output(summary, "cc")}) == [
        "f0.example", "f2.example"]
    q = read_side(work, "quarantine", "cc")
    assert len(q) == 1 and q[0]["record"]["url"].endswith(rels[1]) and "404" in q[0]["reason"]
    assert stage_stats(summary, "cc")["counters"]["files_failed"] == 1


def test_gzip_bomb_member_is_quarantined_in_bounded_memory(tmp_path) -> None:
    from curator.acquire.warc import iter_members
    from curator.core.context import ShardContext

    ok = warc_response("https://a.example/ok", b"<p>fine</p>")
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = co.compress(b"\0" * (100 << 20)) + co.flush()  # 100 MB from ~100 KB
    p = tmp_path / "bomb.warc.gz"
    p.write_bytes(ok + bomb + ok)
    ctx = ShardContext(shard="s", stage_id="t", work_dir=str(tmp_path / "w"), artifacts={})
    got = list(iter_members(str(p), ctx, max_bytes=8 << 20))
    ctx.close()
    assert [o for o, _ in got] == [0, len(ok) + len(bomb)]
    assert ctx.counters["warc_oversized_records"] == 1


def test_first_page_of_a_fresh_worker_is_not_charged_the_import() -> None:
    """Importing trafilatura takes a while; it must happen outside the time limit. The limit
    is set to half the import time measured in a fresh interpreter, so the first page of a
    fresh process would time out if the import were charged to it."""
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    probe = ("import time\nt = time.perf_counter()\nimport trafilatura  # noqa\n"
             "print(time.perf_counter() - t)\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    limit = float(r.stdout) / 2
    code = ("from curator.extract.extract_html import extract_text\n"
            "html = '<html><body><article><p>' + 'A sentence about rivers. ' * 40 + "
            "'</p></article></body></html>'\n"
            f"print(len(extract_text(html, 'trafilatura', timeout_s={limit!r})) > 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True"]
