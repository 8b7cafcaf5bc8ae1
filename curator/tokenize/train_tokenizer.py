"""``train_tokenizer``: train a byte-level BPE (HF ``tokenizers``) or a SentencePiece BPE
tokenizer from a bounded sample of the corpus.

Phase ``sample`` (per shard, parallel, resumable): each document gets a pseudo-random key
``xxh64(id, seed)``; a shard keeps, in a bounded heap, the documents with the smallest keys
up to twice its share of the budget (all its keys below a "cut") and writes them to a sample
file. The driver then picks the global key threshold that fits ``max_docs`` and ``max_mb`` and
stays below every shard's cut: the union is a uniform,
deterministic sample of the whole corpus (a "bottom-k" sample), whatever its size, and no
stage ever holds more than the budget. Phase ``train`` (one task) streams the sample files
into the trainer and writes the tokenizer files.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import orjson
import xxhash
from pydantic import Field, model_validator

from curator.base.errors import ConfigError, InputError
from curator.core import progress
from curator.core.context import GlobalContext, StageContext
from curator.core.params import NonNegInt, PositiveFloat, PositiveInt, Ratio, StageParams
from curator.core.stage import FilePath, GlobalStage, OutputDir, Shard
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard
from curator.tokenize.hf_folder import special_token_roles, write_hf_config
from curator.tokenize.load import EOD_CANDIDATES

#: How much more than its even share a shard keeps, so uneven shards still fill the budget.
OVERSAMPLE = 2.0


@dataclass(frozen=True, kw_only=True)
class ShardSample:
    """A ``sample`` phase result: one shard's sampled documents (``path``: JSON lines
    ``[key, text]`` by ascending key), their keys and UTF-8 sizes, and the shard's cut (it
    kept exactly the keys below it)."""

    path: str
    keys: np.ndarray
    sizes: np.ndarray
    cut: int


@dataclass(frozen=True, kw_only=True)
class TrainJob:
    """The ``train`` task: every shard's sample file and the key threshold of the sample."""

    paths: tuple[str, ...]
    threshold: int


@dataclass(frozen=True, kw_only=True)
class TrainedTokenizer:
    """A ``train`` phase result: the tokenizer written (``huggingface`` or
    ``sentencepiece``), its vocabulary size and end-of-document id."""

    type: str
    path: str
    vocab_size: int
    eod_id: int | None
    vocab_file: str | None = None  # BPE only
    merges_file: str | None = None  # BPE only

    def artifact(self) -> dict[str, Any]:
        """The ``tokenizer`` artifact downstream stages read (JSON)."""
        out = {"type": self.type, "path": self.path, "vocab_size": self.vocab_size,
               "eod_id": self.eod_id}
        if self.vocab_file is not None:
            out.update(vocab_file=self.vocab_file, merges_file=self.merges_file)
        return out


class _SampleShard:
    def __init__(self, seed: int, max_docs: int, max_bytes: int, out_dir: str) -> None:
        self.seed, self.max_docs, self.max_bytes, self.out_dir = seed, max_docs, max_bytes, out_dir

    def __call__(self, shard: tuple[str, str]) -> ShardSample:
        name, path = shard
        heap: list[tuple[int, int, str]] = []  # (-key, size, text): a max-heap on key
        size = 0
        cut = 2**64  # smallest key ever evicted: the shard keeps exactly the keys below it
        seed = self.seed
        for doc in read_shard(path):
            if not doc.text:
                continue
            key = xxhash.xxh64_intdigest(doc.id.encode("utf-8", "surrogatepass"), seed=seed)
            if key >= cut:
                continue
            b = len(doc.text.encode("utf-8", "surrogatepass"))
            heapq.heappush(heap, (-key, b, doc.text))
            size += b
            while len(heap) > self.max_docs or (size > self.max_bytes and len(heap) > 1):
                k, b_out, _ = heapq.heappop(heap)
                size -= b_out
                cut = min(cut, -k)
        heap.sort(reverse=True)  # ascending key
        out = os.path.join(self.out_dir, f"{name}.jsonl")
        keys = np.array([-k for k, _, _ in heap], dtype=np.uint64)
        sizes = np.array([b for _, b, _ in heap], dtype=np.int64)
        with atomic_open(out, "wb") as f:
            for k, _, text in heap:
                f.write(orjson.dumps([-k, text]) + b"\n")
        return ShardSample(path=out, keys=keys, sizes=sizes, cut=cut)


def _threshold(samples: list[ShardSample], max_docs: int, max_bytes: int) -> int:
    """The largest key such that the documents at or below it fit both budgets, and below
    every shard's cut (so no shard is missing documents under the threshold)."""
    keys = np.concatenate([s.keys for s in samples]) if samples else np.zeros(0, np.uint64)
    if len(keys) == 0:
        return -1
    sizes = np.concatenate([s.sizes for s in samples])
    order = np.argsort(keys, kind="stable")
    keys, csize = keys[order], np.cumsum(sizes[order])
    n = min(max_docs, int(np.searchsorted(csize, max_bytes, side="right")))
    n = max(n, 1)  # at least one document, even if it alone exceeds max_bytes
    return min(int(keys[min(n, len(keys)) - 1]), min(s.cut for s in samples) - 1)


def _iter_sample(paths: list[str], threshold: int) -> Iterator[str]:
    """The sampled texts, each counted on the train phase's progress line: the counter is
    bound now, in the task's thread, as the tokenizers trainer pulls texts on its own."""
    return _texts(paths, threshold, progress.stepper())


def _texts(paths: list[str], threshold: int, step: Callable[[int], None]) -> Iterator[str]:
    for p in paths:
        with open(p, "rb") as f:
            for line in f:
                key, text = orjson.loads(line)
                if key > threshold:
                    break  # files are sorted by key
                step(1)
                yield text


class _Train:
    def __init__(self, stage: TrainTokenizer, out_dir: str) -> None:
        self.stage = stage
        self.out_dir = out_dir

    def __call__(self, job: TrainJob) -> TrainedTokenizer:
        texts = _iter_sample(list(job.paths), job.threshold)
        if self.stage.type == "bpe":
            return train_bpe(self.stage, texts, self.out_dir)
        return train_sentencepiece(self.stage, texts, self.out_dir)


def _eod_token(stage: TrainTokenizer) -> str | None:
    """``eod_token``, else the first of :data:`EOD_CANDIDATES` among the special tokens; else
    none (never a guess: ``megatron_shards`` then asks for one)."""
    if stage.eod_token:
        return stage.eod_token
    return next((t for t in EOD_CANDIDATES if t in stage.special_tokens), None)


def _merges_of(tok: Any) -> list[tuple[str, str]]:
    model = json.loads(tok.to_str())["model"]
    return [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]


def _read_merges(path: str) -> list[tuple[str, str]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#version"):
                continue
            a, _, b = line.partition(" ")
            out.append((a, b))
    return out


def train_bpe(stage: TrainTokenizer, texts: Iterator[str], out_dir: str) -> TrainedTokenizer:
    """Byte-level BPE like GPT-2's; writes tokenizer.json, vocab.json and merges.txt."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    def fresh(vocab: Any = None, merges: Any = None) -> Any:
        tok = Tokenizer(models.BPE(vocab, merges) if vocab is not None else models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        return tok

    tok = fresh()
    trainer = trainers.BpeTrainer(
        vocab_size=stage.vocab_size, min_frequency=stage.min_frequency,
        special_tokens=list(stage.special_tokens), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)

    if stage.init_vocab:
        # Extend an existing vocabulary: keep every old token and merge, then append the new
        # merges in the order they were learned until vocab_size is reached. Each appended
        # merge's parts are bytes or earlier merges, so they are always in the vocabulary.
        with open(stage.init_vocab, encoding="utf-8") as f:
            vocab: dict[str, int] = json.load(f)
        merges = _read_merges(stage.init_merges or "")
        if len(vocab) >= stage.vocab_size:
            raise ConfigError(f"vocab_size {stage.vocab_size} is not larger than the "
                              f"{len(vocab)} tokens of {stage.init_vocab}")
        for b in pre_tokenizers.ByteLevel.alphabet():
            vocab.setdefault(b, len(vocab))
        for t in stage.special_tokens:
            vocab.setdefault(t, len(vocab))
        for a, b in _merges_of(tok):
            if len(vocab) >= stage.vocab_size:
                break
            if a + b in vocab:
                continue
            vocab[a + b] = len(vocab)
            merges.append((a, b))
        tok = fresh(vocab, merges)
    tok.add_special_tokens(list(stage.special_tokens))

    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "tokenizer.json")
    with atomic_open(path, "wb") as f:
        f.write(tok.to_str(pretty=True).encode())
    try:
        files = tok.model.save(out_dir)  # vocab.json, merges.txt
    except Exception as e:  # Rust reports a full disk as "... (os error 28)"
        from curator.storage.native import as_os_error

        raise as_os_error(e, out_dir) from None
    vocab_file = next(p for p in files if p.endswith("vocab.json"))
    merges_file = next(p for p in files if p.endswith("merges.txt"))
    eod = _eod_token(stage)
    eod_id = tok.token_to_id(eod) if eod else None
    # a complete Hugging Face folder: AutoTokenizer and Megatron's HuggingFaceTokenizer read
    # the end-of-document token from it (EOS), the same id the shards end documents with
    write_hf_config(out_dir, special_token_roles(list(stage.special_tokens), eod))
    return TrainedTokenizer(type="huggingface", path=os.path.abspath(path),
                            vocab_size=tok.get_vocab_size(with_added_tokens=True),
                            eod_id=eod_id, vocab_file=os.path.abspath(vocab_file),
                            merges_file=os.path.abspath(merges_file))


def _chunks(texts: Iterator[str], max_bytes: int) -> Iterator[str]:
    """Documents cut into "sentences" of at most ``max_bytes`` UTF-8 bytes at line ends,
    newlines kept inside (so ``\n`` is learned as a piece): SentencePiece silently drops a
    sentence longer than ``max_sentence_length``. A longer line is cut at a character
    boundary."""
    for t in texts:
        if len(t) * 4 <= max_bytes or len(t.encode("utf-8", "surrogatepass")) <= max_bytes:
            if t:
                yield t
            continue
        buf: list[str] = []
        size = 0
        for line in t.splitlines(keepends=True):
            b = len(line.encode("utf-8", "surrogatepass"))
            if size + b > max_bytes and buf:
                yield "".join(buf)
                buf, size = [], 0
            if b > max_bytes:
                step = max(1, max_bytes // 4)  # 4 bytes per character at most
                for i in range(0, len(line), step):
                    yield line[i:i + step]
                continue
            buf.append(line)
            size += b
        if buf:
            yield "".join(buf)


_VOCAB_ENTRY_END = re.compile(rb"\t-?[0-9][0-9.e+-]*\r?\n?$")


def train_sentencepiece(stage: TrainTokenizer, texts: Iterator[str], out_dir: str
                        ) -> TrainedTokenizer:
    """SentencePiece (BPE by default); writes tokenizer.model and tokenizer.vocab.

    By default the model is lossless: no normalization (``identity``: full-width CJK
    punctuation and compatibility characters stay as they are), whitespace and newlines kept
    (``remove_extra_whitespaces=False``; documents are fed in newline-keeping chunks so
    ``\n`` becomes a piece), and byte fallback for characters outside the vocabulary (a rare
    CJK character becomes its UTF-8 bytes, not ``⁇``)."""
    import sentencepiece as spm

    control = {stage.pad_id: "<pad>", stage.unk_id: "<unk>", stage.bos_id: "<s>",
               stage.eos_id: "</s>"}
    ids = [i for i in (stage.pad_id, stage.unk_id, stage.bos_id, stage.eos_id) if i >= 0]
    if len(set(ids)) != len(ids):
        raise ConfigError("pad_id, unk_id, bos_id and eos_id must differ (or be -1)")
    user = [t for t in stage.special_tokens if t not in control.values()]

    os.makedirs(out_dir, exist_ok=True)
    prefix = os.path.join(out_dir, "tokenizer")
    _remove_dead_sp_temporaries(out_dir)
    # SentencePiece opens its files by name, following symlinks: a name nobody can guess
    tmp = f"{prefix}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=_chunks(texts, stage.max_sentence_length), model_prefix=tmp,
            vocab_size=stage.vocab_size, model_type=stage.sp_model_type,
            character_coverage=stage.character_coverage,
            pad_id=stage.pad_id, unk_id=stage.unk_id, bos_id=stage.bos_id,
            eos_id=stage.eos_id, user_defined_symbols=user, byte_fallback=stage.byte_fallback,
            normalization_rule_name=stage.normalization,
            remove_extra_whitespaces=not stage.keep_whitespace,
            allow_whitespace_only_pieces=stage.keep_whitespace,
            max_sentence_length=stage.max_sentence_length, hard_vocab_limit=False,
            num_threads=stage.threads, input_sentence_size=stage.max_docs * 64,
            shuffle_input_sentence=True, minloglevel=2)
        # SentencePiece does not always check its writes: a model cut short by a full disk
        # "trains" fine, so both files are read back before they are published
        sp = spm.SentencePieceProcessor(model_file=tmp + ".model")
        # one "piece<TAB>score" entry per piece; a kept "\n" piece spans two lines, so entries
        # are counted by their score, not by lines
        with open(tmp + ".vocab", "rb") as f:
            pieces = sum(1 for line in f if _VOCAB_ENTRY_END.search(line))
        if pieces != sp.get_piece_size():
            raise RuntimeError(f"{tmp}.vocab has {pieces} of {sp.get_piece_size()} pieces")
    except RuntimeError as e:
        msg = str(e).strip().splitlines()[-1] if str(e).strip() else repr(e)
        # SentencePiece says only "INTERNAL: ... WriteLine" when a write fails: a write of our
        # own in the same folder (before the temporaries are removed and free the space) tells a
        # full disk / no permission / read-only mount apart
        from curator.storage.native import probe_write

        try:
            if "smaller than required_chars" not in msg:
                probe_write(out_dir, prefix + ".model")
        finally:
            for ext in (".model", ".vocab"):
                with contextlib.suppress(OSError):
                    os.unlink(tmp + ext)
        if "smaller than required_chars" in msg:
            extra = " plus 256 byte pieces (byte_fallback)" if stage.byte_fallback else ""
            raise ConfigError(f"train_tokenizer.vocab_size {stage.vocab_size} is too small for "
                              f"the characters of the sample{extra}; raise vocab_size or "
                              "lower character_coverage") from None
        raise InputError(f"SentencePiece training failed: {msg}") from None
    for ext in (".model", ".vocab"):
        os.replace(tmp + ext, prefix + ext)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    eod = stage.eod_token
    eod_id = sp.piece_to_id(eod) if eod else sp.eos_id()
    if eod and eod_id == sp.unk_id() and eod != sp.id_to_piece(sp.unk_id()):
        raise ConfigError(f"eod_token '{eod}' is not a piece of the trained model; add it to "
                          "special_tokens")
    return TrainedTokenizer(type="sentencepiece", path=os.path.abspath(prefix + ".model"),
                            vocab_size=sp.get_piece_size(),
                            eod_id=eod_id if eod_id >= 0 else None)


def _remove_dead_sp_temporaries(out_dir: str) -> None:
    """Drop ``tokenizer.tmp-<pid>.model/.vocab`` of SentencePiece runs whose process is gone."""
    for name in os.listdir(out_dir):
        m = re.fullmatch(r"tokenizer\.tmp-(\d+)(?:-[0-9a-f]{8})?\.(model|vocab)", name)
        if m and not _alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(out_dir, name))


def _alive(pid: int) -> bool:
    if pid == os.getpid():  # ours from an earlier call: about to be rewritten
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class TrainTokenizer(GlobalStage):
    """Train a byte-level BPE or SentencePiece tokenizer on a bounded sample of the corpus."""

    name = "train_tokenizer"

    class Params(StageParams):
        type: Literal["bpe", "sentencepiece"] = "bpe"
        """`bpe` (byte-level BPE, GPT-2 style, HF `tokenizers`) or `sentencepiece`."""
        vocab_size: Annotated[int, Field(ge=2)] = 32000
        """Target vocabulary size, special tokens included (8k to 64k and beyond; a small sample may
        give fewer)."""
        special_tokens: list[str] = ["<|endoftext|>"]
        """E.g. `["[CLS]", "[BOS]", "[EOS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "[EOD]"]`; BPE
        gives them ids 0, 1, ...; SentencePiece adds them as user-defined symbols."""
        eod_token: str | None = None
        """The end-of-document token (BPE: one of `special_tokens`; it becomes the folder's EOS).
        Default: the first of `<|endoftext|>`, `[EOD]`, `</s>`, `<eos>`, `<|end_of_text|>`,
        `<|eot_id|>` that is listed, else none (never a guess: `megatron_shards` with
        `append_eod` then asks for one) (BPE); the model's `eos_id` (SentencePiece)."""
        max_docs: PositiveInt = 1_000_000
        """Train on at most this many documents (a seeded sample)."""
        max_mb: PositiveFloat = 1024.0
        """At most this many MB of text in the sample."""
        seed: int = 0
        """Changes which documents are sampled."""
        min_frequency: NonNegInt = 2
        """BPE: a merge needs at least this many occurrences."""
        init_vocab: FilePath | None = None
        """BPE: extend an existing `vocab.json` + `merges.txt`: old tokens keep their ids and
        merges, new merges learned on the sample are appended until `vocab_size`."""
        init_merges: FilePath | None = None
        """BPE: extend an existing `vocab.json` + `merges.txt`: old tokens keep their ids and
        merges, new merges learned on the sample are appended until `vocab_size`."""
        sp_model_type: Literal["bpe", "unigram"] = "bpe"
        """SentencePiece model: `bpe` or `unigram`."""
        character_coverage: Ratio = 0.9995
        """SentencePiece: share of characters covered by the vocabulary."""
        pad_id: int = 0
        """SentencePiece control ids (`-1` disables one; must differ)."""
        unk_id: int = 1
        """SentencePiece control ids (`-1` disables one; must differ)."""
        bos_id: int = 2
        """SentencePiece control ids (`-1` disables one; must differ)."""
        eos_id: int = 3
        """SentencePiece control ids (`-1` disables one; must differ)."""
        byte_fallback: bool = True
        """SentencePiece: characters outside the vocabulary (rare CJK, emoji) become their UTF-8
        byte pieces `<0xE9>...` instead of `⁇`; needs `vocab_size` above 256 + the sample's
        characters."""
        normalization: Literal["identity", "nfkc", "nmt_nfkc", "nfkc_cf",
                               "nmt_nfkc_cf"] = "identity"
        """SentencePiece normalization rule: `identity` (text kept as is), or SentencePiece's
        `nmt_nfkc` (its own default: NFKC, so `：` becomes `:`, and control characters including
        `\n` become spaces), `nfkc`, `nmt_nfkc_cf`, `nfkc_cf` (case folding)."""
        keep_whitespace: bool = True
        """SentencePiece: keep runs of spaces, leading/trailing spaces and newlines
        (`remove_extra_whitespaces: false`, whitespace-only pieces allowed, so indentation and
        `\n` are pieces); `false` squeezes them as SentencePiece does by default."""
        max_sentence_length: PositiveInt = 16384
        """SentencePiece: documents are fed in chunks of at most this many bytes, cut at line ends
        with the newlines kept (SentencePiece drops longer "sentences")."""
        threads: PositiveInt = 1
        """SentencePiece trainer threads."""
        output_dir: OutputDir | None = None
        """Where to write the files (default: the stage's artifact folder under `work_dir`)."""

        @model_validator(mode="after")
        def _init_files(self) -> Any:
            if (self.init_vocab is None) != (self.init_merges is None):
                raise ValueError("init_vocab and init_merges go together")
            if self.init_vocab and self.type != "bpe":
                raise ValueError("init_vocab/init_merges only apply to type: bpe")
            return self

    def setup(self) -> None:
        self.special_tokens = list(self.special_tokens)
        self.init_vocab = os.path.abspath(self.init_vocab) if self.init_vocab else None
        self.init_merges = os.path.abspath(self.init_merges) if self.init_merges else None

    def output_dirs(self, ctx: StageContext) -> list[str]:
        return [ctx.output_path(self.output_dir)] if self.output_dir else []

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        for p in (self.init_vocab, self.init_merges):
            if p and not os.path.exists(p):
                raise InputError(f"{p}: file not found")
        if self.eod_token and self.type == "bpe" and self.eod_token not in self.special_tokens:
            raise ConfigError(f"eod_token '{self.eod_token}' must be one of special_tokens")
        max_bytes = int(self.max_mb * 1e6)
        n = max(len(shards), 1)
        per_docs = max(1, int(self.max_docs * OVERSAMPLE / n) + 1)
        per_bytes = max(1, int(max_bytes * OVERSAMPLE / n) + 1)
        sample_dir = os.path.join(ctx.stage_dir, "sample")
        samples = ctx.map(_SampleShard(self.seed, per_docs, per_bytes, sample_dir),
                          [(s.name, s.path) for s in shards], phase="sample",
                          keys=[s.name for s in shards])
        threshold = _threshold(samples, self.max_docs, max_bytes)
        if threshold < 0:
            raise InputError(f"stage '{ctx.stage_id}': no text to train a tokenizer on")
        in_sample = sum(int((s.keys <= np.uint64(threshold)).sum()) for s in samples)
        sample_bytes = sum(int(s.sizes[s.keys <= np.uint64(threshold)].sum()) for s in samples)
        out_dir = ctx.output_path(self.output_dir) if self.output_dir else ctx.artifact_dir
        (trained,) = ctx.map(_Train(self, out_dir),
                             [TrainJob(paths=tuple(s.path for s in samples),
                                       threshold=threshold)],
                             phase="train", keys=["tokenizer"])
        tok = trained.artifact()
        if ctx.is_root:
            shutil.rmtree(sample_dir, ignore_errors=True)
        ctx.count("sample_docs", in_sample)
        ctx.count("sample_bytes", sample_bytes)
        ctx.artifacts["tokenizer"] = tok
        ctx.artifacts["report_tables"] = [{
            "title": "tokenizer", "columns": ["type", "vocab size", "EOD id", "sample docs",
                                              "sample MB", "path"],
            "rows": [[tok["type"], tok["vocab_size"], tok["eod_id"], in_sample,
                      round(sample_bytes / 1e6, 3), tok["path"]]]}]
        return ctx.passthrough(shards)
