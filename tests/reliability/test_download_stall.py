"""A download server that keeps stalling (sends part of the file, then no bytes for longer than
the timeout, on every attempt): each attempt times out and is retried, then the failure is
reported as one error naming the URL, and no partial file is left under the final name.
(A stall that clears up is resumed: tests/acquire/test_download.py.)"""

from __future__ import annotations

import gzip
import os

import pytest

from curator.acquire.download import DownloadError, fetch
from tests.acquire.helpers_acquire import Mirror


def test_persistent_stall_is_retried_then_reported(tmp_path):
    mirror = Mirror(str(tmp_path / "mirror"))
    os.makedirs(mirror.root, exist_ok=True)
    data = b"".join(gzip.compress(os.urandom(30_000), mtime=0) for _ in range(4))
    with open(os.path.join(mirror.root, "s.gz"), "wb") as f:
        f.write(data)
    retries = 2
    mirror.faults["s.gz"] = [("stall", 1000)] * (retries + 5)
    dest = tmp_path / "out" / "s.gz"
    try:
        with pytest.raises(DownloadError) as e:
            fetch(f"{mirror.url}/s.gz", str(dest), verify="gzip", retries=retries,
                  backoff=0.01, timeout=0.3)
    finally:
        mirror.release.set()
        mirror.close()
    msg = str(e.value)
    assert f"{mirror.url}/s.gz" in msg and f"after {retries + 1} attempts" in msg
    assert "timed out" in msg.lower() and "\n" not in msg
    attempts = [entry for entry in mirror.log if entry[0].endswith("s.gz")]
    assert len(attempts) == retries + 1  # the first try and every retry hit the server
    assert not dest.exists()
