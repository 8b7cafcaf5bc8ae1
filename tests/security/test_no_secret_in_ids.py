"""Values curator derives from an input's URL (document ids, ``rewrite`` ids, a quarantined
record's ``file``) are made from the URL without its credentials and query: a pre-signed
URL's signature and token reach no file under the work_dir or the output folder (outputs,
stage data, exact_dedup's hash files, phase results, markers, report) and no printed line."""

from __future__ import annotations

import gzip
import io
import json
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import zstandard

from tests.helpers import run_cli

SIG = "SIGf00dcafe1234abcd"
TOKEN = "TOKbeef5678efgh"
USERPW = "PWuser9999zz"


def _serve(root: Path, want: tuple[str, ...]) -> ThreadingHTTPServer:
    """A 127.0.0.1 server of ``root`` that answers only requests carrying every value of
    ``want`` in their query (as a pre-signed URL's server checks its signature)."""

    class H(SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *a):
            pass

        def send_head(self):
            if not all(w in self.path.partition("?")[2] for w in want):
                self.send_error(403)
                return None
            return super().send_head()

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _contents(path: Path) -> bytes:
    """A file's bytes, and those of what it holds when compressed or a zip (``.npz``)."""
    data = path.read_bytes()
    out = [data]
    if path.name.endswith(".zst"):
        out.append(zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read())
    elif path.name.endswith(".gz"):
        out.append(gzip.decompress(data))
    elif data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            out += [z.read(n) for n in z.namelist()]
    return b"\n".join(out)


def test_presigned_url_secrets_reach_no_file_and_no_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    lines = [json.dumps({"text": f"document number {i} has several words in it"})
             for i in range(6)]
    lines[2] = lines[1]  # an exact duplicate: exact_dedup records it under the kept id
    lines.insert(3, "{not json")  # quarantined with its file named
    (data / "in.jsonl").write_text("\n".join(lines) + "\n")
    for name in ("other", "third"):
        (data / f"{name}.jsonl").write_text("".join(
            json.dumps({"text": f"{name} text {i} with words"}) + "\n" for i in range(3)))
    srv = _serve(data, (SIG, TOKEN))
    port = srv.server_address[1]
    q = f"X-Amz-Signature={SIG}&token={TOKEN}&X-Amz-Expires=3600"
    run_dir = tmp_path / "run"
    pipe = tmp_path / "p.yaml"
    pipe.write_text(
        f"name: presigned\nwork_dir: {run_dir / 'w'}\nprogress: off\nstages:\n"
        f"  - id: plain\n    read_jsonl: {{paths: ['http://127.0.0.1:{port}/in.jsonl?{q}']}}\n"
        f"  - id: rewritten\n    read_jsonl:\n      ids: rewrite\n      paths:\n"
        f"        - 'http://u:{USERPW}@127.0.0.1:{port}/other.jsonl?{q}'\n"
        f"        - 'http://127.0.0.1:{port}/third.jsonl?{q}'\n"
        f"  - exact_dedup: {{}}\n    inputs: [plain, rewritten]\n"
        f"  - write_jsonl: {{path: {run_dir / 'out'}, compression: none}}\n")
    printed = []
    try:
        for args in (("run", str(pipe)), ("status", str(pipe)), ("run", str(pipe))):
            p = run_cli(*args)
            printed += [p.stdout, p.stderr]
    finally:
        srv.shutdown()
        srv.server_close()
    out = [json.loads(x) for f in sorted((run_dir / "out").glob("*.jsonl"))
           for x in f.read_text().splitlines()]
    ids = {d["id"] for d in out}
    # the sources were read (the server checked the signature), duplicates removed
    assert "in.jsonl:0" in ids and "in.jsonl:108" not in ids, sorted(ids)  # line 3: a copy
    assert {"rewritten/other.jsonl:0", "rewritten/third.jsonl:0"} <= ids, sorted(ids)
    files = [f for f in run_dir.rglob("*") if f.is_file()]
    assert any("quarantine" in f.parts for f in files)
    assert any("exact_dedup" in f.parts for f in files)
    for f in files:
        body = _contents(f)
        for secret in (SIG, TOKEN, USERPW):
            assert secret.encode() not in body, f"{f} holds {secret}"
    for text in printed:
        for secret in (SIG, TOKEN, USERPW):
            assert secret not in text, text
    quarantined = b"".join(_contents(f) for f in files if "quarantine" in f.parts)
    assert f"http://127.0.0.1:{port}/in.jsonl".encode() in quarantined


def test_public_url_keeps_scheme_host_and_path_only():
    from curator.base.urls import public_url
    from curator.io.jsonl import relative_names

    assert public_url("https://u:p@h.example:8443/a/b.jsonl?sig=1&x=2#f") == \
        "https://h.example:8443/a/b.jsonl"
    assert public_url("s3://bucket/k/x.parquet?versionId=9") == "s3://bucket/k/x.parquet"
    assert public_url("/data/a?b.jsonl") == "/data/a?b.jsonl"  # a local name is a name
    # two inputs that differ only in their query still get distinct names
    names = relative_names(["https://h/d/x.jsonl?part=1&sig=S1", "https://h/d/x.jsonl?part=2"])
    assert len(set(names)) == 2 and all(n.startswith("x.jsonl#") for n in names)
    assert not any("S1" in n or "part" in n for n in names)
