"""Tokenizer folders that Hugging Face and Megatron-LM load as they are.

The folder ``train_tokenizer`` writes loads with transformers' ``AutoTokenizer`` with the ids
and the end-of-document token of our shards, and Megatron-LM's own ``tools/preprocess_data.py``
(tag core_v0.16.1, vendored in ``megatron_lm/``, run against the installed megatron-core) writes
the same ``.bin/.idx`` bytes from it by each of its routes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from megatron.core.datasets.indexed_dataset import IndexedDataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from curator.base.errors import ConfigError, InputError
from tests.tokenize.helpers_tokenize import run_pipeline, stage_artifacts, write_corpus

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEGATRON_LM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "megatron_lm")
SOURCES = ("web", "wiki")


def _corpus(root) -> dict[str, tuple[str, list[dict]]]:
    out = {}
    for i, name in enumerate(SOURCES):
        p = os.path.join(root, f"{name}.jsonl")
        recs = write_corpus(p, name, 150 + 30 * i, seed=10 + i)
        # literal special-token text inside a document, and text a tokenizer may handle alone
        recs[3]["text"] = "before <|endoftext|> after"
        recs[4]["text"] = "   leading spaces\n\n\ttabs  and  doubles "
        with open(p, "w", encoding="utf-8") as f:
            for r in recs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        out[name] = (p, recs)
    return out


def _run(root, corpus, tok_params: dict, mega_params: dict | None = None) -> dict:
    """train_tokenizer on both sources, megatron_shards one prefix per source (one input
    file each, as preprocess_data.py sees them)."""
    stages = [*({"read_jsonl": {"paths": corpus[s][0], "source": s}, "id": s} for s in SOURCES),
              {"train_tokenizer": {"vocab_size": 420, "output_dir": str(root / "tok"),
                                   **tok_params}, "id": "tok", "inputs": list(SOURCES)},
              {"megatron_shards": {"output_dir": str(root / "mega"), **(mega_params or {})},
               "id": "mega"}]
    summary = run_pipeline(stages, root / "work")
    return {"tok": stage_artifacts(summary, "tok")["tokenizer"],
            "mega": stage_artifacts(summary, "mega"), "folder": str(root / "tok")}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return _corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def bpe(tmp_path_factory, corpus):
    return _run(tmp_path_factory.mktemp("bpe"), corpus, {})


@pytest.fixture(scope="module")
def sp(tmp_path_factory, corpus):
    # <EOD> listed so that Megatron's legacy SentencePieceTokenizer (which ends documents with
    # the <EOD> piece, not eos) finds it in the model; the default EOD stays eos (</s>)
    return _run(tmp_path_factory.mktemp("sp"), corpus,
                {"type": "sentencepiece", "vocab_size": 420, "special_tokens": ["<EOD>"]})


def _documents(prefix: str) -> list[list[int]]:
    ds = IndexedDataset(prefix)
    di = ds.document_indices
    return [[t for s in range(di[d], di[d + 1]) for t in ds[s].tolist()]
            for d in range(len(di) - 1)]


def test_bpe_folder_loads_with_autotokenizer_with_the_ids_of_the_shards(bpe, corpus):
    folder, tok = bpe["folder"], bpe["tok"]
    assert sorted(os.listdir(folder)) == ["merges.txt", "special_tokens_map.json",
                                          "tokenizer.json", "tokenizer_config.json",
                                          "vocab.json"]
    auto = AutoTokenizer.from_pretrained(folder)
    assert auto.eos_token == "<|endoftext|>" and auto.eos_token_id == tok["eod_id"] == 0
    assert len(auto) == tok["vocab_size"]
    # byte-level BPE has no unknown token and adds nothing around a text
    assert auto.bos_token is None and auto.unk_token is None and auto.pad_token is None
    fast = PreTrainedTokenizerFast.from_pretrained(folder)
    assert fast.eos_token_id == tok["eod_id"]
    bare = PreTrainedTokenizerFast(tokenizer_file=tok["path"])
    for src in SOURCES:
        (prefix,) = bpe["mega"]["prefixes"][src]
        docs = _documents(prefix)
        texts = [r["text"] for r in corpus[src][1]]
        assert len(docs) == len(texts)
        for text, ids in zip(texts, docs, strict=True):
            want = auto(text).input_ids  # what Megatron's HuggingFaceTokenizer calls
            assert want == bare(text).input_ids == fast(text).input_ids
            assert ids == (want + [auto.eos_token_id] if want else [])


def test_last_id_of_every_document_is_the_folder_eos(bpe):
    eos = AutoTokenizer.from_pretrained(bpe["folder"]).eos_token_id
    assert eos is not None
    for src in SOURCES:
        (prefix,) = bpe["mega"]["prefixes"][src]
        docs = _documents(prefix)
        non_empty = [d for d in docs if d]
        assert len(non_empty) > 100 and len(non_empty) < len(docs)  # some documents are empty
        assert all(d[-1] == eos for d in non_empty)
        # the literal "<|endoftext|>" inside a document is that token too, as in transformers
        assert docs[3].count(eos) == 2


def test_special_tokens_get_their_roles_by_name(tmp_path, corpus):
    specials = ["[BOS]", "[EOD]", "[PAD]", "[UNK]", "[MASK]", "[SEP]", "[CLS]", "<|tool|>"]
    run = _run(tmp_path, corpus, {"special_tokens": specials}, {"group_by": "none"})
    auto = AutoTokenizer.from_pretrained(run["folder"])
    ids = {t: i for i, t in enumerate(specials)}  # BPE gives special tokens ids 0, 1, ...
    assert auto.eos_token == "[EOD]" and auto.eos_token_id == run["tok"]["eod_id"] == 1
    assert (auto.bos_token_id, auto.pad_token_id, auto.unk_token_id, auto.mask_token_id,
            auto.sep_token_id, auto.cls_token_id) == (0, 2, 3, 4, 5, 6)
    assert auto.convert_tokens_to_ids("<|tool|>") == ids["<|tool|>"]
    assert "<|tool|>" in auto.all_special_tokens
    # a declared BOS is not added in front of a text: the shards' ids are the tokenizer's
    text = "a short text"
    assert auto(text).input_ids == Tokenizer.from_file(run["tok"]["path"]).encode(text).ids
    docs = _documents(run["mega"]["prefixes"]["all"][0])
    assert all(d[-1] == 1 for d in docs if d)
    with open(os.path.join(run["folder"], "special_tokens_map.json")) as f:
        assert json.load(f) == {"eos_token": "[EOD]", "bos_token": "[BOS]", "pad_token": "[PAD]",
                                "unk_token": "[UNK]", "sep_token": "[SEP]",
                                "cls_token": "[CLS]", "mask_token": "[MASK]",
                                "additional_special_tokens": ["<|tool|>"]}


def test_train_tokenizer_never_guesses_an_eod_and_megatron_shards_names_the_key(tmp_path,
                                                                              corpus):
    """No end-of-document name among the special tokens: the folder declares no EOS (it used
    to take the first special token), and megatron_shards refuses in one line."""
    with pytest.raises(ConfigError) as e:
        _run(tmp_path / "a", corpus, {"special_tokens": ["<|im_start|>", "<|im_end|>"]})
    msg = str(e.value)
    assert "stage 'mega'" in msg and "megatron_shards.eod_token" in msg
    assert "megatron_shards.append_eod: false" in msg and "\n" not in msg
    assert AutoTokenizer.from_pretrained(str(tmp_path / "a" / "tok")).eos_token is None
    assert not (tmp_path / "a" / "mega").exists() or not os.listdir(tmp_path / "a" / "mega")
    # naming it on either stage works; the folder then declares it
    run = _run(tmp_path / "b", corpus, {"special_tokens": ["<|im_start|>", "<|im_end|>"],
                                        "eod_token": "<|im_end|>"})
    assert AutoTokenizer.from_pretrained(run["folder"]).eos_token_id == run["tok"]["eod_id"] == 1


def _bare_tokenizer(folder) -> None:
    """A tokenizer.json with <|endoftext|> as a special token, and nothing saying it is EOS."""
    os.makedirs(folder, exist_ok=True)
    vocab = {"[UNK]": 0, "<|endoftext|>": 1, "<|eot|>": 2}
    for w in "the quick brown fox jumps over a lazy dog data".split():
        vocab[w] = len(vocab)
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.add_special_tokens(["<|endoftext|>", "<|eot|>"])
    t.save(os.path.join(folder, "tokenizer.json"))


def _pipeline_yaml(path, data, folder, mega: dict) -> None:
    doc = {"name": "t", "work_dir": str(path.parent / "work"), "progress": "off",
           "stages": [{"read_jsonl": {"paths": str(data)}, "id": "in"},
                      {"megatron_shards": {"tokenizer": str(folder), "group_by": "none",
                                           "output_dir": str(path.parent / "out"), **mega},
                       "id": "mega"}]}
    path.write_text(json.dumps(doc))


def test_megatron_shards_refuses_a_tokenizer_json_that_declares_no_eos(tmp_path):
    """What Megatron's HuggingFaceTokenizer would append None for: one line naming the key,
    through the curator command, instead of picking <|endoftext|> by its name."""
    folder = tmp_path / "tok"
    _bare_tokenizer(folder)
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in
                            enumerate(["the quick fox", "a lazy dog", "", "data data"])))
    env = dict(os.environ, PYTHONPATH=REPO)
    yml = tmp_path / "p.yaml"

    def run(mega: dict) -> subprocess.CompletedProcess:
        _pipeline_yaml(yml, data, folder, mega)
        return subprocess.run([sys.executable, "-m", "curator", "run", str(yml)],
                              capture_output=True, text=True, env=env, cwd=tmp_path)

    r = run({})
    assert r.returncode != 0 and "Traceback" not in r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("curator: error:")]
    assert "megatron_shards.eod_token" in line and str(folder / "tokenizer.json") in line
    assert "tokenizer.json declares none: no eos_token in a tokenizer_config.json" in line
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")

    # declared in the folder, the way transformers does: used, and a rerun sees an edit
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|eot|>"}))
    r = run({})
    assert r.returncode == 0, r.stderr
    assert AutoTokenizer.from_pretrained(str(folder)).eos_token_id == 2
    docs = _documents(str(tmp_path / "out" / "all_text_document"))
    assert docs == [[3, 4, 6, 2], [9, 10, 11, 2], [], [12, 12, 2]]
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    assert run({}).returncode == 0
    assert [d[-1] for d in _documents(str(tmp_path / "out" / "all_text_document")) if d] == \
        [1, 1, 1]
    # the two files transformers reads disagreeing: refused, not one of them picked
    (folder / "special_tokens_map.json").write_text(json.dumps({"eos_token": "<|eot|>"}))
    r = run({})
    assert r.returncode != 0 and "declares eos_token '<|endoftext|>' but" in r.stderr
    assert "Traceback" not in r.stderr
    # eod_token names it whatever the folder says; append_eod: false needs none
    os.unlink(folder / "special_tokens_map.json")
    os.unlink(folder / "tokenizer_config.json")
    assert run({"eod_token": "<|eot|>"}).returncode == 0
    assert [d[-1] for d in _documents(str(tmp_path / "out" / "all_text_document")) if d] == \
        [2, 2, 2]
    assert run({"append_eod": False}).returncode == 0


def test_declared_eos_not_in_the_vocabulary_is_an_input_error(tmp_path):
    from curator.tokenize.load import load_encoder, spec_from_params

    _bare_tokenizer(tmp_path)
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"eos_token": "</s>"}))
    with pytest.raises(InputError, match=r"special_tokens_map.json: eos_token '</s>' is not"):
        load_encoder(spec_from_params(str(tmp_path), None, None, None, "t"))
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"eos_token": 5}))
    with pytest.raises(InputError, match=r"special_tokens_map.json: eos_token 5 is not a token"):
        load_encoder(spec_from_params(str(tmp_path), None, None, None, "t2"))
    # the per-process cache sees an edited declaration (curator.run() twice in one process)
    spec = spec_from_params(str(tmp_path), None, None, None, "t3")
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"eos_token": "<|eot|>"}))
    assert load_encoder(spec).eod_id == 2
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    assert load_encoder(spec).eod_id == 1


# --- Megatron-LM's own preprocess_data.py ---------------------------------------------------

def _git_blob(path: str) -> str:
    with open(path, "rb") as f:
        data = f.read()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_vendored_megatron_lm_files_are_the_tagged_ones():
    with open(os.path.join(MEGATRON_LM, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    rows = re.findall(r"^\| `([0-9a-f]{40})` \| `([^`]+)` \|$", readme, re.M)
    assert len(rows) == 5
    for blob, rel in rows:
        assert _git_blob(os.path.join(MEGATRON_LM, rel)) == blob, rel


def _preprocess(tmp_path, name: str, src_jsonl: str, args: list[str]) -> str:
    """Run Megatron-LM's tools/preprocess_data.py; the prefix it wrote."""
    out = str(tmp_path / name)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, os.path.join(MEGATRON_LM, "tools", "preprocess_data.py"),
                        "--input", src_jsonl, "--output-prefix", out, "--append-eod",
                        "--workers", "1", *args],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    # preprocess_data.py exits 0 even when its workers fail (a 0-byte .bin, no .idx)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    return out + "_text_document"


def _same_files(ours: str, theirs: str) -> None:
    for ext in (".bin", ".idx"):
        with open(ours + ext, "rb") as a, open(theirs + ext, "rb") as b:
            mine, ref = a.read(), b.read()
        assert len(ref) > 0 and mine == ref, ext


BPE_ROUTES = {
    "gpt2bpe-legacy": lambda f: ["--tokenizer-type", "GPT2BPETokenizer", "--vocab-file",
                                 f"{f}/vocab.json", "--merge-file", f"{f}/merges.txt",
                                 "--legacy-tokenizer"],
    "huggingface": lambda f: ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", f],
    "huggingface-legacy": lambda f: ["--tokenizer-type", "HuggingFaceTokenizer",
                                     "--tokenizer-model", f, "--legacy-tokenizer"],
}


@pytest.mark.parametrize("route", sorted(BPE_ROUTES))
def test_preprocess_data_writes_the_same_bytes_from_the_bpe_folder(tmp_path, bpe, corpus,
                                                                   route):
    """The folder by HuggingFaceTokenizer gives the shards of train_tokenizer's artifact.
    GPT2BPETokenizer knows no special tokens: a document's literal "<|endoftext|>" is text to
    it, as to megatron_shards given the same vocab_file + merges_file."""
    src = "web"
    if route.startswith("gpt2bpe"):
        f = bpe["folder"]
        stages = [{"read_jsonl": {"paths": corpus[src][0], "source": src}, "id": src},
                  {"megatron_shards": {"vocab_file": f"{f}/vocab.json",
                                       "merges_file": f"{f}/merges.txt",
                                       "output_dir": str(tmp_path / "mega")}, "id": "mega"}]
        ours = stage_artifacts(run_pipeline(stages, tmp_path / "work"), "mega")
        # the same files as the folder's, but for the one document with the literal token
        a, b = _documents(ours["prefixes"][src][0]), _documents(bpe["mega"]["prefixes"][src][0])
        assert [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y] == [3]
    else:
        ours = bpe["mega"]
    theirs = _preprocess(tmp_path, src, corpus[src][0], BPE_ROUTES[route](bpe["folder"]))
    _same_files(ours["prefixes"][src][0], theirs)


SP_ROUTES = {
    # the new tokenizer system (the default): eod is the model's eos
    "sentencepiece": ["--tokenizer-type", "SentencePieceTokenizer"],
    "gpt-sentencepiece-legacy": ["--tokenizer-type", "GPTSentencePieceTokenizer",
                                 "--legacy-tokenizer"],
}


@pytest.mark.parametrize("route", sorted(SP_ROUTES))
def test_preprocess_data_writes_the_same_bytes_from_the_sentencepiece_model(tmp_path, sp,
                                                                            corpus, route):
    model = os.path.join(sp["folder"], "tokenizer.model")
    assert sp["tok"]["eod_id"] == 3  # eos
    theirs = _preprocess(tmp_path, "wiki", corpus["wiki"][0],
                         [*SP_ROUTES[route], "--tokenizer-model", model])
    _same_files(sp["mega"]["prefixes"]["wiki"][0], theirs)


def test_legacy_sentencepiece_tokenizer_ends_documents_with_eod_piece(tmp_path, sp, corpus):
    """Megatron's legacy SentencePieceTokenizer appends the <EOD> piece, not eos:
    megatron_shards with eod_token: <EOD> on the same model writes its bytes."""
    model = os.path.join(sp["folder"], "tokenizer.model")
    stages = [{"read_jsonl": {"paths": corpus["wiki"][0], "source": "wiki"}, "id": "wiki"},
              {"megatron_shards": {"tokenizer": model, "eod_token": "<EOD>",
                                   "output_dir": str(tmp_path / "mega")}, "id": "mega"}]
    mega = stage_artifacts(run_pipeline(stages, tmp_path / "work"), "mega")
    theirs = _preprocess(tmp_path, "wiki", corpus["wiki"][0],
                         ["--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model",
                          model, "--legacy-tokenizer"])
    _same_files(mega["prefixes"]["wiki"][0], theirs)
    docs = _documents(theirs)
    eod = int(np.unique([d[-1] for d in docs if d])[0])
    assert eod == mega["tokenizer"]["eod_id"] != sp["tok"]["eod_id"]
