"""Triton export and serving: the repository is served by NVIDIA's real ``tritonserver`` (from
``nvidia-pytriton``) on 127.0.0.1 and must generate what the in-process model generates."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
torch.set_num_threads(1)


@pytest.fixture(scope="module")
def repository(example_run: dict) -> str:
    return example_run["repository"]


@pytest.fixture(scope="module")
def reference(checkpoint: str):
    from tokenizers import Tokenizer

    from curator.deploy.export import load_gpt

    model, mc, _ = load_gpt(checkpoint)
    return model, mc, Tokenizer.from_file(mc["tokenizer"]["path"])


def test_onnx_model_matches_megatron_model(repository: str, reference) -> None:
    import onnxruntime as ort

    from curator.deploy.export import LogitsWindow
    from curator.train.gpt import single_process_group

    model, mc, _ = reference
    sess = ort.InferenceSession(os.path.join(repository, "gpt", "1", "model.onnx"),
                                providers=["CPUExecutionProvider"])
    x = torch.randint(0, mc["vocab_size"], (1, mc["seq_length"]),
                      generator=torch.Generator().manual_seed(7))
    with torch.no_grad(), single_process_group():
        ref = LogitsWindow.build(model)(x).numpy()
    got = sess.run(None, {"input_ids": x.numpy()})[0]
    assert got.shape == (1, mc["seq_length"], mc["vocab_size"])
    np.testing.assert_allclose(got, ref, atol=1e-4)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``curator serve`` in a subprocess; ready when Triton logs that HTTP is up."""

    def __init__(self, repository: str, venv: str, runtime: str) -> None:
        self.http = _free_port()
        ports = [str(self.http), str(_free_port()), str(_free_port())]
        env = {**os.environ, "PYTHONPATH": ROOT, "CURATOR_TRITON_VENV": venv}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "curator", "serve", repository, "--http-port", ports[0],
             "--grpc-port", ports[1], "--metrics-port", ports[2], "--runtime-dir", runtime],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.ready = threading.Event()
        self.log: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.append(line)
            if "Started HTTPService" in line:
                self.ready.set()
        self.ready.set()  # exited: let the waiter see it

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Triton logs "Started HTTPService" just before it listens; then poll the readiness
        endpoint (waiting on the process between tries, so an early exit is seen at once)."""
        import time

        import tritonclient.http as http

        assert self.ready.wait(timeout=timeout), "".join(self.log[-30:])
        deadline = time.monotonic() + 60
        client = http.InferenceServerClient(f"127.0.0.1:{self.http}")
        while True:
            assert self.proc.poll() is None, "".join(self.log[-30:])
            try:
                if client.is_server_ready():
                    return
            except ConnectionError:
                pass
            assert time.monotonic() < deadline, "".join(self.log[-30:])
            try:
                self.proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def server(repository: str, triton_venv: str, tmp_path_factory: pytest.TempPathFactory):
    """``curator serve`` of the example repository, ready, for the tests of this module."""
    srv = Server(repository, triton_venv, str(tmp_path_factory.mktemp("runtime")))
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


@pytest.mark.slow
def test_triton_server_generates_like_the_model(server: Server, reference) -> None:
    import tritonclient.http as http

    from curator.deploy.export import torch_greedy

    model, mc, tok = reference
    client = http.InferenceServerClient(f"127.0.0.1:{server.http}", concurrency=4)
    try:
        assert client.is_server_ready(), "".join(server.log[-30:])
        for m in ("preprocessing", "gpt", "postprocessing", "curator_gpt"):
            assert client.is_model_ready(m), m
        cfg = client.get_model_config("gpt")
        assert cfg["max_batch_size"] == 4 and "dynamic_batching" in cfg
        assert cfg["instance_group"][0]["kind"] == "KIND_CPU"
        assert cfg["instance_group"][0]["count"] == 1

        long_prompt = " ".join(["the big dog ran far"] * 20)  # longer than the window
        prompts = [("the red cat sat on", 12), ("the old", 5), (long_prompt, 6)]
        pending = []
        for text, n in prompts:
            t = http.InferInput("TEXT", [1, 1], "BYTES")
            t.set_data_from_numpy(np.array([[text.encode()]], dtype=np.object_))
            k = http.InferInput("MAX_NEW_TOKENS", [1, 1], "INT32")
            k.set_data_from_numpy(np.array([[n]], dtype=np.int32))
            pending.append(client.async_infer("curator_gpt", [t, k]))
        for (text, n), req in zip(prompts, pending):
            res = req.get_result()
            prompt_ids = tok.encode(text).ids
            expect = torch_greedy(model, prompt_ids, n, mc["seq_length"])
            assert res.as_numpy("OUTPUT_IDS").reshape(-1).tolist() == expect
            assert res.as_numpy("TEXT_OUTPUT").reshape(-1)[0].decode() == tok.decode(expect)
        assert len(tok.encode(long_prompt).ids) > mc["seq_length"]
    finally:
        client.close()  # an open keep-alive connection holds Triton's shutdown for 30 s


@pytest.mark.slow
def test_one_request_with_a_batch_of_prompts(server: Server, reference) -> None:
    """TEXT ``[3, 1]``: three prompts of different lengths in one request (the model declares
    max_batch_size 4) give three rows, each what the model generates for its prompt alone;
    rows shorter than the longest are padded with -1 in OUTPUT_IDS. It used to answer HTTP
    400 "INPUT_IDS batch size does not match" (only the first text was tokenized)."""
    import tritonclient.http as http

    from curator.deploy.export import torch_greedy

    model, mc, tok = reference
    prompts = [("the red cat sat on", 7), ("the old", 3), ("a dog ran far and the", 5)]
    client = http.InferenceServerClient(f"127.0.0.1:{server.http}")
    try:
        t = http.InferInput("TEXT", [3, 1], "BYTES")
        t.set_data_from_numpy(np.array([[p.encode()] for p, _ in prompts], dtype=np.object_))
        k = http.InferInput("MAX_NEW_TOKENS", [3, 1], "INT32")
        k.set_data_from_numpy(np.array([[n] for _, n in prompts], dtype=np.int32))
        res = client.infer("curator_gpt", [t, k])
        ids, texts = res.as_numpy("OUTPUT_IDS"), res.as_numpy("TEXT_OUTPUT")
        assert ids.shape == (3, 7) and texts.shape == (3, 1)
        for row, text, (prompt, n) in zip(ids, texts[:, 0], prompts):
            expect = torch_greedy(model, tok.encode(prompt).ids, n, mc["seq_length"])
            assert row.tolist() == expect + [-1] * (7 - n)
            assert text.decode() == tok.decode(expect)
    finally:
        client.close()


def test_export_command(checkpoint: str, repository: str, tmp_path, capsys) -> None:
    import filecmp

    from curator.cli import main

    out = tmp_path / "repo"
    assert main(["export-triton", "--checkpoint", checkpoint, "--output", str(out),
                 "--max-new-tokens", "4", "--instance-kind", "KIND_GPU", "--instances", "2",
                 "--model-name", "tiny"]) == 0
    assert f"wrote Triton repository {out}" in capsys.readouterr().out
    gpt_cfg = (out / "gpt" / "config.pbtxt").read_text()
    assert "kind: KIND_GPU" in gpt_cfg and "count: 2" in gpt_cfg
    assert 'platform: "ensemble"' in (out / "tiny" / "config.pbtxt").read_text()
    with open(out / "gpt" / "1" / "generation.json") as f:
        gen = json.load(f)
    assert gen["max_new_tokens"] == 4 and gen["checkpoint_iteration"] == 20
    # the same checkpoint exported in another process gives the same tensors, byte for byte
    # (Megatron's uninitialised attention scratch buffer used to be saved as a constant)
    assert filecmp.cmp(out / "gpt" / "1" / "model.onnx.data",
                       os.path.join(repository, "gpt", "1", "model.onnx.data"), shallow=False)
    # an earlier export (it carries export_triton's marker) is replaced as a whole
    assert main(["export-triton", "--checkpoint", checkpoint, "--output", str(out),
                 "--model-name", "tiny2"]) == 0
    assert (out / "tiny2").is_dir() and not (out / "tiny").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]  # no .tmp-/.old- left
    capsys.readouterr()
    assert main(["export-triton", "--checkpoint", str(tmp_path), "--output",
                 str(tmp_path / "x")]) == 1
    assert "not a curator/Megatron checkpoint" in capsys.readouterr().err


def test_serve_print_command(repository: str, triton_venv: str, tmp_path, capsys,
                             monkeypatch) -> None:
    from curator.cli import main

    monkeypatch.setenv("CURATOR_TRITON_VENV", triton_venv)
    assert main(["serve", repository, "--http-port", "18123", "--runtime-dir",
                 str(tmp_path / "rt"), "--print-command"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    cmd = lines[-1].split()
    assert cmd[0].endswith("tritonserver") and os.access(cmd[0], os.X_OK)
    assert f"--model-repository={repository}" in cmd and "--http-port=18123" in cmd
    stub = tmp_path / "rt" / "backends" / "python" / "triton_python_backend_stub"
    assert os.access(stub, os.X_OK)
    assert any(x.startswith("export LD_LIBRARY_PATH=") and "nvidia_pytriton.libs" in x
               for x in lines)
    assert main(["serve", str(tmp_path / "nope"), "--print-command"]) == 1


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "127.0.0.1", "localhost"])
def test_serve_on_a_network_address_warns_that_triton_has_no_auth(host: str, triton_venv: str,
                                                                  tmp_path) -> None:
    from tests.helpers import run_cli

    repo = tmp_path / "repo"
    repo.mkdir()
    p = run_cli("serve", str(repo), "--host", host, "--triton-venv", triton_venv,
                "--runtime-dir", str(tmp_path / "rt"), "--print-command",
                "--triton-arg=--http-restricted-api=model-repository,statistics:admin-key=k1")
    assert f"--http-address={host}" in p.stdout
    assert p.stdout.splitlines()[-1].endswith(
        "--http-restricted-api=model-repository,statistics:admin-key=k1")
    warnings = [ln for ln in p.stderr.splitlines() if ln.startswith("warning:")]
    if host.startswith("127.") or host == "localhost":
        assert warnings == []
    else:
        assert warnings == [
            f"warning: Triton has no authentication: anyone who can reach {host}:8000 (HTTP) "
            "or :8001 (gRPC) can query the model and read its statistics; keep it on "
            "127.0.0.1 behind an authenticating reverse proxy (docs/deploy.md)"]


def test_export_shows_no_third_party_notices_unless_asked(checkpoint: str, tmp_path) -> None:
    """megatron-core's "Apex is not installed" fallback notices, megatron's "full scope is
    deprecated", torch's "torchvision is not installed. Skipping ..." and its ``LeafSpec``
    FutureWarning filled a newcomer's quick start; ``python -W default`` still shows them."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    cmd = ["-m", "curator", "export-triton", "--checkpoint", checkpoint, "--output"]
    quiet = subprocess.run([sys.executable, *cmd, str(tmp_path / "a")], capture_output=True,
                           text=True, env=env, timeout=600)
    assert quiet.returncode == 0, quiet.stderr
    for noise in ("Apex", "full scope is deprecated", "torchvision is not installed",
                  "LeafSpec", "Warning"):
        assert noise not in quiet.stderr + quiet.stdout, noise
    asked = subprocess.run([sys.executable, "-W", "default", *cmd, str(tmp_path / "b")],
                           capture_output=True, text=True, env=env, timeout=600)
    assert asked.returncode == 0, asked.stderr
    assert "Apex is not installed" in asked.stderr


@pytest.mark.parametrize("name", ["../escaped", "/tmp/abs-model", 'x"\nbackend: "python', "é" * 3,
                                  "a" * 300, ".hidden", ""])
def test_model_name_that_is_not_a_folder_name_is_refused(checkpoint: str, tmp_path, capsys,
                                                         name: str) -> None:
    """``--model-name ../escaped`` used to create ``escaped/1/config.pbtxt`` beside the
    repository (``/abs`` anywhere), and a quote or line break went into config.pbtxt."""
    from curator.cli import main

    deep = tmp_path / "deep"
    deep.mkdir()
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    assert main(["export-triton", "--checkpoint", checkpoint, "--output",
                 str(deep / "repo"), "--model-name", name]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("curator: error: export_triton: model name"), err
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert not os.path.exists("/tmp/abs-model")


def test_stage_model_name_is_checked_by_validate(tmp_path) -> None:
    y = tmp_path / "p.yaml"
    y.write_text("name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: x.jsonl}\n"
                 "  - export_triton: {checkpoint: ck, model_name: ../up}\n")
    p = subprocess.run([sys.executable, "-m", "curator", "validate", str(y)], cwd=tmp_path,
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert p.returncode == 2 and "model_name" in p.stderr, p.stderr


@pytest.mark.slow
def test_serve_without_a_gpu_prints_no_cuda_errors(repository: str, triton_venv: str,
                                                   tmp_path) -> None:
    """On a machine without an NVIDIA GPU, tritonserver's probes for one (pinned memory, CUDA
    memory pool, CudaDriverHelper, ensemble streams) printed error lines that said nothing:
    ``curator serve`` leaves them out; the server still starts and logs everything else."""
    import re

    from curator.deploy.cli import has_gpu

    server = Server(repository, triton_venv, str(tmp_path / "runtime"))
    try:
        server.wait_ready()
    finally:
        server.stop()
    log = "".join(server.log)
    assert "Started HTTPService" in log and "successfully loaded 'curator_gpt'" in log, log
    if not has_gpu():
        assert not re.search(r"CUDA driver|CudaDriverHelper|CUDA memory pool disabled|pinned "
                             r"system memory", log), log
    assert server.proc.returncode is not None
