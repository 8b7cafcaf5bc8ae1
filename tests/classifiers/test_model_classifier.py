"""model_classifier: scores equal a plain transformers forward pass, heads, filters, presets'
int-score rules, bad models, NaN, huge and empty documents, weights in the stage's key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification

from curator.base.errors import ConfigError, StageError
from curator.classifiers.model_classifier import ModelClassifier
from curator.models.tiny import build_classifier
from tests.classifiers.helpers_classifiers import corpus, mixed_texts, plain
from tests.filters.helpers_filters import run_pipeline, write_jsonl
from tests.helpers import run_cli


def stage(**params) -> ModelClassifier:
    return ModelClassifier.from_params(params)  # type: ignore[return-value]


def test_regression_scores_equal_plain_forward_pass(regression_model) -> None:
    texts = mixed_texts()
    assert len(texts[5]) >= 1_000_000
    got, m = stage(model=str(regression_model), batch_size=4).predict(texts)
    assert m.kind == "regression" and got.shape == (len(texts), 1)
    assert got.std() > 0.05  # scores that differ: 1e-3 is a real test
    np.testing.assert_allclose(got, plain(regression_model, texts), atol=1e-3)
    got16, _ = stage(model=str(regression_model), max_tokens=16).predict(texts)
    np.testing.assert_allclose(got16, plain(regression_model, texts, 16), atol=1e-3)
    assert np.abs(got16 - got).max() > 1e-3  # max_tokens changed what the model saw


def test_prefix_tokenization_equals_whole_text(regression_model) -> None:
    st = stage(model=str(regression_model), max_tokens=8)
    m = st.loaded()
    texts = mixed_texts()
    full = m.tokenizer(texts, truncation=True, max_length=8)["input_ids"]
    assert st.encode(m, texts) == full


def test_multiclass_label_and_probability(multiclass_model, tmp) -> None:
    texts = corpus(30, seed=5)
    logits = plain(multiclass_model, texts)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    names = [["low", "mid", "high"][j] for j in probs.argmax(axis=1).tolist()]
    assert len(set(names)) > 1
    src = write_jsonl(tmp / "in.jsonl", [{"id": f"d{i}", "text": t} for i, t in
                                         enumerate(texts)])
    keep = [max(set(names), key=names.count)]
    r = run_pipeline(tmp, [{"read_jsonl": {"paths": str(src)}},
                           {"model_classifier": {"model": str(multiclass_model),
                                                 "field": "q", "labels": keep,
                                                 "all_scores": True}}])
    kept = {d.id: d.meta for d in r.docs()}
    assert set(kept) == {f"d{i}" for i, n in enumerate(names) if n in keep}
    for i, n in enumerate(names):
        if f"d{i}" in kept:
            assert kept[f"d{i}"]["q"] == n
            assert kept[f"d{i}"]["q_prob"] == pytest.approx(probs[i].max(), abs=1e-3)
            assert sum(kept[f"d{i}"]["q_probs"].values()) == pytest.approx(1, abs=1e-4)
    rej = r.rejected("model_classifier")
    assert len(rej) == len(texts) - len(kept) > 0
    assert {x["rejected"]["reason"] for x in rej} == {"model_classifier:label"}


def test_regression_filters_and_annotate_only(regression_model, tmp) -> None:
    texts = corpus(40, seed=6)
    scores = plain(regression_model, texts)[:, 0]
    lo, hi = float(np.quantile(scores, 0.3)), float(np.quantile(scores, 0.8))
    src = write_jsonl(tmp / "in.jsonl", [{"id": f"d{i}", "text": t} for i, t in
                                         enumerate(texts)])
    r = run_pipeline(tmp / "a", [{"read_jsonl": {"paths": str(src)}},
                                 {"model_classifier": {"model": str(regression_model)}}])
    assert len(r.docs()) == len(texts)  # no filter: annotate only
    got = {d.id: d.meta["model_score"] for d in r.docs()}
    assert all(abs(got[f"d{i}"] - s) < 1e-3 for i, s in enumerate(scores))
    r = run_pipeline(tmp / "b", [{"read_jsonl": {"paths": str(src)}},
                                 {"model_classifier": {"model": str(regression_model),
                                                       "field": "edu", "min_score": lo,
                                                       "max_score": hi}}])
    want = {f"d{i}" for i, s in enumerate(scores) if lo <= s <= hi}
    assert {d.id for d in r.docs()} == want
    reasons = {x["id"]: x["rejected"]["reason"] for x in r.rejected("model_classifier")}
    assert reasons == {f"d{i}": ("model_classifier:min_score" if s < lo
                                 else "model_classifier:max_score")
                       for i, s in enumerate(scores) if f"d{i}" not in want}


def constant_model(folder: Path, texts: list[str], tokenizer, value: float) -> Path:
    """A regression model whose head always outputs ``value`` (zero weights, that bias)."""
    build_classifier(str(folder), texts, tokenizer=tokenizer, max_length=64)
    model = AutoModelForSequenceClassification.from_pretrained(str(folder))
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.fill_(value)
    model.save_pretrained(str(folder))
    return folder


@pytest.mark.parametrize("value", [-1.0, 0.49, 2.5, 2.51, 3.5, 4.5, 7.0])
def test_presets_int_score_rule_of_the_model_cards(value, tmp, texts, tokenizer) -> None:
    folder = constant_model(tmp / "m", texts, tokenizer, value)
    card_int = round(max(0, min(value, 5)))  # the cards' code (Python's round)
    docs = corpus(5, seed=9)
    src = write_jsonl(tmp / "in.jsonl", [{"id": f"d{i}", "text": t} for i, t in enumerate(docs)])
    r = run_pipeline(tmp / "hf", [{"read_jsonl": {"paths": str(src)}},
                                  {"model_classifier": {"model": str(folder),
                                                        "preset": "fineweb-edu",
                                                        "min_score": 3}}])
    out = r.docs()
    assert len(out) == (5 if card_int >= 3 else 0)  # FineWeb-Edu keeps int_score >= 3
    for d in r.rejected("model_classifier") or out:
        meta = d.meta if hasattr(d, "meta") else d["meta"]
        assert meta["edu_score_int"] == card_int
        assert meta["edu_score"] == pytest.approx(value, abs=1e-5)  # the raw score
    r = run_pipeline(tmp / "nv", [{"read_jsonl": {"paths": str(src)}},
                                  {"model_classifier": {"model": str(folder),
                                                        "preset": "fineweb-edu-nemotron"}}])
    meta = r.docs()[0].meta
    assert meta["edu_score_nemotron_int"] == card_int
    assert meta["edu_score_nemotron"] == pytest.approx(min(max(value, 0), 5), abs=1e-5)
    assert meta["edu_score_nemotron_label"] == ("high_quality" if value >= 2.5
                                                else "low_quality")


# -- bad models: one line naming the key ---------------------------------------------------------


def _broken(kind: str, tmp: Path, regression_model: Path, multiclass_model: Path) -> Path:
    out = tmp / kind
    if kind == "empty":
        out.mkdir()
    elif kind == "no_weights":
        out.mkdir()
        shutil.copy(regression_model / "config.json", out)
    elif kind == "no_tokenizer":
        shutil.copytree(regression_model, out)
        for f in out.glob("tokenizer*"):
            f.unlink()
    elif kind == "bare_encoder":  # an embedding model: no classification head
        from transformers import BertModel

        shutil.copytree(regression_model, out)
        model = AutoModelForSequenceClassification.from_pretrained(str(out))
        BertModel(model.config).save_pretrained(str(out))
    elif kind == "wrong_head":  # config says 1 output, the weights have 3
        shutil.copytree(multiclass_model, out)
        cfg = json.loads((out / "config.json").read_text())
        for k in ("id2label", "label2id"):
            cfg.pop(k, None)
        cfg["num_labels"] = 1
        (out / "config.json").write_text(json.dumps(cfg))
    return out


@pytest.mark.parametrize("kind,words", [
    ("empty", "no config.json"), ("no_weights", "no weights"),
    ("no_tokenizer", "no tokenizer"), ("bare_encoder", "not a sequence-classification"),
    ("wrong_head", "shapes do not match")])
def test_unusable_model_folder_is_one_line_naming_the_key(kind, words, tmp, regression_model,
                                                          multiclass_model) -> None:
    folder = _broken(kind, tmp, regression_model, multiclass_model)
    with pytest.raises(ConfigError, match=words) as e:
        stage(model=str(folder)).loaded()
    assert str(e.value).startswith("model_classifier.model: ")
    src = write_jsonl(tmp / "in.jsonl", [{"id": "a", "text": "the river"}])
    pipe = tmp / "p.yaml"
    pipe.write_text(json.dumps({"name": "x", "work_dir": str(tmp / "w"), "stages": [
        {"read_jsonl": {"paths": str(src)}}, {"model_classifier": {"model": str(folder)}}]}))
    p = run_cli("run", str(pipe), check=False, cwd=tmp)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    line = [x for x in p.stderr.splitlines() if "model_classifier.model" in x]
    assert len(line) == 1 and words in line[0], p.stderr


def test_parameters_that_do_not_fit_the_head(regression_model, multiclass_model) -> None:
    with pytest.raises(ConfigError, match=r"model_classifier.labels: .*regression head"):
        stage(model=str(regression_model), labels=["high"]).loaded()
    with pytest.raises(ConfigError, match=r"model_classifier.labels: \['top'\] not among"):
        stage(model=str(multiclass_model), labels=["top"]).loaded()
    with pytest.raises(ConfigError, match=r"model_classifier.preset: .*regression head"):
        stage(model=str(multiclass_model), preset="fineweb-edu").loaded()
    with pytest.raises(ConfigError, match=r"model_classifier.model: model folder .* not found"):
        stage(model="./no/such/model")
    with pytest.raises(ConfigError, match=r"model_classifier\.model: name a model"):
        stage()
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match=r"model_classifier\.device: cuda asked for"):
            stage(model=str(regression_model), device="cuda").loaded()
    with pytest.raises(ConfigError, match=r"model_classifier\.dtype: float16 is for GPUs"):
        stage(model=str(regression_model), device="cpu", dtype="float16").loaded()


def test_nan_scores_stop_the_stage(tmp, texts, tokenizer) -> None:
    folder = constant_model(tmp / "nan", texts, tokenizer, float("nan"))
    with pytest.raises(StageError, match="non-finite score"):
        list(stage(model=str(folder)).process_batch(
            [__import__("curator.base.document", fromlist=["Document"]).Document("a", "x")],
            None))  # type: ignore[arg-type]
    src = write_jsonl(tmp / "in.jsonl", [{"id": "a", "text": "the river"}])
    pipe = tmp / "p.yaml"
    pipe.write_text(json.dumps({"name": "x", "work_dir": str(tmp / "w"), "stages": [
        {"read_jsonl": {"paths": str(src)}}, {"model_classifier": {"model": str(folder)}}]}))
    p = run_cli("run", str(pipe), check=False, cwd=tmp)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "non-finite score" in p.stderr and "'a'" in p.stderr


def test_empty_and_1mb_documents_pass(regression_model, tmp) -> None:
    big = ("the river school " * 70_000)[:1_000_000]
    src = write_jsonl(tmp / "in.jsonl", [{"id": "empty", "text": ""},
                                         {"id": "big", "text": big},
                                         {"id": "small", "text": "the river"}])
    r = run_pipeline(tmp, [{"read_jsonl": {"paths": str(src)}},
                           {"model_classifier": {"model": str(regression_model)}}])
    got = {d.id: d for d in r.docs()}
    assert set(got) == {"empty", "big", "small"}  # read_jsonl keeps an empty text?
    assert len(got["big"].text) == 1_000_000
    ref = plain(regression_model, ["", big, "the river"])[:, 0]
    assert [got[k].meta["model_score"] for k in ("empty", "big", "small")] == \
        pytest.approx(ref.tolist(), abs=1e-3)


def test_new_weights_in_the_same_folder_rerun_the_stage(tmp, texts, tokenizer) -> None:
    folder = tmp / "model"
    build_classifier(str(folder), texts, tokenizer=tokenizer, max_length=64, seed=1)
    src = write_jsonl(tmp / "in.jsonl", [{"id": f"d{i}", "text": t}
                                         for i, t in enumerate(corpus(10, seed=4))])
    stages = [{"read_jsonl": {"paths": str(src)}},
              {"model_classifier": {"model": str(folder)}}]
    first = {d.id: d.meta["model_score"] for d in run_pipeline(tmp / "run", stages).docs()}
    again = run_pipeline(tmp / "run", stages)
    assert again.stage("model_classifier").get("skipped") or \
        {d.id: d.meta["model_score"] for d in again.docs()} == first
    build_classifier(str(folder), texts, tokenizer=tokenizer, max_length=64, seed=7)
    new = {d.id: d.meta["model_score"] for d in run_pipeline(tmp / "run", stages).docs()}
    assert set(new) == set(first)
    assert all(abs(new[k] - first[k]) > 1e-6 for k in first)
    ref = plain(folder, [t for t in corpus(10, seed=4)])[:, 0]
    assert [new[f"d{i}"] for i in range(10)] == pytest.approx(ref.tolist(), abs=1e-3)


def test_a_local_model_is_loaded_without_any_network_call(monkeypatch, tmp, texts,
                                                          tokenizer) -> None:
    """No lookup, no connection: a local folder is read with local_files_only."""
    import socket

    def refuse(*a, **k):
        raise AssertionError(f"network call: {a[:2]}")

    folder = build_classifier(str(tmp / "m"), texts, tokenizer=tokenizer, max_length=64)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    raw, m = stage(model=folder).predict(["the river school"])
    assert raw.shape == (1, 1) and m.kind == "regression"
