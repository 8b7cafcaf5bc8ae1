"""End to end: JSONL -> train_tokenizer -> megatron_shards -> blend, read back with
megatron-core's IndexedDataset and compared with an independent tokenization."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import orjson
import pytest
import sentencepiece as spm
from megatron.core.datasets.indexed_dataset import IndexedDataset
from tokenizers import Tokenizer, models, pre_tokenizers

from curator.base.errors import ConfigError
from curator.text import split_sentences
from curator.tokenize.blend import compute_blend
from tests.tokenize.helpers_tokenize import run_pipeline, stage_artifacts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_documents(prefixes: list[str]) -> tuple[list[list[list[int]]], list[str]]:
    """All documents (as lists of sequences) and ids of a source's prefixes, in order."""
    docs, ids = [], []
    for p in prefixes:
        ds = IndexedDataset(p)
        di = ds.document_indices
        for d in range(len(di) - 1):
            docs.append([ds[i].tolist() for i in range(di[d], di[d + 1])])
        with open(p + ".ids") as f:
            ids += f.read().splitlines()
    return docs, ids


def expected_docs(texts: list[str], encode, eod: int, split: bool) -> list[list[list[int]]]:
    """What Megatron's preprocess_data.py would write: empty sentences dropped, EOD at the
    end of the last sequence of each non-empty document."""
    out = []
    for t in texts:
        seqs = [encode(s) for s in (split_sentences(t) if split else [t])]
        seqs = [s for s in seqs if s]
        if seqs:
            seqs[-1] = seqs[-1] + [eod]
        out.append(seqs)
    return out


def test_bpe_pipeline_end_to_end(tmp_path, corpus):
    stages = [
        {"read_jsonl": {"paths": corpus["web"][0], "source": "web"}, "id": "web"},
        {"read_jsonl": {"paths": corpus["wiki"][0], "source": "wiki"}, "id": "wiki"},
        {"train_tokenizer": {"vocab_size": 800}, "inputs": ["web", "wiki"], "id": "tok"},
        {"megatron_shards": {"batch_size": 16, "sentence_stats": 0.25}, "id": "mega"},
        {"blend": {"weights": {"web": 3, "wiki": 1}}, "id": "blend"},
    ]
    summary = run_pipeline(stages, tmp_path / "work")
    mega = stage_artifacts(summary, "mega")
    tok = stage_artifacts(summary, "tok")["tokenizer"]
    t = Tokenizer.from_file(tok["path"])

    def enc(s):
        return t.encode(s, add_special_tokens=False).ids

    assert mega["token_dtype"] == "uint16" and sorted(mega["prefixes"]) == ["web", "wiki"]
    for src in ("web", "wiki"):
        recs = corpus[src][1]
        docs, ids = read_documents(mega["prefixes"][src])
        assert ids == [r["id"] for r in recs]  # the user's ids, in order
        exp = expected_docs([r["text"] for r in recs], enc, tok["eod_id"], split=False)
        assert docs == exp
        assert any(d == [] for d in docs)  # empty documents kept as empty documents
        assert mega["token_counts"][src] == sum(len(s) for d in exp for s in d)
        # sentence statistics from every 4th document (across batches of 16)
        st = mega["corpus_stats"][src]
        sample = range(0, len(recs), 4)
        n_sent = sum(len(split_sentences(recs[i]["text"])) for i in sample)
        assert st["sampled_documents"] == len(sample)
        assert st["avg_sentences_per_document"] == round(n_sent / len(sample), 2)
        assert st["avg_tokens_per_sentence"] == round(
            sum(len(s) for i in sample for s in exp[i]) / n_sent, 2)
        assert mega["prefixes"][src] == [str(tmp_path / "work" / "megatron" /
                                             f"{src}_text_document")]
    # histogram of document lengths in tokens, over both sources
    hist = mega["report_histograms"][0]
    lens = [sum(len(s) for s in d) for src in ("web", "wiki")
            for d in read_documents(mega["prefixes"][src])[0]]
    exp_bins = np.bincount([int(n).bit_length() for n in lens])
    assert hist["counts"] == exp_bins.tolist()
    assert hist["labels"][:3] == ["0", "1", "2-3"]
    per_source = {h["title"]: sum(h["counts"]) for h in mega["report_histograms"][1:]}
    assert per_source == {f"document length in tokens ({s})": len(corpus[s][1])
                          for s in ("web", "wiki")}

    # blend.json: weights 3:1, epochs against the corpus size, tokenizer carried along
    with open(stage_artifacts(summary, "blend")["blend"]) as f:
        blend = json.load(f)
    # 949,50,1 leaves the 160-document web source without a test sequence (Megatron would
    # loop forever): the smallest larger test share that fills it
    assert blend["split"] == "945,50,5" and blend["tokenizer"] == tok
    tokens = mega["token_counts"]
    assert blend["data_prefix"] == [0.75, mega["prefixes"]["web"][0],
                                    0.25, mega["prefixes"]["wiki"][0]]
    total = tokens["web"] + tokens["wiki"]
    rows = {r["source"]: r for r in blend["sources"]}
    assert rows["web"]["epochs"] == round(0.75 * total / tokens["web"], 6)
    assert rows["wiki"]["documents"] == len(corpus["wiki"][1])
    report = orjson.loads((tmp_path / "work" / "report.json").read_bytes())
    html = (tmp_path / "work" / "report.html").read_text()
    assert "tokens per source" in html and "document length in tokens" in html
    assert report["stages"][3]["counters"]["tokens"] == total


def test_sentencepiece_split_sentences_sized_prefixes(tmp_path, corpus):
    stages = [
        {"read_jsonl": {"paths": [corpus["web"][0]], "source": "web"}, "id": "web"},
        {"train_tokenizer": {"type": "sentencepiece", "vocab_size": 400}, "id": "tok"},
        {"megatron_shards": {"split_sentences": True, "prefix_size_mb": 0.002,
                             "output_dir": str(tmp_path / "out")}, "id": "mega"},
    ]
    summary = run_pipeline(stages, tmp_path / "work")
    tok = stage_artifacts(summary, "tok")["tokenizer"]
    mega = stage_artifacts(summary, "mega")
    sp = spm.SentencePieceProcessor(model_file=tok["path"])
    prefixes = mega["prefixes"]["web"]
    assert len(prefixes) > 2
    assert [os.path.basename(p) for p in prefixes] == [
        f"web-{k:05d}_text_document" for k in range(len(prefixes))]
    for p in prefixes[:-1]:
        assert os.path.getsize(p + ".bin") >= 2000
    docs, ids = read_documents(prefixes)
    recs = corpus["web"][1]
    assert ids == [r["id"] for r in recs]
    # the ids megatron-core's own SentencePiece tokenizer produces, and its EOD
    from megatron.core.tokenizers import MegatronTokenizer

    mt = MegatronTokenizer.from_pretrained(tokenizer_path=tok["path"],
                                           metadata_path={"library": "sentencepiece"})
    assert mt.eod == tok["eod_id"] == 3
    assert docs == expected_docs([r["text"] for r in recs], mt.tokenize, mt.eod, split=True)
    assert docs == expected_docs([r["text"] for r in recs], sp.encode, 3, split=True)
    assert any(len(d) > 1 for d in docs)  # several sentences -> several sequences
    n_sent = sum(len(split_sentences(r["text"])) for r in recs)
    assert mega["corpus_stats"]["web"]["sentences"] == n_sent


def _wordlevel(path: str, size: int) -> Tokenizer:
    vocab = {"[UNK]": 0, "<|endoftext|>": 1}
    for i in range(size - len(vocab)):
        vocab[f"w{i}"] = len(vocab)
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.save(path)
    return t


def test_int32_existing_tokenizer_json_on_dask(tmp_path):
    """A 70k vocabulary needs int32; an existing tokenizer folder (its EOS declared the way
    transformers 4 writes it, an AddedToken dict); a real Dask LocalCluster."""
    t = _wordlevel(str(tmp_path / "tokenizer.json"), 70_000)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"eos_token": {"__type": "AddedToken", "content": "<|endoftext|>", "special": True}}))
    rng = np.random.default_rng(3)
    paths = []
    for k in range(3):
        p = tmp_path / f"in{k}.jsonl"
        with open(p, "w") as f:
            for i in range(40):
                words = [f"w{int(x)}" for x in rng.integers(0, 69_990, int(rng.integers(0, 30)))]
                f.write(json.dumps({"id": f"{k}-{i}", "text": " ".join(words)}) + "\n")
        paths.append(str(p))
    stages = [{"read_jsonl": {"paths": paths, "source": "all"}, "id": "in"},
              {"megatron_shards": {"tokenizer": str(tmp_path), "group_by": "none",
                                   "sentence_stats": 0}, "id": "mega"}]
    summary = run_pipeline(stages, tmp_path / "work", {"type": "dask", "workers": 2})
    mega = stage_artifacts(summary, "mega")
    assert mega["token_dtype"] == "int32" and mega["tokenizer"]["vocab_size"] == 70_000
    (prefix,) = mega["prefixes"]["all"]
    ds = IndexedDataset(prefix)
    assert ds[0].dtype == np.int32
    texts = [json.loads(line)["text"] for p in paths
             for line in open(p).read().splitlines()]  # noqa: SIM115
    docs, _ = read_documents([prefix])
    assert docs == expected_docs(texts, lambda s: t.encode(s).ids, 1, split=False)
    assert max(max(s) for d in docs for s in d) > 65500
    assert mega["corpus_stats"]["all"]["avg_tokens_per_sentence"] is None


def test_compute_blend_weights_epochs_and_errors():
    tokens = {"a": 1000, "b": 3000, "c": 0}
    pt = {"a": [("pa", 1000)], "b": [("pb1", 1000), ("pb2", 2000)], "c": [("pc", 0)]}
    dp, rows = compute_blend(tokens, pt, epochs={"a": 2, "b": 1})
    # 2 epochs of a (2000 tokens) + 1 of b (3000): shares 0.4 / 0.6, split over b's prefixes
    assert dp == [0.4, "pa", 0.2, "pb1", 0.4, "pb2"]
    r = {x["source"]: x for x in rows}
    assert r["a"]["epochs"] == 2 and r["b"]["epochs"] == 1 and r["c"]["weight"] == 0
    dp, rows = compute_blend(tokens, pt, weights={"a": 1, "b": 1}, total_tokens=8000)
    r = {x["source"]: x for x in rows}
    assert r["a"]["epochs"] == 4 and r["b"]["epochs"] == round(4000 / 3000, 6)
    dp, _ = compute_blend(tokens, pt)  # natural mixture
    assert dp[0::2] == [0.25, 0.25, 0.5]
    with pytest.raises(ConfigError, match="unknown source"):
        compute_blend(tokens, pt, weights={"x": 1})
    with pytest.raises(ConfigError, match="zero weight"):
        compute_blend(tokens, pt, weights={"c": 1})


def test_cli_train_tokenizer_and_tokenize(tmp_path, corpus):
    env = dict(os.environ, PYTHONPATH=REPO)
    out = tmp_path / "tok"
    r = subprocess.run([sys.executable, "-m", "curator", "train-tokenizer", corpus["web"][0],
                        corpus["wiki"][0], "-o", str(out), "--vocab-size", "400"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["path"] == str(out / "tokenizer.json") and (out / "merges.txt").exists()
    r = subprocess.run([sys.executable, "-m", "curator", "tokenize", corpus["web"][0],
                        "--tokenizer", str(out), "-o", str(tmp_path / "mega"), "--single"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    src, ntok, prefix = r.stdout.strip().split("\t")
    assert src == "all" and prefix == str(tmp_path / "mega" / "all_text_document")
    t = Tokenizer.from_file(info["path"])
    docs, _ = read_documents([prefix])
    exp = expected_docs([x["text"] for x in corpus["web"][1]], lambda s: t.encode(s).ids,
                        info["eod_id"], split=False)
    assert docs == exp and int(ntok) == sum(len(s) for d in exp for s in d)
    # GPT-2 style vocab.json + merges.txt give the very same files
    r = subprocess.run([sys.executable, "-m", "curator", "tokenize", corpus["web"][0],
                        "--vocab-file", str(out / "vocab.json"), "--merges-file",
                        str(out / "merges.txt"), "-o", str(tmp_path / "mega2"), "--single"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for ext in (".bin", ".idx"):
        assert (tmp_path / "mega2" / f"all_text_document{ext}").read_bytes() == (
            tmp_path / "mega" / f"all_text_document{ext}").read_bytes()
    r = subprocess.run([sys.executable, "-m", "curator", "tokenize", corpus["web"][0],
                        "--tokenizer", str(tmp_path / "nope.model"), "-o", str(tmp_path / "x")],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 1 and "nope.model: SentencePiece model not found" in r.stderr
    assert "Traceback" not in r.stderr


def test_vocab_merges_params_publish_a_tokenizer_json_and_eod_is_required(tmp_path, corpus):
    base = [{"read_jsonl": {"paths": corpus["wiki"][0]}, "id": "in"},
            {"train_tokenizer": {"vocab_size": 400}, "id": "tok"}]
    tok = stage_artifacts(run_pipeline(base, tmp_path / "w1"), "tok")["tokenizer"]
    stages = [base[0], {"megatron_shards": {"vocab_file": tok["vocab_file"],
                                            "merges_file": tok["merges_file"]}, "id": "mega"}]
    mega = stage_artifacts(run_pipeline(stages, tmp_path / "w2"), "mega")
    used = mega["tokenizer"]
    assert used["vocab_file"] == tok["vocab_file"] and used["eod_id"] == tok["eod_id"]
    text = corpus["wiki"][1][5]["text"] + " tail"
    assert Tokenizer.from_file(used["path"]).encode(text).ids == Tokenizer.from_file(
        tok["path"]).encode(text).ids
    # as Megatron's GPT2BPETokenizer (which knows no special tokens), a literal <|endoftext|>
    # in a document is text there; tokenizer.json (the HF route) has it as the special token
    lit = "a <|endoftext|> b"
    assert tok["eod_id"] not in Tokenizer.from_file(used["path"]).encode(lit).ids
    assert tok["eod_id"] in Tokenizer.from_file(tok["path"]).encode(lit).ids
    # a tokenizer without an EOD token: a clear error before anything is tokenized
    _wordlevel(str(tmp_path / "plain.json"), 100)
    t = Tokenizer.from_file(str(tmp_path / "plain.json"))
    vocab = {k: v for k, v in t.get_vocab().items() if k != "<|endoftext|>"}
    t2 = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t2.save(str(tmp_path / "noeod.json"))
    stages = [base[0], {"megatron_shards": {"tokenizer": str(tmp_path / "noeod.json")},
                        "id": "mega"}]
    with pytest.raises(ConfigError, match="no end-of-document token"):
        run_pipeline(stages, tmp_path / "w3")
    assert not (tmp_path / "w3" / "stages" / "mega" / "parts").exists()


def test_group_stats_merge_sums_parts_and_summary_averages():
    from curator.tokenize.megatron_shards import TOKEN_BINS, GroupStats

    a = GroupStats(part="p/0/web", documents=3, empty_documents=1, sequences=2, sentences=4,
                   sampled_documents=2, sampled_tokens=10, tokens=12, repaired_documents=1,
                   hist=[1, 0, 2] + [0] * (TOKEN_BINS - 3))
    b = GroupStats(part="p/1/web", documents=1, sequences=1, sentences=1, sampled_documents=1,
                   sampled_tokens=5, tokens=5, hist=[0, 0, 0, 1] + [0] * (TOKEN_BINS - 4))
    total = a.merge(b)
    assert total.part == "" and a.documents == 3  # a new total; the parts are unchanged
    assert total.hist[:5] == [1, 0, 2, 1, 0] and len(total.hist) == TOKEN_BINS
    assert total.summary() == {
        "documents": 4, "empty_documents": 1, "repaired_documents": 1, "sequences": 3,
        "sentences": 5, "sampled_documents": 3, "sampled_tokens": 15, "tokens": 17,
        "avg_tokens_per_document": 4.25, "avg_tokens_per_sentence": 3.0,
        "avg_sentences_per_document": 1.67}
    assert GroupStats().summary()["avg_tokens_per_sentence"] is None


def test_killed_in_merge_resumes_from_the_saved_tokenize_results(tmp_path, corpus,
                                                                  monkeypatch):
    """A run killed in the merge phase resumes from its saved tokenize results (typed
    ``TokenizedShard``, read back as they were written): same corpus_stats as a clean run.
    Results saved by other code are under another fingerprint and recomputed
    (tests/core/test_phase_results.py)."""
    from curator.tokenize import megatron_shards as ms

    stages = [{"read_jsonl": {"paths": corpus["web"][0], "source": "web"}, "id": "web"},
              {"train_tokenizer": {"vocab_size": 400}, "id": "tok"},
              {"megatron_shards": {"batch_size": 32}, "id": "mega"}]

    def crash(self, job):  # failure injection: killed in the merge phase
        raise RuntimeError("injected crash")

    with monkeypatch.context() as m:
        m.setattr(ms._MergePrefix, "__call__", crash)
        with pytest.raises(RuntimeError, match="injected crash"):
            run_pipeline(stages, tmp_path / "w")
    phases = list((tmp_path / "w" / "stages" / "mega" / "_phases" / "tokenize").glob("*.pkl"))
    assert phases
    inodes = {p: p.stat().st_ino for p in phases}
    resumed = stage_artifacts(run_pipeline(stages, tmp_path / "w"), "mega")
    assert {p: p.stat().st_ino for p in phases} == inodes  # used, not recomputed
    clean = stage_artifacts(run_pipeline(stages, tmp_path / "clean"), "mega")
    assert resumed["corpus_stats"] == clean["corpus_stats"]
    assert resumed["corpus_stats"]["web"]["documents"] == len(corpus["web"][1])
