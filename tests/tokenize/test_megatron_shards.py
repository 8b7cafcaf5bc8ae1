"""The .bin/.idx writer and merge against megatron-core's own IndexedDatasetBuilder (bytes) and
IndexedDataset (reading back)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from megatron.core.datasets.indexed_dataset import (
    IndexedDataset,
    IndexedDatasetBuilder,
    _IndexWriter,
)

from curator.base.errors import InputError
from curator.tokenize import megatron


def random_docs(rng: np.random.Generator, n: int, vocab: int, split: bool) -> list[list[list[int]]]:
    """Documents as lists of sequences; about 10% empty (no sequences)."""
    docs = []
    for _ in range(n):
        if rng.random() < 0.1:
            docs.append([])
            continue
        k = int(rng.integers(1, 5)) if split else 1
        docs.append([rng.integers(0, vocab, int(rng.integers(1, 40))).tolist() for _ in range(k)])
    return docs


def write_reference(prefix: str, docs: list[list[list[int]]], dtype: type) -> None:
    b = IndexedDatasetBuilder(prefix + ".bin", dtype=dtype)
    for d in docs:
        flat = [t for s in d for t in s]
        b.add_document(torch.tensor(flat, dtype=torch.int64), [len(s) for s in d])
    b.finalize(prefix + ".idx")


def write_ours(prefix: str, docs: list[list[list[int]]], dtype: type, batch: int = 7) -> None:
    w = megatron.IndexedWriter(prefix, dtype)
    for i in range(0, len(docs), batch):
        chunk = docs[i:i + batch]
        seqs = [s for d in chunk for s in d]
        toks = np.array([t for s in seqs for t in s], dtype=np.int64)
        w.add_batch(toks, np.array([len(s) for s in seqs]), np.array([len(d) for d in chunk]))
    w.close()


def read_bytes(prefix: str) -> tuple[bytes, bytes]:
    with open(prefix + ".bin", "rb") as a, open(prefix + ".idx", "rb") as b:
        return a.read(), b.read()


@pytest.mark.parametrize("vocab,split", [(50_000, False), (50_000, True), (100_000, False),
                                         (100_000, True)])
def test_bytes_identical_to_megatron_builder(tmp_path, vocab, split):
    rng = np.random.default_rng(vocab + split)
    docs = random_docs(rng, 200, vocab, split)
    dtype = megatron.token_dtype(vocab)
    assert dtype == (np.uint16 if vocab < 65500 else np.int32)
    ref, ours = str(tmp_path / "ref"), str(tmp_path / "ours")
    write_reference(ref, docs, dtype)
    write_ours(ours, docs, dtype)
    assert read_bytes(ours) == read_bytes(ref)

    # megatron-core reads back exactly the ids, sequence by sequence, document by document
    ds = IndexedDataset(ours)
    seqs = [s for d in docs for s in d]
    assert len(ds) == len(seqs)
    for i, s in enumerate(seqs):
        assert ds[i].tolist() == s
    expected_di = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
    assert ds.document_indices.tolist() == expected_di.tolist()
    assert ds[0].dtype == dtype


def test_empty_dataset_and_all_empty_documents(tmp_path):
    for name, docs in (("none", []), ("empties", [[], [], []])):
        ref, ours = str(tmp_path / f"ref-{name}"), str(tmp_path / f"ours-{name}")
        write_reference(ref, docs, np.uint16)
        write_ours(ours, docs, np.uint16)
        assert read_bytes(ours) == read_bytes(ref)
        idx = megatron.verify(ours)
        assert idx.documents == len(docs) and idx.tokens == 0


def test_pointers_past_2_31_bytes_match_megatron_arithmetic():
    """Offsets are int64: compare with megatron's own pointer loop on sequences whose byte
    offsets cross 2**31 and 2**32, without writing any data."""
    lengths = np.array([2**30, 2**30 - 3, 2**30 + 5, 2**29, 11, 2**30], dtype=np.int32)
    for dtype in (np.uint16, np.int32):
        ref = _IndexWriter("unused", dtype)._sequence_pointers(lengths.tolist())
        ours = megatron.sequence_pointers(lengths, np.dtype(dtype).itemsize)
        assert ours.dtype == np.int64
        assert ours.tolist() == ref
        assert ours[-1] > 2**32


def _fake_index(lengths: np.ndarray, doc_indices: list[int], dtype: type) -> megatron.Index:
    ptr = megatron.sequence_pointers(lengths, np.dtype(dtype).itemsize)
    return megatron.Index("fake", dtype, lengths.astype(np.int32), ptr,
                          np.array(doc_indices, dtype=np.int64))


def test_merged_index_rebases_pointers_past_2_31():
    """The merge's index arithmetic on parts of several GB each (index arrays only)."""
    a = _fake_index(np.array([2**30, 2**30, 7], dtype=np.int64), [0, 2, 3], np.uint16)
    b = _fake_index(np.array([5, 2**30, 2**30 - 1], dtype=np.int64), [0, 1, 1, 3], np.uint16)
    # take a's second document and all of b
    slices = [megatron.Slice("a", 1, 2), megatron.Slice("b", 0, 3)]
    raw = b"".join(megatron.merged_index([a, b], slices))
    lengths = [7, 5, 2**30, 2**30 - 1]
    ref = _IndexWriter("unused", np.uint16)._sequence_pointers(lengths)
    s = len(lengths)
    head = megatron.HEADER_SIZE
    assert raw[:head] == megatron.index_header(np.uint16, s, 5)
    got_len = np.frombuffer(raw, np.int32, s, head)
    got_ptr = np.frombuffer(raw, np.int64, s, head + 4 * s)
    got_doc = np.frombuffer(raw, np.int64, 5, head + 12 * s)
    assert got_len.tolist() == lengths
    assert got_ptr.tolist() == ref and ref[-1] > 2**31
    assert got_doc.tolist() == [0, 1, 2, 2, 4]  # b's empty document is kept


def test_merge_equals_builder_add_index_and_split_plan(tmp_path):
    rng = np.random.default_rng(7)
    parts_docs = [random_docs(rng, n, 1000, True) for n in (30, 0, 45, 12)]
    prefixes = []
    for i, docs in enumerate(parts_docs):
        p = str(tmp_path / f"part{i}")
        write_ours(p, docs, np.uint16)
        prefixes.append(p)
    # one output: identical to megatron's own concatenation (add_index)
    ref = str(tmp_path / "ref")
    b = IndexedDatasetBuilder(ref + ".bin", dtype=np.uint16)
    for p in prefixes:
        b.add_index(p)
    b.finalize(ref + ".idx")
    parts = [(p, megatron.read_index(p + ".idx").doc_token_ends()) for p in prefixes]
    (one,) = megatron.plan_split(parts, 0, 2)
    megatron.merge(one, str(tmp_path / "all"))
    assert read_bytes(str(tmp_path / "all")) == read_bytes(ref)

    # several outputs of ~300 bytes: each equals the builder fed the same documents
    all_docs = [d for docs in parts_docs for d in docs]
    plan = megatron.plan_split(parts, 300, 2)
    assert len(plan) > 3
    start = 0
    for k, slices in enumerate(plan):
        out = str(tmp_path / f"out{k}")
        res = megatron.merge(slices, out)
        n = res["documents"]
        mine = all_docs[start:start + n]
        exp = str(tmp_path / f"exp{k}")
        write_reference(exp, mine, np.uint16)
        assert read_bytes(out) == read_bytes(exp)
        size = os.path.getsize(out + ".bin")
        last = sum(len(s) for s in mine[-1]) * 2 if mine else 0
        if k < len(plan) - 1:  # closes at the first document reaching the target
            assert size >= 300 and size - last < 300
        start += n
    assert start == len(all_docs)


def test_verify_rejects_truncated_files(tmp_path):
    p = str(tmp_path / "x")
    write_ours(p, [[[1, 2, 3]], [[4]]], np.uint16)
    with open(p + ".bin", "r+b") as f:
        f.truncate(4)
    with pytest.raises(InputError, match="bytes but the index describes"):
        megatron.verify(p)
    with open(p + ".idx", "wb") as f:
        f.write(b"NOTANIDX" * 5)
    with pytest.raises(InputError, match="bad magic"):
        megatron.read_index(p + ".idx")


def test_invalid_unicode_is_repaired_and_counted_not_fatal(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    from curator.base.document import Document
    from curator.tokenize.load import Encoder
    from curator.tokenize.megatron_shards import PartWriter

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {"<|endoftext|>": 0, **{c: i + 1 for i, c in enumerate(sorted(alphabet))}}
    t = Tokenizer(models.BPE(vocab, []))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.add_special_tokens(["<|endoftext|>"])
    enc = Encoder("huggingface", "mem", t.get_vocab_size(), 0, t)
    w = PartWriter(str(tmp_path / "p"), enc)
    texts = ["fine", "bad \ud800 text", ""]
    w.add([Document(str(i), x, {}) for i, x in enumerate(texts)])
    stats = w.close()
    assert stats.repaired_documents == 1 and stats.documents == 3
    ds = IndexedDataset(str(tmp_path / "p"))
    fixed = "bad \ud800 text".encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    assert "\ufffd" in fixed
    assert ds[1].tolist() == t.encode(fixed).ids + [0]
    assert ds.document_indices.tolist() == [0, 1, 2, 2]


def test_part_writer_abort_leaves_no_file_and_close_publishes_ids(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    from curator.base.document import Document
    from curator.tokenize.load import Encoder
    from curator.tokenize.megatron_shards import PartWriter

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {"<|endoftext|>": 0, **{c: i + 1 for i, c in enumerate(sorted(alphabet))}}
    t = Tokenizer(models.BPE(vocab, []))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    enc = Encoder("huggingface", "mem", t.get_vocab_size(), 0, t)
    docs = [Document(f"d{i}", "some text", {}) for i in range(3)]
    w = PartWriter(str(tmp_path / "a" / "p"), enc)
    w.add(docs)
    w.abort()
    assert not os.listdir(tmp_path / "a")  # neither the part nor a temporary of its .ids
    w = PartWriter(str(tmp_path / "b" / "p"), enc)
    w.add(docs)
    w.close()
    assert sorted(os.listdir(tmp_path / "b")) == ["p.bin", "p.ids", "p.idx"]
    assert (tmp_path / "b" / "p.ids").read_text() == "d0\nd1\nd2\n"


def test_writer_refuses_ids_that_do_not_fit_the_dtype(tmp_path):
    w = megatron.IndexedWriter(str(tmp_path / "x"), np.uint16)
    with pytest.raises(ValueError, match="out of range for uint16"):
        w.add_batch(np.array([1, 70_000]), np.array([2]), np.array([1]))
    w.abort()
    assert not os.listdir(tmp_path)


def test_source_names_from_the_data_get_files_of_their_own(tmp_path):
    """``meta.source`` comes from the data: ``a/b``, ``a_b`` and ``a b`` used to share one part
    file per shard (FileNotFoundError traceback when the second was published), and a 300
    character name failed with "File name too long". Each source's dataset now holds exactly
    its own documents, under a name that stays in its folder."""
    import json as _json
    from pathlib import Path

    from tests.tokenize.helpers_tokenize import run_pipeline, stage_artifacts

    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    sources = ["a/b", "a_b", "a b", "../up", "x" * 300, "web"]
    data = tmp_path / "d.jsonl"
    with open(data, "w") as f:
        for i in range(60):
            text = " ".join(words[(i * 7 + k) % len(words)] for k in range(20))
            f.write(_json.dumps({"id": f"d{i}", "source": sources[i % len(sources)],
                                 "text": text}) + "\n")
    summary = run_pipeline([
        {"read_jsonl": {"paths": str(data)}},
        {"id": "tok", "train_tokenizer": {"type": "bpe", "vocab_size": 300,
                                          "special_tokens": ["<|endoftext|>"]}},
        {"id": "mega", "megatron_shards": {"output_dir": "megatron", "append_eod": True}},
    ], str(tmp_path / "w"))
    prefixes = stage_artifacts(summary, "mega")["prefixes"]
    assert sorted(prefixes) == sorted(sources)
    out = tmp_path / "w" / "megatron"
    seen = set()
    for k, source in enumerate(sources):
        (prefix,) = prefixes[source]
        assert os.path.dirname(prefix) == str(out) and prefix not in seen
        seen.add(prefix)
        ids = Path(prefix + ".ids").read_text().split()
        assert ids == [f"d{i}" for i in range(k, 60, len(sources))], source
