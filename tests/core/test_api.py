"""The Python API: ``curator.run`` / ``curator.load`` (the example in docs/extending.md), and
decorated functions that stay callable on a document."""

from __future__ import annotations

import pickle

import pytest

import curator
from curator import Document, filter
from curator.base.errors import ConfigError
from tests.core.helpers_core import make_corpus, min_words, upper_first

PIPE = """\
name: api
work_dir: {wd}
stages:
  - read_jsonl: {{paths: '{data}'}}
  - tests.core.helpers_core:min_words: {{n: 10}}
  - write_jsonl: {{path: out}}
"""


def _pipeline(tmp_path):
    recs = make_corpus(str(tmp_path / "a.jsonl"), 60, seed=5)
    (tmp_path / "p.yaml").write_text(PIPE.format(wd=tmp_path / "unused",
                                                 data=tmp_path / "a.jsonl"))
    return recs


def test_run_from_python_with_overrides_and_resume(tmp_path):
    recs = _pipeline(tmp_path)
    wd = tmp_path / "w"
    res = curator.run(str(tmp_path / "p.yaml"),
                      overrides={"work_dir": str(wd), "stages.min_words.n": 20},
                      executor="local")
    assert res.work_dir == str(wd) and (wd / "report.json").exists()
    assert not (tmp_path / "unused").exists()
    expect = sorted(r["id"] for r in recs if len(r["text"].split()) >= 20)
    assert 0 < len(expect) < len(recs)
    assert sorted(d.id for d in res.documents()) == expect          # last stage
    assert sorted(d.id for d in res.documents("min_words")) == expect
    st = res.stage("min_words")
    assert (st["docs_in"], st["docs_out"]) == (len(recs), len(expect))
    assert st["rejected"] == {"min_words": len(recs) - len(expect)}
    again = curator.run(str(tmp_path / "p.yaml"),
                        overrides=[f"work_dir={wd}", "stages.min_words.n=20"])
    assert all(s["skipped"] for s in again.stages)                  # resumed: nothing redone
    assert sorted(d.id for d in again.documents()) == expect


def test_run_with_an_executor_mapping_and_a_log_function(tmp_path):
    _pipeline(tmp_path)
    lines: list[str] = []
    res = curator.run(str(tmp_path / "p.yaml"), overrides={"work_dir": str(tmp_path / "w")},
                      executor={"type": "local"}, log=lines.append)
    assert res.summary["executor"]["type"] == "local"
    assert any("min_words" in line and "removed" in line for line in lines)


def test_errors_raise_instead_of_exiting(tmp_path):
    _pipeline(tmp_path)
    with pytest.raises(ConfigError) as e:
        curator.run(str(tmp_path / "p.yaml"), overrides={"stages.min_words.n": "many"})
    assert "stages[1]" in str(e.value) and "n" in str(e.value)
    with pytest.raises(ConfigError):
        curator.load(str(tmp_path / "missing.yaml"))
    pipe = curator.load(str(tmp_path / "p.yaml"))
    assert [n.id for n in pipe.nodes] == ["read_jsonl", "min_words", "write_jsonl"]
    assert pipe.imported_modules() == ["tests.core.helpers_core"]


def test_string_override_values_stay_strings(tmp_path):
    _pipeline(tmp_path)
    pipe = curator.load(str(tmp_path / "p.yaml"), overrides={"name": "10"})
    assert pipe.config.name == "10"


def test_decorated_filter_is_still_the_function():
    doc = Document(id="d", text="one two three")
    assert min_words(doc) is False                  # as written: n defaults to 10
    assert min_words(doc, n=3) is True
    assert min_words(doc=doc, n=4) is False
    stage = min_words.from_params({"n": 2})         # and still the stage class
    assert stage.check(doc) is None and isinstance(stage, min_words)
    assert pickle.loads(pickle.dumps(stage)).kwargs == {"n": 2}
    out = upper_first(Document(id="m", text="hello"))
    assert out.text == "Hello"


def test_decorated_function_on_text_works_as_written():
    @filter
    def short(text: str, max_chars: int = 5) -> bool:
        return len(text) <= max_chars

    assert short("abc") is True and short("abcdefg") is False and short("abcdefg", 10)
    assert short.from_params({"max_chars": 3}).kwargs == {"max_chars": 3}
