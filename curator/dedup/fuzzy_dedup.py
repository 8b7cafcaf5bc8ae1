"""``fuzzy_dedup``: MinHash + LSH near-duplicate removal, on CPUs, across workers.

Phases (each a resumable ``ctx.map``; results never depend on the number of workers):

1. ``signatures`` (per input shard): MinHash signatures -> band digests, written per shard
   (``sig/``) and split by ``digest % partitions`` into bucket entries (``parts/``).
2. buckets -> candidate edges ``(smallest ref in bucket, ref)``:
   ``embedded``/``cudf``: per partition, a sort of that partition's entries (``buckets``);
   ``redis``: per shard, each entry claims its bucket in a Redis Cluster (first writer wins,
   one script call per batch and node, buckets packed into small hashes): the bucket's owner
   gives edge ``(owner, ref)``; same components as the embedded edges. Sentinels and witness
   counters checked after the last claim stop the stage if keys were lost meanwhile. Redone on
   a rerun (after removing every key of the stage, whatever the parameters of the run that
   left them): a restarted node may have lost its data, so this step is never marked done
   early. Keys carry a TTL (``redis.key_ttl_s``).
3. ``verify`` (optional): drop candidate pairs whose exact shingle Jaccard is below threshold.
4. ``components``: connected components over all edges; per component keep one document by
   ``keep`` (documents of an ``against`` index always win); removal lists per input shard.
5. final pass: rejects removed documents with ``duplicate_of`` = the kept document's id.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import shutil
from dataclasses import asdict, dataclass
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from curator.base.document import meta_value
from curator.base.errors import ConfigError
from curator.core.context import GlobalContext
from curator.core.params import NonNegInt, PositiveInt, Ratio, StageParams
from curator.core.stage import GlobalStage, HostNeeds, OutputDir, Shard
from curator.dedup.common import (
    Remover,
    gather_partition,
    load_json,
    load_npz,
    lookup_ids,
    ref_row,
    ref_shard,
    save_json,
    save_npz,
    write_removals,
)
from curator.dedup.components import EdgeFile
from curator.dedup.fuzzy_redis import RedisTarget, claim_edges
from curator.dedup.lsh import bucket_entries, resolve_bands
from curator.dedup.minhash import MinHasher, band_digests, shingle_hashes
from curator.dedup.normalize import resolve, word_splitter
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard

#: Memory of one bucket entry while its partition is grouped: 16 bytes stored (digest, ref)
#: plus the sort's index and sorted copies (measured peak ~4x).
_ENTRY_BYTES = 64
INDEX_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class Hashing:
    """What the band digests depend on. A saved index records these (``index.json``) and is
    usable by ``against`` only where they match."""

    num_perm: int
    seed: int
    scheme: str
    ngram: int
    shingle: str
    normalize: str
    language: str
    bands: int
    rows: int

    def index_meta(self) -> dict[str, Any]:
        """The settings part of ``index.json`` (the key order is the file's)."""
        return {"version": INDEX_VERSION, **asdict(self)}

    def hasher(self) -> MinHasher:
        return MinHasher(self.num_perm, self.seed, self.ngram, self.shingle,  # type: ignore[arg-type]
                         self.normalize, scheme=self.scheme, lang=self.language)  # type: ignore[arg-type]


@dataclass(frozen=True, kw_only=True)
class FuzzyConfig:
    """What the mapped tasks need (small and picklable)."""

    stage_dir: str
    hashing: Hashing
    partitions: int
    score_field: str
    verify: bool
    threshold: float
    redis: RedisTarget


@dataclass(frozen=True, kw_only=True)
class SavedIndex:
    """A saved LSH index given in ``against`` (``index.json`` read and checked)."""

    dir: str
    shards: tuple[str, ...]
    docs: int


@dataclass(frozen=True, kw_only=True)
class ShardSigs:
    """A ``signatures`` (or ``index_split``) result: one shard's band digests and ids
    (``sig_path``), its bucket entries split by partition (``parts_path``, ``parts`` entries
    per partition), and its shingle sets when ``verify`` is on."""

    docs: int
    sig_path: str
    parts_path: str
    parts: tuple[int, ...]
    shingles: str | None = None


@dataclass(frozen=True, kw_only=True)
class ComponentsJob:
    """What the ``components`` phase reads: every edge file, and per shard (index shards
    first) its document count and signature file."""

    edges: tuple[str, ...]
    counts: tuple[int, ...]
    sig: tuple[str, ...]
    index_shards: int
    shards: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Components:
    """The ``components`` result: documents removed, clusters, edges read, and the cluster
    size histogram (``size_counts[i]`` clusters of ``size_labels[i]`` documents)."""

    removed: int
    clusters: int
    edges: int
    size_labels: tuple[int, ...]
    size_counts: tuple[int, ...]


def _ids_path(sig_path: str) -> str:
    """The document ids beside a shard's signature file (``sig/<shard>.npz``)."""
    return sig_path[:-4] + ".ids.json"


class RedisTLS(StageParams):
    """TLS to the Redis Cluster (``tls: true`` is short for ``tls: {enabled: true}``)."""

    enabled: bool = False
    """Connect with TLS (certificates verified, host name checked)."""
    ca_file: str | None = None
    """CA bundle that signed the servers' certificates (`null`: the system's CAs)."""
    cert_file: str | None = None
    """Client certificate and key, for servers with `tls-auth-clients yes`."""
    key_file: str | None = None
    """Client certificate and key, for servers with `tls-auth-clients yes`."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"enabled": data} if isinstance(data, bool) else data

    @model_validator(mode="after")
    def _files_need_tls(self) -> RedisTLS:
        if not self.enabled and (self.ca_file or self.cert_file or self.key_file):
            raise ValueError("ca_file / cert_file / key_file need enabled: true")
        return self


class RedisParams(StageParams):
    """The Redis Cluster that holds LSH buckets for ``backend: redis``."""

    renamed: ClassVar[dict[str, str]] = {"tls": "tls.enabled"}

    nodes: Annotated[list[str], Field(min_length=1)] = ["127.0.0.1:7000"]
    """`host:port` of some cluster nodes (the rest are discovered); one non-cluster node = a plain
    Redis server."""
    key_prefix: str = "curator"
    """First part of every key; keys are `<prefix>:<stage tag>:<fingerprint tag>:b<bucket number>`
    (bucket hashes) and `...:m{<tag>}<kind>` (sentinels and witness counters), the stage tag
    being 12 hex digits of sha1(work_dir path, work_dir's random tag, stage id) and the
    fingerprint tag 8 hex digits of sha1(stage fingerprint)."""
    batch: PositiveInt = 10_000
    """Bucket entries per script call (one round trip per batch and node; a call holds its node for
    ~10 ms)."""
    key_ttl_s: NonNegInt = 7 * 24 * 3600
    """Lifetime of every key (`EXPIRE` when a bucket hash is created); keys of a run that was killed
    and never rerun expire on their own. Must exceed the bucket step of one run (a run whose keys
    expire mid-run stops with an error); `0` = never expire (not recommended)."""
    username: str | None = None
    """ACL user (`null`: the default user)."""
    password_env: Annotated[str, Field(pattern=r"\S")] | None = None
    """**name** of the environment variable that holds the password, e.g. `CURATOR_REDIS_PASSWORD`;
    the password itself never goes in the YAML."""
    tls: RedisTLS = RedisTLS()
    """TLS settings."""


class FuzzyDedup(GlobalStage):
    """Remove near-duplicate documents (MinHash LSH; embedded, Redis Cluster or cuDF buckets)."""

    name = "fuzzy_dedup"

    class Params(StageParams):
        # the Redis settings change nothing under another backend: changing them reruns nothing
        applies_when: ClassVar[dict[str, dict[str, tuple[Any, ...]]]] = {
            "redis": {"backend": ("redis",)}}

        threshold: Ratio = 0.8
        """Jaccard threshold; derives `bands` x `rows` (datasketch's `_optimal_param`) and is the
        bar of `verify`."""
        num_perm: PositiveInt = 128
        """MinHash permutations per document."""
        bands: PositiveInt | None = None
        """LSH bands (with ``rows``); null: derived from ``threshold`` and the weights below."""
        rows: PositiveInt | None = None
        """Explicit banding (both or neither; `bands*rows <= num_perm`)."""
        shingle: Literal["char", "word"] = "char"
        """`char` (character n-grams, NeMo-style) or `word` (word n-grams)."""
        ngram: PositiveInt = 24
        """Shingle length (24 characters like NeMo Curator; 5 is usual for words)."""
        seed: int = 42
        """Permutation seed; signatures are identical on every process and machine."""
        scheme: Literal["affine32", "legacy", "datatrove"] = "affine32"
        """Permutation family, identical to datasketch's: `affine32` (datasketch >= 2 default, fast)
        or `legacy` (`(a*h+b) mod 2^61-1`, datasketch < 2 / NeMo / datatrove); or `datatrove`
        (`shingle: word` only): datatrove's `MinhashDedupSignature` bit for bit (XXH64 of each
        n-gram's text, vectorised; 64-bit values; `a, b` drawn as datatrove draws them)."""
        normalize: bool | Literal["none", "basic", "fineweb"] = "basic"
        """Normalisation preset before shingling: `none`, `basic` (= `true`), `fineweb` (see above;
        like datatrove, a document with fewer than `ngram` words then has no signature and is
        never a fuzzy duplicate, `exact_dedup` still catches its copies)."""
        language: str = "en"
        """SpaCy language of the word split of `normalize: fineweb` with `shingle: word`."""
        keep: Literal["first", "longest", "score"] = "first"
        """Kept document per cluster: `first` (input order), `longest` (most characters), `score`
        (highest `meta[score_field]`; missing = lowest); ties go to the first."""
        score_field: str = "quality_score"
        """Meta field read by `keep: score`; a dotted path reaches nested keys
        (`signals.gopher_quality:stop_words`); `quality_bucket` (from `quality_buckets`) keeps
        the copy in the best bucket."""
        verify: bool = False
        """Check every candidate pair's exact Jaccard on its shingle sets and drop pairs below
        `threshold`."""
        false_positive_weight: Ratio | None = None
        """Weights of the banding derivation; default 0.5/0.5, or 0.1/0.9 with `verify` (false
        positives are then cheap, misses are not)."""
        false_negative_weight: Ratio | None = None
        """Weights of the banding derivation; default 0.5/0.5, or 0.1/0.9 with `verify` (false
        positives are then cheap, misses are not)."""
        backend: Literal["embedded", "redis", "cudf"] = "embedded"
        """Where LSH buckets are grouped: in-process sort, a Redis Cluster, or cuDF on GPU."""
        partitions: NonNegInt = 0
        """Bucket partitions (embedded/cudf); `0` = from the document count and `partition_mb`."""
        partition_mb: PositiveInt = 256
        """Memory budget of one bucket-grouping task (one partition and its sort); the other
        partitions wait on disk."""
        redis: RedisParams = RedisParams()
        """The Redis Cluster of ``backend: redis``."""
        save_index: OutputDir | None = None
        """Folder (relative = under `work_dir`) to save this corpus's LSH index for later
        cross-corpus runs."""
        against: list[str] = []
        """Saved indexes to dedup against: documents similar to an indexed one are removed
        (`duplicate_of` = the indexed id); indexed documents are never output and always win."""

    def setup(self) -> None:
        # With verification false positives are cheap (checked exactly), misses are not: the
        # derived banding then favours recall unless the weights are given.
        fpw = self.false_positive_weight if self.false_positive_weight is not None else (
            0.1 if self.verify else 0.5)
        fnw = self.false_negative_weight if self.false_negative_weight is not None \
            else 1.0 - fpw
        n_bands, n_rows = resolve_bands(self.num_perm, self.threshold, self.bands, self.rows,
                                        (fpw, fnw))
        preset = resolve(self.normalize, "fuzzy_dedup.normalize")
        if self.scheme == "datatrove" and self.shingle != "word":
            raise ConfigError("fuzzy_dedup.scheme: datatrove hashes word n-grams; set "
                              "shingle: word")
        if preset == "fineweb" and self.shingle == "word":
            word_splitter(self.language)  # spaCy present and knows the language: fail now
        self.hashing = Hashing(num_perm=self.num_perm, seed=self.seed, scheme=self.scheme,
                               ngram=self.ngram, shingle=self.shingle, normalize=preset,
                               language=self.language, bands=n_bands, rows=n_rows)
        from curator.dedup.backends.redis_auth import RedisAuth

        r, tls = self.redis, self.redis.tls
        self.redis_auth = RedisAuth(
            r.username, r.password_env, tls.enabled,
            *(os.path.abspath(f) if f else None for f in (tls.ca_file, tls.cert_file,
                                                          tls.key_file)))

    def host_needs(self) -> HostNeeds | None:
        """The password variable and a reachable Redis on every process that claims buckets."""
        if self.backend != "redis":
            return None
        from curator.core.tls import is_loopback

        r = self.redis
        return HostNeeds(
            env=((r.password_env, "redis.password_env"),) if r.password_env else (),
            loopback=tuple((n, "redis.nodes") for n in r.nodes if is_loopback(n)))

    # -- driver ----------------------------------------------------------------------------
    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        if self.backend == "cudf":
            from curator.dedup.backends.gpu import require_cudf

            require_cudf()
        indexes = [self._open_index(ctx, p) for p in self.against]
        index_shards = [(ix.dir, name) for ix in indexes for name in ix.shards]
        k = len(index_shards)
        total_docs = sum(s.docs for s in shards) + sum(ix.docs for ix in indexes)
        hx = self.hashing
        parts = self.partitions or max(
            1, math.ceil(total_docs * hx.bands * _ENTRY_BYTES / (self.partition_mb << 20)))
        # Keys: <redis.key_prefix>:<stage tag>:<fingerprint tag>:<digest>. The stage tag names
        # (work_dir, stage id), so cleaning it also removes keys that a killed run with other
        # parameters (another fingerprint tag) left; short tags keep keys compact. The work_dir
        # is named by its path and its own random tag: two work_dirs at the same path on two
        # machines sharing one Redis must not clear each other's keys mid-run.
        stage_tag = hashlib.sha1(f"{os.path.abspath(ctx.work_dir)}\0{ctx.stage_id}\0"
                                 f"{ctx.work_dir_tag('redis')}".encode(), usedforsecurity=False)
        stage_prefix = f"{self.redis.key_prefix}:{stage_tag.hexdigest()[:12]}:"
        fp_tag = hashlib.sha1(ctx.fingerprint.encode(), usedforsecurity=False).hexdigest()[:8]
        prefix = f"{stage_prefix}{fp_tag}:"
        from curator.dedup.backends.redis_cluster import buckets_for

        cfg = FuzzyConfig(
            stage_dir=ctx.stage_dir, hashing=self.hashing, partitions=parts,
            score_field=self.score_field, verify=self.verify, threshold=self.threshold,
            redis=RedisTarget(nodes=tuple(self.redis.nodes), prefix=prefix,
                              stage_prefix=stage_prefix, batch=self.redis.batch,
                              ttl_s=self.redis.key_ttl_s, auth=self.redis_auth,
                              buckets=buckets_for(total_docs * hx.bands),
                              deadline_s=float(getattr(ctx.executor, "peer_timeout_s", 120.0))))
        if self.backend == "redis":
            self.redis_auth.password()  # fail before any work when the variable is not set
            for f in (self.redis_auth.tls_ca_file, self.redis_auth.tls_cert_file,
                      self.redis_auth.tls_key_file):
                if f and not os.path.isfile(f):
                    raise ConfigError(f"fuzzy_dedup: TLS file '{f}' not found")

        # 1. signatures and partitioned bucket entries (index shards are only re-partitioned)
        sig_res = ctx.map(functools.partial(_signature_task, cfg),
                          [(k + i, s.name, s.path) for i, s in enumerate(shards)],
                          phase="signatures", keys=[s.name for s in shards])
        idx_res = ctx.map(functools.partial(_index_split_task, cfg),
                          [(i, d, n) for i, (d, n) in enumerate(index_shards)],
                          phase="index_split", keys=[f"{i}-{n}" for i, (_, n) in
                                                     enumerate(index_shards)])
        all_res = idx_res + sig_res  # shard index order
        counts = [r.docs for r in all_res]
        ctx.count("documents", sum(r.docs for r in sig_res))

        # 2. candidate edges
        if self.backend == "redis":
            edge_files = claim_edges(ctx, cfg.redis, cfg.stage_dir,
                                     [r.sig_path for r in all_res], counts)
        else:
            expected = np.sum([r.parts for r in all_res], axis=0) if all_res else []
            edge_files = ctx.map(functools.partial(_bucket_task, cfg, self.backend),
                                 [(p, [r.parts_path for r in all_res], int(expected[p]))
                                  for p in range(parts)],
                                 phase="buckets", keys=[str(p) for p in range(parts)])
        ctx.count("candidate_pairs", sum(e.edges for e in edge_files))

        # 3. optional exact Jaccard verification
        if self.verify:
            shingle_paths = [r.shingles for r in all_res]
            edge_files = ctx.map(functools.partial(_verify_task, cfg, shingle_paths),
                                 edge_files, phase="verify",
                                 keys=[os.path.basename(e.path) for e in edge_files])
            ctx.count("verified_pairs", sum(e.edges for e in edge_files))

        # 4. components and keep rule -> removal lists per input shard
        job = ComponentsJob(edges=tuple(e.path for e in edge_files), counts=tuple(counts),
                            sig=tuple(r.sig_path for r in all_res), index_shards=k,
                            shards=tuple(s.name for s in shards))
        comp = ctx.map(functools.partial(_components_task, cfg, self.keep), [job],
                       phase="components", keys=["all"])[0]
        ctx.count("duplicates", comp.removed)
        ctx.count("duplicate_clusters", comp.clusters)

        # 5. write the shards without the removed documents
        out = ctx.write_shards(Remover(ctx.stage_dir, "fuzzy_duplicate"), shards)
        if self.save_index:
            dest = ctx.output_path(self.save_index)
            ctx.map(functools.partial(_save_index_task, cfg, dest),
                    [[(s.name, r.sig_path) for s, r in zip(shards, sig_res)]])
            ctx.artifacts["fuzzy_dedup_index"] = dest
        if comp.size_labels:  # (the core report cannot draw an empty histogram)
            ctx.artifacts["report_histograms"] = [{
                "title": "duplicate cluster sizes (documents per cluster)",
                "labels": [str(x) for x in comp.size_labels],
                "counts": list(comp.size_counts)}]
        ctx.artifacts["report_tables"] = [{
            "title": "fuzzy dedup", "columns": ["key", "value"],
            "rows": [["backend", self.backend], ["bands x rows", f"{hx.bands} x {hx.rows}"],
                     ["partitions", parts], ["candidate pairs", comp.edges],
                     ["clusters", comp.clusters], ["removed", comp.removed],
                     ["against indexes", len(indexes)]]}]
        return out

    def _open_index(self, ctx: GlobalContext, path: str) -> SavedIndex:
        d = ctx.output_path(path)
        try:
            meta = load_json(os.path.join(d, "index.json"))
        except (OSError, ValueError) as e:
            raise ConfigError(f"fuzzy_dedup.against: '{path}' is not a saved index "
                              f"(no readable index.json): {e}") from None
        want = self.hashing.index_meta()
        language = want.pop("language")
        if self.hashing.normalize == "fineweb" and self.hashing.shingle == "word":
            want["language"] = language
        got = dict(meta)
        if isinstance(got.get("normalize"), bool):  # indexes saved before the presets
            got["normalize"] = resolve(got["normalize"])
        diff = [f"{k}={got.get(k)!r} (here {v!r})" for k, v in want.items() if got.get(k) != v]
        if diff:
            raise ConfigError(f"fuzzy_dedup.against: index '{path}' was built with different "
                              f"settings: {', '.join(diff)}")
        return SavedIndex(dir=d, shards=tuple(meta["shards"]), docs=int(meta["docs"]))


# -- mapped tasks (module level: picklable for Dask and MPI) ---------------------------------


def _split_parts(cfg: FuzzyConfig, shard_idx: int, dig: np.ndarray, name: str,
                 valid: np.ndarray | None = None) -> tuple[str, tuple[int, ...]]:
    """Write one shard's bucket entries split by partition; returns the file and the entries
    per partition. Documents not ``valid`` (no whole shingle under ``fineweb``) get no
    entries."""
    flat, refs = bucket_entries(shard_idx, dig, valid)
    part = (flat % np.uint64(cfg.partitions)).astype(np.int64)
    order = np.argsort(part, kind="stable")
    counts = np.bincount(part, minlength=cfg.partitions)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    arrays: dict[str, np.ndarray] = {}
    fo, ro = flat[order], refs[order]
    for p in range(cfg.partitions):
        arrays[f"d{p}"] = fo[bounds[p]:bounds[p + 1]]
        arrays[f"r{p}"] = ro[bounds[p]:bounds[p + 1]]
    path = os.path.join(cfg.stage_dir, "parts", f"{shard_idx:06d}-{name}.npz")
    save_npz(path, **arrays)
    return path, tuple(counts.tolist())


def _signature_task(cfg: FuzzyConfig, item: tuple[int, str, str]) -> ShardSigs:
    shard_idx, name, path = item
    hx = cfg.hashing
    hasher = hx.hasher()
    ids: list[str] = []
    texts: list[str] = []
    scores: list[float] = []
    digs, lens, fulls = [], [], []
    shingle_h, shingle_off, base = [], [], 0

    def flush() -> None:
        nonlocal base
        if not texts:
            return
        sig, full = hasher.signatures(texts)
        digs.append(band_digests(sig, hx.bands, hx.rows))
        fulls.append(full)
        lens.append(np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts)))
        if cfg.verify:
            hv, off = shingle_hashes(texts, ngram=hx.ngram, kind=hx.shingle,  # type: ignore[arg-type]
                                     do_normalize=hx.normalize, lang=hx.language)
            ends = np.append(off[1:], hv.shape[0])
            for s, e in zip(off, ends):
                u = np.unique(hv[s:e]).astype(np.uint32)
                shingle_h.append(u)
                shingle_off.append(base)
                base += u.shape[0]
        texts.clear()

    for doc in read_shard(path):
        ids.append(doc.id)
        texts.append(doc.text)
        sc = meta_value(doc.meta, cfg.score_field)  # 'quality_bucket', 'signals.<rule>'
        scores.append(float(sc) if isinstance(sc, (int, float)) else float("-inf"))
        if len(texts) >= 4096:
            flush()
    flush()
    dig = np.concatenate(digs) if digs else np.empty((0, hx.bands), dtype=np.uint64)
    # like datatrove, the fineweb preset gives a document without a whole shingle no signature
    valid = (np.concatenate(fulls) if fulls else np.empty(0, dtype=bool)) \
        if hx.normalize == "fineweb" or hx.scheme == "datatrove" \
        else np.ones(dig.shape[0], dtype=bool)
    sig_path = os.path.join(cfg.stage_dir, "sig", f"{name}.npz")
    save_npz(sig_path, digests=dig, valid=valid,
             lengths=np.concatenate(lens) if lens else np.empty(0, dtype=np.int64),
             scores=np.asarray(scores, dtype=np.float64))
    save_json(_ids_path(sig_path), ids)
    parts_path, parts = _split_parts(cfg, shard_idx, dig, name, valid)
    sh = None
    if cfg.verify:
        sh = os.path.join(cfg.stage_dir, "shingles", f"{name}.npz")
        save_npz(sh, hashes=np.concatenate(shingle_h) if shingle_h else np.empty(0, np.uint32),
                 offsets=np.asarray(shingle_off + [base], dtype=np.int64))
    return ShardSigs(docs=len(ids), sig_path=sig_path, parts_path=parts_path, parts=parts,
                     shingles=sh)


def _index_split_task(cfg: FuzzyConfig, item: tuple[int, str, str]) -> ShardSigs:
    shard_idx, index_dir, name = item
    sig_path = os.path.join(index_dir, "sig", f"{name}.npz")
    z = load_npz(sig_path, "fuzzy_dedup index")
    dig = z["digests"]
    parts_path, parts = _split_parts(cfg, shard_idx, dig, f"index-{name}", z.get("valid"))
    return ShardSigs(docs=int(dig.shape[0]), sig_path=sig_path, parts_path=parts_path,
                     parts=parts)


def _bucket_task(cfg: FuzzyConfig, backend: str,
                 item: tuple[int, list[str], int]) -> EdgeFile:
    p, part_paths, expected = item
    ds, rs = [], []
    for path in part_paths:
        z = load_npz(path, "fuzzy_dedup buckets")
        ds.append(z[f"d{p}"])
        rs.append(z[f"r{p}"])
    d, r = gather_partition("fuzzy_dedup", p, expected, {"uint64:d": ds, "uint64:r": rs})
    if backend == "cudf":
        from curator.dedup.backends.gpu import star_edges_gpu

        u, v = star_edges_gpu(d, r)
    else:
        from curator.dedup.backends.embedded import star_edges

        u, v = star_edges(d, r)
    path = os.path.join(cfg.stage_dir, "edges", f"p{p:05d}.npz")
    save_npz(path, u=u, v=v)
    return EdgeFile(path=path, edges=int(u.shape[0]))


def _verify_task(cfg: FuzzyConfig, shingle_paths: list[str | None],
                 item: EdgeFile) -> EdgeFile:
    """Keep only candidate pairs whose exact Jaccard over shingle sets reaches the threshold
    (pairs that involve a document of an ``against`` index are kept unverified)."""
    z = load_npz(item.path, "fuzzy_dedup verify")
    u, v = z["u"], z["v"]
    cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def shingles(ref: int) -> np.ndarray | None:
        s = ref >> 32
        path = shingle_paths[s]
        if path is None:
            return None
        if s not in cache:
            a = load_npz(path, "fuzzy_dedup verify")
            cache[s] = (a["hashes"], a["offsets"])
        h, off = cache[s]
        row = ref & 0xFFFFFFFF
        return h[off[row]:off[row + 1]]

    keep = np.ones(u.shape[0], dtype=bool)
    for i, (a, b) in enumerate(zip(u.tolist(), v.tolist())):
        sa, sb = shingles(a), shingles(b)
        if sa is None or sb is None:
            continue
        inter = np.intersect1d(sa, sb, assume_unique=True).shape[0]
        union = sa.shape[0] + sb.shape[0] - inter
        keep[i] = union > 0 and inter / union >= cfg.threshold
    path = item.path[:-4] + ".verified.npz"
    save_npz(path, u=u[keep], v=v[keep])
    return EdgeFile(path=path, edges=int(keep.sum()))


def _components_task(cfg: FuzzyConfig, keep_rule: str, item: ComponentsJob) -> Components:
    from curator.dedup.components import choose_keepers, connected_components

    us, vs = [], []
    for path in item.edges:
        z = load_npz(path, "fuzzy_dedup components")
        us.append(z["u"])
        vs.append(z["v"])
    u = np.concatenate(us) if us else np.empty(0, np.uint64)
    v = np.concatenate(vs) if vs else np.empty(0, np.uint64)
    counts = np.asarray(item.counts, dtype=np.int64)
    k, names = item.index_shards, item.shards
    offsets = np.concatenate(([0], np.cumsum(counts)))
    removed_total = clusters = 0
    per_shard: dict[int, tuple[list[int], list[str]]] = {}
    size_hist: dict[int, int] = {}
    if u.shape[0]:
        dense_u = offsets[ref_shard(u)] + ref_row(u)
        dense_v = offsets[ref_shard(v)] + ref_row(v)
        nodes, labels = connected_components(dense_u, dense_v)
        shard_of = np.searchsorted(offsets, nodes, side="right") - 1
        row_of = nodes - offsets[shard_of]
        lengths = np.zeros(nodes.shape[0], dtype=np.int64)
        scores = np.zeros(nodes.shape[0], dtype=np.float64)
        for s in np.unique(shard_of).tolist():
            if s < k:
                continue  # index documents always win; their length/score do not matter
            z = load_npz(item.sig[s], "fuzzy_dedup components")
            m = shard_of == s
            lengths[m] = z["lengths"][row_of[m]]
            scores[m] = z["scores"][row_of[m]]
        from_corpus = (shard_of >= k).astype(np.int64)
        if keep_rule == "longest":
            keys = (from_corpus, -lengths, nodes)
        elif keep_rule == "score":
            keys = (from_corpus, -scores, nodes)  # type: ignore[assignment]
        else:
            keys = (from_corpus, nodes)  # type: ignore[assignment]
        keepers = choose_keepers(labels, *keys)
        _, csize = np.unique(labels, return_counts=True)
        clusters = int(csize.shape[0])
        for sz, c in zip(*np.unique(csize, return_counts=True)):
            size_hist[int(sz)] = int(c)
        gone = np.flatnonzero(keepers != np.arange(nodes.shape[0]))
        gone = gone[shard_of[gone] >= k]  # index documents are never removed
        kept = keepers[gone]
        dup_ids = lookup_ids(shard_of[kept].tolist(), row_of[kept].tolist(),
                             lambda s: _ids_path(item.sig[s]))
        for g, dup in zip(gone.tolist(), dup_ids):
            rows, dups = per_shard.setdefault(int(shard_of[g]), ([], []))
            rows.append(int(row_of[g]))
            dups.append(dup)
        removed_total = int(gone.shape[0])
    for i, name in enumerate(names):
        rows, dups = per_shard.get(k + i, ([], []))
        write_removals(cfg.stage_dir, name, rows, dups)
    labels_sorted = sorted(size_hist)
    return Components(removed=removed_total, clusters=clusters, edges=int(u.shape[0]),
                      size_labels=tuple(labels_sorted),
                      size_counts=tuple(size_hist[x] for x in labels_sorted))


def _save_index_task(cfg: FuzzyConfig, dest: str, shards: list[tuple[str, str]]) -> None:
    """Copy the corpus's band digests and ids to ``dest`` (a reusable index)."""
    os.makedirs(os.path.join(dest, "sig"), exist_ok=True)
    docs = 0
    for name, sig_path in shards:
        z = load_npz(sig_path, "fuzzy_dedup save_index")
        extra = {"valid": z["valid"]} if "valid" in z else {}
        save_npz(os.path.join(dest, "sig", f"{name}.npz"), digests=z["digests"], **extra)
        with open(_ids_path(sig_path), "rb") as src, atomic_open(
                os.path.join(dest, "sig", f"{name}.ids.json"), "wb") as out:
            shutil.copyfileobj(src, out)
        docs += int(z["digests"].shape[0])
    save_json(os.path.join(dest, "index.json"), {
        **cfg.hashing.index_meta(), "shards": [n for n, _ in shards], "docs": docs})
