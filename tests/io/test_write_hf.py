"""``write_hf``: the hub's folder layout, read back whole by the real ``datasets`` library; a
``repo_id`` that cannot be uploaded stops the run before any stage."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
import pytest
import yaml

from curator.base.errors import ConfigError
from curator.core import pipeline as pl
from curator.core.executors import make_executor
from curator.core.runner import Runner
from tests.helpers import run_cli


def _inputs(tmp: Path) -> list[dict[str, Any]]:
    """Three files whose metadata differ: a field only the second has, a score that is an int
    in one file and a float in another, a list, a nested object."""
    files = [
        [{"id": f"a{i}", "text": f"alpha {i}", "score": i} for i in range(4)],
        [
            {
                "id": f"b{i}",
                "text": f"beta {i}",
                "score": i + 0.5,
                "lang": "en",
                "tags": ["x", str(i)],
                "info": {"n": i},
            }
            for i in range(3)
        ],
        [],
        [{"id": f"c{i}", "text": f"gamma {i} é", "score": None} for i in range(2)],
    ]
    (tmp / "in").mkdir()
    for k, rows in enumerate(files):
        (tmp / "in" / f"{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [r for rows in files for r in rows]


def _pipeline(tmp: Path, out: Path, **params: Any) -> Path:
    cfg = {
        "name": "hubtest",
        "work_dir": str(tmp / "work"),
        "executor": {"type": "local"},
        "stages": [
            {"read_jsonl": {"paths": str(tmp / "in" / "*.jsonl")}},
            {"write_hf": {"path": str(out), **params}},
        ],
    }
    (tmp / "p.yaml").write_text(yaml.safe_dump(cfg))
    return tmp / "p.yaml"


def _run(path: Path) -> dict[str, Any]:
    pipe = pl.load(str(path))
    with make_executor(pipe.config.executor) as ex:
        return Runner(pipe, ex).run()


def test_load_dataset_reads_the_folder_whole_in_order(tmp_path: Path) -> None:
    rows = _inputs(tmp_path)
    out = tmp_path / "hub"
    _run(_pipeline(tmp_path, out))
    names = sorted(os.listdir(out / "data"))
    # the empty input file makes no shard; the others are numbered as the hub numbers them
    assert names == [f"train-0000{i}-of-00003.parquet" for i in range(3)]
    schemas = {str(pq.read_schema(out / "data" / n)) for n in names}
    assert len(schemas) == 1  # one schema in every shard

    ds = datasets.load_dataset(str(out), split="train")
    got = list(ds)
    assert [r["id"] for r in got] == [r["id"] for r in rows]
    assert [r["text"] for r in got] == [r["text"] for r in rows]
    assert [r["score"] for r in got] == [r["score"] for r in rows]
    assert got[4]["tags"] == ["x", "0"] and got[4]["info"] == {"n": 0}
    assert got[0]["lang"] is None and got[5]["lang"] == "en"

    card = (out / "README.md").read_text()
    head = yaml.safe_load(card.split("---\n")[1])
    info = head["dataset_info"]
    assert head["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]}
    ]
    assert info["splits"][0]["num_examples"] == len(rows)
    assert info["download_size"] == sum(os.path.getsize(out / "data" / n) for n in names)
    # the features are what datasets itself makes of the files' schema
    arrow = pq.read_schema(out / "data" / names[0])
    assert info["features"] == datasets.Features.from_arrow_schema(arrow)._to_yaml_list()
    assert "`hubtest`" in card.split("---\n", 2)[2]

    # fewer input shards on a rerun: no shard of the earlier layout is left for the loader
    os.unlink(tmp_path / "in" / "0.jsonl")
    _run(_pipeline(tmp_path, out))
    assert sorted(os.listdir(out / "data")) == [f"train-0000{i}-of-00002.parquet" for i in range(2)]
    assert datasets.load_dataset(str(out), split="train").num_rows == len(rows) - 4


@pytest.mark.parametrize("case", ["no_token", "offline", "unreachable"])
def test_repo_id_that_cannot_upload_stops_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    _inputs(tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))  # no stored login
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    if case != "no_token":
        monkeypatch.setenv("HF_TOKEN", "hf_secret_value_never_shown")
    if case == "offline":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if case == "unreachable":
        import socket

        s = socket.socket()
        s.bind(("127.0.0.1", 0))  # a port nobody listens on
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{s.getsockname()[1]}")
        s.close()
    path = _pipeline(tmp_path, tmp_path / "hub", repo_id="someone/corpus")
    with pytest.raises(ConfigError) as e:
        _run(path)
    msg = str(e.value)
    assert msg.startswith("write_hf.repo_id: ") and "nothing ran" in msg
    assert "hf_secret" not in msg
    assert {
        "no_token": "HF_TOKEN",
        "offline": "HF_HUB_OFFLINE",
        "unreachable": "cannot be reached",
    }[case] in msg
    # the reader never ran and nothing was written
    assert not (tmp_path / "work" / "stages" / "read_jsonl").exists()
    assert not (tmp_path / "hub").exists()


def test_a_url_path_is_refused_in_one_line() -> None:
    from curator.io.write_hf import WriteHf

    with pytest.raises(ConfigError, match=r"write_hf\.path: 's3://b/x' is a URL"):
        WriteHf.from_params({"path": "s3://b/x"})


def test_cli_lists_the_stage_and_stops_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "write_hf" in run_cli("stages").stdout
    _inputs(tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    p = run_cli("run", str(_pipeline(tmp_path, tmp_path / "hub", repo_id="a/b")), check=False)
    assert p.returncode != 0
    errors = [ln for ln in (p.stdout + p.stderr).splitlines() if "error" in ln]
    assert len(errors) == 1 and "write_hf.repo_id: no hub token" in errors[0], errors
    assert not (tmp_path / "work" / "stages" / "read_jsonl").exists()


TOKEN = "hf_local_test_token"


class _Hub(BaseHTTPRequestHandler):
    """The few endpoints of the hub's HTTP API that ``create_repo`` + ``upload_folder`` call
    (whoami, repos/create, tree, preupload, commit), over the files in ``server.files``."""

    def _reply(self, code: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _authorized(self) -> bool:
        self.server.log.append(f"{self.command} {self.path.split('?')[0]}")  # type: ignore[attr-defined]
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._reply(401, {"error": "Invalid credentials"})
            return False
        return True

    def do_GET(self) -> None:
        if not self._authorized():
            return
        files = self.server.files  # type: ignore[attr-defined]
        if self.path.startswith("/api/whoami-v2"):
            self._reply(200, {"type": "user", "name": "tester", "auth": {}})
        elif "/tree/" in self.path:
            self._reply(
                200,
                [
                    {"type": "file", "oid": "0" * 40, "size": len(v), "path": k}
                    for k, v in sorted(files.items())
                ],
            )
        else:
            self._reply(404, {"error": self.path})

    def do_POST(self) -> None:
        body = self._body()
        if not self._authorized():
            return
        files = self.server.files  # type: ignore[attr-defined]
        if self.path.startswith("/api/repos/create"):
            self._reply(200, {"url": f"http://{self.headers['Host']}/datasets/someone/corpus"})
        elif self.path.startswith("/api/validate-yaml"):
            req = json.loads(body)
            head = yaml.safe_load(req["content"].split("---\n")[1])  # the card's header parses
            ok = req["repoType"] == "dataset" and "dataset_info" in head
            self._reply(200 if ok else 400, {"errors": [] if ok else [{"message": "bad"}]})
        elif "/preupload/" in self.path:
            paths = [f["path"] for f in json.loads(body)["files"]]
            self._reply(
                200,
                {
                    "files": [
                        {"path": p, "uploadMode": "regular", "shouldIgnore": False} for p in paths
                    ]
                },
            )
        elif "/commit/" in self.path:
            for line in body.splitlines():
                op = json.loads(line)
                if op["key"] == "file":
                    files[op["value"]["path"]] = base64.b64decode(op["value"]["content"])
                elif op["key"] == "deletedFile":
                    files.pop(op["value"]["path"], None)
            url = f"http://{self.headers['Host']}/datasets/someone/corpus/commit/{'1' * 40}"
            self._reply(200, {"commitUrl": url, "commitOid": "1" * 40})
        else:
            self._reply(404, {"error": self.path})

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hub() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    server.files = {"data/train-00007-of-00009.parquet": b"old", "notes.txt": b"theirs"}  # type: ignore[attr-defined]
    server.log = []  # type: ignore[attr-defined]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server
    server.shutdown()
    server.server_close()


def test_repo_id_uploads_the_folder_to_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hub: ThreadingHTTPServer
) -> None:
    _inputs(tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{hub.server_address[1]}")
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    path = _pipeline(tmp_path, tmp_path / "hub", repo_id="someone/corpus")
    with pytest.raises(ConfigError, match=r"refused the token \(HTTP 401\); check HF_TOKEN"):
        _run(path)
    assert not (tmp_path / "work" / "stages" / "read_jsonl").exists()

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    _run(path)
    local = {
        str(p.relative_to(tmp_path / "hub")): p.read_bytes()
        for p in (tmp_path / "hub").rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }
    assert sorted(local) == ["README.md"] + [
        f"data/train-0000{i}-of-00003.parquet" for i in range(3)
    ]
    # every file uploaded byte for byte; the split's stale shard deleted, another file kept
    assert hub.files == {**local, "notes.txt": b"theirs"}  # type: ignore[attr-defined]
    assert "POST /api/datasets/someone/corpus/commit/main" in hub.log  # type: ignore[attr-defined]


def test_mpi_and_dask_write_the_same_files(tmp_path: Path) -> None:
    _inputs(tmp_path)
    _run(_pipeline(tmp_path, tmp_path / "local"))
    ref = {p.name: p.read_bytes() for p in (tmp_path / "local" / "data").iterdir()}
    head = (tmp_path / "local" / "README.md").read_text().split("---\n")[1]
    for kind in ("mpi", "dask"):
        path = _pipeline(tmp_path, tmp_path / kind)
        cfg = yaml.safe_load(path.read_text())
        cfg["work_dir"] = str(tmp_path / f"work-{kind}")
        cfg["executor"] = {"type": kind} if kind == "mpi" else {"type": kind, "workers": 2}
        path.write_text(yaml.safe_dump(cfg))
        if kind == "mpi":
            run_cli("run", str(path), mpi=2)
        else:
            _run(path)
        got = {p.name: p.read_bytes() for p in (tmp_path / kind / "data").iterdir()}
        assert got == ref, kind
        assert (tmp_path / kind / "README.md").read_text().split("---\n")[1] == head, kind


def test_the_survey_phase_result_is_typed_and_keeps_the_plans_json() -> None:
    """The ``survey`` phase's typed result gives back exactly :func:`schema.survey`'s JSON
    (a field met first as a list, then as an object, keeps ``items`` before ``fields``), so
    :func:`schema.plan` sees what it saw before."""
    from curator.io import schema
    from curator.io.write_hf import ShardSurvey

    recs = [
        {"id": "a", "meta": [1, [2]]},
        {"id": "b", "meta": {"x": 1.5}, "n": 3},
        {"id": "c", "meta": {"x": 2, "y": {"z": None, "w": "s"}}},
    ]
    found = schema.survey(recs)
    typed = ShardSurvey.of(found)
    assert typed.rows == 3 and dict(typed.columns)["meta"].kinds == ("list", "dict")
    assert json.dumps(typed.to_json()) == json.dumps(found)  # same keys, same order
    assert ShardSurvey.of(typed.to_json()) == typed
    empty = ShardSurvey.of(schema.survey([]))
    assert schema.plan([typed.to_json(), empty.to_json()], ["s0", "s1"], ["p0", "p1"],
                       exemplars=True) == schema.plan([found, schema.survey([])],
                                                      ["s0", "s1"], ["p0", "p1"], exemplars=True)
