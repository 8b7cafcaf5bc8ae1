"""Redis hygiene and auth on real clusters: a password-protected 3-master Redis Cluster (right
password works, wrong or missing credentials give their own line, the secret never shows up),
keys with a TTL, keys of a SIGKILLed run removed by a rerun with other parameters, and a
TLS-only cluster."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import redis
from redis.crc import key_slot

from curator.base.errors import StageError
from curator.dedup.backends.redis_auth import RedisAuth
from curator.dedup.backends.redis_cluster import RedisBucketStore
from tests.dedup.helpers_dedup import (
    REPO,
    RedisCluster,
    make_corpus,
    make_tls_files,
    rejected,
    start_frozen_run,
    write_pipeline,
)
from tests.helpers import run_cli

FUZZY = "{shingle: word, ngram: 5"
SECRET = "pw-Qx7-never-logged"
ENV = "CURATOR_TEST_REDIS_PASSWORD"


@pytest.fixture(scope="module")
def pw_cluster(tmp_path_factory: pytest.TempPathFactory):
    c = RedisCluster(tmp_path_factory.mktemp("redis-pw"), password=SECRET)
    yield c
    c.close()


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), **extra)
    env.pop(ENV, None)
    env.update(extra)
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curator", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def _redis_stage(cluster: RedisCluster, extra: str = "", threshold: float = 0.7) -> str:
    nodes = ", ".join(f"'{n}'" for n in cluster.nodes)
    return (f"  - fuzzy_dedup: {FUZZY}, threshold: {threshold}, backend: redis, "
            f"redis_nodes: [{nodes}]{extra}}}\n")


def _errors(stderr: str) -> list[str]:
    return [x for x in stderr.splitlines() if x.startswith("curator: error:")]


def test_store_keys_have_a_ttl_and_cleanup_takes_the_whole_stage(pw_cluster, monkeypatch):
    monkeypatch.setenv(ENV, SECRET)
    auth = RedisAuth(password_env=ENV)
    stage = "curator:unit-stage:"
    old = RedisBucketStore(pw_cluster.nodes, stage + "fp-old:", batch=300, stage_prefix=stage,
                           ttl_s=3600, auth=auth)
    new = RedisBucketStore(pw_cluster.nodes, stage + "fp-new:", batch=300, stage_prefix=stage,
                           ttl_s=3600, auth=auth)
    other = RedisBucketStore(pw_cluster.nodes, "curator:other-stage:fp:", auth=auth)
    rng = np.random.default_rng(7)
    d = rng.integers(0, 2**63, size=1000, dtype=np.uint64)
    refs = np.arange(1000, dtype=np.uint64)
    try:
        old.claim(d, refs)
        other.claim(d[:10], refs[:10])
        n_old = len({int(x) % old.buckets for x in d}) + len(old.witness)  # hashes + counters
        n_other = len({int(x) % other.buckets for x in d[:10]}) + len(other.witness)
        assert old.keys_with_ttl(sample=10_000) == (n_old, 0)  # every key expires
        ttls = [pw_cluster.client(p).ttl(k) for p in pw_cluster.ports
                for k in pw_cluster.client(p).keys(stage + "fp-old:*")]
        assert len(ttls) == n_old and all(3500 < t <= 3600 for t in ttls)
        other_ttls = [pw_cluster.client(p).ttl(k) for p in pw_cluster.ports
                      for k in pw_cluster.client(p).keys("curator:other-stage:*")]
        # the default TTL (7 days) applies when none is given
        assert len(other_ttls) == n_other and all(6 * 86400 < t <= 7 * 86400
                                                  for t in other_ttls)
        # a run with another fingerprint removes the earlier run's keys, not another stage's
        assert new.cleanup() == n_old
        assert pw_cluster.keys(stage + "*") == 0
        assert pw_cluster.keys("curator:other-stage:*") == n_other
        assert other.cleanup() == n_other
        # ttl 0: no expiry (documented as discouraged)
        forever = RedisBucketStore(pw_cluster.nodes, stage + "x:", ttl_s=0, auth=auth)
        forever.claim(d[:5], refs[:5])
        n = 5 + len(forever.witness)
        assert forever.keys_with_ttl() == (n, n)
        assert forever.cleanup() == n
        forever.close()
    finally:
        for s in (old, new, other):
            s.close()


def test_prefix_with_glob_characters_cleans_only_its_own_keys(pw_cluster, monkeypatch):
    monkeypatch.setenv(ENV, SECRET)
    auth = RedisAuth(password_env=ENV)
    glob = RedisBucketStore(pw_cluster.nodes, "cur*[a]:", auth=auth)
    plain = RedisBucketStore(pw_cluster.nodes, "curXa:", auth=auth)  # matched by unescaped glob
    try:
        d = np.arange(1, 51, dtype=np.uint64)
        glob.claim(d, d)
        plain.claim(d, d)
        n = 50 + len(plain.witness)  # one hash per digest, one witness counter per node
        assert glob.cleanup() == 50 + len(glob.witness)
        assert pw_cluster.keys("curXa:*") == n
        assert plain.cleanup() == n
    finally:
        glob.close()
        plain.close()


def test_wrong_or_missing_credentials_have_their_own_line(tmp_path, pw_cluster):
    make_corpus(tmp_path / "c", n_base=30, seed=11, shards=2)
    inputs = f"{tmp_path}/c/part*.jsonl"
    cases = {
        "wrong": (f", redis_password_env: {ENV}", {ENV: "not-the-password"},
                  "authentication failed for the default user with the password in "
                  f"${ENV}"),
        "missing": ("", {}, "the cluster requires a password"),
        "unset": (f", redis_password_env: {ENV}", {},
                  f"environment variable '{ENV}' is not set"),
        "user": (f", redis_username: nobody, redis_password_env: {ENV}", {ENV: SECRET},
                 "authentication failed for user 'nobody'"),
    }
    for name, (extra, env, want) in cases.items():
        y = write_pipeline(tmp_path / f"{name}.yaml", tmp_path / f"w-{name}", inputs,
                           _redis_stage(pw_cluster, extra))
        r = _run(["run", str(y)], _env(**env))
        assert r.returncode != 0, name
        errs = _errors(r.stderr)
        assert len(errs) == 1 and want in errs[0], (name, r.stderr)
        assert "down or unreachable" not in r.stderr and "Traceback" not in r.stderr
        assert SECRET not in r.stderr + r.stdout
        assert not (tmp_path / f"w-{name}" / "stages" / "fuzzy_dedup" / "_SUCCESS.json").exists()


def test_acl_user_with_password_works(pw_cluster, monkeypatch):
    for p in pw_cluster.ports:
        pw_cluster.client(p).acl_setuser("curator", enabled=True, passwords=["+user-pw-1"],
                                         keys=["curator:*"], commands=["+@all"])
    monkeypatch.setenv(ENV, "user-pw-1")
    store = RedisBucketStore(pw_cluster.nodes, "curator:acl:", auth=RedisAuth("curator", ENV))
    try:
        store.check()
        d = np.arange(1, 101, dtype=np.uint64)
        assert np.array_equal(store.claim(d, d), d)
        assert store.cleanup() == 100 + len(store.witness)
    finally:
        store.close()
    monkeypatch.setenv(ENV, "wrong")
    bad = RedisBucketStore(pw_cluster.nodes, "curator:acl:", auth=RedisAuth("curator", ENV))
    with pytest.raises(StageError, match="authentication failed for user 'curator'"):
        bad.check()


def test_killed_run_keys_expire_and_a_rerun_with_other_parameters_removes_them(
        tmp_path, pw_cluster):
    make_corpus(tmp_path / "c", n_base=120, seed=12, shards=4)
    inputs = f"{tmp_path}/c/part*.jsonl"
    auth = f", redis_password_env: {ENV}, redis_key_ttl_s: 3600"
    wd = tmp_path / "w"
    first = write_pipeline(tmp_path / "a.yaml", wd, inputs, _redis_stage(pw_cluster, auth, 0.7))
    env = _env(**{ENV: SECRET})
    foreign = b"curator:another-work-dir:k"  # another stage's key: must survive
    _set_on_owner(pw_cluster, foreign)

    # The run stops itself (failure injection) right after its first shard's claim: keys on
    # the nodes, the final cleanup not reached; then it is killed.
    run = start_frozen_run(tmp_path, ["run", str(first)], env)
    try:
        os.killpg(run.pid, signal.SIGKILL)
        _out, err = run.communicate(timeout=60)
        assert run.returncode == -signal.SIGKILL
    finally:
        if run.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    left = [(p, k) for p in pw_cluster.ports for k in pw_cluster.client(p).keys("curator:*")
            if k != foreign]
    assert len(left) > 1
    ttls = [pw_cluster.client(p).ttl(k) for p, k in left]
    assert all(0 < t <= 3600 for t in ttls)  # they expire even if nothing ever reruns

    # rerun with another threshold: another fingerprint, whose run must remove those keys
    second = write_pipeline(tmp_path / "b.yaml", wd, inputs, _redis_stage(pw_cluster, auth, 0.75))
    r = _run(["run", str(second)], env)
    assert r.returncode == 0, r.stderr
    assert pw_cluster.keys("curator:*") == 1  # only the foreign key
    assert SECRET not in r.stderr + r.stdout + err
    for f in wd.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    emb = write_pipeline(tmp_path / "e.yaml", tmp_path / "we", inputs,
                         f"  - fuzzy_dedup: {FUZZY}, threshold: 0.75}}\n")
    run_cli("run", str(emb))
    got = rejected(wd, "fuzzy_dedup")
    assert len(got) > 20 and got == rejected(tmp_path / "we", "fuzzy_dedup")
    _delete_everywhere(pw_cluster, foreign)


def _slots(cluster: RedisCluster, port: int) -> set[int]:
    out: set[int] = set()
    for lo, hi, *nodes in cluster.client(port).execute_command("CLUSTER", "SLOTS"):
        if int(nodes[0][1]) == port:
            out.update(range(int(lo), int(hi) + 1))
    return out


def _set_on_owner(cluster: RedisCluster, key: bytes) -> None:
    slot = key_slot(key)
    port = next(p for p in cluster.ports if slot in _slots(cluster, p))
    cluster.client(port).execute_command("SET", key, b"x")


def _delete_everywhere(cluster: RedisCluster, key: bytes) -> None:
    for p in cluster.ports:
        with contextlib.suppress(redis.ResponseError):
            cluster.client(p).delete(key)


def test_tls_only_cluster(tmp_path, tmp_path_factory):
    tls = make_tls_files(tmp_path_factory.mktemp("tls"))
    cluster = RedisCluster(tmp_path_factory.mktemp("redis-tls"), password=SECRET, tls=tls)
    try:
        make_corpus(tmp_path / "c", n_base=60, seed=13, shards=3)
        inputs = f"{tmp_path}/c/part*.jsonl"
        env = _env(**{ENV: SECRET})
        y = write_pipeline(tmp_path / "t.yaml", tmp_path / "w", inputs, _redis_stage(
            cluster, f", redis_password_env: {ENV}, redis_tls: true, "
                     f"redis_tls_ca_file: '{tls.ca}'"))
        r = _run(["run", str(y)], env)
        assert r.returncode == 0, r.stderr
        ye = write_pipeline(tmp_path / "e.yaml", tmp_path / "we", inputs,
                            f"  - fuzzy_dedup: {FUZZY}, threshold: 0.7}}\n")
        run_cli("run", str(ye))
        got = rejected(tmp_path / "w", "fuzzy_dedup")
        assert got and got == rejected(tmp_path / "we", "fuzzy_dedup")
        assert cluster.keys("curator:*") == 0

        # a CA that did not sign the servers' certificates: its own line, not "down"
        other = make_tls_files(tmp_path_factory.mktemp("tls-other"))
        y2 = write_pipeline(tmp_path / "t2.yaml", tmp_path / "w2", inputs, _redis_stage(
            cluster, f", redis_password_env: {ENV}, redis_tls: true, "
                     f"redis_tls_ca_file: '{other.ca}'"))
        r = _run(["run", str(y2)], env)
        errs = _errors(r.stderr)
        assert r.returncode != 0 and len(errs) == 1, r.stderr
        assert "TLS handshake failed: certificate not trusted" in errs[0], errs
        assert "down or unreachable" not in errs[0]
        assert SECRET not in r.stderr

        # no TLS against TLS-only servers: they drop the connection; the port is asked
        os.environ[ENV] = SECRET
        try:
            store = RedisBucketStore(cluster.nodes, "curator:x:", auth=RedisAuth(password_env=ENV))
            with pytest.raises(StageError,
                               match=r"speaks TLS only on that port and redis.tls.enabled "
                                     r"is off"):
                store.check()
        finally:
            del os.environ[ENV]
    finally:
        cluster.close()


def test_unreachable_node_lines_name_the_cause_and_blame_tls_only_for_tls(tmp_path):
    """Refused, timed out (a host that accepts and then hangs) and a plain server met by a TLS
    client: each line names the node and its cause; only the last one is about TLS."""
    import socket

    from tests.dedup.helpers_dedup import plain_redis_server

    tls = make_tls_files(tmp_path / "tls")

    def line(port: int, use_tls: bool) -> str:
        auth = RedisAuth(tls=use_tls, tls_ca_file=str(tls.ca) if use_tls else None)
        store = RedisBucketStore([f"127.0.0.1:{port}"], "curator:x:", timeout_s=0.5, auth=auth)
        with pytest.raises(StageError) as e:
            store.check()
        return str(e.value)

    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    port = silent.getsockname()[1]
    try:
        got = line(port, True)
        assert got.startswith(f"redis node 127.0.0.1:{port} is down or unreachable: "
                              "timed out after 0.5 s"), got
        assert "TLS" not in got, got
    finally:
        silent.close()
    got = line(port, True)  # nothing listens now
    assert got.startswith(f"redis node 127.0.0.1:{port} is down or unreachable: connection "
                          "refused"), got
    assert "TLS" not in got, got
    with plain_redis_server(tmp_path) as plain:
        got = line(plain, True)
        assert got.startswith(f"redis node 127.0.0.1:{plain}: TLS handshake failed: the node "
                              "answers in plain text on that port"), got


def test_tls_certs_carry_every_name_and_the_announced_address(tmp_path, monkeypatch):
    """A Redis Cluster announces its nodes by IP address: the client, given the nodes by host
    name, then connects to the addresses and checks them against the certificates. Certificates
    from ``curator tls-certs --hosts localhost+127.0.0.1`` carry both; one made for the name
    alone fails with a line naming the announced address and the certificate problem."""
    from cryptography import x509

    from tests.dedup.helpers_dedup import TlsFiles

    run_cli("tls-certs", str(tmp_path / "both"), "--hosts", "localhost+127.0.0.1,other+10.9.8.7")
    cert = x509.load_pem_x509_certificate((tmp_path / "both" / "localhost.pem").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(n.value) for n in san] == ["localhost", "127.0.0.1"]
    assert (tmp_path / "both" / "other.pem").exists()
    run_cli("tls-certs", str(tmp_path / "name"), "--hosts", "localhost")
    monkeypatch.setenv(ENV, SECRET)
    for folder, works in (("both", True), ("name", False)):
        d = tmp_path / folder
        tls = TlsFiles(d / "ca.pem", d / "localhost.pem", d / "localhost.key")
        cluster = RedisCluster(tmp_path / f"rc-{folder}", password=SECRET, tls=tls)
        try:
            nodes = [f"localhost:{p}" for p in cluster.ports]
            store = RedisBucketStore(nodes, "curator:sans:", auth=RedisAuth(
                password_env=ENV, tls=True, tls_ca_file=str(tls.ca)))
            try:
                if works:
                    d64 = np.arange(1, 301, dtype=np.uint64)
                    assert np.array_equal(store.claim(d64, d64), d64)
                    assert store.cleanup() == 300 + len(store.witness)
                else:
                    with pytest.raises(StageError) as e:
                        store.check()
                    line = str(e.value)
                    assert "TLS handshake failed: certificate not trusted" in line, line
                    assert "127.0.0.1" in line and "IP address mismatch" in line, line
            finally:
                store.close()
        finally:
            cluster.close()
