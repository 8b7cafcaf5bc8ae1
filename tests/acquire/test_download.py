"""The resumable downloader against a real HTTP mirror with injected faults."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import os
import random

import pytest

from curator.acquire.download import (
    DownloadError,
    VerifyError,
    fetch,
    verify_bz2,
    verify_gzip,
    verify_tar,
)
from tests.acquire.helpers_acquire import Mirror, tar_bytes


def _gz_members(n: int, seed: int = 0) -> bytes:
    """Several gzip members of incompressible-ish data (like a WARC: one member per record)."""
    rnd = random.Random(seed)
    return b"".join(gzip.compress(rnd.randbytes(20_000) + b"x" * 20_000, mtime=0)
                    for _ in range(n))


def _put(mirror: Mirror, rel: str, data: bytes) -> str:
    path = os.path.join(mirror.root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return f"{mirror.url}/{rel}"


def _bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _fetch(url: str, dest: str, **kw):  # fast backoff for tests
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5)
    return fetch(url, dest, **kw)


def test_503_then_success(mirror: Mirror, tmp_path) -> None:
    data = _gz_members(3)
    url = _put(mirror, "a/f.gz", data)
    mirror.faults["a/f.gz"] = ["503", "503"]
    res = _fetch(url, str(tmp_path / "out/f.gz"), verify="gzip")
    assert res.attempts == 3
    assert [r[2] for r in mirror.requests_for("a/f.gz")] == [503, 503, 200]
    assert _bytes(res.path) == data


def test_dropped_connection_resumes_with_range(mirror: Mirror, tmp_path) -> None:
    data = _gz_members(20)
    url = _put(mirror, "f.gz", data)
    half = len(data) // 2
    mirror.faults["f.gz"] = [("drop", half)]
    res = _fetch(url, str(tmp_path / "f.gz"), verify="gzip")
    reqs = mirror.requests_for("f.gz")
    assert reqs[0][1] is None and reqs[1][2] == 206
    resumed_at = int(reqs[1][1].split("=")[1].rstrip("-"))
    assert 0 < resumed_at <= half  # kept what arrived, asked only for the rest
    assert res.resumed == 1 and res.bytes == len(data)  # no byte fetched twice
    assert hashlib.sha1(_bytes(res.path)).digest() == hashlib.sha1(data).digest()


def test_stalled_transfer_times_out_and_resumes(mirror: Mirror, tmp_path) -> None:
    data = _gz_members(20)
    url = _put(mirror, "s.gz", data)
    mirror.faults["s.gz"] = [("stall", len(data) // 2)]
    res = _fetch(url, str(tmp_path / "s.gz"), verify="gzip", timeout=0.5)
    assert res.resumed == 1 and any("Timeout" in e or "timed out" in e for e in res.errors)
    assert _bytes(res.path) == data


def test_truncated_gzip_is_never_marked_done(mirror: Mirror, tmp_path) -> None:
    data = _gz_members(3)
    url = _put(mirror, "t.gz", data)
    cut = len(data) - 100  # the last member loses its end
    mirror.faults["t.gz"] = [("truncate", cut)] * 3
    dest = str(tmp_path / "t.gz")
    with pytest.raises(DownloadError, match="truncated gzip"):
        _fetch(url, dest, verify="gzip", retries=2)
    assert not os.path.exists(dest) and not os.path.exists(dest + ".part")
    # The mirror heals: the next call downloads it from scratch and succeeds.
    res = _fetch(url, dest, verify="gzip")
    assert _bytes(res.path) == data


def test_truncated_once_then_complete(mirror: Mirror, tmp_path) -> None:
    data = _gz_members(3)
    url = _put(mirror, "u.gz", data)
    mirror.faults["u.gz"] = [("truncate", len(data) // 3)]
    res = _fetch(url, str(tmp_path / "u.gz"), verify="gzip")
    assert res.attempts == 2 and "verify" in res.errors[0]
    assert _bytes(res.path) == data


def test_server_ignoring_range_restarts_cleanly(mirror: Mirror, tmp_path) -> None:
    data = _gz_members(4)
    url = _put(mirror, "r.gz", data)
    mirror.faults["r.gz"] = [("drop", 5000), "ignore_range"]
    res = _fetch(url, str(tmp_path / "r.gz"), verify="gzip")
    assert _bytes(res.path) == data


def test_not_found_fails_at_once(mirror: Mirror, tmp_path) -> None:
    with pytest.raises(DownloadError, match="404"):
        _fetch(f"{mirror.url}/missing.gz", str(tmp_path / "m.gz"))
    assert len(mirror.requests_for("missing.gz")) == 1


def test_done_file_is_not_downloaded_again(mirror: Mirror, tmp_path) -> None:
    url = _put(mirror, "d.gz", _gz_members(1))
    dest = str(tmp_path / "d.gz")
    _fetch(url, dest, verify="gzip")
    res = _fetch(url, dest, verify="gzip")
    assert res.skipped and len(mirror.requests_for("d.gz")) == 1


def test_checksum_mismatch_fails(mirror: Mirror, tmp_path) -> None:
    data = _gz_members(1)
    url = _put(mirror, "c.gz", data)
    dest = str(tmp_path / "c.gz")
    with pytest.raises(DownloadError, match="sha1 mismatch"):
        _fetch(url, dest, checksum=("sha1", "0" * 40), retries=1)
    assert not os.path.exists(dest)
    res = _fetch(url, dest, checksum=("sha1", hashlib.sha1(data).hexdigest()))
    assert os.path.exists(res.path)


def test_local_files_are_used_in_place(tmp_path) -> None:
    p = tmp_path / "x.gz"
    p.write_bytes(_gz_members(1))
    res = fetch(str(p), str(tmp_path / "copy.gz"))
    assert res.local and res.path == str(p)
    with pytest.raises(DownloadError, match="not found"):
        fetch(str(tmp_path / "nope.gz"), str(tmp_path / "n.gz"))


def test_verifiers(tmp_path) -> None:
    g = tmp_path / "g.gz"
    g.write_bytes(_gz_members(3))
    assert verify_gzip(str(g)) == 3
    g.write_bytes(_gz_members(3)[:-10])
    with pytest.raises(VerifyError, match="truncated"):
        verify_gzip(str(g))
    b = tmp_path / "b.bz2"
    b.write_bytes(bz2.compress(b"a" * 1000) + bz2.compress(b"b" * 1000))
    assert verify_bz2(str(b)) == 2
    b.write_bytes(bz2.compress(os.urandom(5000))[:-20])
    with pytest.raises(VerifyError):
        verify_bz2(str(b))
    t = tmp_path / "t.tar"
    t.write_bytes(tar_bytes({"a/1.gz": os.urandom(3000), "a/2.gz": os.urandom(3000)}))
    assert verify_tar(str(t)) == 2
    t.write_bytes(t.read_bytes()[:4000])
    with pytest.raises(VerifyError):
        verify_tar(str(t))


def test_fsspec_urls_download_and_verify(tmp_path) -> None:
    """Non-HTTP URLs (s3://, gs://...) go through fsspec; memory:// stands in for them."""
    import fsspec

    data = _gz_members(3)
    fs = fsspec.filesystem("memory")
    fs.pipe("/bucket/crawl/f.gz", data)
    fs.pipe("/bucket/crawl/bad.gz", data[:-50])
    try:
        res = _fetch("memory://bucket/crawl/f.gz", str(tmp_path / "f.gz"), verify="gzip")
        assert _bytes(res.path) == data and res.bytes == len(data)
        with pytest.raises(DownloadError, match="truncated gzip"):
            _fetch("memory://bucket/crawl/bad.gz", str(tmp_path / "bad.gz"), verify="gzip",
                   retries=1)
        assert not os.path.exists(tmp_path / "bad.gz")
        with pytest.raises(DownloadError, match="not found"):
            _fetch("memory://bucket/crawl/none.gz", str(tmp_path / "n.gz"), backoff=30)
    finally:
        fs.rm("/bucket", recursive=True)


def test_unknown_protocol_fails_at_once_with_a_clear_line(tmp_path) -> None:
    from curator.base.errors import InputError

    with pytest.raises(InputError, match="cannot read 'nosuchfs://' URLs"):
        fetch("nosuchfs://bucket/x.gz", str(tmp_path / "x.gz"), backoff=30)


def test_gz_served_with_content_encoding_is_saved_as_is(mirror: Mirror, tmp_path) -> None:
    data = _gz_members(3)
    url = _put(mirror, "e.gz", data)
    mirror.faults["e.gz"] = ["gzip_encoding"]
    res = _fetch(url, str(tmp_path / "e.gz"), verify="gzip", retries=0)
    assert _bytes(res.path) == data
