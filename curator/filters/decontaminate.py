"""Decontamination: remove evaluation-set text from training data (GPT-3 / NeMo Curator style).

Phases (each resumable):

1. ``eval_ngrams``: per task, the n-grams (13 words by default) of every evaluation text are
   hashed (xxh64 of words, combined with a polynomial rolling hash) into a sorted ``uint64``
   array saved atomically under the stage's artifact folder. Evaluation texts shorter than
   ``n`` words but at least ``min_ngram_words`` long count as one whole-text n-gram.
2. ``count``: per shard, how many documents contain each matched n-gram. N-grams found in more
   than ``max_matches`` documents are too common to indicate contamination and are ignored.
3. ``write``: each contaminated document either loses a window of ``cut_chars`` characters on
   each side of every match and is split there (fragments shorter than
   ``min_fragment_chars`` are dropped; a document split more than ``max_splits`` times is
   removed), or is removed outright (``mode: drop``).

Matches are reported per task (counters, a report table, the ``decontamination`` artifact),
and a run that found nothing says so.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from operator import methodcaller
from typing import Annotated, Literal

import numpy as np
import orjson
import xxhash
from pydantic import Field

from curator.base.document import Document
from curator.base.errors import ConfigError, InputError
from curator.core.context import GlobalContext, ShardContext
from curator.core.params import NonNegInt, PositiveInt, StageParams
from curator.core.stage import FilePath, GlobalStage, Shard
from curator.storage.atomic import atomic_open, open_compressed_read
from curator.storage.encoding import utf8_stream
from curator.storage.paths import expand_paths
from curator.storage.shards import read_shard
from curator.text.words import NO_SPACE_SCRIPTS

_TOKEN = re.compile(rf"[{NO_SPACE_SCRIPTS}]|[^\W_{NO_SPACE_SCRIPTS}]+")
_MULT = np.uint64(0x100000001B3)  # FNV prime: odd, mixes well under uint64 wrap-around
_ENCODE = methodcaller("encode", "utf-8", "surrogatepass")  # lone surrogates must not crash
_ARRAYS: dict[str, dict[int, np.ndarray]] = {}
_INDEXES: dict[tuple, tuple[list[str], dict[int, tuple[np.ndarray, np.ndarray]]]] = {}


def normalized_words(text: str) -> list[str]:
    """Lowercased letter/digit runs (CJK characters one by one): punctuation and spacing do
    not hide a match."""
    return _TOKEN.findall(text.lower())


def word_hashes(words: list[str]) -> np.ndarray:
    hashes = map(xxhash.xxh64_intdigest, map(_ENCODE, words))
    return np.fromiter(hashes, dtype=np.uint64, count=len(words))


def ngram_hashes(wh: np.ndarray, n: int) -> np.ndarray:
    """Rolling hash of every run of ``n`` consecutive word hashes (vectorised over positions)."""
    m = len(wh) - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    h = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):
            h = h * _MULT + wh[j:j + m]
    return h


def read_eval_texts(paths: list[str], fields: list[str] | None, task: str) -> Iterator[str]:
    """Evaluation texts of one task: JSONL records (the given fields, or every string / list
    of strings) or plain text files (one text per non-empty line)."""
    for path in paths:
        is_json = ".jsonl" in os.path.basename(path) or ".json" in os.path.basename(path)
        try:
            with open_compressed_read(path) as raw_fh:
                fh, _ = utf8_stream(raw_fh)  # UTF-16/32 task files (by their BOM) too
                for lineno, raw in enumerate(fh, 1):
                    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                        raw = raw[3:]
                    if not raw.strip():
                        continue
                    if not is_json:
                        yield raw.decode("utf-8", "replace").strip()
                        continue
                    try:
                        rec = orjson.loads(raw)
                    except orjson.JSONDecodeError as e:
                        raise InputError(f"decontaminate: task '{task}': {path}:{lineno}: "
                                         f"invalid JSON: {e}") from None
                    if not isinstance(rec, dict):
                        continue
                    for k, v in rec.items():
                        if fields is not None and k not in fields:
                            continue
                        if isinstance(v, str):
                            yield v
                        elif isinstance(v, list):
                            yield from (x for x in v if isinstance(x, str))
        except FileNotFoundError:
            raise InputError(f"decontaminate: task '{task}': file not found: {path}") from None
        except UnicodeDecodeError as e:
            raise InputError(f"decontaminate: task '{task}': {path}: text not valid in its "
                             f"encoding: {e}") from None


def verify_file(path: str, size: int, stage_id: str) -> None:
    """Check an intermediate file before the next phase uses it."""
    try:
        ok = os.path.getsize(path) == size
    except OSError:
        ok = False
    if not ok:
        raise InputError(f"stage '{stage_id}': intermediate file '{path}' is missing or has "
                         "changed since it was written; delete the stage folder to rebuild it")


@dataclass(frozen=True, kw_only=True)
class TaskNgrams:
    """An ``eval_ngrams`` phase result: one evaluation task's n-gram file (``bytes`` long, so
    a resumed run can tell it is still complete), its texts and distinct n-grams."""

    task: str
    path: str
    texts: int
    bytes: int
    ngrams: int


@dataclass(frozen=True, kw_only=True)
class ShardMatches:
    """A ``count`` phase result: per matched n-gram hash, how many of one shard's documents
    contain it."""

    docs: dict[int, int]


class _BuildTask:
    """Phase 1 worker: hash one task's evaluation n-grams into ``<artifact_dir>/<task>.npz``."""

    def __init__(self, n: int, min_words: int, fields: list[str] | None, out_dir: str) -> None:
        self.n, self.min_words, self.fields, self.out_dir = n, min_words, fields, out_dir

    def __call__(self, item: tuple[str, list[str]]) -> TaskNgrams:
        task, paths = item
        by_len: dict[int, list[np.ndarray]] = {}
        texts = 0
        for text in read_eval_texts(paths, self.fields, task):
            words = normalized_words(text)
            if len(words) < self.min_words:
                continue
            texts += 1
            k = min(len(words), self.n)
            by_len.setdefault(k, []).append(ngram_hashes(word_hashes(words), k))
        arrays = {f"len{k}": np.unique(np.concatenate(v)) for k, v in by_len.items()}
        path = os.path.join(self.out_dir, f"{task}.npz")
        with atomic_open(path, "wb") as f:
            np.savez(f, **arrays)
        return TaskNgrams(task=task, path=path, texts=texts, bytes=os.path.getsize(path),
                          ngrams=int(sum(a.size for a in arrays.values())))


def _load_task_arrays(path: str) -> dict[int, np.ndarray]:
    got = _ARRAYS.get(path)
    if got is None:
        try:
            with np.load(path, allow_pickle=False) as z:
                got = {int(k[3:]): z[k] for k in z.files}
        except (OSError, ValueError) as e:
            raise InputError(f"decontaminate: n-gram file '{path}' is unreadable ({e}); "
                             "delete the stage folder to rebuild it") from None
        _ARRAYS[path] = got
    return got


class Matcher:
    """Finds evaluation n-grams in documents; picklable (arrays load lazily per process).

    All tasks' n-grams of one length are merged into one sorted array (with the owning task
    of each entry), so a document costs one binary search per n-gram length, whatever the
    number of tasks.
    """

    def __init__(self, task_paths: dict[str, str], ignore: frozenset[int] = frozenset()) -> None:
        self.task_paths = task_paths
        self.ignore = ignore

    def _index(self) -> tuple[list[str], dict[int, tuple[np.ndarray, np.ndarray]]]:
        key = tuple(sorted(self.task_paths.items()))
        got = _INDEXES.get(key)
        if got is None:
            names = [t for t, _ in key]
            parts: dict[int, list[tuple[np.ndarray, int]]] = {}
            for ti, (_, path) in enumerate(key):
                for k, arr in _load_task_arrays(path).items():
                    if arr.size:
                        parts.setdefault(k, []).append((arr, ti))
            index = {}
            for k, lst in parts.items():
                hashes = np.concatenate([a for a, _ in lst])
                owners = np.concatenate([np.full(a.size, t, dtype=np.int32) for a, t in lst])
                order = np.argsort(hashes, kind="stable")
                index[k] = (hashes[order], owners[order])
            got = _INDEXES[key] = (names, index)
        return got

    def matches(self, text: str) -> list[tuple[str, int, int, int]]:
        """``(task, first word index, n-gram length, hash)`` of every match in ``text``."""
        names, index = self._index()
        words = normalized_words(text)
        if not words or not index:
            return []
        wh = word_hashes(words)
        out: list[tuple[str, int, int, int]] = []
        for k, (keys, owners) in index.items():
            if len(words) < k:
                continue
            h = ngram_hashes(wh, k)
            lo = np.searchsorted(keys, h)
            found = keys[np.minimum(lo, keys.size - 1)] == h
            if not found.any():
                continue
            for i in np.flatnonzero(found).tolist():
                hv = int(h[i])
                if hv in self.ignore:
                    continue
                j = int(lo[i])
                while j < keys.size and keys[j] == hv:
                    out.append((names[owners[j]], i, k, hv))
                    j += 1
        return out


class _CountTask:
    """Phase 2 worker: documents per matched n-gram in one shard."""

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher

    def __call__(self, shard: Shard) -> ShardMatches:
        docs: Counter[int] = Counter()
        for doc in read_shard(shard.path):
            hits = self.matcher.matches(doc.text)
            if hits:
                docs.update({h for _, _, _, h in hits})
        return ShardMatches(docs=dict(docs))


def cut_windows(text: str, hits: list[tuple[int, int]], cut_chars: int
                ) -> tuple[list[str], int]:
    """Remove ``cut_chars`` around each matched word span; (fragments, number of cuts)."""
    spans = [m.span() for m in _TOKEN.finditer(text.lower())]
    windows = sorted((max(0, spans[i][0] - cut_chars),
                      spans[min(i + k, len(spans)) - 1][1] + cut_chars) for i, k in hits)
    merged: list[list[int]] = []
    for a, b in windows:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    frags, prev = [], 0
    for a, b in merged:
        frags.append(text[prev:a])
        prev = b
    frags.append(text[prev:])
    return [f.strip() for f in frags], len(merged)


class _Process:
    """Phase 3: cut or drop contaminated documents (runs inside ``ctx.write_shards``)."""

    def __init__(self, matcher: Matcher, mode: str, cut_chars: int, min_fragment_chars: int,
                 max_splits: int, split_documents: bool) -> None:
        self.matcher, self.mode, self.cut_chars = matcher, mode, cut_chars
        self.min_fragment_chars, self.max_splits = min_fragment_chars, max_splits
        self.split_documents = split_documents

    def __call__(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        for doc in docs:
            hits = self.matcher.matches(doc.text)
            if not hits:
                yield doc
                continue
            tasks = Counter(t for t, _, _, _ in hits)
            for t, c in tasks.items():
                ctx.count(f"decontam:{t}:docs")
                ctx.count(f"decontam:{t}:ngrams", c)
            info = {"tasks": sorted(tasks), "ngrams": len(hits)}
            if self.mode == "drop":
                ctx.reject(doc, "decontaminate:contaminated", **info)
                continue
            frags, cuts = cut_windows(doc.text, sorted({(i, k) for _, i, k, _ in hits}),
                                      self.cut_chars)
            if cuts > self.max_splits:
                ctx.reject(doc, "decontaminate:too_many_splits", **info)
                continue
            kept = [f for f in frags if len(f) >= self.min_fragment_chars]
            if not kept:
                ctx.reject(doc, "decontaminate:too_short", **info)
                continue
            ctx.count("decontam:docs_cut")
            meta = {**doc.meta, "decontaminated": {**info, "cuts": cuts}}
            if self.split_documents:
                for j, frag in enumerate(kept):
                    yield Document(f"{doc.id}#{j}", frag, {**meta, "parent_id": doc.id})
            else:
                yield Document(doc.id, "\n\n".join(kept), meta)


#: A task's name (a key of ``tasks``; used in counters and file names).
TaskName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]


class Decontaminate(GlobalStage):
    """Remove or cut out n-gram overlaps (13-grams) with evaluation sets given as local files;
    reports matches per task."""

    name = "decontaminate"

    class Params(StageParams):
        tasks: Annotated[dict[TaskName, FilePath | list[FilePath]], Field(min_length=1)]
        """`{task name: path, glob or list}`; JSONL (`.jsonl`, `.jsonl.gz`, `.jsonl.zst`) or text
        files (one evaluation text per non-empty line)."""
        fields: list[str] | None = None
        """JSONL fields to use (`[question]`); `null`: every string (or list of strings) field."""
        n: PositiveInt = 13
        """N-gram size in words."""
        min_ngram_words: PositiveInt = 8
        """Evaluation texts with fewer words are ignored (at most ``n``)."""
        max_matches: NonNegInt = 10
        """n-grams found in more documents than this are ignored (too common)."""
        mode: Literal["cut", "drop"] = "cut"
        """``cut`` the matches out of documents, or ``drop`` contaminated documents."""
        cut_chars: NonNegInt = 200
        """Characters removed on each side of a match."""
        min_fragment_chars: NonNegInt = 200
        """Fragments left by a cut shorter than this (characters) are dropped."""
        max_splits: NonNegInt = 10
        """A document split more often is removed."""
        split_documents: bool = False
        """Emit each fragment as its own document ``<id>#<k>`` (``meta.parent_id``)."""

    def setup(self) -> None:
        self.tasks = {k: [v] if isinstance(v, str) else list(v) for k, v in self.tasks.items()}
        for t, paths in self.tasks.items():
            for p in paths:  # fail at validation, not after the upstream stages ran
                local = "://" not in p and not any(ch in p for ch in "*?[")
                if local and not os.path.exists(p):
                    raise ConfigError(f"decontaminate.tasks.{t}: file not found: {p}")
        self.min_ngram_words = min(self.min_ngram_words, self.n)

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        items = [(t, expand_paths(p, what=f"decontaminate.tasks.{t}"))
                 for t, p in self.tasks.items()]
        built = ctx.map(_BuildTask(self.n, self.min_ngram_words, self.fields, ctx.artifact_dir),
                        items, phase="eval_ngrams", keys=list(self.tasks))
        for b in built:  # a resumed phase must still have its file, complete
            verify_file(b.path, b.bytes, ctx.stage_id)
        task_paths = {b.task: b.path for b in built}
        counts: Counter[int] = Counter()
        for c in ctx.map(_CountTask(Matcher(task_paths)), shards, phase="count",
                         keys=[s.name for s in shards]):
            counts.update(c.docs)
        common = frozenset(h for h, c in counts.items() if c > self.max_matches)
        matcher = Matcher(task_paths, common)
        out = ctx.write_shards(_Process(matcher, self.mode, self.cut_chars,
                                        self.min_fragment_chars, self.max_splits,
                                        self.split_documents), shards)

        totals: Counter[str] = Counter()
        rejected: Counter[str] = Counter()
        for st in ctx.shard_stats:
            totals.update(st.counters)
            rejected.update(st.rejected)
        summary = {}
        rows = []
        for b in built:
            t = b.task
            row = {"eval_texts": b.texts, "eval_ngrams": b.ngrams,
                   "docs_matched": totals.get(f"decontam:{t}:docs", 0),
                   "ngram_matches": totals.get(f"decontam:{t}:ngrams", 0)}
            summary[t] = row
            rows.append([t, row["eval_texts"], row["eval_ngrams"], row["docs_matched"],
                         row["ngram_matches"]])
            ctx.count(f"decontam:{t}:eval_ngrams", b.ngrams)
        ctx.artifacts["decontamination"] = {
            "tasks": summary, "ignored_common_ngrams": len(common),
            "docs_cut": totals.get("decontam:docs_cut", 0),
            "docs_removed": sum(v for k, v in rejected.items() if k.startswith("decontaminate:")),
        }
        nothing = not any(r["docs_matched"] for r in summary.values())
        ctx.artifacts["report_tables"] = [{
            "title": "Decontamination: matches per task" + (
                " (no contamination found)" if nothing else ""),
            "columns": ["task", "eval texts", f"eval {self.n}-grams", "documents matched",
                        "n-gram matches"],
            "rows": rows,
        }]
        if ctx.is_root:
            if nothing:
                print(f"[{ctx.stage_id}] decontamination: no {self.n}-gram of "
                      f"{', '.join(summary)} found in the data; nothing removed",
                      file=sys.stderr, flush=True)
            else:
                print(f"[{ctx.stage_id}] decontamination: "
                      + "; ".join(f"{t}: {r['docs_matched']} docs" for t, r in summary.items())
                      + f" ({len(common)} too-common n-grams ignored)",
                      file=sys.stderr, flush=True)
        return out
