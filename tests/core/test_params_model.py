"""Every built-in stage declares one parameter model (``class Params(StageParams)``): typed,
defaulted fields with a help line each, constraints as types, and errors naming the YAML key."""

from __future__ import annotations

import pytest

from curator.core.params import StageParams, field_rows
from curator.core.registry import builtin_stages, resolve
from tests.helpers import run_cli, stage_error

#: Stage families whose built-in stages must declare ``Params`` (the lead extends this).
FAMILIES = ("curator.filters.", "curator.classifiers.", "curator.io.")


def _family_stages() -> list[str]:
    return sorted(n for n, target in builtin_stages().items() if target.startswith(FAMILIES))


def test_every_builtin_stage_declares_params() -> None:
    names = _family_stages()
    assert len(names) >= 43, names  # 26 rules, 4 presets, 8 other filters, 2 + 5 io/classifiers
    for name in names:
        cls = resolve(name)
        assert isinstance(cls.Params, type) and issubclass(cls.Params, StageParams), name
        assert cls.params_model() is cls.Params, name
        assert "__init__" not in vars(cls), f"{name}: parameters belong in Params, not __init__"
        rows = field_rows(cls.Params)
        assert rows, name
        for row in rows:
            assert row["help"].endswith("."), (name, row["name"], row["help"])
            assert "\n" not in row["help"], (name, row["name"])


def test_a_constraint_error_names_the_yaml_key(tmp_path) -> None:
    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: x.jsonl}\n"
        "  - gopher_quality: {mode: annotat}\n"
        "  - word_count_filter: {min_words: -1}\n")
    p = run_cli("validate", "p.yaml", cwd=tmp_path, check=False)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1, p.stderr
    assert err[0].startswith("curator: error: p.yaml:5: stages[1].gopher_quality.mode: "), err
    assert "'filter' or 'annotate'" in err[0]
    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: x.jsonl}\n"
        "  - word_count_filter: {min_words: -1}\n")
    p = run_cli("validate", "p.yaml", cwd=tmp_path, check=False)
    assert "p.yaml:5: stages[1].word_count_filter.min_words: Input should be greater than or " \
        "equal to 0 (got -1)" in p.stderr


#: (stage, parameters, what the error names): one case per constraint of the converted stages
#: that no family test checks already. Each fails when its constraint is removed (the
#: pipeline would then be accepted).
CONSTRAINTS = [
    ('read_jsonl', {'paths': 'x', 'max_doc_mb': 0},
     'read_jsonl.max_doc_mb: Input should be greater than 0'),
    ('read_jsonl', {'paths': 'x', 'shard_size_mb': -1},
     'read_jsonl.shard_size_mb: Input should be greater than or equal to 0'),
    ('read_jsonl', {'paths': 'x', 'ids': 'renumber'},
     "read_jsonl.ids: Input should be 'keep' or 'rewrite'"),
    ('read_parquet', {'paths': 'x', 'max_doc_mb': -2},
     'read_parquet.max_doc_mb: Input should be greater than 0'),
    ('read_parquet', {'paths': 'x', 'row_groups_per_shard': 0},
     'read_parquet.row_groups_per_shard: Input should be greater than or equal to 1'),
    ('read_hf', {'path': ''},
     'read_hf.path: String should have at least 1 character'),
    ('read_hf', {'path': 'a/b', 'max_doc_mb': 0},
     'read_hf.max_doc_mb: Input should be greater than 0'),
    ('read_hf', {'path': 'a/b', 'config_name': 'x'},
     'read_hf.config_name: unknown key'),
    ('write_jsonl', {'path': 'out', 'compression': 'bz2'},
     'write_jsonl.compression: Input should be'),
    ('write_parquet', {'path': 'out', 'row_group_size': 0},
     'write_parquet.row_group_size: Input should be greater than or equal to 1'),
    ('quality_filter', {'threshold': 1.5},
     'quality_filter.threshold: Input should be less than or equal to 1'),
    ('quality_filter', {'batch_size': 0},
     'quality_filter.batch_size: Input should be greater than or equal to 1'),
    ('train_quality_classifier', {'positive_sources': []},
     'train_quality_classifier: Value error, positive_sources: name at least one source'),
    ('train_quality_classifier', {'positive_sources': ['w'], 'holdout': 1.0},
     'train_quality_classifier.holdout: Input should be less than 1'),
    ('train_quality_classifier', {'positive_sources': ['w'], 'holdout': -0.1},
     'train_quality_classifier.holdout: Input should be greater than or equal to 0'),
    ('train_quality_classifier', {'positive_sources': ['w'], 'bucket': 0},
     'train_quality_classifier.bucket: Input should be greater than or equal to 1'),
    ('train_quality_classifier', {'positive_sources': ['w'], 'dim': 0},
     'train_quality_classifier.dim: Input should be greater than or equal to 1'),
    ('train_quality_classifier', {'positive_sources': ['w'], 'min_auc': 1.5},
     'train_quality_classifier.min_auc: Input should be less than or equal to 1'),
    ('quality_buckets', {'scores': []},
     'quality_buckets.scores: List should have at least 1 item'),
    ('quality_buckets', {'weights': {'other': 2.0}},
     "quality_buckets: Value error, invert/weights: ['other'] are not in scores"),
    ('quality_buckets', {'invert': ['other']},
     "invert/weights: ['other'] are not in scores"),
    ('quality_buckets', {'resolution': 1},
     'quality_buckets.resolution: Input should be greater than or equal to 2'),
    ('quality_buckets', {'resolution': 1001},
     'quality_buckets.resolution: Input should be less than or equal to 1000'),
    ('quality_buckets', {'buckets': 0},
     'quality_buckets.buckets: Input should be greater than or equal to 1'),
    ('quality_buckets', {'resolution': 4},
     'buckets (5) must be <= resolution (4)'),
    ('quality_buckets', {'sample_per_shard': 0},
     'quality_buckets.sample_per_shard: Input should be greater than or equal to 1'),
    ('fix_unicode', {'normalization': 'NFKD'},
     'fix_unicode: Value error, normalization NFKD folds full-width'),
    ('fix_unicode', {'max_decode_length': 0},
     'fix_unicode.max_decode_length: Input should be greater than or equal to 1'),
    ('language_id', {'min_score': 1.2},
     'language_id.min_score: Input should be less than or equal to 1'),
    ('pii_redact', {'kinds': ['ssn']},
     'pii_redact.kinds[0]: Input should be'),
    ('pii_redact', {'min_score': -0.5},
     'pii_redact.min_score: Input should be greater than or equal to 0'),
    ('c4_quality', {'min_num_sentences': -2},
     'c4_quality.min_num_sentences: Input should be greater than or equal to -1'),
    ('c4_quality', {'max_word_length': -5},
     'c4_quality.max_word_length: Input should be greater than or equal to -1'),
    ('select', {},
     'select.expr: required key is missing'),
    ('alpha_words_filter', {'min_ratio': 1.1},
     'alpha_words_filter.min_ratio: Input should be less than or equal to 1'),
    ('short_lines_filter', {'max_length': -1},
     'short_lines_filter.max_length: Input should be greater than or equal to 0'),
    ('symbol_word_ratio_filter', {'max_ratio': -0.1},
     'symbol_word_ratio_filter.max_ratio: Input should be greater than or equal to 0'),
    ('dup_lines_filter', {'unit': 'words'},
     "dup_lines_filter.unit: Input should be 'lines' or 'paragraphs'"),
    ('dup_ngram_filter', {'n': 0},
     'dup_ngram_filter.n: Input should be greater than or equal to 1'),
    ('top_ngram_filter', {'max_ratio': 2},
     'top_ngram_filter.max_ratio: Input should be less than or equal to 1'),
    ('bad_words_filter', {'words': ['x'], 'max_count': -1},
     'bad_words_filter.max_count: Input should be greater than or equal to 0'),
    ('nemo_english', {'overrides': {'word_count': {'min_words': -1}}},
     'nemo_english.overrides.word_count.min_words: Input should be greater than or equal to 0'),
    ('nemo_english', {'overrides': {'top_2gram': {'max_ratio': 1.5}}},
     'nemo_english.overrides.top_2gram.max_ratio: Input should be less than or equal to 1'),
    ('gopher_repetition', {'overrides': {'dup_5gram': {'m': 4}}},
     'gopher_repetition.overrides.dup_5gram.m: unknown key'),
]


@pytest.mark.parametrize(("kind", "params", "expect"), CONSTRAINTS,
                         ids=[f"{k}-{'-'.join(p)}" for k, p, _ in CONSTRAINTS])
def test_each_constraint_is_a_one_line_error_naming_the_key(kind, params, expect) -> None:
    err = stage_error(kind, params)
    assert expect in err and "\n" not in err, err


def test_read_hf_name_is_still_the_yaml_key_and_the_fingerprinted_one() -> None:
    """``name`` (the dataset config) is a Stage attribute, so the field is ``config_name``;
    YAML and the stage's parameters (its fingerprint) still say ``name``."""
    stage = resolve("read_hf").from_params({"path": "owner/ds", "name": "sample-10BT"})
    assert stage.config_name == "sample-10BT" and stage.name == "read_hf"
    assert stage.params["name"] == "sample-10BT" and "config_name" not in stage.params


def test_derived_state_comes_from_setup_and_params_stay_as_given() -> None:
    """``setup`` derives what the stage runs with; ``stage.params`` (the fingerprint) keeps the
    validated values as the YAML gave them."""
    sw = resolve("stop_words_filter").from_params({"stop_words": ["The", "of"],
                                                   "lowercase": True})
    assert sw.stop_words == frozenset({"the", "of"})
    assert sw.params == {"min_count": 2, "stop_words": ["The", "of"], "lowercase": True,
                         "language": None, "language_field": "language"}
    g = resolve("gopher_quality").from_params({"mode": "annotate", "disable": ["stop_words"]})
    assert g.annotate is True and g.params["annotate"] is False
    assert [k for k, _ in g.rules][-1] == "gopher_quality:alpha_words"
    j = resolve("read_jsonl").from_params({"paths": "x", "shard_size_mb": 0.5})
    assert j.shard_size == 512 * 1024 and j.storage_options == {}
    assert j.params["storage_options"] is None
