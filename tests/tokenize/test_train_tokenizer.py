"""Tokenizer training (BPE, SentencePiece), loading existing tokenizers, round trips."""

from __future__ import annotations

import json
import os

import pytest
import sentencepiece as spm
import xxhash
from tokenizers import Tokenizer

from curator.base.errors import ConfigError
from curator.tokenize.load import load_encoder, spec_from_params
from tests.tokenize.helpers_tokenize import run_pipeline, stage_artifacts

ROUND_TRIP = ["Hello world, this is a test.", "naïve café — Grüße aus Köln!",
              "日本語のテキスト。 emoji 🙂", "  leading spaces and\nnew lines\tand tabs  ",
              "罕见字：龘靐齉 𠀋（全角）\n\n第二段", ""]


def _train(tmp_path, corpus, params, sid="tok"):
    stages = [{"read_jsonl": {"paths": [corpus["web"][0], corpus["wiki"][0]]}, "id": "in"},
              {"train_tokenizer": params, "id": sid}]
    return stage_artifacts(run_pipeline(stages, tmp_path / "work"), sid)


def test_bpe_trains_writes_files_and_round_trips(tmp_path, corpus):
    arts = _train(tmp_path, corpus, {"vocab_size": 600})
    tok = arts["tokenizer"]
    assert tok["type"] == "huggingface"
    for k in ("path", "vocab_file", "merges_file"):
        assert os.path.isabs(tok[k]) and os.path.exists(tok[k])
    t = Tokenizer.from_file(tok["path"])
    assert tok["vocab_size"] == t.get_vocab_size() <= 600
    assert tok["eod_id"] == t.token_to_id("<|endoftext|>")
    for text in ROUND_TRIP:  # byte-level: every string round-trips exactly
        assert t.decode(t.encode(text).ids) == text
    # vocab.json + merges.txt alone (what Megatron's GPT2BPETokenizer reads) give the same ids
    enc = load_encoder(spec_from_params(None, tok["vocab_file"], tok["merges_file"], None, "t"))
    texts = [r["text"] for r in corpus["web"][1][:50]]
    assert enc.encode_batch(texts) == [t.encode(x).ids for x in texts]
    with open(tok["vocab_file"]) as f:
        assert len(json.load(f)) == t.get_vocab_size()
    # the report shows the sample size
    assert arts["report_tables"][0]["rows"][0][3] == sum(
        1 for s in ("web", "wiki") for r in corpus[s][1] if r["text"])


def test_bpe_special_token_list_and_eod(tmp_path, corpus):
    specials = ["[CLS]", "[BOS]", "[EOS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "[EOD]"]
    tok = _train(tmp_path, corpus, {"vocab_size": 500, "special_tokens": specials})["tokenizer"]
    t = Tokenizer.from_file(tok["path"])
    assert [t.token_to_id(s) for s in specials] == list(range(len(specials)))
    assert tok["eod_id"] == t.token_to_id("[EOD]")
    # special tokens in text are matched whole
    assert t.encode("a [SEP] b", add_special_tokens=False).ids.count(3) == 1


def test_bpe_sample_is_bounded(tmp_path, corpus):
    arts = _train(tmp_path, corpus, {"vocab_size": 300, "max_docs": 25})
    assert arts["report_tables"][0]["rows"][0][3] == 25


def test_sample_is_the_bottom_k_by_hashed_id_within_max_mb(tmp_path, corpus):
    """Independent computation of the sample: documents sorted by xxh64(id), the longest
    prefix within the byte budget (the input is cut into several shards)."""
    stages = [{"read_jsonl": {"paths": [corpus["web"][0], corpus["wiki"][0]],
                              "shard_size_mb": 0.005}, "id": "in"},
              {"train_tokenizer": {"vocab_size": 300, "max_mb": 0.006, "seed": 7}, "id": "tok"}]
    summary = run_pipeline(stages, tmp_path / "w")
    assert summary["stages"][0]["shards"] > 4
    counters = summary["stages"][1]["counters"]
    docs = [r for s in ("web", "wiki") for r in corpus[s][1] if r["text"]]
    docs.sort(key=lambda r: xxhash.xxh64_intdigest(r["id"].encode(), seed=7))
    total, n = 0, 0
    for r in docs:
        b = len(r["text"].encode())
        if total + b > 6000:
            break
        total, n = total + b, n + 1
    assert (counters["sample_docs"], counters["sample_bytes"]) == (n, total)


def test_bpe_extends_existing_vocab_and_merges(tmp_path, corpus):
    base = _train(tmp_path, corpus, {"vocab_size": 350}, sid="base")["tokenizer"]
    with open(base["vocab_file"]) as f:
        old_vocab = json.load(f)
    with open(base["merges_file"]) as f:
        old_merges = [x for x in f.read().splitlines() if x and not x.startswith("#")]
    ext = _train(tmp_path, corpus, {"vocab_size": 700, "init_vocab": base["vocab_file"],
                                    "init_merges": base["merges_file"]}, sid="ext")["tokenizer"]
    with open(ext["vocab_file"]) as f:
        new_vocab = json.load(f)
    with open(ext["merges_file"]) as f:
        new_merges = [x for x in f.read().splitlines() if x and not x.startswith("#")]
    assert all(new_vocab[k] == v for k, v in old_vocab.items())  # old ids unchanged
    assert len(old_vocab) < len(new_vocab) <= 700
    assert new_merges[:len(old_merges)] == old_merges
    t = Tokenizer.from_file(ext["path"])
    for text in ROUND_TRIP:
        assert t.decode(t.encode(text).ids) == text
    # more merges -> fewer tokens on the training text
    old_t = Tokenizer.from_file(base["path"])
    text = " ".join(r["text"] for r in corpus["web"][1][:40])
    assert len(t.encode(text).ids) < len(old_t.encode(text).ids)


def test_sentencepiece_trains_with_ids_and_round_trips(tmp_path, corpus):
    tok = _train(tmp_path, corpus, {"type": "sentencepiece", "vocab_size": 400,
                                    "byte_fallback": True, "character_coverage": 1.0})["tokenizer"]
    assert tok["type"] == "sentencepiece" and tok["path"].endswith(".model")
    assert os.path.exists(tok["path"][:-len(".model")] + ".vocab")
    sp = spm.SentencePieceProcessor(model_file=tok["path"])
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (0, 1, 2, 3)
    assert tok["eod_id"] == 3 and tok["vocab_size"] == sp.get_piece_size()
    assert sp.piece_to_id("<|endoftext|>") != sp.unk_id()  # special token is a user symbol
    for text in ["Hello world, this is a test.", "naïve café Grüße aus Köln!",
                 "日本語のテキスト。 emoji 🙂"]:
        assert sp.decode(sp.encode(text)) == text


# Rare CJK characters (outside any small vocabulary), full-width punctuation, newlines, blank
# lines, runs of spaces, tabs and indentation: a default SentencePiece model gives them back.
LOSSLESS = ["第一行：你好。\n第二行（龘靐齉）！\n\n  缩进的第四行\t制表符",
            "罕见字 𠀋𡈽 and 鿰 in a line\r\nwindows line end",
            "def f(x):\n    return x  # four spaces\n\n\nend", "ＦＵＬＬ　ｗｉｄｔｈ ｶﾀｶﾅ"]


def test_sentencepiece_defaults_keep_newlines_whitespace_and_rare_cjk(tmp_path, corpus):
    tok = _train(tmp_path, corpus, {"type": "sentencepiece", "vocab_size": 400})["tokenizer"]
    sp = spm.SentencePieceProcessor(model_file=tok["path"])
    for text in LOSSLESS + ROUND_TRIP[:-1]:
        ids = sp.encode(text)
        assert sp.unk_id() not in ids, text
        assert sp.decode(ids) == text
    nl = sp.piece_to_id("\n")
    assert nl != sp.unk_id() and nl in sp.encode("a\nb")  # newline is a piece, not bytes
    assert sp.id_to_piece(sp.encode("龘")).count("<0xE9>") == 1  # byte fallback


def test_sentencepiece_old_behaviour_is_an_explicit_choice(tmp_path, corpus):
    tok = _train(tmp_path, corpus, {"type": "sentencepiece", "vocab_size": 300,
                                    "byte_fallback": False, "normalization": "nmt_nfkc",
                                    "keep_whitespace": False})["tokenizer"]
    sp = spm.SentencePieceProcessor(model_file=tok["path"])
    assert sp.decode(sp.encode("one\ntwo")) == "one two"
    assert sp.unk_id() in sp.encode("龘")


def test_sentencepiece_too_small_vocab_is_one_config_error(tmp_path, corpus):
    with pytest.raises(ConfigError, match=r"vocab_size 280 is too small.*256 byte pieces"):
        _train(tmp_path, corpus, {"type": "sentencepiece", "vocab_size": 280})


def test_chunks_keep_newlines_and_respect_the_byte_limit():
    from curator.tokenize.train_tokenizer import _chunks

    doc = "".join(f"line {i} 数据\n" for i in range(200)) + "x" * 300 + "\nend"
    parts = list(_chunks(iter([doc, "", "short\ntext"]), 128))
    assert "".join(parts[:-1]) == doc and parts[-1] == "short\ntext"
    assert all(len(p.encode()) <= 128 for p in parts)
    assert sum(p.count("\n") for p in parts[:-1]) == doc.count("\n")


def test_sentencepiece_custom_ids(tmp_path, corpus):
    tok = _train(tmp_path, corpus, {"type": "sentencepiece", "vocab_size": 400, "pad_id": 3,
                                    "unk_id": 0, "bos_id": 1, "eos_id": 2})["tokenizer"]
    sp = spm.SentencePieceProcessor(model_file=tok["path"])
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (3, 0, 1, 2)
    assert tok["eod_id"] == 2


def test_bad_parameters_are_config_errors(tmp_path, corpus):
    with pytest.raises(ConfigError, match="init_vocab and init_merges"):
        _train(tmp_path, corpus, {"init_vocab": "x.json"})
    with pytest.raises(ConfigError, match="must differ"):
        _train(tmp_path, corpus, {"type": "sentencepiece", "vocab_size": 300, "pad_id": 1})
    with pytest.raises(ConfigError, match="no tokenizer"):
        spec_from_params(None, None, None, None, "stage 'x'")


def test_sparse_ids_size_the_token_dtype(tmp_path):
    from tokenizers import models, pre_tokenizers

    from curator.tokenize.megatron import token_dtype

    t = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1, "<|endoftext|>": 70_000},
                                   unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.save(str(tmp_path / "t.json"))
    enc = load_encoder(spec_from_params(str(tmp_path / "t.json"), None, None, None, "t"),
                       "<|endoftext|>")
    assert enc.vocab_size == 70_001 and enc.eod_id == 70_000
    assert token_dtype(enc.vocab_size).__name__ == "int32"
