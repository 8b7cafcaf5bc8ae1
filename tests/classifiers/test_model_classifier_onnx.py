"""model_classifier's CPU backends: ``onnx`` gives the plain transformers forward pass's scores
within 1e-3; ``onnx-int8`` stays within the drift documented in docs/models.md; the export
cache is keyed on the weights' content, written whole, and a damaged file is exported again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from curator.base.errors import ConfigError
from curator.classifiers.model_classifier import ModelClassifier
from curator.filters.synthetic import documents
from curator.models import hf
from curator.models.tiny import build_classifier
from tests.classifiers.helpers_classifiers import corpus, mixed_texts, plain
from tests.filters.helpers_filters import run_pipeline, write_jsonl
from tests.helpers import ROOT, require, run_cli

require("onnxruntime")

#: onnx-int8's drift bounds (docs/models.md "CPU backends"): on the fitted demo model, in score
#: units of its 0-5 scale; on the tests' random tiny models (weights of std 0.5, a hard case
#: for int8), relative to the scores' standard deviation.
INT8_FITTED_MAX = 0.05
#: (Bounds leave room: Spearman measured 0.976-0.996 over the vocabularies that tokenizers'
#: trainer used to give in different processes; train_wordpiece is deterministic since.)
INT8_RANDOM_MEAN_REL = 0.15
INT8_RANDOM_MAX_REL = 1.0
INT8_SPEARMAN = 0.95


def stage(**params) -> ModelClassifier:
    return ModelClassifier.from_params(params)  # type: ignore[return-value]


@pytest.mark.parametrize("head", ["regression", "multiclass"])
def test_onnx_scores_equal_plain_forward_pass(head, regression_model, multiclass_model,
                                              tmp) -> None:
    folder = regression_model if head == "regression" else multiclass_model
    texts = mixed_texts()  # empty, 1 MB, truncated, whitespace runs, sorted out of order
    ref = plain(folder, texts)
    assert ref.std() > 0.05
    got, m = stage(model=str(folder), backend="onnx", batch_size=4).predict(texts, str(tmp))
    assert m.backend == "onnx" and m.model is None and m.session is not None
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=1e-3)
    got16, _ = stage(model=str(folder), backend="onnx", max_tokens=16).predict(texts, str(tmp))
    np.testing.assert_allclose(got16, plain(folder, texts, 16), atol=1e-3)


@pytest.mark.parametrize("head", ["regression", "multiclass"])
def test_onnx_int8_drift_on_random_tiny_models(head, regression_model, multiclass_model,
                                               tmp) -> None:
    folder = regression_model if head == "regression" else multiclass_model
    texts = corpus(200, seed=11)
    ref = plain(folder, texts)
    got, m = stage(model=str(folder), backend="onnx-int8").predict(texts, str(tmp))
    assert m.backend == "onnx-int8"
    d = np.abs(got - ref)
    assert d.max() > 1e-3  # int8 really ran (not the fp32 graph)
    assert d.mean() <= INT8_RANDOM_MEAN_REL * ref.std()
    assert d.max() <= INT8_RANDOM_MAX_REL * ref.std()
    for j in range(ref.shape[1]):
        assert spearmanr(got[:, j], ref[:, j]).statistic >= INT8_SPEARMAN
    if head == "multiclass":
        assert (got.argmax(axis=1) == ref.argmax(axis=1)).mean() >= 0.9


def test_onnx_int8_drift_on_the_fitted_demo_model(tmp) -> None:
    folder = ROOT / "data" / "models" / "tiny-edu-classifier"
    texts = [d["text"] for d in documents(300, seed=7, prose_share=0.5)]
    ref = stage(model=str(folder)).predict(texts)[0][:, 0]  # torch fp32 = plain, tested
    got = stage(model=str(folder), backend="onnx-int8").predict(texts, str(tmp))[0][:, 0]
    d = np.abs(got - ref)
    assert 1e-4 < d.max() <= INT8_FITTED_MAX
    ints = np.clip(got, 0, 5).round() != np.clip(ref, 0, 5).round()
    assert ints.mean() <= 0.01  # FineWeb-Edu's int score: at most 1% of pages move a step


def _run(tmp: Path, folder: Path, where: str, backend: str = "onnx"):
    src = tmp / "in.jsonl"
    if not src.exists():
        write_jsonl(src, [{"id": f"d{i}", "text": t} for i, t in enumerate(corpus(12, seed=4))])
    return run_pipeline(tmp / where, [{"read_jsonl": {"paths": str(src)}},
                                      {"model_classifier": {"model": str(folder),
                                                            "backend": backend}}])


def test_export_cache_is_keyed_on_the_weights_and_never_trusted_damaged(tmp, texts,
                                                                        tokenizer) -> None:
    folder = tmp / "model"
    build_classifier(str(folder), texts, tokenizer=tokenizer, max_length=64, seed=1)
    want = plain(folder, corpus(12, seed=4))[:, 0]

    def scores(run) -> list[float]:
        got = {d.id: d.meta["model_score"] for d in run.docs()}
        return [got[f"d{i}"] for i in range(12)]

    assert scores(_run(tmp, folder, "run")) == pytest.approx(want.tolist(), abs=1e-3)
    cache = tmp / "run" / "work" / "cache" / "model_classifier" / "onnx"
    files = sorted(cache.glob("*.onnx"))
    assert len(files) == 1 and (cache / (files[0].name + ".sha256")).is_file()
    assert not list(cache.glob(".export-*"))  # the temporary folder went
    mine = cache / "mine.onnx"  # a file curator did not write: pruning leaves it
    mine.write_bytes(b"user's")
    # new weights in the same folder: the stage reruns on a new export that follows them
    build_classifier(str(folder), texts, tokenizer=tokenizer, max_length=64, seed=7)
    want = plain(folder, corpus(12, seed=4))[:, 0]
    assert scores(_run(tmp, folder, "run")) == pytest.approx(want.tolist(), abs=1e-3)
    assert mine.read_bytes() == b"user's"
    mine.unlink()
    (now,) = cache.glob("*.onnx")  # the old weights' export went (the stage's own folder)
    assert now != files[0] and len(list(cache.iterdir())) == 2  # and its .sha256
    # a damaged export (cut short; or the same size with other bytes, which ONNX Runtime
    # might still load): exported again, never run. A fresh work_dir shares no cache.
    newest = now
    for damage in ("truncate", "flip"):
        data = newest.read_bytes()
        if damage == "truncate":
            newest.write_bytes(data[:1000])
        else:
            i = len(data) - 200  # inside the last weights
            newest.write_bytes(data[:i] + bytes([data[i] ^ 0x40]) + data[i + 1:])
        hf._CACHE.clear()  # a new process: the file is read again (not the loaded session)
        st = stage(model=str(folder), backend="onnx")
        got, _ = st.predict(corpus(12, seed=4), str(cache))
        np.testing.assert_allclose(got[:, 0], want, atol=1e-3)
        digest = (cache / (newest.name + ".sha256")).read_text().strip()
        assert hashlib.sha256(newest.read_bytes()).hexdigest() == digest  # whole again


def test_backend_parameters(regression_model, tmp) -> None:
    with pytest.raises(ConfigError, match=r"^model_classifier: .*backend: onnx runs on CPU"):
        ModelClassifier(model=str(regression_model), backend="onnx", device="cuda")
    with pytest.raises(ConfigError, match=r"^model_classifier: .*dtype: bfloat16 is for "
                       "backend: torch"):
        ModelClassifier(model=str(regression_model), backend="onnx-int8", dtype="bfloat16")
    from curator.models import hf as hf_mod  # the loader itself, for callers without Params

    with pytest.raises(ConfigError, match=r"^m\.backend: onnx runs on CPU"):
        hf_mod.load_classifier(str(regression_model), key="m.model", backend="onnx",
                               device="cuda")
    # `curator validate` catches it before any model is loaded
    pipe = tmp / "p.yaml"
    pipe.write_text(json.dumps({"name": "x", "work_dir": str(tmp / "w"), "stages": [
        {"read_jsonl": {"paths": "in.jsonl"}},
        {"model_classifier": {"model": str(regression_model), "backend": "onnx",
                              "device": "cuda"}}]}))
    p = run_cli("validate", str(pipe), cwd=tmp, check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "backend: onnx runs on CPU" in p.stderr.strip().splitlines()[-1]


def test_onnx_through_the_cli(tmp, regression_model) -> None:
    """A user's run: `curator run` with backend onnx-int8 annotates every document, and a
    second run reuses the stage's output."""
    src = write_jsonl(tmp / "in.jsonl", [{"id": f"d{i}", "text": t}
                                         for i, t in enumerate(corpus(20, seed=8))])
    pipe = tmp / "p.yaml"
    pipe.write_text(json.dumps({"name": "x", "work_dir": str(tmp / "w"), "stages": [
        {"read_jsonl": {"paths": str(src)}},
        {"model_classifier": {"model": str(regression_model), "backend": "onnx-int8",
                              "field": "q"}},
        {"write_jsonl": {"path": "out", "compression": "none"}}]}))
    run_cli("run", str(pipe), cwd=tmp)
    out = [json.loads(x) for f in sorted((tmp / "w" / "out").glob("*.jsonl"))
           for x in f.read_text().splitlines()]
    ref = plain(regression_model, corpus(20, seed=8))[:, 0]
    got = {r["id"]: r["q"] for r in out}
    assert len(got) == 20
    assert max(abs(got[f"d{i}"] - ref[i]) for i in range(20)) <= \
        INT8_RANDOM_MAX_REL * ref.std()
    assert list((tmp / "w" / "cache" / "model_classifier" / "onnx").glob("*.onnx-int8.onnx"))
