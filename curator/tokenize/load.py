"""Load an existing tokenizer (a local HF ``tokenizer.json``, GPT-2 style ``vocab.json`` +
``merges.txt``, or a SentencePiece ``.model``) behind one small batch-encoding interface.

Tokenizers are loaded lazily, once per worker process (module-level cache keyed by the
tokenizer description), never at import time and never pickled with a stage.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from curator.base.errors import ConfigError, InputError
from curator.tokenize.hf_folder import CONFIG, SPECIAL_MAP, declared_eos
from curator.tokenize.pretoken import PreTokenCache, pretoken_cache

#: End-of-document token names ``train_tokenizer`` takes from its ``special_tokens``, first
#: listed first, when no ``eod_token`` is given.
EOD_CANDIDATES = ("<|endoftext|>", "[EOD]", "</s>", "<eos>", "<|end_of_text|>", "<|eot_id|>")

_CACHE: dict[tuple[Any, ...], Encoder] = {}


@dataclass
class Encoder:
    """A loaded tokenizer: ``encode_batch(texts) -> list[list[int]]`` without special tokens."""

    type: str
    path: str
    vocab_size: int
    eod_id: int | None
    impl: Any
    vocab_file: str | None = None
    merges_file: str | None = None
    #: GPT-2 style byte-level BPE: a pre-token cache giving the same ids faster (pretoken.py)
    fast: PreTokenCache | None = None
    #: why ``eod_id`` is None (for the error of a stage that needs one)
    no_eod_reason: str = ""

    def _encode_lists(self, texts: list[str]) -> list[list[int]]:
        if self.type == "sentencepiece":
            return self.impl.encode(texts)
        encs = self.impl.encode_batch_fast(texts, add_special_tokens=False)
        return [e.ids for e in encs]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        if self.fast is None:
            return self._encode_lists(texts)
        flat, lens = self.encode_flat(texts)
        return [a.tolist() for a in np.split(flat, np.cumsum(lens)[:-1])] if texts else []

    def encode_flat(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The ids of all ``texts`` back to back (int64) and each text's count: what
        ``encode_batch`` gives, without a Python list per document on the fast path."""
        fast = self.fast
        if fast is not None:
            ok = [fast.eligible(t) for t in texts]
            if all(ok):
                return fast.encode_flat(texts)
            if any(ok):  # mixed batch: each part its way, then back in order
                yes = [t for t, o in zip(texts, ok) if o]
                no = [t for t, o in zip(texts, ok) if not o]
                f1, l1 = fast.encode_flat(yes)
                f2, l2 = _flatten(self._encode_lists(no))
                parts1 = iter(np.split(f1, np.cumsum(l1)[:-1]))
                parts2 = iter(np.split(f2, np.cumsum(l2)[:-1]))
                parts = [next(parts1) if o else next(parts2) for o in ok]
                return (np.concatenate(parts).astype(np.int64),
                        np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)))
        return _flatten(self._encode_lists(texts))

    def decode(self, ids: list[int]) -> str:
        return self.impl.decode(ids)

    def describe(self) -> dict[str, Any]:
        """The ``tokenizer`` artifact dict (see docs/tokenize.md)."""
        out: dict[str, Any] = {"type": self.type, "path": self.path,
                               "vocab_size": self.vocab_size, "eod_id": self.eod_id}
        if self.vocab_file:
            out["vocab_file"] = self.vocab_file
            out["merges_file"] = self.merges_file
        return out


def _flatten(ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    return (np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64,
                        count=int(lens.sum())), lens)


def spec_from_params(tokenizer: str | None, vocab_file: str | None, merges_file: str | None,
                     artifact: dict[str, Any] | None, what: str) -> dict[str, Any]:
    """Decide which tokenizer a stage uses: its own parameters win over the upstream
    ``tokenizer`` artifact. Returns a JSON-able description for :func:`load_encoder`."""
    if vocab_file or merges_file:
        if not (vocab_file and merges_file):
            raise ConfigError(f"{what}: give both vocab_file and merges_file")
        return {"type": "gpt2bpe", "vocab_file": os.path.abspath(vocab_file),
                "merges_file": os.path.abspath(merges_file)}
    if tokenizer:
        path = os.path.abspath(tokenizer)
        if os.path.isdir(path):
            for name, kind in (("tokenizer.json", "huggingface"),
                               ("tokenizer.model", "sentencepiece")):
                if os.path.exists(os.path.join(path, name)):
                    return {"type": kind, "path": os.path.join(path, name)}
            if os.path.exists(os.path.join(path, "vocab.json")) and os.path.exists(
                    os.path.join(path, "merges.txt")):
                return {"type": "gpt2bpe", "vocab_file": os.path.join(path, "vocab.json"),
                        "merges_file": os.path.join(path, "merges.txt")}
            raise ConfigError(f"{what}: folder '{tokenizer}' has no tokenizer.json, "
                              "tokenizer.model or vocab.json + merges.txt")
        kind = "sentencepiece" if path.endswith(".model") else "huggingface"
        return {"type": kind, "path": path}
    if artifact:
        return dict(artifact)
    raise ConfigError(f"{what}: no tokenizer: set 'tokenizer' (tokenizer.json, .model or a "
                      "folder), or 'vocab_file' + 'merges_file', or put train_tokenizer upstream")


def load_encoder(spec: dict[str, Any], eod_token: str | None = None) -> Encoder:
    """Load (once per process) the tokenizer described by ``spec``; files edited since (a
    folder's declared EOS, say) load again."""
    key = tuple(sorted((k, str(v)) for k, v in spec.items())) + (eod_token, _stamp(spec))
    enc = _CACHE.get(key)
    if enc is None:
        enc = _load(spec, eod_token)
        _CACHE[key] = enc
    return enc


def _stamp(spec: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """(mtime_ns, size) of the files a spec reads, the folder's special-token files too."""
    paths = [spec[k] for k in ("path", "vocab_file", "merges_file") if spec.get(k)]
    if spec.get("path"):
        folder = os.path.dirname(spec["path"])
        paths += [os.path.join(folder, CONFIG), os.path.join(folder, SPECIAL_MAP)]
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append((st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((0, -1))
    return tuple(out)


def _load(spec: dict[str, Any], eod_token: str | None) -> Encoder:
    kind = spec.get("type")
    if kind == "sentencepiece":
        import sentencepiece as spm

        path = spec["path"]
        if not os.path.exists(path):
            raise InputError(f"{path}: SentencePiece model not found")
        sp = spm.SentencePieceProcessor(model_file=path)
        if eod_token:
            eod = sp.piece_to_id(eod_token)
            if eod == sp.unk_id() and eod_token != sp.id_to_piece(sp.unk_id()):
                raise ConfigError(f"eod_token '{eod_token}' is not a piece of {path}")
        elif spec.get("eod_id") is not None:
            eod = int(spec["eod_id"])
        else:  # what Megatron's SentencePieceTokenizer and GPTSentencePieceTokenizer append
            eod = sp.eos_id() if sp.eos_id() >= 0 else None
        return Encoder("sentencepiece", path, sp.get_piece_size(), eod, sp,
                       no_eod_reason=f"{path} has no eos piece (eos_id -1)")

    from tokenizers import Tokenizer

    vocab_file = merges_file = None
    gpt2_files = kind == "gpt2bpe" or (kind == "huggingface" and not spec.get("path"))
    if gpt2_files:
        vocab_file, merges_file = spec["vocab_file"], spec["merges_file"]
        for p in (vocab_file, merges_file):
            if not os.path.exists(p):
                raise InputError(f"{p}: tokenizer file not found")
        tok = gpt2_tokenizer(vocab_file, merges_file)
        path = vocab_file
        kind = "huggingface"
    elif kind == "huggingface":
        path = spec["path"]
        if not os.path.exists(path):
            raise InputError(f"{path}: tokenizer.json not found (only local files are read)")
        try:
            tok = Tokenizer.from_file(path)
        except Exception as e:  # the Rust error types are not importable
            raise InputError(f"{path}: not a tokenizers JSON file: {e}") from None
        vocab_file, merges_file = spec.get("vocab_file"), spec.get("merges_file")
    else:
        raise ConfigError(f"unknown tokenizer type '{kind}' (huggingface, sentencepiece)")
    eod_from = ""
    if eod_token:
        eod = tok.token_to_id(eod_token)
        if eod is None:
            raise ConfigError(f"eod_token '{eod_token}' is not in the vocabulary of {path}")
    elif spec.get("eod_id") is not None:
        eod = int(spec["eod_id"])
    elif gpt2_files:
        # Megatron's GPT2BPETokenizer reads vocab.json + merges.txt and ends documents with
        # <|endoftext|>, whatever else the vocabulary holds
        eod = tok.token_to_id("<|endoftext|>")
        eod_from = f"{vocab_file} has no <|endoftext|>"
    else:
        # what AutoTokenizer.from_pretrained(folder).eos_token_id is, and what Megatron's
        # HuggingFaceTokenizer appends; a bare tokenizer.json declares none
        folder = os.path.dirname(path)
        eos, where = declared_eos(folder)
        eod = tok.token_to_id(eos) if eos is not None else None
        if eos is None:
            eod_from = (f"{path} declares none: no eos_token in a {CONFIG} or "
                        f"{SPECIAL_MAP} beside it")
        elif eod is None:
            raise InputError(f"{where}: eos_token '{eos}' is not in the vocabulary of {path}")
    # ids need not be contiguous: size the token dtype by the largest id, not the count
    size = max(tok.get_vocab_size(with_added_tokens=True),
               max(tok.get_vocab(with_added_tokens=True).values(), default=-1) + 1)
    return Encoder("huggingface", path, size, eod, tok, vocab_file, merges_file,
                   pretoken_cache(tok), eod_from)


def gpt2_tokenizer(vocab_file: str, merges_file: str) -> Any:
    """A byte-level BPE tokenizer from GPT-2 style files, giving the ids of Megatron's
    GPT2BPETokenizer: it knows no special tokens, so a document's literal ``<|endoftext|>``
    is encoded as text (a ``tokenizer.json`` that lists it as a special token, like
    Megatron's HuggingFaceTokenizer reading it, gives the token's id instead)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE.from_file(vocab_file, merges_file))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok
