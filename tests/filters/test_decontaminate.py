from __future__ import annotations

import random
import re

import pytest

from curator.base.errors import ConfigError, InputError
from curator.filters.decontaminate import Decontaminate, cut_windows
from curator.filters.synthetic import prose
from tests.filters.helpers_filters import run_pipeline, write_jsonl
from tests.helpers import stage_error

EVAL_VOCAB = [
    "zorbia", "quantum", "lemma", "vertex", "prime", "sum", "integral", "photon",
    "enzyme", "treaty", "dynasty",
    "glacier", "orbit", "velocity", "theorem",
    "matrix",
]


def _eval_text(rng: random.Random, n: int = 20) -> str:
    return " ".join(rng.choice(EVAL_VOCAB) for _ in range(n)).capitalize() + "?"


def _grams(text: str, n: int = 13) -> set[tuple[str, ...]]:
    """Independent reference: word n-grams of lowercased alphanumeric runs."""
    w = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


@pytest.fixture
def corpus(tmp):
    rng = random.Random(1)
    questions = [_eval_text(rng) for _ in range(30)]
    write_jsonl(tmp / "eval" / "qa.jsonl",
                [{"question": q, "answer": "forty two", "idx": i} for i, q in enumerate(questions)])
    passages = [_eval_text(rng, 30) for _ in range(5)]
    (tmp / "eval" / "passages.txt").write_text("\n".join(passages) + "\n")
    common = "Licensed under the creative commons attribution share alike license version " \
             "three point zero unported for everyone"
    (tmp / "eval" / "boiler.txt").write_text(common + "\n")
    docs, planted = [], {}
    for i in range(120):
        text = prose(rng, 3)
        kind = "clean"
        if i % 10 == 0:  # contaminated with a QA question, long enough to keep fragments
            q = questions[i // 10]
            text = prose(rng, 4) + "\n\n" + q + "\n\n" + prose(rng, 4)
            kind = "qa"
        elif i % 10 == 5 and i < 50:
            text = passages[i // 10]  # a whole passage: nothing survives the cut
            kind = "passages"
        elif i % 10 == 7:  # too common to be contamination (in > max_matches docs)
            text = text + "\n\n" + common
            kind = "common"
        planted[f"d{i}"] = kind
        docs.append({"id": f"d{i}", "text": text})
    write_jsonl(tmp / "in.jsonl", docs)
    return {"docs": {d["id"]: d["text"] for d in docs}, "planted": planted,
            "eval": questions + passages, "common": common}


def _stages(tmp, **params):
    return [{"read_jsonl": {"paths": str(tmp / "in.jsonl"), "shard_size_mb": 0.05}},
            {"decontaminate": {"tasks": {"qa": str(tmp / "eval" / "qa.jsonl"),
                                         "passages": str(tmp / "eval" / "passages.txt"),
                                         "boiler": str(tmp / "eval" / "boiler.txt")},
                               "fields": ["question"], "max_matches": 5, **params}}]


def test_cut_mode_removes_planted_contamination_and_leaves_clean_text(tmp, corpus) -> None:
    run = run_pipeline(tmp, _stages(tmp))
    assert len(run.runner.results["read_jsonl"]["shards"]) > 1
    out = {d.id: d for d in run.docs()}
    planted, docs = corpus["planted"], corpus["docs"]
    eval_grams = set().union(*(_grams(t) for t in corpus["eval"]))
    for did, kind in planted.items():
        if kind in ("clean", "common"):
            assert out[did].text == docs[did]  # untouched, byte for byte
            assert "decontaminated" not in out[did].meta
        elif kind == "qa":
            d = out[did]
            assert d.meta["decontaminated"]["tasks"] == ["qa"]
            assert not (_grams(d.text) & eval_grams)
            assert len(d.text) < len(docs[did]) and len(d.text) > 400
        else:
            assert did not in out
    assert not any(_grams(d.text) & eval_grams for d in out.values())
    rej = {r["id"]: r["rejected"] for r in run.rejected("decontaminate")}
    assert {k for k, v in planted.items() if v == "passages"} == set(rej)
    assert all(r["reason"] == "decontaminate:too_short" and r["tasks"] == ["passages"]
               for r in rej.values())
    st = run.stage("decontaminate")
    n_qa = sum(v == "qa" for v in planted.values())
    n_pass = sum(v == "passages" for v in planted.values())
    assert st["counters"]["decontam:qa:docs"] == n_qa
    assert st["counters"]["decontam:passages:docs"] == n_pass
    assert "decontam:boiler:docs" not in st["counters"]  # too common: ignored
    art = st["artifacts"]["decontamination"]
    assert art["tasks"]["qa"]["docs_matched"] == n_qa
    assert art["tasks"]["qa"]["eval_texts"] == 30
    assert art["ignored_common_ngrams"] > 0
    table = st["artifacts"]["report_tables"][0]
    assert [r[0] for r in table["rows"]] == ["qa", "passages", "boiler"]
    assert "no contamination" not in table["title"]
    assert (tmp / "work" / "report.html").read_text().count("Decontamination") >= 1


def test_drop_mode_and_split_documents(tmp, corpus) -> None:
    run = run_pipeline(tmp, _stages(tmp, mode="drop"))
    out = {d.id for d in run.docs()}
    bad = {k for k, v in corpus["planted"].items() if v in ("qa", "passages")}
    assert out == set(corpus["planted"]) - bad
    run2 = run_pipeline(tmp / "b", _stages(tmp, split_documents=True))
    parts = [d for d in run2.docs() if "parent_id" in d.meta]
    qa = {k for k, v in corpus["planted"].items() if v == "qa"}
    assert {d.meta["parent_id"] for d in parts} == qa
    assert all(d.id.startswith(d.meta["parent_id"] + "#") for d in parts)


def test_nothing_matched_is_reported(tmp, corpus, capfd) -> None:
    (tmp / "eval" / "other.txt").write_text(
        "an evaluation question that appears nowhere in the training data at all ok\n")
    stages = _stages(tmp)
    stages[1]["decontaminate"]["tasks"] = {"other": str(tmp / "eval" / "other.txt")}
    run = run_pipeline(tmp, stages)
    assert len(run.docs()) == len(corpus["docs"])
    table = run.stage("decontaminate")["artifacts"]["report_tables"][0]
    assert "no contamination found" in table["title"]
    assert table["rows"][0][3] == 0
    assert "no 13-gram of other found" in capfd.readouterr().err


def test_dask_cluster_gives_the_same_output(tmp, corpus) -> None:
    local = run_pipeline(tmp / "l", _stages(tmp))
    dask = run_pipeline(tmp / "d", _stages(tmp), executor={"type": "dask", "workers": 2})
    assert [(d.id, d.text) for d in dask.docs()] == [(d.id, d.text) for d in local.docs()]


def test_cut_windows_and_config_errors() -> None:
    text = "aaa bbb ccc ddd eee fff ggg"
    frags, cuts = cut_windows(text, [(2, 2)], 1)  # words ccc ddd, one char each side
    assert cuts == 1 and frags == ["aaa bbb", "eee fff ggg"]
    assert "stages[1].decontaminate.tasks: Dictionary should have at least 1 item" in \
        stage_error("decontaminate", {"tasks": {}})
    assert "stages[1].decontaminate.tasks.bad name[key]: String should match pattern" in \
        stage_error("decontaminate", {"tasks": {"bad name": "x.txt"}})
    for key in ("n", "min_ngram_words"):
        assert f"stages[1].decontaminate.{key}: Input should be greater than or equal to 1" \
            in stage_error("decontaminate", {"tasks": {"qa": "x.txt"}, key: 0})
    with pytest.raises(ConfigError, match=r"tasks\.qa: file not found: /nonexistent/qa\.jsonl"):
        Decontaminate.from_params({"tasks": {"qa": "/nonexistent/qa.jsonl"}})


def test_resume_reuses_phases_and_verifies_their_files(tmp, corpus) -> None:
    first = run_pipeline(tmp, _stages(tmp))
    sdir = tmp / "work" / "stages" / "decontaminate"
    before = [(d.id, d.text) for d in first.docs()]
    npz = sdir / "artifacts" / "qa.npz"
    stamp = (npz.stat().st_ino, npz.stat().st_mtime_ns)
    (sdir / "_SUCCESS.json").unlink()  # as if the run died before the stage finished
    again = run_pipeline(tmp, _stages(tmp))
    assert [(d.id, d.text) for d in again.docs()] == before
    assert (npz.stat().st_ino, npz.stat().st_mtime_ns) == stamp  # n-gram phase not redone
    (sdir / "_SUCCESS.json").unlink()
    npz.write_bytes(b"truncated")
    with pytest.raises(InputError, match=r"qa\.npz' is missing or has changed"):
        run_pipeline(tmp, _stages(tmp))
