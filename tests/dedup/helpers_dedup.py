"""Helpers of the dedup tests: a real Redis Cluster from ``redis-server``, a generated corpus
with planted near-duplicates, and pipeline runners."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import redis

REPO = Path(__file__).resolve().parents[2]
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(n: int) -> list[int]:
    """``n`` free ports whose cluster bus ports (+10000) are free too."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    out: list[int] = []
    while len(out) < n:
        p = rng.randrange(20000, 55000)
        if p not in out and _port_free(p) and _port_free(p + 10000):
            out.append(p)
    return out


@contextlib.contextmanager
def plain_redis_server(folder: Path, *args: str) -> Iterator[int]:
    """One plain (non-cluster) redis-server on 127.0.0.1, no persistence, with ``args`` added
    to its command line; yields its port."""
    import redis

    (port,) = free_ports(1)
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                             "--dir", str(folder), "--save", "", "--appendonly", "no", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: redis.Redis(port=port).ping(), what="redis-server")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def wait_until(cond, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``cond`` until true (a readiness check, not a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except (redis.RedisError, OSError):
            pass
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path


def make_tls_files(d: Path) -> TlsFiles:
    """A throw-away CA and a server certificate for 127.0.0.1 (``openssl`` command line)."""
    d.mkdir(parents=True, exist_ok=True)

    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=curator-ca",
        "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"))
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", str(d / "server.key"), "-out", str(d / "server.csr"))
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ssl("x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "ca.pem"),
        "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "2",
        "-extfile", str(d / "san.ext"), "-out", str(d / "server.pem"))
    return TlsFiles(d / "ca.pem", d / "server.pem", d / "server.key")


class RedisCluster:
    """A real Redis Cluster of ``n`` masters on 127.0.0.1, in a temp folder; optionally with a
    password (``requirepass``/``masterauth``) and TLS only (``tls-port``, no plain port)."""

    def __init__(self, root: Path, n: int = 3, password: str | None = None,
                 tls: TlsFiles | None = None) -> None:
        self.root = root
        self.password = password
        self.tls = tls
        self.ports = free_ports(n)
        self.procs: dict[int, subprocess.Popen] = {}
        cli = [REDIS_CLI]
        if password:
            cli += ["-a", password, "--no-auth-warning"]
        if tls:
            cli += ["--tls", "--cacert", str(tls.ca)]
        try:
            for p in self.ports:
                self.start_node(p)
            subprocess.run(
                [*cli, "--cluster", "create", *[f"127.0.0.1:{p}" for p in self.ports],
                 "--cluster-replicas", "0", "--cluster-yes"],
                check=True, capture_output=True, timeout=60)
            self.wait_ok()
        except BaseException:
            self.close()  # no server outlives a cluster that failed to start
            raise

    def client(self, port: int, **kw: object) -> redis.Redis:
        """A plain connection to one node, with the cluster's password and TLS."""
        if self.password:
            kw.setdefault("password", self.password)
        if self.tls:  # the test's own control connection: any name the certificate has
            kw.update(ssl=True, ssl_ca_certs=str(self.tls.ca), ssl_check_hostname=False)
        return redis.Redis("127.0.0.1", port, **kw)  # type: ignore[arg-type]

    @property
    def nodes(self) -> list[str]:
        return [f"127.0.0.1:{p}" for p in self.ports]

    def start_node(self, port: int) -> None:
        d = self.root / str(port)
        d.mkdir(parents=True, exist_ok=True)
        extra: list[str] = []
        if self.password:
            extra += ["--requirepass", self.password, "--masterauth", self.password]
        if self.tls:
            extra += ["--port", "0", "--tls-port", str(port), "--tls-cluster", "yes",
                      "--tls-replication", "yes", "--tls-cert-file", str(self.tls.cert),
                      "--tls-key-file", str(self.tls.key), "--tls-ca-cert-file",
                      str(self.tls.ca), "--tls-auth-clients", "no"]
        else:
            extra += ["--port", str(port)]
        self.procs[port] = subprocess.Popen(
            [REDIS_SERVER, "--bind", "127.0.0.1", "--cluster-enabled", "yes",
             "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
             "--dir", str(d), "--save", "", "--appendonly", "no", "--protected-mode", "no",
             *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: self.client(port, socket_timeout=1).ping(), what=f"redis {port}")

    def stop_node(self, port: int) -> None:
        proc = self.procs.pop(port)
        proc.terminate()
        proc.wait(timeout=10)

    def wait_ok(self) -> None:
        def ok() -> bool:
            for p in self.ports:
                info = self.client(p, socket_timeout=1).cluster("info")
                if info.get("cluster_state") != "ok":
                    return False
            return True

        wait_until(ok, timeout=60, what="cluster_state:ok")

    def keys(self, pattern: str = "*") -> int:
        return sum(len(self.client(p).keys(pattern)) for p in self.ports if p in self.procs)

    def close(self) -> None:
        for port in list(self.procs):
            self.stop_node(port)


# -- freezing a run at a deterministic point (failure injection) --------------------------------

#: ``python freeze.py run pipeline.yaml``: curator, with ``RedisBucketStore.claim`` (or the
#: method named in ``$FREEZE_AFTER``, or a ``<module>.<function>`` of ``curator.dedup.backends``)
#: wrapped so that the process stops itself (SIGSTOP) right after its first call returned.
FREEZE = '''
import importlib, os, runpy, signal, sys
from curator.dedup.backends import redis_cluster as rc

module, _, after = os.environ.get("FREEZE_AFTER", "claim").rpartition(".")
owner = importlib.import_module(f"curator.dedup.backends.{module}") if module \
    else rc.RedisBucketStore
real = getattr(owner, after)

def frozen_after_first(*a, **k):
    out = real(*a, **k)
    marker = os.environ["FREEZE_MARKER"]
    if not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGSTOP)
    return out

setattr(owner, after, frozen_after_first)
sys.argv = ["curator", *sys.argv[1:]]
runpy.run_module("curator", run_name="__main__", alter_sys=True)
'''


def start_frozen_run(tmp: Path, args: list[str], env: dict[str, str],
                     after: str = "claim") -> subprocess.Popen:
    """Start ``curator *args`` under :data:`FREEZE` (own process group) and return once it is
    stopped after its first call of ``<after>`` (``FREEZE`` above; state ``T`` in ``/proc``)."""
    (tmp / "freeze.py").write_text(FREEZE)
    marker = tmp / "frozen.pid"
    run = subprocess.Popen([sys.executable, str(tmp / "freeze.py"), *args], cwd=REPO,
                           env=dict(env, FREEZE_MARKER=str(marker), FREEZE_AFTER=after),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)

    def stopped() -> bool:
        assert run.poll() is None, run.communicate()
        if not marker.exists():
            return False
        stat = Path(f"/proc/{run.pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] == "T"

    wait_until(stopped, timeout=120, what=f"the run to stop after its first {after}")
    return run


# -- corpora ----------------------------------------------------------------------------------

VOCAB = [f"w{i}" for i in range(5000)]


def mutate_to_jaccard(words: list[str], target: float, n: int, rng: random.Random) -> list[str]:
    """Replace a run of words so that roughly ``target`` of the word n-gram sets is shared."""
    total = len(words) - n + 1
    # replacing k contiguous words changes k + n - 1 shingles on each side:
    # J = (total - changed) / (total + changed)
    changed = total * (1 - target) / (1 + target)
    k = max(1, round(changed - n + 1))
    start = rng.randrange(0, len(words) - k)
    out = list(words)
    for i in range(start, start + k):
        out[i] = f"new{rng.randrange(10**9)}"
    return out


def make_corpus(path: Path, n_base: int = 300, sims: tuple[float, ...] = (0.95, 0.9, 0.85,
                0.6, 0.4), seed: int = 0, shards: int = 4, words: int = 200,
                ngram: int = 5, id_prefix: str = "") -> list[dict]:
    """Random base documents plus, for some, a near-duplicate at each similarity in ``sims``;
    written as ``shards`` JSONL files. Returns the records in file order."""
    rng = random.Random(seed)
    docs = []
    for i in range(n_base):
        base = [rng.choice(VOCAB) for _ in range(words)]
        docs.append({"id": f"{id_prefix}b{i}", "text": " ".join(base),
                     "quality_score": rng.random()})
        if i % 3 == 0:
            for s in sims:
                near = mutate_to_jaccard(base, s, ngram, rng)
                docs.append({"id": f"{id_prefix}b{i}-s{s}", "text": " ".join(near),
                             "quality_score": rng.random()})
        if i % 25 == 0:  # an exact copy with different case and spacing
            docs.append({"id": f"{id_prefix}b{i}-copy", "text": "  " + " ".join(base).upper(),
                         "quality_score": rng.random()})
    rng.shuffle(docs)
    path.mkdir(parents=True, exist_ok=True)
    for k in range(shards):
        with open(path / f"part{k}.jsonl", "wb") as f:
            for d in docs[k::shards]:
                f.write(orjson.dumps(d) + b"\n")
    return [d for k in range(shards) for d in docs[k::shards]]


# -- running pipelines ------------------------------------------------------------------------


def write_pipeline(path: Path, work_dir: Path, inputs: str, stages: str,
                   executor: str = "{type: local}") -> Path:
    path.write_text(f"name: dedup-test\nwork_dir: {work_dir}\nexecutor: {executor}\n"
                    f"progress: 'off'\nreport: false\nstages:\n"
                    f"  - read_jsonl: {{paths: '{inputs}'}}\n{stages}")
    return path


def rejected(work_dir: Path, stage: str) -> dict[str, dict]:
    """id -> rejection record of every document a stage removed."""
    import zstandard

    out = {}
    d = work_dir / "rejected" / stage
    if not d.exists():
        return out
    for f in sorted(d.glob("*.jsonl.zst")):
        with open(f, "rb") as fh:
            data = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
        for line in data.splitlines():
            rec = orjson.loads(line)
            out[rec["id"]] = rec["rejected"]
    return out


def output_ids(work_dir: Path, stage: str) -> list[str]:
    from curator.storage.shards import read_records

    ids = []
    for f in sorted((work_dir / "stages" / stage / "data").glob("*.jsonl.zst")):
        ids.extend(r["id"] for r in read_records(str(f)))
    return ids


# -- real text ----------------------------------------------------------------------------------

WIKI_DUMP = (REPO / "data/sample/wikimedia/enwiki/20160501"
             / "enwiki-20160501-pages-articles1.xml-p10p30302.bz2")


def wiki_pages() -> list[str]:
    """The raw wikitext of the bundled real English Wikipedia sample (206 pages)."""
    import bz2
    import html
    import re

    with bz2.open(WIKI_DUMP) as f:
        raw = f.read().decode("utf-8")
    return [html.unescape(m) for m in re.findall(r"<text[^>]*>(.*?)</text>", raw, re.S)]


def wiki_paragraphs(min_words: int = 8) -> list[str]:
    """Paragraphs (blank-line separated) of the bundled Wikipedia sample: ~6,000 real texts."""
    import re

    return [p.strip() for page in wiki_pages() for p in re.split(r"\n\s*\n", page)
            if len(p.split()) >= min_words]


_ACCENT = str.maketrans({"e": "é", "a": "à", "o": "ö", "u": "ü", "c": "ç", "i": "ï"})


def near_copy(text: str, rng: random.Random, content_edit: bool = False) -> str:
    """A copy with the edits scrapers and mirrors make: case, punctuation, quotes, numbers,
    diacritics, spacing (all undone by the fineweb preset) and optionally one word more."""
    import re

    text = text.replace(", ", " - ").replace(". ", "! ").replace("'", "’")
    text = re.sub(r"\d+", lambda m: str(rng.randrange(10 ** len(m.group()))), text)
    words = text.split(" ")
    for i in rng.sample(range(len(words)), max(1, len(words) // 6)):
        words[i] = words[i].translate(_ACCENT)
    words = [w.title() if rng.random() < 0.5 else w.upper() for w in words]
    if content_edit:
        words.insert(rng.randrange(len(words)), "really")
    return re.sub(" ", lambda m: rng.choice([" ", "  ", "\n"]), " ".join(words))
