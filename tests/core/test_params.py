"""One parameter model per stage: validation, nested
groups with the old flat keys still accepted, `curator stages NAME [--json]`, the docs' tables
and the ten-line filter of docs/extending.md all come from the stage's ``Params``."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml

from curator.core.catalog import stage_info
from curator.core.params import CuratorDeprecationWarning, StageParams, iter_fields
from curator.core.registry import builtin_stages, resolve
from curator.core.stage import FilePath, ShardStage
from tests.helpers import ROOT as REPO
from tests.helpers import run_cli

#: Every family's stages declare a ``Params`` model.
CONVERTED = ("curator.",)


def _pipeline(tmp_path: Path, fuzzy: str, stage: str | None = None) -> Path:
    """read_jsonl, then ``stage`` (a YAML list item's text) or fuzzy_dedup with ``fuzzy``."""
    data = tmp_path / "in.jsonl"
    data.write_text('{"id": "a", "text": "hello world"}\n')
    p = tmp_path / "p.yaml"
    p.write_text(f"name: t\nwork_dir: {tmp_path / 'w'}\nstages:\n"
                 f"  - read_jsonl: {{paths: {data}}}\n"
                 + (stage or f"  - fuzzy_dedup:\n{fuzzy}"))
    return p


def test_every_converted_stage_declares_a_model_with_help_on_every_field() -> None:
    missing, no_help = [], []
    for name, target in builtin_stages().items():
        if not target.startswith(CONVERTED):
            continue
        cls = resolve(name)
        if cls.Params is None or not issubclass(cls.Params, StageParams):
            missing.append(name)
            continue
        no_help += [f"{name}.{f}" for f, fi in iter_fields(cls.Params) if not fi.description]
    assert not missing and not no_help, (missing, no_help)


#: Parameters that share one help text on purpose: they are documented as a group.
SHARED_HELP = {
    "model_classifier": [("max_score", "min_score")],
    "fuzzy_dedup": [("false_negative_weight", "false_positive_weight"),
                    ("redis.tls.cert_file", "redis.tls.key_file")],
    "train_tokenizer": [("init_merges", "init_vocab"), ("bos_id", "eos_id", "pad_id", "unk_id")],
    "megatron_shards": [("merges_file", "vocab_file")],
}


def test_no_parameter_borrows_another_ones_help() -> None:
    """``curator stages read_hf`` said "A missing id gets `<file>:<row>`" for ``text_field``,
    ``source``, ``storage_options`` and ``max_doc_mb``: a docstring pasted under five fields.
    A help text may be shared only by a group listed in SHARED_HELP."""
    shared = {}
    for name in builtin_stages():
        cls = resolve(name)
        by_help: dict[str, list[str]] = {}
        for f, fi in iter_fields(cls.Params):
            by_help.setdefault(fi.description or "", []).append(f)
        groups = sorted(tuple(sorted(fs)) for h, fs in by_help.items() if h and len(fs) > 1)
        if groups:
            shared[name] = groups
    assert shared == {k: sorted(v) for k, v in SHARED_HELP.items()}


def test_old_flat_keys_are_read_into_their_group_with_one_warning_line(tmp_path) -> None:
    cls = resolve("fuzzy_dedup")
    new = cls.from_params({"backend": "redis", "redis": {
        "nodes": ["h:1"], "key_ttl_s": 5, "tls": {"enabled": True, "ca_file": "/c/ca.pem"}}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = cls.from_params({"backend": "redis", "redis_nodes": ["h:1"],
                               "redis_key_ttl_s": 5, "redis_tls": True,
                               "redis_tls_ca_file": "/c/ca.pem"})
    assert old.params == new.params  # hence the same fingerprint
    assert old.redis_auth == new.redis_auth and old.redis.nodes == ["h:1"]
    msgs = sorted(str(w.message) for w in caught if w.category is CuratorDeprecationWarning)
    assert len(msgs) == 4 and any(
        m.startswith("fuzzy_dedup.redis_tls is deprecated: write fuzzy_dedup.redis.tls.enabled")
        for m in msgs), msgs
    # through the command: valid, and one `curator: warning:` line per old key
    p = _pipeline(tmp_path, "      redis_key_prefix: mine\n")
    r = run_cli("validate", str(p))
    assert r.returncode == 0, r.stderr
    warn = [x for x in r.stderr.splitlines() if x.startswith("curator: warning:")]
    assert warn == ["curator: warning: fuzzy_dedup.redis_key_prefix is deprecated: write "
                    "fuzzy_dedup.redis.key_prefix (nested keys); the flat key is accepted "
                    "until the next release"], r.stderr


@pytest.mark.parametrize(("fuzzy", "message"), [
    ("      redis: {nodez: [a]}\n",
     "stages[1].fuzzy_dedup.redis.nodez: unknown key (did you mean 'nodes'?)"),
    ("      redis: {key_ttl_s: -1}\n",
     "stages[1].fuzzy_dedup.redis.key_ttl_s: Input should be greater than or equal to 0"),
    ("      redis: {nodes: []}\n",
     "stages[1].fuzzy_dedup.redis.nodes: List should have at least 1 item"),
    ("      redis: {tls: {ca_file: ca.pem}}\n",
     "stages[1].fuzzy_dedup.redis.tls: Value error, ca_file / cert_file / key_file need "
     "enabled: true"),
    ("      threshold: 1.5\n",
     "stages[1].fuzzy_dedup.threshold: Input should be less than or equal to 1"),
])
def test_a_bad_value_is_one_line_naming_the_nested_key(tmp_path, fuzzy, message) -> None:
    r = run_cli("validate", str(_pipeline(tmp_path, fuzzy)), check=False)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr


@pytest.mark.parametrize(("value", "message"), [
    ("maybe", "stages[1].extract_html.fast: Input should be a valid boolean or 'auto' "
              "(got 'maybe')"),
    ("[1]", "stages[1].extract_html.fast: Input should be a valid boolean or 'auto'"),
])
def test_a_value_no_member_of_a_union_takes_is_one_error_on_the_key(tmp_path, value,
                                                                     message) -> None:
    """pydantic reports one error per member of ``bool | 'auto'``, each with the member's name
    as if it were a key ("fast.bool ... (and 1 more)"); the line names the key and both forms."""
    p = _pipeline(tmp_path, "", stage=f"  - extract_html: {{fast: {value}}}\n")
    r = run_cli("validate", str(p), check=False)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(message), r.stderr


def test_old_and_new_spelling_with_different_values_is_an_error(tmp_path) -> None:
    p = _pipeline(tmp_path, "      redis_key_prefix: old\n      redis: {key_prefix: new}\n")
    r = run_cli("validate", str(p), check=False)
    assert r.returncode != 0
    assert "stages[1].fuzzy_dedup: Value error, redis_key_prefix (the old spelling) and " \
        "redis.key_prefix are both given, with different values; keep redis.key_prefix" \
        in r.stderr, r.stderr
    same = _pipeline(tmp_path, "      redis_key_prefix: x\n      redis: {key_prefix: x}\n")
    assert run_cli("validate", str(same), check=False).returncode == 0


def test_an_old_key_into_a_group_given_as_shorthand_is_an_error_not_dropped(tmp_path) -> None:
    """`redis: {tls: true}` with the old `redis_tls_ca_file`: the CA file must not vanish."""
    p = _pipeline(tmp_path, "      redis: {tls: true}\n      redis_tls_ca_file: ca.pem\n")
    r = run_cli("validate", str(p), check=False)
    assert r.returncode != 0
    assert "tls is given as True; write it as a mapping to add ca_file to it" in r.stderr, \
        r.stderr


def test_tls_true_is_short_for_the_group() -> None:
    stage = resolve("fuzzy_dedup").from_params({"redis": {"tls": True}})
    assert stage.redis.tls.enabled and stage.params["redis"]["tls"]["enabled"] is True


def test_curator_stages_name_shows_every_parameter_and_a_valid_example(tmp_path) -> None:
    r = run_cli("stages", "fuzzy_dedup")
    assert r.returncode == 0, r.stderr
    assert "redis.tls.ca_file" in r.stdout and "Example:" in r.stdout
    assert re.search(r"redis\.key_ttl_s +int, default 604800; >= 0", r.stdout)
    info = json.loads(run_cli("stages", "fuzzy_dedup", "--json").stdout)
    rows = {p["name"]: p for p in info["params"]}
    assert rows["threshold"]["default"] == 0.8 and "<= 1" in rows["threshold"]["constraints"]
    assert rows["redis.nodes"]["default"] == ["127.0.0.1:7000"] and rows["redis.nodes"]["help"]
    assert rows["keep"]["type"] == "'first' | 'longest' | 'score'"
    # every built-in stage: the example is the model's defaults, so it validates as it is
    # (required keys filled in) and round-trips to the same parameters
    failed = []
    for name in builtin_stages():
        cls = resolve(name)
        info = stage_info(name, cls)
        entry = yaml.safe_load(info.example)["stages"][0]
        params = entry[name] if isinstance(entry, dict) else {}
        for row in info.params:
            if row["required"]:
                params[row["name"]] = _filled(row, tmp_path)
        params.update(NEEDS_ONE_OF.get(name, {}))
        try:
            stage = cls.from_params(params)
        except Exception as e:
            failed.append(f"{name}: {e}")
            continue
        keys = {fi.alias or k for k, fi in cls.params_model().model_fields.items()}
        assert set(stage.params) == keys, name
    assert not failed, failed


#: Stages that need one of several parameters (their setup says which), given here.
NEEDS_ONE_OF = {"bad_words_filter": {"words": ["damn"]},
                "train_quality_classifier": {"positive_sources": ["wiki"]},
                "model_classifier": {"preset": "fineweb-edu"}}


def _filled(row: dict, tmp: Path) -> object:
    f = tmp / "x.jsonl"
    f.write_text('{"id": "1", "text": "a task text"}\n')
    if row["type"].startswith("dict"):
        return {"t": str(f)}
    if row["type"].startswith("file") or "list[file]" in row["type"]:
        return str(f)
    if row["type"].startswith("list"):
        return ["x"]
    return {"snapshot": "CC-MAIN-2024-10", "months": "2401", "expr": "length > 3"}.get(
        row["name"], "x")


def test_unknown_stage_name_is_one_line_with_a_suggestion() -> None:
    r = run_cli("stages", "fuzzy_dedupe", check=False)
    assert r.returncode != 0
    assert r.stderr.strip() == "curator: error: unknown stage 'fuzzy_dedupe' (did you mean " \
        "'fuzzy_dedup'?)"


def test_docs_tables_are_generated_from_the_models() -> None:
    """docs/stages.md and every `<!-- params: NAME -->` table equal what the models give."""
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "sync_param_tables.py"),
                        "--check"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    page = (REPO / "docs" / "dedup.md").read_text()
    assert "<!-- params: fuzzy_dedup -->" in page and "| `redis.tls.enabled` |" in page


def test_the_ten_line_filter_of_the_docs_runs(tmp_path) -> None:
    """docs/extending.md's class-based filter with two parameters: at most 10 lines of code
    (blank lines, the docstrings and imports aside), and it works as written."""
    text = (REPO / "docs" / "extending.md").read_text()
    code = text.split("<!-- ten-line-filter -->\n```python\n", 1)[1].split("```", 1)[0]
    body = [x for x in code.splitlines() if x.strip() and not x.lstrip().startswith(('"""',
            "from ", "import "))]
    assert len(body) <= 10, body
    mod = tmp_path / "ten_line.py"
    mod.write_text(code)
    spec = importlib.util.spec_from_file_location("ten_line", mod)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)  # type: ignore[union-attr]
    cls = m.LineLength
    assert cls.params_model().model_fields["min_chars"].description == \
        "Shortest mean line length kept."
    from curator.base.document import Document

    stage = cls.from_params({"max_chars": 20})
    assert stage.check(Document(id="a", text="a line of text\nanother line here")) is None
    assert stage.check(Document(id="b", text="x" * 50)) == "line_length"
    with pytest.raises(Exception, match="min_chars"):
        cls.from_params({"min_chars": 0})


class Lists(StageParams):
    words: FilePath | None = None
    """a word list"""


class Grouped(ShardStage):
    name = "grouped_test"

    class Params(StageParams):
        lists: Lists = Lists()
        """the lists"""


def test_a_path_typed_field_inside_a_group_is_part_of_the_stage_key(tmp_path) -> None:
    f = tmp_path / "w.txt"
    f.write_text("a b")
    stage = Grouped.from_params({"lists": {"words": str(f)}})
    assert stage.input_paths_of_params() == {str(f): "file"}
    # and the old flat spelling reaches the same field
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CuratorDeprecationWarning)
        assert Grouped.from_params({"lists_words": str(f)}).params == stage.params


def _doc_stage_entries():
    """Every stage entry in the fenced ```yaml blocks of README.md and docs/*.md."""
    pages = [p for p in sorted((REPO / "docs").glob("*.md")) if p.name != "stages.md"]
    for page in [REPO / "README.md", *pages]:  # stages.md: placeholders, tested above
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S):
            try:
                doc = yaml.safe_load(block)
            except yaml.YAMLError:
                continue  # a fragment with placeholders, not YAML
            entries = doc.get("stages") if isinstance(doc, dict) else doc
            if isinstance(doc, dict) and entries is None and len(doc) == 1:
                entries = [doc]  # one stage written as a mapping
            for e in entries if isinstance(entries, list) else []:
                if isinstance(e, dict) and len(e) >= 1:
                    name = next(iter(e))
                    if name in builtin_stages():
                        yield page.name, name, e[name] or {}


def test_every_stage_entry_in_the_docs_and_pipelines_is_valid() -> None:
    """Every YAML in pipelines/ and docs/ validates (parameters, values and
    types against each stage's model; files named there need not exist here)."""
    seen, bad = 0, []
    for page, name, params in _doc_stage_entries():
        params = {k: v for k, v in params.items() if k not in ("id", "inputs", "checkpoint")}
        seen += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CuratorDeprecationWarning)
                resolve(name).params_model()(**params)
        except Exception as e:
            bad.append(f"{page}: {name}: {str(e).splitlines()[:3]}")
    assert seen > 50 and not bad, bad
    for p in sorted((REPO / "pipelines").glob("*.yaml")):
        r = run_cli("validate", str(p), check=False)
        if p.name == "train-example.yaml" and not (REPO / "work/train-demo").exists():
            # its input is made by `python -m curator.train.demo` first (its header says so)
            assert "'work/train-demo/docs.jsonl' matches no file" in r.stderr, r.stderr
            continue
        assert r.returncode == 0, (p.name, r.stderr)


def test_a_field_that_would_hide_a_stage_attribute_is_refused() -> None:
    """``name``, ``id``, ``params``, ``process``...: set as attributes, such a field would
    break the stage, so the model is refused when first used (read_hf's ``name`` is aliased)."""

    class Clash(ShardStage):
        class Params(StageParams):
            name: str = "x"
            """clashes with Stage.name"""

    with pytest.raises(TypeError, match=r"field\(s\) \['name'\] would hide"):
        Clash.params_model()
