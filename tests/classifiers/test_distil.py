"""Distilling a teacher: model_classifier scores a sample, train_quality_classifier learns a
fastText student from the score (``labels_from`` + ``threshold``), reports held-out ROC AUC
and Spearman against the teacher, and refuses a useless student."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers import ROOT, run_cli
from helpers_filters import run_pipeline, write_jsonl
from scipy.stats import spearmanr

from curator.classifiers.quality import HQ, holdout_unit, hq_scores, load_model, normalize, ranks
from curator.classifiers.train_quality_classifier import TrainQualityClassifier
from curator.core.errors import ConfigError
from curator.filters.synthetic import documents


@pytest.fixture(scope="module")
def teacher() -> Path:
    """The bundled demo teacher (scripts/make_tiny_models.py: a tiny BERT fitted to score
    synthetic prose 4, code and tables 2, the rest 1), so no test trains a transformer."""
    return ROOT / "data" / "models" / "tiny-edu-classifier"


def _stages(tmp, teacher, **params):
    return [{"read_jsonl": {"paths": str(tmp / "docs.jsonl")}},
            {"model_classifier": {"model": str(teacher), "preset": "fineweb-edu"}},
            {"id": "student", "train_quality_classifier": {
                "labels_from": "edu_score", "threshold": 2.5, "holdout": 0.3, **params}}]


def test_student_learns_the_teachers_score(tmp, teacher) -> None:
    docs = documents(500, seed=41, prose_share=0.5)
    write_jsonl(tmp / "docs.jsonl", docs)
    run = run_pipeline(tmp, _stages(tmp, teacher))
    m = run.stage("student")["artifacts"]["quality_metrics"]
    assert m["auc"] >= 0.9 and m["spearman"] >= 0.6
    # the same numbers recomputed here: held-out docs by the stage's hash, scipy's Spearman
    scored = {d.id: d for d in run.docs("model_classifier")}
    held = [scored[d["id"]] for d in docs
            if holdout_unit(0, d["id"]) < 0.3 and len(normalize(d["text"]).split()) >= 5]
    assert m["holdout_docs"] == m["spearman_docs"] == len(held)
    student = hq_scores(load_model(run.stage("student")["artifacts"]["quality_model"]),
                        [normalize(d.text) for d in held])
    rho = spearmanr(student, [d.meta["edu_score"] for d in held]).statistic
    assert m["spearman"] == pytest.approx(rho, abs=1e-4)
    table = run.stage("student")["artifacts"]["report_tables"][0]
    assert dict(zip(table["columns"], table["rows"][0]))["Spearman vs edu_score"] == \
        m["spearman"]
    # every shard is passed on (labels come from a score, not from a source)
    assert len(run.docs("student")) == len(docs)
    assert m["holdout_hq"] == sum(d.meta["edu_score"] >= 2.5 for d in held)


def test_a_useless_student_is_refused(tmp, teacher) -> None:
    """A 'teacher' score that has nothing to do with the text: no student can learn it."""
    rng = random.Random(5)
    docs = [{**d, "teacher": rng.random() * 5} for d in documents(400, seed=42)]
    write_jsonl(tmp / "docs.jsonl", docs)
    stages = [{"read_jsonl": {"paths": str(tmp / "docs.jsonl")}},
              {"id": "student", "train_quality_classifier": {
                  "labels_from": "teacher", "threshold": 2.5, "holdout": 0.3}}]
    (tmp / "p.yaml").write_text(yaml.safe_dump({"name": "d", "work_dir": "work",
                                                "stages": stages}))
    p = run_cli("run", "p.yaml", cwd=tmp, check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("curator: error: stage 'student': held-out ROC AUC 0.")
    assert "(teacher >= 2.5 vs below)" in line


def test_labels_from_parameters() -> None:
    # built from Python, a rule over several keys is a ConfigError naming the stage and key
    with pytest.raises(ConfigError, match=r"^train_quality_classifier: .*threshold: labels_from "
                       "needs"):
        TrainQualityClassifier(labels_from="edu_score")
    with pytest.raises(ConfigError, match="not both"):
        TrainQualityClassifier(labels_from="s", threshold=3, positive_sources=["wiki"])
    with pytest.raises(ConfigError, match="or set labels_from"):
        TrainQualityClassifier()
    st = TrainQualityClassifier.from_params({"labels_from": "s.edu", "threshold": 3})
    from curator.core.document import Document

    assert st.label(Document("a", "x", {"s": {"edu": 3}})) == HQ  # nested, >= threshold
    assert st.label(Document("a", "x", {"s": {"edu": 2.99}})) != HQ
    assert st.label(Document("a", "x", {"s": {"edu": "high"}})) is None  # not a number
    assert st.label(Document("a", "x", {})) is None


def test_ranks_average_ties_like_scipy() -> None:
    from scipy.stats import rankdata

    x = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 1.0])
    assert (ranks(x) + 1).tolist() == rankdata(x).tolist()
