"""The pre-token cache (curator/tokenize/pretoken.py) gives exactly the ids of ``tokenizers``."""

from __future__ import annotations

import random

import numpy as np
import pytest
from tokenizers import Tokenizer, normalizers, pre_tokenizers

from curator.tokenize import pretoken
from curator.tokenize.load import gpt2_tokenizer, load_encoder
from curator.tokenize.train_tokenizer import TrainTokenizer, train_bpe

WORDS = ["the", "The", "THE", "don't", "it's", "we're", "you've", "I'm", "we'll", "he'd",
         "'S", "'ll", "2024", "3.14", "x2", "e-mail", "foo_bar", "<|endoftext|>", "<|end",
         "naïve", "café", "日本", "🙂", "\u00a0", "\u2028", "\x85"]
ASCII = [chr(c) for c in range(128)]


def _fuzz(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(0, 60)):
            r = rng.random()
            if r < 0.45:
                parts.append(rng.choice(WORDS[:17]))
            elif r < 0.75:
                parts.append(rng.choice(" \t\n\r\x0b\x0c") * rng.randint(1, 3))
            elif r < 0.97:
                parts.append("".join(rng.choice(ASCII) for _ in range(rng.randint(1, 4))))
            else:
                parts.append(rng.choice(WORDS[17:]))  # special token text or non-ASCII
        out.append("".join(parts))
    return out


@pytest.fixture(scope="module")
def bpe(tmp_path_factory):
    d = tmp_path_factory.mktemp("tok")
    texts = _fuzz(0, 400) + ["The quick brown fox jumps over the lazy dog. " * 20] * 5
    return train_bpe(TrainTokenizer(vocab_size=700), iter(texts), str(d)).artifact()


def _reference(tok: Tokenizer, texts: list[str]) -> list[list[int]]:
    return [e.ids for e in tok.encode_batch_fast(texts, add_special_tokens=False)]


def test_cached_ids_equal_tokenizers_on_fuzzed_text(bpe):
    enc = load_encoder({"type": "huggingface", "path": bpe["path"]})
    assert enc.fast is not None
    ref_tok = Tokenizer.from_file(bpe["path"])
    texts = _fuzz(1, 3000) + ["", " ", "\x1c\x1d a\x1f", "'s's 's", "  \n\n  x  "]
    want = _reference(ref_tok, texts)
    assert enc.encode_batch(texts) == want
    flat, lens = enc.encode_flat(texts)
    assert flat.dtype == np.int64 and lens.tolist() == [len(w) for w in want]
    assert flat.tolist() == [i for w in want for i in w]
    ascii_only = [t for t in texts if enc.fast.eligible(t)]  # the all-cached branch
    assert len(ascii_only) > 1000
    assert enc.encode_batch(ascii_only) == _reference(ref_tok, ascii_only)


def test_cache_is_bounded(bpe, monkeypatch):
    monkeypatch.setattr(pretoken, "MAX_ENTRIES", 50)
    tok = Tokenizer.from_file(bpe["path"])
    cache = pretoken.pretoken_cache(tok)
    texts = [t for t in _fuzz(2, 300) if cache.eligible(t)]
    flat, _ = cache.encode_flat(texts)
    assert len(cache) <= 50
    assert flat.tolist() == [i for w in _reference(tok, texts) for i in w]


def test_vocab_and_merges_tokenizer_takes_the_cache(bpe):
    tok = gpt2_tokenizer(bpe["vocab_file"], bpe["merges_file"])
    cache = pretoken.pretoken_cache(tok)
    assert cache is not None
    texts = [t for t in _fuzz(3, 300) if cache.eligible(t)]
    flat, _ = cache.encode_flat(texts)
    assert flat.tolist() == [i for w in _reference(tok, texts) for i in w]


@pytest.mark.parametrize("change", ["normalizer", "prefix_space", "no_regex", "dropout",
                                    "truncation"])
def test_other_pipelines_do_not_take_the_cache(bpe, change):
    tok = Tokenizer.from_file(bpe["path"])
    if change == "normalizer":
        tok.normalizer = normalizers.NFKC()
    elif change == "prefix_space":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    elif change == "no_regex":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    elif change == "dropout":
        tok.model.dropout = 0.1
    else:
        tok.enable_truncation(8)
    assert pretoken.pretoken_cache(tok) is None
