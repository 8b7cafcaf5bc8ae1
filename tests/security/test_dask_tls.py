"""No open door on a cluster: a Dask scheduler, its workers and curator as separate processes,
over mutual TLS with certificates from ``curator tls-certs``. The scheduler refuses a client
without a certificate of the cluster's CA; curator says in one line, naming the file, what is
wrong with its own (none, another CA's, expired); a plain-TCP scheduler on a network address
runs with one warning line."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.helpers_core import BIN, make_corpus
from tests.helpers import cli_env, run_cli, stop_process_groups

PIPE = """\
name: tls
work_dir: {wd}
progress: off
executor:
  type: dask
  scheduler_file: {sched}
{tls}stages:
  - read_jsonl: {{paths: "{data}/*.jsonl", shard_size_mb: 0.004}}
  - tests.core.helpers_core:AboveMedian: {{}}
  - write_jsonl: {{path: out}}
"""


def _tls_yaml(d: Path, name: str = "client") -> str:
    return (f"  tls: {{ca_file: {d / 'ca.pem'}, cert: {d / (name + '.pem')}, "
            f"key: {d / (name + '.key')}}}\n")


@contextlib.contextmanager
def _cluster(tmp: Path, certs: Path | None, host: str = "127.0.0.1",
             workers: int = 2) -> Iterator[Path]:
    """``dask scheduler`` and ``dask worker`` processes, each in its own folder; with
    ``certs`` they speak only mutual TLS, each with its own certificate."""
    sched = tmp / "scheduler.json"
    procs: list[subprocess.Popen] = []

    def tls(name: str) -> list[str]:
        if certs is None:
            return []
        return ["--tls-ca-file", str(certs / "ca.pem"), "--tls-cert", str(certs / f"{name}.pem"),
                "--tls-key", str(certs / f"{name}.key")]

    try:
        sdir = tmp / "scheduler-host"
        sdir.mkdir()
        procs.append(subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--scheduler-file", str(sched), "--host", host,
             "--port", "0", "--dashboard-address", "127.0.0.1:0",
             *(["--protocol", "tls"] if certs else []), *tls(host)],
            cwd=sdir, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True))
        for i in range(workers):
            wdir = tmp / f"worker-host-{i}"
            wdir.mkdir()
            procs.append(subprocess.Popen(
                [str(BIN / "dask"), "worker", "--scheduler-file", str(sched), "--nworkers", "1",
                 "--nthreads", "1", "--host", host, "--local-directory", str(wdir),
                 *tls(host)],
                cwd=wdir, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        from distributed import Client
        from distributed.security import Security

        sec = None
        if certs is not None:
            sec = Security(tls_ca_file=str(certs / "ca.pem"),
                           tls_client_cert=str(certs / "client.pem"),
                           tls_client_key=str(certs / "client.key"), require_encryption=True)
        with Client(scheduler_file=str(sched), timeout="60s", security=sec) as c:
            c.wait_for_workers(workers, timeout=120)
        yield sched
    finally:
        stop_process_groups(procs)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tls") / "certs"
    p = run_cli("tls-certs", str(d), "--hosts", "127.0.0.1")
    assert "ca.pem" in p.stdout
    other = d.parent / "other"
    run_cli("tls-certs", str(other), "--hosts", "127.0.0.1")
    return d


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory, certs) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("tls-cluster")
    with _cluster(tmp, certs) as sched:
        yield sched


def _pipeline(tmp: Path, sched: Path, tls: str) -> Path:
    data = tmp / "data"
    data.mkdir(exist_ok=True)
    make_corpus(str(data / "a.jsonl"), 150, seed=4)
    p = tmp / "p.yaml"
    p.write_text(PIPE.format(wd=tmp / "w", sched=sched, tls=tls, data=data))
    return p


def _last_line(p: subprocess.CompletedProcess) -> str:
    assert p.returncode != 0, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    return p.stderr.strip().splitlines()[-1]


def test_keys_are_private(certs):
    for f in certs.glob("*.key"):
        assert f.stat().st_mode & 0o077 == 0, f
    assert certs.stat().st_mode & 0o077 == 0


def test_curator_runs_over_mutual_tls_on_separate_processes(tmp_path, certs, tls_cluster):
    p = run_cli("run", str(_pipeline(tmp_path, tls_cluster, _tls_yaml(certs))))
    assert "dask scheduler tls://127.0.0.1:" in p.stderr
    assert "warning" not in p.stderr
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    assert rep["executor"] == {"type": "dask", "workers": 2}
    assert rep["stages"][1]["docs_in"] == 150 and list((tmp_path / "w" / "out").glob("*"))


def _handshake(sched: Path, ctx: ssl.SSLContext) -> None:
    host, port = json.loads(sched.read_text())["address"].removeprefix("tls://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=host) as s:
        s.sendall(b"\0" * 8)
        if not s.recv(1):  # TLS 1.3: the server's refusal arrives with the first read
            raise ConnectionResetError("closed by the scheduler")


def test_scheduler_refuses_a_client_without_the_certificate(certs, tls_cluster):
    trusting = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    trusting.check_hostname = False
    # no client certificate: the handshake fails on the scheduler's side. Under TLS 1.3 the
    # client learns it after its own handshake: as the scheduler's alert, or, when the
    # scheduler has closed the socket before the client reads, as an EOF inside the TLS stream
    # (seen on a loaded machine); the cluster's own certificate below never gets either
    with pytest.raises(ssl.SSLError, match=r"CERTIFICATE_REQUIRED|EOF occurred in violation"):
        _handshake(tls_cluster, trusting)
    # a certificate of another CA: refused the same way
    other = certs.parent / "other"
    trusting.load_cert_chain(str(other / "client.pem"), str(other / "client.key"))
    # the scheduler's alert (decrypt error), or the same EOF when it closed first
    with pytest.raises(ssl.SSLError, match=r"ALERT|EOF occurred in violation"):
        _handshake(tls_cluster, trusting)
    # and the cluster's own client certificate gets through (the probe is sound)
    ok = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    ok.check_hostname = False
    ok.load_cert_chain(str(certs / "client.pem"), str(certs / "client.key"))
    with contextlib.suppress(socket.timeout, ConnectionResetError):
        _handshake(tls_cluster, ok)  # dask's framing may keep reading: a timeout is no refusal


def test_tls_scheduler_without_certificates_is_one_line(tmp_path, tls_cluster):
    line = _last_line(run_cli("run", str(_pipeline(tmp_path, tls_cluster, "")), check=False))
    assert line.startswith("curator: error: dask scheduler tls://127.0.0.1:")
    assert "speaks TLS: give executor.tls" in line


def test_wrong_ca_is_one_line_naming_the_file(tmp_path, certs, tls_cluster):
    other = certs.parent / "other"
    line = _last_line(run_cli("run", str(_pipeline(tmp_path, tls_cluster, _tls_yaml(other))),
                              check=False))
    assert (f"its certificate is not signed by the CA in executor.tls.ca_file "
            f"({other / 'ca.pem'})") in line, line
    # our CA, but a certificate of another: named too (checked before connecting)
    mixed = (f"  tls: {{ca_file: {certs / 'ca.pem'}, cert: {other / 'client.pem'}, "
             f"key: {other / 'client.key'}}}\n")
    line = _last_line(run_cli("run", str(_pipeline(tmp_path, tls_cluster, mixed)), check=False))
    assert line == (f"curator: error: executor.tls.cert: {other / 'client.pem'} is not signed "
                    f"by the CA in executor.tls.ca_file ({certs / 'ca.pem'})")


def test_expired_or_missing_certificate_is_one_line_naming_the_file(tmp_path, certs,
                                                                    tls_cluster):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca_key = serialization.load_pem_private_key((certs / "ca.key").read_bytes(), None)
    ca = x509.load_pem_x509_certificate((certs / "ca.pem").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    then = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "old")]))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(then).not_valid_after(then + dt.timedelta(days=30))
            .sign(ca_key, hashes.SHA256()))
    d = tmp_path / "old"
    d.mkdir()
    (d / "ca.pem").write_bytes((certs / "ca.pem").read_bytes())
    (d / "client.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "client.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    line = _last_line(run_cli("run", str(_pipeline(tmp_path, tls_cluster, _tls_yaml(d))),
                              check=False))
    assert line == (f"curator: error: executor.tls.cert: {d / 'client.pem'} expired on "
                    "2024-01-31; make new certificates (curator tls-certs)")
    (d / "client.pem").unlink()
    line = _last_line(run_cli("run", str(_pipeline(tmp_path, tls_cluster, _tls_yaml(d))),
                              check=False))
    assert line == (f"curator: error: executor.tls.cert: {d / 'client.pem'}: "
                    "No such file or directory")


def _network_address() -> str:
    """This machine's address on its network (not loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("198.51.100.1", 9))  # no packet is sent: this only picks the interface
        return s.getsockname()[0]


def test_plain_tcp_scheduler_on_a_network_address_runs_with_one_warning(tmp_path):
    host = _network_address()
    assert not host.startswith("127."), "this test needs a network interface"
    with _cluster(tmp_path, None, host=host, workers=1) as sched:
        p = run_cli("run", str(_pipeline(tmp_path, sched, "")))
    warnings = [ln for ln in p.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1, p.stderr
    assert f"dask scheduler tcp://{host}:" in warnings[0]
    assert "anyone who can reach it can run code on every worker" in warnings[0]
    assert json.loads((tmp_path / "w" / "report.json").read_text())["executor"]["type"] == "dask"


def test_dasks_own_tls_configuration_is_honoured(tmp_path, certs, tls_cluster, monkeypatch):
    """No executor.tls, but Dask's configuration names the CA and a client certificate."""
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TLS__CA_FILE", str(certs / "ca.pem"))
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT", str(certs / "client.pem"))
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY", str(certs / "client.key"))
    p = run_cli("run", str(_pipeline(tmp_path, tls_cluster, "")))
    assert "dask scheduler tls://127.0.0.1:" in p.stderr
    assert json.loads((tmp_path / "w" / "report.json").read_text())["stages"][1]["docs_in"] == 150
