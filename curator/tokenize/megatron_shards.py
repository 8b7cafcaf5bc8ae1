"""``megatron_shards``: tokenize documents into the mmap ``.bin/.idx`` files that Megatron-Core
reads, with token statistics for the run report.

Two phases:

1. ``tokenize`` (one task per input shard, in parallel, resumable per shard): documents are
   grouped by ``meta["source"]`` (or all together) and encoded in batches; each group becomes
   one part ``stages/<id>/parts/<shard>/<group>.bin/.idx``, written atomically and verified.
2. ``merge`` (one task per output prefix): the parts of a group are concatenated in shard
   order into ``<output_dir>/<group>_text_document.bin/.idx``, or cut at document boundaries
   into prefixes of about ``prefix_size_mb`` each (``<group>-00000_text_document``...).

Documents keep their order and their ids: ``<prefix>.ids`` lists the id of every document in
the prefix, one per line. A document with no tokens is kept as an empty document (zero
sequences), as Megatron's ``preprocess_data.py`` does, so document counts always match.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import numpy as np

from curator.base.document import Document, meta_value
from curator.base.errors import ConfigError
from curator.core import progress
from curator.core.context import GlobalContext, StageContext
from curator.core.params import NonNegFloat, PositiveFloat, PositiveInt, Ratio, StageParams
from curator.core.stage import DirPath, FilePath, GlobalStage, OutputDir, Shard
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard
from curator.tokenize import megatron
from curator.tokenize.hf_folder import CONFIG, SPECIAL_MAP, folder_files
from curator.tokenize.load import Encoder, load_encoder, spec_from_params
from curator.tokenize.shuffle import shuffle_groups

#: Token-length histogram: bin i holds documents with 2**(i-1) <= tokens < 2**i (bin 0: none).
TOKEN_BINS = 32
#: Between a source and its quality bucket in a group name (``web@q3``): see ``bucket_field``.
BUCKET_SEP = "@q"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(s: str) -> str:
    """A file-name-safe form of a source name, at most 100 characters (source names come from
    the data; a longer one failed the stage with "File name too long")."""
    return _SAFE.sub("_", s).strip("._")[:100] or "source"


def part_name(group: str) -> str:
    """The file name of a group's part in a shard: :func:`safe_name` plus a digest of the name,
    so groups whose names differ only in unsafe characters (``a/b``, ``a_b``, ``a b``) get
    parts of their own, not one shared prefix."""
    digest = hashlib.sha1(group.encode("utf-8", "surrogatepass"), usedforsecurity=False)
    return f"{safe_name(group)}-{digest.hexdigest()[:10]}"


def token_bins(n: np.ndarray) -> np.ndarray:
    """Histogram bin of each token count (vectorised ``int.bit_length``, capped)."""
    n = np.asarray(n, dtype=np.int64)
    bits = np.zeros(len(n), dtype=np.int64)
    pos = n > 0
    bits[pos] = np.floor(np.log2(n[pos])).astype(np.int64) + 1
    return np.minimum(bits, TOKEN_BINS - 1)


def bin_labels(nbins: int) -> list[str]:
    out = ["0"]
    for i in range(1, nbins):
        lo, hi = 1 << (i - 1), (1 << i) - 1
        out.append(str(lo) if lo == hi else f"{lo}-{hi}")
    return out


@dataclass
class GroupStats:
    """A group's (source's) numbers in one part (one input shard), or, after :meth:`merge`,
    over all its parts. The counters are in the order the report lists them."""

    part: str = ""  # the part's prefix; "" for a merged total
    documents: int = 0
    empty_documents: int = 0
    repaired_documents: int = 0  # invalid Unicode replaced before tokenizing
    sequences: int = 0
    sentences: int = 0  # in the sampled documents
    sampled_documents: int = 0
    sampled_tokens: int = 0
    tokens: int = 0
    hist: list[int] = field(default_factory=lambda: [0] * TOKEN_BINS)

    def merge(self, other: GroupStats) -> GroupStats:
        """The sum of two groups' numbers (a total: no ``part``)."""
        out = GroupStats(hist=[a + b for a, b in zip(self.hist, other.hist, strict=True)])
        for f in _COUNTERS:
            setattr(out, f, getattr(self, f) + getattr(other, f))
        return out

    def summary(self) -> dict[str, Any]:
        """The counters and their averages (the ``corpus_stats`` artifact of one group)."""
        out: dict[str, Any] = {f: getattr(self, f) for f in _COUNTERS}
        sents, sampled = self.sentences, self.sampled_documents
        out["avg_tokens_per_document"] = round(self.tokens / max(self.documents, 1), 2)
        out["avg_tokens_per_sentence"] = round(self.sampled_tokens / sents, 2) if sents else None
        out["avg_sentences_per_document"] = round(sents / sampled, 2) if sampled else None
        return out


_COUNTERS = [f.name for f in fields(GroupStats) if f.name not in ("part", "hist")]


def encode_documents(enc: Encoder, texts: list[str], *, split_sentences: bool, lang: str,
                     append_eod: bool
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Tokenize a batch the way Megatron's ``preprocess_data.py`` does.

    Returns ``(tokens, seq_lengths, seqs_per_doc, tokens_per_doc, sentences)`` (sentences:
    in split mode only, else 0): empty
    sentences are dropped, and with ``append_eod`` the EOD id ends the last sequence of every
    non-empty document. The only per-document Python is building the text list for the
    tokenizer; the rest is numpy over the whole batch.
    """
    from curator.text import split_sentences as splitter

    n_sent = 0
    if split_sentences:
        pieces = [splitter(t, lang) for t in texts]
        per_doc = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        flat = list(itertools.chain.from_iterable(pieces))
        n_sent = len(flat)
    else:
        per_doc = np.ones(len(texts), dtype=np.int64)
        flat = texts
    if flat:
        tokens, lens = enc.encode_flat(flat)
    else:
        tokens, lens = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    # drop empty sequences, recount sequences per document
    doc_of_seq = np.repeat(np.arange(len(texts)), per_doc)
    keep = lens > 0
    lens, doc_of_seq = lens[keep], doc_of_seq[keep]
    seqs_per_doc = np.bincount(doc_of_seq, minlength=len(texts)).astype(np.int64)
    tok_per_doc = np.bincount(doc_of_seq, weights=lens, minlength=len(texts)).astype(np.int64)
    if append_eod and len(lens):
        if enc.eod_id is None:
            raise ConfigError("append_eod is on but the tokenizer has no EOD token; set "
                              "eod_token to one of its tokens or append_eod: false")
        last_seq = np.cumsum(seqs_per_doc)[seqs_per_doc > 0] - 1
        ends = np.cumsum(lens)[last_seq]  # token position right after each doc's last seq
        tokens = np.insert(tokens, ends, enc.eod_id)
        lens[last_seq] += 1
        tok_per_doc[seqs_per_doc > 0] += 1
    return tokens, lens, seqs_per_doc, tok_per_doc, n_sent


class _Aborted(Exception):
    """Raised inside a writer's open files to discard them (see :meth:`PartWriter.abort`)."""


class PartWriter:
    """Tokenize batches of documents of one group into one ``.bin/.idx/.ids`` part, keeping
    the group's statistics. Used by the ``tokenize`` phase (and by ``bench/``)."""

    def __init__(self, prefix: str, enc: Encoder, *, split_sentences: bool = False,
                 lang: str = "en", append_eod: bool = True, sentence_stats: float = 0.1) -> None:
        self.enc = enc
        self.opts = {"split_sentences": split_sentences, "lang": lang, "append_eod": append_eod}
        # non-split mode: count the sentences of every k-th document only (splitting them all
        # costs about a fifth of the throughput); split mode counts them all anyway
        self.every = 1 if split_sentences else (
            max(1, round(1 / sentence_stats)) if sentence_stats > 0 else 0)
        self.writer = megatron.IndexedWriter(prefix, megatron.token_dtype(enc.vocab_size))
        self._files = contextlib.ExitStack()  # the .ids file stays open until close/abort
        self._ids = self._files.enter_context(atomic_open(prefix + ".ids", "wb"))
        self.stats = GroupStats(part=prefix)

    def add(self, docs: list[Document]) -> None:
        texts = [d.text for d in docs]
        try:
            toks, lens, per_doc, per_doc_tok, n_sent = encode_documents(
                self.enc, texts, **self.opts)
        except (TypeError, UnicodeError, ValueError):
            # Text that is not valid Unicode (lone surrogates from a lenient decoder) cannot
            # be tokenized: replace the bad characters with U+FFFD, keep the document, count it.
            fixed = [_valid_unicode(t) for t in texts]
            self.stats.repaired_documents += sum(a is not b for a, b in zip(texts, fixed))
            toks, lens, per_doc, per_doc_tok, n_sent = encode_documents(
                self.enc, fixed, **self.opts)
        self.writer.add_batch(toks, lens, per_doc)
        self._ids.write("".join(f"{_one_line(d.id)}\n" for d in docs).encode())
        gs = self.stats
        gs.empty_documents += int((per_doc == 0).sum())
        gs.sequences += len(lens)
        if self.opts["split_sentences"]:
            gs.sentences += n_sent
            gs.sampled_documents += len(docs)
            gs.sampled_tokens += len(toks)
        elif self.every:
            from curator.text import split_sentences as splitter

            first = (-gs.documents) % self.every
            sel = range(first, len(docs), self.every)
            gs.sentences += sum(len(splitter(texts[i], self.opts["lang"])) for i in sel)
            gs.sampled_documents += len(sel)
            gs.sampled_tokens += int(per_doc_tok[first::self.every].sum())
        gs.documents += len(docs)
        gs.tokens += len(toks)
        for i, c in enumerate(np.bincount(token_bins(per_doc_tok), minlength=TOKEN_BINS)):
            gs.hist[i] += int(c)

    def close(self) -> GroupStats:
        """Publish the part (atomically), verify it and return its statistics."""
        self.writer.close()
        self._files.close()  # publishes the .ids file
        megatron.verify(self.stats.part)
        return self.stats

    def abort(self) -> None:
        self.writer.abort()
        with contextlib.suppress(_Aborted), self._files:
            raise _Aborted  # leaving the files with an error discards their temporaries


@dataclass(frozen=True, kw_only=True)
class TokenizedShard:
    """A ``tokenize`` phase result: one input shard's numbers per group (each group's part
    is ``GroupStats.part``)."""

    shard: str
    groups: tuple[tuple[str, GroupStats], ...]


@dataclass(frozen=True, kw_only=True)
class MergeJob:
    """One ``merge`` task: the output ``prefix`` of ``group``, made of ``slices`` of parts
    (``(part prefix, first document, end document)``)."""

    group: str
    prefix: str
    slices: tuple[tuple[str, int, int], ...]


@dataclass(frozen=True, kw_only=True)
class MergedPrefix:
    """A ``merge`` phase result: the prefix written, its documents, sequences and tokens."""

    prefix: str
    documents: int
    sequences: int
    tokens: int


class _TokenizeShard:
    """Phase 1 task: one input shard -> one part per group. Picklable (plain data only)."""

    def __init__(self, stage: MegatronShards, spec: dict[str, Any], parts_dir: str) -> None:
        self.stage = stage
        self.spec = spec
        self.parts_dir = parts_dir

    def __call__(self, shard: tuple[str, str]) -> TokenizedShard:
        name, path = shard
        st = self.stage
        enc = load_encoder(self.spec, st.eod_token)
        writers: dict[str, PartWriter] = {}
        buffers: dict[str, list[Document]] = {}

        def flush(group: str) -> None:
            docs = buffers.pop(group, [])
            if not docs:
                return
            if group not in writers:
                writers[group] = PartWriter(
                    os.path.join(self.parts_dir, name, part_name(group)), enc,
                    split_sentences=st.split_sentences, lang=st.lang, append_eod=st.append_eod,
                    sentence_stats=st.sentence_stats)
            writers[group].add(docs)

        try:
            for doc in read_shard(path):
                group = str(doc.meta.get("source", "unknown")) if st.group_by == "source" \
                    else "all"
                if st.bucket_field:  # one group per (source, quality bucket), for blend
                    b = meta_value(doc.meta, st.bucket_field)
                    group += f"{BUCKET_SEP}{b if isinstance(b, int) else 'none'}"
                buf = buffers.setdefault(group, [])
                buf.append(doc)
                if len(buf) >= st.batch_size:
                    flush(group)
            for group in list(buffers):
                flush(group)
        except BaseException:
            for w in writers.values():
                w.abort()
            raise
        return TokenizedShard(shard=name, groups=tuple((g, w.close()) for g, w in writers.items()))


def _valid_unicode(s: str) -> str:
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _one_line(s: str) -> str:
    return s.replace("\n", " ").replace("\r", " ")


class _MergePrefix:
    """Phase 2 task: one output prefix from slices of parts."""

    def __call__(self, job: MergeJob) -> MergedPrefix:
        slices = [megatron.Slice(*s) for s in job.slices]
        out = job.prefix
        os.makedirs(os.path.dirname(out), exist_ok=True)
        res = megatron.merge(slices, out)
        progress.step(sum(s.doc_hi - s.doc_lo for s in slices))  # documents merged
        with atomic_open(out + ".ids", "wb") as f:
            for s in slices:
                with open(s.prefix + ".ids", "rb") as src:
                    for line in itertools.islice(src, s.doc_lo, s.doc_hi):
                        f.write(line)
        return MergedPrefix(prefix=out, **res)


class MegatronShards(GlobalStage):
    """Tokenize documents into Megatron-Core .bin/.idx datasets, one prefix per source."""

    name = "megatron_shards"

    class Params(StageParams):
        output_dir: OutputDir = "megatron"
        """Folder for `<prefix>_text_document.bin/.idx/.ids` (relative: under `work_dir`)."""
        tokenizer: DirPath | None = None
        """A local `tokenizer.json`, a SentencePiece `.model`, or a folder holding `tokenizer.json`,
        `tokenizer.model` or `vocab.json` + `merges.txt`."""
        vocab_file: FilePath | None = None
        """GPT-2 style byte-level BPE files, encoded as Megatron's `GPT2BPETokenizer` does: it knows
        no special tokens, so a document's literal `<|endoftext|>` is text, and the EOD is
        `<|endoftext|>`."""
        merges_file: FilePath | None = None
        """GPT-2 style byte-level BPE files, encoded as Megatron's `GPT2BPETokenizer` does: it knows
        no special tokens, so a document's literal `<|endoftext|>` is text, and the EOD is
        `<|endoftext|>`."""
        eod_token: str | None = None
        """EOD token; default: the artifact's `eod_id`, else what the tokenizer declares: the
        `eos_token` of the `tokenizer_config.json` / `special_tokens_map.json` beside a
        `tokenizer.json` (what `AutoTokenizer` reports), `<|endoftext|>` for `vocab_file` +
        `merges_file`, the SentencePiece `eos_id`. None of these with `append_eod` on: one-line
        error naming `megatron_shards.eod_token` (no guessing by token names)."""
        append_eod: bool = True
        """Add the EOD id at the end of every non-empty document."""
        split_sentences: bool = False
        """One Megatron sequence per sentence (as preprocess_data.py --split-sentences)."""
        lang: str = "en"
        """Language for sentence splitting (split mode and sentence statistics)."""
        group_by: Literal["source", "none"] = "source"
        """`source`: one dataset per `meta["source"]`; `none`: one dataset named `all`."""
        prefix_size_mb: NonNegFloat = 0.0
        """`0`: one prefix per group; else cut at document boundaries into prefixes of about this
        size (`<group>-00000_text_document`, ...)."""
        batch_size: PositiveInt = 1000
        """Documents per tokenizer call."""
        sentence_stats: Ratio = 0.1
        """Non-split mode: fraction of documents (every k-th one) whose sentences are counted for
        the sentence averages (splitting every document, `1`, costs about 20% of the throughput);
        `0` turns it off. Split mode always counts all."""
        shuffle: bool = False
        """Write each prefix's documents in one seeded permutation across all input shards
        (an external shuffle in `shuffle_memory_mb`); `false`: input order."""
        seed: int = 0
        """The shuffle's seed: the same seed gives the same order on every executor."""
        shuffle_memory_mb: PositiveFloat = 256.0
        """Memory for one key range of the shuffle (more documents: more ranges, not more
        memory)."""
        bucket_field: str | None = None
        """A meta key (e.g. `quality_bucket` from `quality_buckets`): one group per (source,
        bucket), named `<source>@q<bucket>` (`@qnone` without one), for per-bucket weights in
        `blend`."""

    def output_dirs(self, ctx: StageContext) -> list[str]:
        return [ctx.output_path(self.output_dir)]

    def input_files(self) -> list[str]:
        """The ``tokenizer_config.json`` / ``special_tokens_map.json`` beside a ``tokenizer``
        given as a file (they decide the end-of-document token, so editing one reruns the
        stage); a folder's files count already through its :data:`DirPath` type."""
        p = self.tokenizer
        if not p or os.path.isdir(p) or p.endswith(".model"):
            return []
        return [f for f in folder_files(os.path.dirname(os.path.abspath(p)))
                if os.path.basename(f) in (CONFIG, SPECIAL_MAP)]

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        spec = spec_from_params(self.tokenizer, self.vocab_file, self.merges_file,
                                ctx.artifact("tokenizer", None), f"stage '{ctx.stage_id}'")
        enc = load_encoder(spec, self.eod_token)  # fail early, on the driver, on a bad tokenizer
        if self.append_eod and enc.eod_id is None:
            why = f" ({enc.no_eod_reason})" if enc.no_eod_reason else ""
            raise ConfigError(f"stage '{ctx.stage_id}': append_eod is on but the tokenizer has "
                              f"no end-of-document token{why}; set megatron_shards.eod_token "
                              "to one of its tokens, or megatron_shards.append_eod: false")
        desc = enc.describe()
        if spec["type"] == "gpt2bpe":  # downstream stages expect a tokenizer.json path too
            desc["path"] = os.path.join(ctx.artifact_dir, "tokenizer.json")
            if ctx.is_root:
                try:
                    enc.impl.save(desc["path"])
                except Exception as e:  # Rust reports a full disk as "... (os error 28)"
                    from curator.storage.native import as_os_error

                    raise as_os_error(e, desc["path"]) from None
        out_dir = ctx.output_path(self.output_dir)
        parts_dir = os.path.join(ctx.stage_dir, "parts")
        results = ctx.map(_TokenizeShard(self, spec, parts_dir),
                          [(s.name, s.path) for s in shards], phase="tokenize",
                          keys=[s.name for s in shards])

        # group -> parts in shard order
        groups: dict[str, list[GroupStats]] = {}
        for r in results:
            for g, gs in r.groups:
                groups.setdefault(g, []).append(gs)
        dtype = megatron.token_dtype(enc.vocab_size)
        itemsize = np.dtype(dtype).itemsize
        target = int(self.prefix_size_mb * 1e6)
        order = {g: [p.part for p in groups[g]] for g in groups}
        if self.shuffle:  # one seeded permutation of each group across all its parts
            order = shuffle_groups(ctx, order, {g: sum(p.documents for p in groups[g])
                                                for g in groups},
                                   names={g: part_name(g) for g in groups}, seed=self.seed,
                                   memory_mb=self.shuffle_memory_mb, dtype=np.dtype(dtype).name)
        jobs: list[MergeJob] = []
        names: dict[str, str] = {}
        for g in sorted(groups):
            base = safe_name(g)
            if base in names.values():
                base = f"{base}-{len(names)}"
            names[g] = base
            parts = ((p, megatron.read_index(p + ".idx").doc_token_ends())
                     for p in order[g])  # lazily: one part's document array at a time
            plan = megatron.plan_split(parts, target, itemsize)
            for k, slices in enumerate(plan):
                stem = base if target <= 0 else f"{base}-{k:05d}"
                jobs.append(MergeJob(
                    group=g, prefix=os.path.join(out_dir, f"{stem}_text_document"),
                    slices=tuple((s.prefix, s.doc_lo, s.doc_hi) for s in slices)))
        merged = ctx.map(_MergePrefix(), jobs, phase="merge",
                         keys=[os.path.basename(j.prefix) for j in jobs])

        prefixes: dict[str, list[str]] = {}
        for j, m in zip(jobs, merged, strict=True):
            prefixes.setdefault(j.group, []).append(m.prefix)
        if ctx.is_root:
            remove_stale(out_dir, list(names.values()), {m.prefix for m in merged})
        self._publish(ctx, desc, groups, prefixes, dtype, out_dir)
        return ctx.passthrough(shards)

    def _publish(self, ctx: GlobalContext, tokenizer: dict[str, Any],
                 groups: dict[str, list[GroupStats]], prefixes: dict[str, list[str]],
                 dtype: type, out_dir: str) -> None:
        rows, stats = [], {}
        hist_all = np.zeros(TOKEN_BINS, dtype=np.int64)
        hists: dict[str, np.ndarray] = {}
        for g in sorted(groups):
            total = functools.reduce(GroupStats.merge, groups[g], GroupStats())
            hists[g] = np.asarray(total.hist, dtype=np.int64)
            hist_all += hists[g]
            tot = stats[g] = total.summary()
            rows.append([g, tot["documents"], tot["empty_documents"], tot["sequences"],
                         tot["tokens"], tot["avg_tokens_per_document"],
                         tot["avg_tokens_per_sentence"], tot["avg_sentences_per_document"],
                         len(prefixes.get(g, []))])
            ctx.count(f"tokens:{g}", total.tokens)
            if total.repaired_documents:
                ctx.count("invalid_unicode_repaired", total.repaired_documents)
        ctx.count("tokens", int(sum(s["tokens"] for s in stats.values())))
        last = int(np.max(np.nonzero(hist_all)[0])) + 1 if hist_all.any() else 1
        ctx.artifacts.update({
            "tokenizer": tokenizer,
            "prefixes": prefixes,
            "token_counts": {g: s["tokens"] for g, s in stats.items()},
            "document_counts": {g: s["documents"] for g, s in stats.items()},
            "corpus_stats": stats,
            "megatron_dir": out_dir,
            "token_dtype": np.dtype(dtype).name,
            "report_tables": [{
                "title": "tokens per source",
                "columns": ["source", "documents", "empty", "sequences", "tokens",
                            "avg tokens/doc", "avg tokens/sentence", "avg sentences/doc",
                            "prefixes"],
                "rows": rows}],
            "report_histograms": [{
                "title": "document length in tokens" + (f" ({g})" if g else ""),
                "series": g or "all sources",
                "labels": bin_labels(last), "counts": [int(c) for c in h[:last]]}
                for g, h in [("", hist_all)] + (sorted(hists.items()) if len(hists) > 1 else [])],
        })


def remove_stale(out_dir: str, bases: list[str], keep: set[str]) -> None:
    """Delete outputs of an earlier run with other settings (say, another prefix_size_mb) for
    the same groups, so the folder only holds what the artifacts list."""
    if not bases or not os.path.isdir(out_dir):
        return
    alt = "|".join(re.escape(b) for b in bases)
    pat = re.compile(rf"^({alt})(-\d{{5}})?_text_document\.(bin|idx|ids)$")
    for f in os.listdir(out_dir):
        if pat.match(f) and os.path.join(out_dir, f.rsplit(".", 1)[0]) not in keep:
            os.unlink(os.path.join(out_dir, f))


def iter_prefix_ids(prefix: str) -> Iterator[str]:
    """The document ids of a written prefix, in order."""
    with open(prefix + ".ids", encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")
