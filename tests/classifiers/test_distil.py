"""Distilling a teacher: model_classifier scores a sample, train_quality_classifier learns a
fastText student from the score (``labels_from`` + ``threshold``), reports held-out ROC AUC
and Spearman against the teacher, and refuses a useless student."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.stats import spearmanr

from curator.base.errors import ConfigError
from curator.classifiers.quality import HQ, holdout_unit, hq_scores, load_model, normalize, ranks
from curator.classifiers.train_quality_classifier import TrainQualityClassifier
from curator.filters.synthetic import documents
from tests.filters.helpers_filters import run_pipeline, write_jsonl
from tests.helpers import ROOT, run_cli


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
    from curator.base.document import Document

    assert st.label(Document("a", "x", {"s": {"edu": 3}})) == HQ  # nested, >= threshold
    assert st.label(Document("a", "x", {"s": {"edu": 2.99}})) != HQ
    assert st.label(Document("a", "x", {"s": {"edu": "high"}})) is None  # not a number
    assert st.label(Document("a", "x", {})) is None


def test_ranks_average_ties_like_scipy() -> None:
    from scipy.stats import rankdata

    x = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 1.0])
    assert (ranks(x) + 1).tolist() == rankdata(x).tolist()


# -- the CLI: curator train-quality-classifier --labels-from FIELD --threshold X ---------------


def _scored(tmp: Path, n: int = 600, seed: int = 41, random_scores: bool = False) -> list[dict]:
    """Synthetic pages with a teacher score: prose 4-5, the rest 1-2 (or unrelated noise).
    Some records store the score flat (write_jsonl's default), some in ``meta`` (flat: false),
    some lack it, have NaN (Python's json writes it), a boolean or a string."""
    rng = random.Random(seed)
    recs = []
    for i, d in enumerate(documents(n, seed=seed, prose_share=0.5)):
        score = rng.random() * 5 if random_scores else \
            (4.0 if d["kind"] == "prose" else 1.0) + rng.random()
        rec = {"id": d["id"], "text": d["text"]}
        if i % 40 == 1:
            pass  # no score
        elif i % 40 == 2:
            rec["edu_score"] = float("nan")
        elif i % 40 == 3:
            rec["edu_score"] = True
        elif i % 40 == 4:
            rec["edu_score"] = "high"
        elif i % 2:
            rec["meta"] = {"edu_score": score}
        else:
            rec["edu_score"] = score
        recs.append(rec)
    import json

    with open(tmp / "scored.jsonl", "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")  # json, not orjson: NaN written as NaN
    return recs


def _score_of(rec: dict) -> float | None:
    v = rec.get("edu_score", rec.get("meta", {}).get("edu_score"))
    return float(v) if isinstance(v, float) and v == v else None


def test_cli_labels_from_learns_the_teachers_score(tmp) -> None:
    import json

    recs = _scored(tmp)
    p = run_cli("train-quality-classifier", "--labels-from", "edu_score", "--threshold", "3",
                "--input", "scored.jsonl", "-o", "m/student.bin", "--split", "0.3", cwd=tmp)
    out = json.loads(p.stdout)
    scored = [r for r in recs if _score_of(r) is not None]
    assert out["docs_without_score"] == len(recs) - len(scored) > 0
    assert out["docs_labelled"] + out["docs_too_short"] == len(scored)
    assert out["auc"] >= 0.85 and out["spearman"] >= 0.4
    # recomputed here: the held-out documents by the CLI's hash, scipy's Spearman, the model
    held = [r for r in scored if holdout_unit(0, r["id"]) < 0.3
            and len(normalize(r["text"]).split()) >= 5]
    assert out["holdout_docs"] == out["spearman_docs"] == len(held)
    assert out["holdout_hq"] == sum(_score_of(r) >= 3 for r in held)
    student = hq_scores(load_model(str(tmp / "m" / "student.bin")),
                        [normalize(r["text"]) for r in held])
    rho = spearmanr(student, [_score_of(r) for r in held]).statistic
    assert out["spearman"] == pytest.approx(rho, abs=1e-4)
    assert f"held-out ROC AUC {out['auc']}, Spearman {out['spearman']} vs edu_score" in p.stderr


def test_cli_refuses_a_useless_student(tmp) -> None:
    _scored(tmp, n=400, seed=42, random_scores=True)
    args = ("train-quality-classifier", "--labels-from", "edu_score", "--threshold", "2.5",
            "--input", "scored.jsonl", "-o", "s.bin", "--split", "0.3")
    p = run_cli(*args, cwd=tmp, check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr and not (tmp / "s.bin").exists()
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("curator: error: train-quality-classifier: held-out ROC AUC 0.")
    assert "< min_auc 0.6 (--labels-from edu_score >= 2.5 vs below)" in line
    assert "--min-auc 0" in line
    p = run_cli(*args, "--min-auc", "0", cwd=tmp)  # accepted when asked for
    assert (tmp / "s.bin").is_file()
    import json

    assert json.loads(p.stdout)["auc"] < 0.6


@pytest.mark.parametrize("case,extra,rc,words", [
    ("no_such_field", ["--labels-from", "quality", "--threshold", "3"], 1,
     "--labels-from quality: none of the 600 records has a finite number in 'quality'"),
    ("all_below", ["--labels-from", "edu_score", "--threshold", "9"], 1,
     "--labels-from edu_score --threshold 9: all"),
    ("all_above", ["--labels-from", "edu_score", "--threshold", "-1"], 1,
     "score at or above it"),
    ("no_threshold", ["--labels-from", "edu_score"], 2, "--labels-from needs --threshold"),
    ("nan_threshold", ["--labels-from", "edu_score", "--threshold", "nan"], 2,
     "--threshold nan"),
    ("with_sources", ["--labels-from", "edu_score", "--threshold", "3", "--positive",
                      "scored.jsonl"], 2, "drop --positive/--negative"),
    ("threshold_alone", ["--threshold", "3", "--positive", "scored.jsonl", "--negative",
                         "scored.jsonl"], 2, "go with --labels-from"),
])
def test_cli_labels_from_bad_input_is_one_line(tmp, case, extra, rc, words) -> None:
    _scored(tmp)
    inp = [] if "--positive" in extra else ["--input", "scored.jsonl"]
    p = run_cli("train-quality-classifier", *extra, *inp, "-o", "x.bin", cwd=tmp, check=False)
    assert p.returncode == rc and "Traceback" not in p.stderr, p.stderr
    assert words in p.stderr.strip().splitlines()[-1]
    assert not (tmp / "x.bin").exists()


def test_cli_labels_from_names_a_broken_record(tmp) -> None:
    _scored(tmp, n=50)
    with open(tmp / "scored.jsonl", "a") as f:
        f.write('{"id": "cut", "text": "half a rec\n')
    p = run_cli("train-quality-classifier", "--labels-from", "edu_score", "--threshold", "3",
                "--input", "scored.jsonl", "-o", "x.bin", cwd=tmp, check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("curator: error: ") and \
        line.endswith("/scored.jsonl:51: not a JSON record")
