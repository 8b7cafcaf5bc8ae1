"""s3:// through fsspec against a real S3-compatible server on 127.0.0.1 (moto_server), so the
read and write paths users take for object stores are exercised without the internet."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner


@pytest.fixture
def s3(monkeypatch, tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    server = os.path.join(os.path.dirname(sys.executable), "moto_server")
    proc = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:  # readiness poll
        try:
            urllib.request.urlopen(url, timeout=1)
            break
        except OSError:
            assert time.monotonic() < deadline, "moto_server did not start"
            time.sleep(0.05)
    for k, v in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                 "AWS_ENDPOINT_URL": url, "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem()
    fs.call_s3("create_bucket", Bucket="corpus")
    yield fs
    proc.terminate()
    proc.wait(10)
    s3fs.S3FileSystem.clear_instance_cache()


def test_read_and_write_through_s3(s3, tmp_path):
    recs = [{"id": f"d{i}", "text": f"object store document {i}", "lang": "en"}
            for i in range(25)]
    with s3.open("corpus/in/part-0.jsonl.gz", "wb") as f:
        f.write(gzip.compress("".join(json.dumps(r) + "\n" for r in recs).encode()))
    with s3.open("corpus/in/part-1.jsonl", "wb") as f:
        f.write(b'{"id": "x", "text": "plain"}\n{broken\n')
    text = (f"name: s3\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
            "  - read_jsonl: {paths: 's3://corpus/in/*'}\n"
            "  - write_jsonl: {path: 's3://corpus/out', compression: zstd}\n"
            "  - write_parquet: {path: 's3://corpus/pq'}\n")
    summary = Runner(pl.loads(text), LocalExecutor()).run()
    st = summary["stages"][0]
    assert st["shards"] == 2 and st["docs_out"] == 26
    assert sum(st["quarantined"].values()) == 1
    assert sorted(s3.ls("corpus/out")) == ["corpus/out/read_jsonl-00000.jsonl.zst",
                                           "corpus/out/read_jsonl-00001.jsonl.zst"]
    assert not [p for p in s3.find("corpus") if ".tmp-" in p]  # atomic: temporaries moved
    import pyarrow.parquet as pq

    with s3.open("corpus/pq/read_jsonl-00000.parquet", "rb") as f:
        table = pq.read_table(f)
    assert table.column("id").to_pylist() == [r["id"] for r in recs]
    assert set(table.column("lang").to_pylist()) == {"en"}


def test_changed_s3_object_reruns_only_its_shard(s3, tmp_path):
    """A remote input's identity is its ETag / Last-Modified / size from ``fs.info``: an object
    rewritten under the same key reruns the one shard that read it."""
    import s3fs

    for i in range(3):
        with s3.open(f"corpus/in/part-{i}.jsonl", "wb") as f:
            f.write(f'{{"id": "d{i}", "text": "object number {i}"}}\n'.encode())
    text = (f"name: s3\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
            "  - read_jsonl: {paths: 's3://corpus/in/*'}\n"
            "  - write_jsonl: {path: out}\n")

    def run() -> dict:
        s3fs.S3FileSystem.clear_instance_cache()  # as a new process would see the bucket
        return Runner(pl.loads(text), LocalExecutor()).run()["stages"]

    run()
    marker = json.loads((tmp_path / "w/stages/read_jsonl/_done/read_jsonl-00001.json")
                        .read_text())
    [ident] = marker["read"].values()
    assert ident.get("ETag") and ident.get("size")
    assert all(s["skipped"] for s in run())
    with s3.open("corpus/in/part-1.jsonl", "wb") as f:  # same key, same size, new content
        f.write(b'{"id": "d1", "text": "object NUMBER 1"}\n')
    stages = run()
    assert [s["shards_resumed"] for s in stages] == [2, 2]
    with gzip.open(tmp_path / "w/out/read_jsonl-00001.jsonl.gz", "rt") as f:
        assert json.loads(f.read())["text"] == "object NUMBER 1"
