"""No secret in any output: credentials planted in URLs (user:password@, a pre-signed query,
``redis://:pw@``), in a secret-named parameter and in secret-named environment variables never
appear in anything a run writes (work_dir, markers, report.html/json, rejected/ and
quarantine/ records, outputs) or prints (``curator run``, ``curator status``, errors).
An unreachable HTTP source says why (connection refused), with its password masked."""

from __future__ import annotations

import base64
import gzip
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import zstandard

from tests.core.helpers_core import make_corpus
from tests.helpers import run_cli

SECRETS = {
    "url_password": "PW-URL-SECRET-1x",
    "query_signature": "SIG-QUERY-SECRET-2x",
    "env_token": "ENV-TOKEN-SECRET-3x",
    "param_password": "PARAM-SECRET-4x",
    "env_aws": "AWS-ENV-SECRET-5x",
    "unreachable_password": "PW-UNREACH-SECRET-6x",
    "redis_password": "PW-REDIS-SECRET-7x",
    "header_token": "HDR-BEARER-SECRET-8x",
}


class _AuthServer:
    """HTTP on 127.0.0.1 serving ``root``: ``/a.jsonl`` only with alice's password (Basic
    auth, as from ``http://alice:pw@host/``), ``/b.jsonl`` only with the signature query,
    ``/c.jsonl`` only with the bearer token (``storage_options: {headers: ...}``)."""

    def __init__(self, root: Path) -> None:
        self.seen_auth: list[str] = []
        want = "Basic " + base64.b64encode(
            f"alice:{SECRETS['url_password']}".encode()).decode()
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, head_only: bool) -> None:
                path, _, query = self.path.partition("?")
                ok = (path == "/a.jsonl" and self.headers.get("Authorization") == want) or (
                    path == "/b.jsonl" and SECRETS["query_signature"] in query) or (
                    path == "/c.jsonl" and self.headers.get("Authorization")
                    == f"Bearer {SECRETS['header_token']}")
                if self.headers.get("Authorization"):
                    outer.seen_auth.append(path)
                f = root / path.lstrip("/")
                if not ok or not f.is_file():
                    self.send_response(403 if f.is_file() else 404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = f.read_bytes()
                start, end = 0, len(data) - 1
                rng = self.headers.get("Range")
                if rng:
                    a, _, b = rng.split("=")[1].partition("-")
                    start, end = int(a), min(int(b) if b else end, end)
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(end - start + 1))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if not head_only:
                    self.wfile.write(data[start:end + 1])

            def do_GET(self):
                self._send(False)

            def do_HEAD(self):
                self._send(True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _readable(path: Path) -> bytes:
    """A written file's bytes as a reader sees them (zstd and gzip opened)."""
    data = path.read_bytes()
    if path.name.endswith(".zst"):
        return zstandard.ZstdDecompressor().stream_reader(data).read()
    if path.name.endswith(".gz"):
        return gzip.decompress(data)
    return data


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("CURATOR_TEST_API_TOKEN", SECRETS["env_token"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRETS["env_aws"])
    monkeypatch.setenv("CURATOR_REDIS_PASSWORD", SECRETS["redis_password"])


def _leaks(text: str | bytes) -> list[str]:
    if isinstance(text, str):
        text = text.encode()
    return [k for k, v in SECRETS.items() if v.encode() in text]


def test_no_secret_in_any_file_or_line_of_a_run(tmp_path, env):
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 150, seed=1, bad_lines=3)
    make_corpus(str(data / "b.jsonl"), 100, seed=2)
    make_corpus(str(data / "c.jsonl"), 50, seed=6)
    srv = _AuthServer(data)
    run_dir = tmp_path / "run"  # everything the run may write: work_dir, outputs
    wd = run_dir / "w"
    pipe = tmp_path / "p.yaml"
    pipe.write_text(
        f"name: secrets\nwork_dir: {wd}\nprogress: off\nstages:\n"
        f"  - id: basic\n    read_jsonl:\n      paths:\n"
        f"        - http://alice:{SECRETS['url_password']}@127.0.0.1:{srv.port}/a.jsonl\n"
        f"        - http://127.0.0.1:{srv.port}/b.jsonl?X-Amz-Signature="
        f"{SECRETS['query_signature']}\n"
        f"      shard_size_mb: 0.004\n"
        f"  - id: bearer\n    read_jsonl:\n      paths: http://127.0.0.1:{srv.port}/c.jsonl\n"
        f"      storage_options: {{headers: {{Authorization: 'Bearer "
        f"{SECRETS['header_token']}'}}}}\n"
        f"  - tests.core.helpers_core:LeakyReason: {{api_password: {SECRETS['param_password']}}}\n"
        f"    inputs: [basic, bearer]\n"
        f"  - write_jsonl: {{path: {run_dir / 'out'}}}\n")
    printed = []
    try:
        for args in (("run", str(pipe)), ("status", str(pipe)), ("run", str(pipe)),
                     ("report", str(wd))):
            p = run_cli(*args)
            printed += [p.stdout, p.stderr]
    finally:
        srv.close()
    # the secrets were in play: the authenticated source was read, short docs rejected with
    # the reason that quoted the token, bad lines quarantined
    assert "/a.jsonl" in srv.seen_auth and "/c.jsonl" in srv.seen_auth
    files = [f for f in run_dir.rglob("*") if f.is_file()]
    rejected = b"".join(_readable(f) for f in files if "rejected" in f.parts)
    assert b"service refused token ***" in rejected
    assert any("quarantine" in f.parts for f in files)
    assert len(list((run_dir / "out").glob("*"))) >= 1
    assert "http://alice:***@127.0.0.1" in (wd / "report.json").read_text()
    for f in files:
        assert not _leaks(_readable(f)), f"{f} holds {_leaks(_readable(f))}"
    for text in printed:
        assert not _leaks(text), f"printed {_leaks(text)}:\n{text}"


def test_unreachable_http_source_says_connection_refused_without_the_password(tmp_path, env):
    port = _closed_port()
    url = f"http://bob:{SECRETS['unreachable_password']}@127.0.0.1:{port}/x.jsonl"
    pipe = tmp_path / "p.yaml"
    pipe.write_text(f"name: u\nwork_dir: {tmp_path / 'w'}\nstages:\n"
                    f"  - read_jsonl: {{paths: '{url}'}}\n  - write_jsonl: {{path: out}}\n")
    p = run_cli("run", str(pipe), check=False)
    assert p.returncode != 0
    assert p.stderr.strip().splitlines()[-1] == (
        f"curator: error: read_jsonl.paths: 'http://bob:***@127.0.0.1:{port}/x.jsonl' "
        f"cannot be read: 127.0.0.1:{port}: Connection refused"), p.stderr
    assert not _leaks(p.stdout + p.stderr)
    assert not any(_leaks(f.read_bytes()) for f in tmp_path.rglob("*")
                   if f.is_file() and f != pipe)


def test_redis_url_password_is_masked_in_the_error(tmp_path, env):
    make_corpus(str(tmp_path / "a.jsonl"), 20, seed=3)
    node = f"redis://:{SECRETS['redis_password']}@127.0.0.1:{_closed_port()}"
    pipe = tmp_path / "p.yaml"
    pipe.write_text(f"name: r\nwork_dir: {tmp_path / 'w'}\nstages:\n"
                    f"  - read_jsonl: {{paths: {tmp_path / 'a.jsonl'}}}\n"
                    f"  - fuzzy_dedup: {{backend: redis, redis_nodes: ['{node}'],"
                    " redis_password_env: CURATOR_REDIS_PASSWORD}\n")
    p = run_cli("run", str(pipe), check=False)
    assert p.returncode != 0 and "curator: error:" in p.stderr
    assert "redis://:***@127.0.0.1" in p.stderr
    assert not _leaks(p.stdout + p.stderr), p.stderr
    assert not any(_leaks(_readable(f)) for f in tmp_path.rglob("*")
                   if f.is_file() and f != pipe)


@pytest.mark.parametrize("stage", ["tests.core.helpers_core:LeakyReason: {fail_on: doc-3-7}",
                                   "tests.core.helpers_core:LeakyPhase: {}"])
def test_a_failing_task_on_dask_workers_leaks_no_secret(tmp_path, env, monkeypatch, stage):
    """A task that fails with a library's error quoting secrets: masked in curator's line and
    in what the Dask workers log (they print failed tasks with their exception)."""
    monkeypatch.setenv("CURATOR_TEST_URL_PW", SECRETS["url_password"])
    make_corpus(str(tmp_path / "a.jsonl"), 40, seed=3)
    pipe = tmp_path / "p.yaml"
    pipe.write_text(f"name: d\nwork_dir: {tmp_path / 'w'}\nprogress: off\n"
                    "executor: {type: dask, workers: 1}\nstages:\n"
                    f"  - read_jsonl: {{paths: {tmp_path / 'a.jsonl'}}}\n  - {stage}\n")
    p = run_cli("run", str(pipe), check=False)
    assert p.returncode != 0
    assert "https://alice:***@api.example/ refused token ***" in p.stderr, p.stderr
    assert not _leaks(p.stdout + p.stderr), p.stderr


def test_a_secret_written_as_a_number_is_masked_and_not_in_the_fingerprint(tmp_path):
    """YAML reads ``password: 98765432`` as an int: it used to be written in clear to
    report.json, _SUCCESS.json and _FINGERPRINT (only strings were masked), and changing it
    reran the stage."""
    from curator.base.redact import redact_value

    assert redact_value({"api_password": 123456, "n": 5, "storage_options": {
        "token": {"refresh": 4567891234}, "anon": True, "max_keys": 0.5}}) == {
        "api_password": "***", "n": 5, "storage_options": {
            "token": {"refresh": "***"}, "anon": True, "max_keys": "***"}}
    data = tmp_path / "d.jsonl"
    make_corpus(str(data), 20, seed=3)
    wd = tmp_path / "w"
    pipe = tmp_path / "p.yaml"

    def write(password: int) -> None:
        pipe.write_text(
            f"name: numbers\nwork_dir: {wd}\nprogress: off\nstages:\n"
            f"  - read_jsonl: {{paths: {data}, storage_options: {{password: {password}, "
            f"token: {{refresh: 4567891234}}}}}}\n"
            f"  - write_jsonl: {{path: out}}\n")

    write(98765432)
    printed = [run_cli("run", str(pipe)).stdout, run_cli("status", str(pipe)).stdout]
    for f in (p for p in wd.rglob("*") if p.is_file()):
        body = _readable(f)
        assert b"98765432" not in body and b"4567891234" not in body, f
    assert not [t for t in printed if "98765432" in t or "4567891234" in t]
    write(12121212)  # rotating the password reruns nothing
    assert "nothing to do" in run_cli("status", str(pipe)).stdout
