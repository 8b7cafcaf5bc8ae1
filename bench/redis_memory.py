"""Redis memory model: bytes per document that fuzzy dedup keeps in a 3-master Redis Cluster.

    python bench/redis_memory.py --n 100000 1000000            # backend insert path
    python bench/redis_memory.py --n 100000 --stage            # also the whole fuzzy_dedup stage

For each N it writes bench/scale.py's corpus (``generate()``: web-like lengths, planted exact
and near copies), starts a fresh 3-master cluster of ``redis-server`` processes on 127.0.0.1
(temporary ports and folders, no persistence, like the tests' clusters) and measures
``INFO memory`` ``used_memory`` summed over the masters minus the empty cluster's baseline:

* ``insert`` (default): the band digests of every document, computed by fuzzy_dedup's own
  MinHash kernel (``MinHasher`` + ``band_digests``, the stage's defaults: char 24-grams,
  128 permutations, threshold 0.8 -> 9 bands x 13 rows), are claimed through the backend's
  insert path (``RedisBucketStore.claim``: ``SET key ref NX GET EX ttl``, keys
  ``curator:<12 hex>:<8 hex>:<8-byte digest>`` as the stage makes them). The keys are then
  all in the cluster at once, which is the stage's high-water mark (the stage removes its keys
  right after the claim phase). Measured with the default TTL and with ``redis_key_ttl_s: 0``.
* ``--stage``: ``curator run`` of ``read_jsonl -> fuzzy_dedup(backend: redis)``; a thread polls
  ``used_memory`` and ``DBSIZE`` of each master every 0.2 s and keeps the largest sum (the
  stage cleans its keys up at the end, so only the peak is left to see); ``used_memory_peak``
  is printed too (it also counts client buffers of the pipelined batches).

Printed per N: documents, keys, used_memory per master (MB), bytes per key and per document,
CPU seconds of the kernel and of the claims, and the time.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson
import zstandard

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        # the cluster bus uses port + 10000: keep below 55535
        ports = [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
    if any(p > 55_000 for p in ports):
        return _free_ports(n)
    return ports


@dataclass
class Cluster:
    """A throwaway 3-master Redis Cluster (no replicas, no persistence) in ``root``."""

    root: Path
    n: int = 3
    ports: list[int] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)

    def __post_init__(self) -> None:
        import redis

        self.ports = _free_ports(self.n)
        try:
            for p in self.ports:
                d = self.root / str(p)
                d.mkdir(parents=True, exist_ok=True)
                self.procs.append(subprocess.Popen(
                    [REDIS_SERVER, "--port", str(p), "--bind", "127.0.0.1",
                     "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--dir", str(d), "--save", "", "--appendonly", "no",
                     "--protected-mode", "no"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            for p in self.ports:
                self._wait(lambda p=p: redis.Redis("127.0.0.1", p).ping())
            subprocess.run([REDIS_CLI, "--cluster", "create", *self.nodes,
                            "--cluster-replicas", "0", "--cluster-yes"],
                           check=True, capture_output=True, timeout=60)
            self._wait(lambda: all(self.client(p).cluster("info")["cluster_state"] == "ok"
                                   for p in self.ports))
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _wait(cond, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while True:
            try:
                if cond():
                    return
            except Exception:
                if time.monotonic() > end:
                    raise
            if time.monotonic() > end:
                raise TimeoutError("redis cluster did not come up")
            time.sleep(0.05)

    @property
    def nodes(self) -> list[str]:
        return [f"127.0.0.1:{p}" for p in self.ports]

    def client(self, port: int):
        import redis

        return redis.Redis("127.0.0.1", port, socket_timeout=30)

    def cpu_s(self) -> float:
        """User + system CPU seconds of all the servers so far."""
        return sum(float(i["used_cpu_user"]) + float(i["used_cpu_sys"])
                   for i in (self.client(p).info("cpu") for p in self.ports))

    def memory(self) -> list[tuple[int, int, int]]:
        """(used_memory, used_memory_peak, keys) per master."""
        out = []
        for p in self.ports:
            c = self.client(p)
            m = c.info("memory")
            out.append((int(m["used_memory"]), int(m["used_memory_peak"]), int(c.dbsize())))
        return out

    def close(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs.clear()


def _docs(corpus: Path):
    dctx = zstandard.ZstdDecompressor()
    for f in sorted(glob.glob(str(corpus / "*" / "*.jsonl.zst"))):
        with open(f, "rb") as fh, dctx.stream_reader(fh) as r:
            buf = b""
            while chunk := r.read(1 << 22):
                buf += chunk
                lines = buf.split(b"\n")
                buf = lines.pop()
                for line in lines:
                    if line:
                        yield orjson.loads(line)["text"]


def digests(corpus: Path, keep_sigs: int = 0) -> tuple[np.ndarray, float, np.ndarray]:
    """(docs x bands) band digests with fuzzy_dedup's defaults, the CPU seconds spent, and the
    MinHash signatures of the first ``keep_sigs`` documents (for the peer)."""
    from curator.dedup.fuzzy_dedup import FuzzyDedup
    from curator.dedup.minhash import band_digests

    st = FuzzyDedup().hashing  # the stage's defaults decide shingles, permutations and banding
    h = st.hasher()
    t = time.process_time()
    out, batch, sigs = [], [], []
    kept = 0

    def flush() -> None:
        nonlocal kept
        sig = h.signatures(batch)[0]
        out.append(band_digests(sig, st.bands, st.rows))
        if kept < keep_sigs:
            sigs.append(sig[:keep_sigs - kept])
            kept += sigs[-1].shape[0]
        batch.clear()

    for text in _docs(corpus):
        batch.append(text)
        if len(batch) == 4096:
            flush()
    if batch:
        flush()
    keep = np.concatenate(sigs) if sigs else np.empty((0, st.num_perm), np.uint32)
    return np.concatenate(out), time.process_time() - t, keep


def peer(root: Path, dig: np.ndarray, sigs: np.ndarray) -> dict:
    """datasketch ``MinHashLSH`` with Redis storage (one Redis set per bucket, plus a list of
    bucket keys per document) and curator's store, the same documents on the same kind of
    plain ``redis-server`` (datasketch's storage does not speak Redis Cluster), one fresh
    server each; ``used_memory`` after inserting minus the empty server's."""
    import redis
    from datasketch import MinHash, MinHashLSH

    from curator.dedup.backends.redis_cluster import RedisBucketStore, buckets_for
    from curator.dedup.fuzzy_dedup import FuzzyDedup

    hx = FuzzyDedup().hashing
    n = sigs.shape[0]
    out: dict = {"mode": "peer", "peer_docs": n}
    for who in ("curator", "datasketch"):
        (port,) = _free_ports(1)
        d = root / f"peer-{who}"
        d.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                                 "--dir", str(d), "--save", "", "--appendonly", "no"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            r = redis.Redis("127.0.0.1", port)
            Cluster._wait(r.ping)
            base = int(r.info("memory")["used_memory"])
            if who == "curator":
                sub = dig[:n]
                store = RedisBucketStore([f"127.0.0.1:{port}"], "curator:0123456789ab:cdef0123:",
                                         buckets=buckets_for(sub.size))
                store.claim(sub.reshape(-1), np.repeat(np.arange(n, dtype=np.uint64),
                                                       sub.shape[1]))
                store.close()
            else:
                lsh = MinHashLSH(num_perm=hx.num_perm, params=(hx.bands, hx.rows),
                                 storage_config={"type": "redis", "basename": b"ds",
                                                 "redis": {"host": "127.0.0.1", "port": port}})
                with lsh.insertion_session(buffer_size=10_000) as s:
                    for i, sig in enumerate(sigs):
                        s.insert(i, MinHash(num_perm=hx.num_perm, scheme="legacy",
                                            hashvalues=sig.astype(np.uint64)))
            used = int(r.info("memory")["used_memory"]) - base
            out[f"{who}_bytes_per_doc"] = round(used / n, 1)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"ratio bytes/doc datasketch MinHashLSH(redis) / curator: "
          f"{out['datasketch_bytes_per_doc'] / out['curator_bytes_per_doc']:.1f}x "
          f"({out['datasketch_bytes_per_doc']:.0f} vs {out['curator_bytes_per_doc']:.0f} "
          f"bytes per document, {n} documents, one plain redis-server each)", flush=True)
    return out


def insert(cluster: Cluster, dig: np.ndarray, ttl_s: int) -> dict:
    """Claim every band digest as the stage does; measure; remove the keys."""
    from curator.dedup.backends.redis_cluster import (
        DEFAULT_TTL_S,
        RedisBucketStore,
        buckets_for,
    )

    base = cluster.memory()
    # same key shape as the stage: <prefix>:<12 hex stage tag>:<8 hex fingerprint tag>:, and
    # as many bucket hashes as the stage would make for this many entries
    stage_prefix = "curator:0123456789ab:"
    store = RedisBucketStore(cluster.nodes, stage_prefix + "cdef0123:", stage_prefix=stage_prefix,
                             ttl_s=ttl_s if ttl_s >= 0 else DEFAULT_TTL_S,
                             buckets=buckets_for(dig.size))
    t, c, server0 = time.perf_counter(), time.process_time(), cluster.cpu_s()
    shard = 50_000
    for s in range(0, dig.shape[0], shard):  # one claim per shard of documents, as the stage
        d = dig[s:s + shard]
        # dense document numbers, as the stage stores them
        refs = np.repeat(np.arange(s, s + d.shape[0], dtype=np.uint64), d.shape[1])
        store.claim(d.reshape(-1), refs)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    after, server = cluster.memory(), cluster.cpu_s() - server0
    removed = store.cleanup()
    store.close()
    used = [a[0] - b[0] for a, b in zip(after, base)]
    keys = sum(a[2] for a in after)
    return {"mode": "insert", "ttl_s": store.ttl_s, "keys": keys, "removed": removed,
            "buckets": store.buckets, "entries": int(dig.size),
            "bytes_per_entry": round(sum(used) / dig.size, 1),
            "used_mb_per_master": [round(u / 1e6, 1) for u in used],
            "used_mb": round(sum(used) / 1e6, 1), "bytes_per_key": round(sum(used) / keys, 1),
            "claim_wall_s": round(wall, 1), "claim_client_cpu_s": round(cpu, 1),
            "claim_server_cpu_s": round(server, 1)}


def stage(cluster: Cluster, corpus: Path, tmp: Path) -> dict:
    """``curator run`` read_jsonl -> fuzzy_dedup(redis); peak of the summed used_memory."""
    base = cluster.memory()
    yml = tmp / "redis-stage.yaml"
    srcs = sorted(p.name for p in corpus.iterdir() if p.is_dir())
    reads = "".join(f"  - id: {s}\n    read_jsonl: {{paths: \"{corpus / s}/*.jsonl.zst\"}}\n"
                    for s in srcs)
    yml.write_text(f"name: redis-memory\nwork_dir: {tmp / 'work'}\nprogress: off\nstages:\n"
                   f"{reads}  - id: fuzzy\n    fuzzy_dedup: {{backend: redis, redis_nodes: "
                   f"{json.dumps(cluster.nodes)}}}\n    inputs: [{', '.join(srcs)}]\n")
    best = {"used": 0, "keys": 0, "per": []}
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.2):
            try:
                m = cluster.memory()
            except Exception:
                continue
            used = sum(a[0] - b[0] for a, b in zip(m, base))
            if used > best["used"]:
                best.update(used=used, keys=sum(a[2] for a in m),
                            per=[a[0] - b[0] for a, b in zip(m, base)])

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "curator", "run", str(yml), "--executor",
                        "local"], cwd=tmp, env=dict(os.environ, PYTHONPATH=str(REPO)),
                       capture_output=True, text=True)
    wall = time.perf_counter() - t
    stop.set()
    th.join()
    if p.returncode:
        raise SystemExit(f"fuzzy_dedup run failed:\n{p.stderr[-3000:]}")
    after = cluster.memory()
    rep = json.loads((tmp / "work" / "report.json").read_text())
    fz = next(s for s in rep["stages"] if s["id"] == "fuzzy")
    return {"mode": "stage", "keys_at_peak": best["keys"],
            "used_mb_per_master": [round(u / 1e6, 1) for u in best["per"]],
            "used_mb": round(best["used"] / 1e6, 1),
            "bytes_per_key": round(best["used"] / max(1, best["keys"]), 1),
            "used_memory_peak_mb": round(sum(a[1] - b[0] for a, b in zip(after, base)) / 1e6, 1),
            "keys_left": sum(a[2] for a in after), "run_wall_s": round(wall, 1),
            "removed": sum(fz["rejected"].values())}


def _report(r: dict, meta: dict, json_path: str | None) -> None:
    """Print one row as soon as it is measured (and append it to ``json_path``)."""
    r.update(meta, loadavg=round(os.getloadavg()[0], 1))
    if "used_mb" in r:
        keys = r.get("keys", r.get("keys_at_peak", 0))
        r.update(bytes_per_doc=round(r["used_mb"] * 1e6 / meta["n"], 1),
                 keys_per_doc=round(keys / meta["n"], 2))
    print(json.dumps(r), flush=True)
    if "used_mb" in r:
        print(f"bytes per document in a 3-master cluster ({r['mode']}, {meta['n']} documents, "
              f"{meta['bands']} bands, redis_key_ttl_s {r.get('ttl_s', 'default')}): "
              f"{r['bytes_per_doc']:.0f} (goal <= 250)", flush=True)
    if json_path:
        with open(json_path, "a") as f:
            f.write(json.dumps(r) + "\n")


def main(argv: list[str] | None = None) -> int:
    from bench.scale import generate  # bench/scale.py's corpus

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100_000])
    ap.add_argument("--stage", action="store_true", help="also run the whole fuzzy_dedup stage")
    ap.add_argument("--no-ttl-variant", action="store_true", help="skip the ttl 0 insert run")
    ap.add_argument("--json", help="append each row to this JSON-lines file")
    ap.add_argument("--peer-docs", type=int, default=0,
                    help="also store the first N documents with datasketch's MinHashLSH on a "
                    "plain redis-server, and curator's store on another (ratio of bytes/doc)")
    args = ap.parse_args(argv)
    ver = subprocess.run([REDIS_SERVER, "--version"], capture_output=True,
                         text=True).stdout.split()[2]
    print(f"# redis-server {ver}, {os.cpu_count()} cores (shared), "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    for n in args.n:
        tmp = Path(tempfile.mkdtemp(prefix=f"redis-memory-{n}-"))
        try:
            t = time.perf_counter()
            corpus = generate(tmp / "corpus", n)
            gen_s = time.perf_counter() - t
            dig, kernel_cpu, sigs = digests(corpus.path, args.peer_docs)
            docs, bands = dig.shape
            unique = int(np.unique(dig.reshape(-1)).shape[0])
            meta = dict(n=docs, bands=bands, unique_digests=unique,
                        mb_text=round(corpus.bytes / 1e6), gen_s=round(gen_s, 1),
                        kernel_cpu_s=round(kernel_cpu, 1))

            for ttl in ([-1] if args.no_ttl_variant else [-1, 0]):
                c = Cluster(tmp / f"redis-{ttl}")
                try:
                    _report(insert(c, dig, ttl), meta, args.json)
                finally:
                    c.close()
            if args.peer_docs:
                _report(peer(tmp, dig, sigs), meta, args.json)
            if args.stage:
                c = Cluster(tmp / "redis-stage")
                try:
                    _report(stage(c, corpus.path, tmp), meta, args.json)
                finally:
                    c.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
