"""Files named by parameters are part of the key.

One mechanism: a parameter typed ``FilePath`` / ``DirPath`` (curator.core.stage) contributes
the identity of its file (a folder: of every file under it) to the stage's key, for built-in
and custom stages alike. A file rewritten with the same size and its old mtime put back
(``cp -p``, ``rsync --times``) is caught by its ctime; ``identity: content`` knows files by
a hash of their bytes. On main the word lists, models and tokenizer folders were outside the
key: "nothing to do", old output."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import get_args, get_origin

import pytest

from curator.core.params import iter_fields
from curator.core.registry import builtin_stages, resolve
from curator.core.stage import PathParam, path_params
from curator.core.stage_state import effective_fingerprint, param_files
from tests.helpers import run_cli

#: Parameters whose names say "path" but that name no file the stage reads, with why.
NOT_INPUT_FILES = {
    "fuzzy_dedup.redis.tls.ca_file": "TLS material for the connection; results do not depend "
                                     "on it",
    "fuzzy_dedup.redis.tls.cert_file": "same",
    "fuzzy_dedup.redis.tls.key_file": "same",
    "common_crawl.files": "a range of a snapshot's file list (e.g. '0-9'), not a path",
}
PATHLIKE = re.compile(r"(^|_)(path|paths|file|files|dir|folder|tokenizer|checkpoint|blend|save"
                      r"|save_index|output|vocab|merges|model|tasks)$")


def every_param():
    for name in sorted(builtin_stages()):
        cls = resolve(name)
        for field, fi in iter_fields(cls.params_model()):  # nested groups: dotted names
            yield name, cls, field, fi


def test_every_path_like_parameter_is_typed():
    """A guard for the next stage: a parameter named like a path is typed as one (input,
    output or a source's documents) or listed above with a reason."""
    untyped = []
    for name, cls, field, fi in every_param():
        typed = any(field in path_params(cls, role) for role in ("input", "output",
                                                                 "documents"))
        text = str(fi.annotation)
        leaf = field.rsplit(".", 1)[-1]
        if PATHLIKE.search(leaf) and not typed and f"{name}.{field}" not in NOT_INPUT_FILES \
                and "Literal" not in text and "str" in text:
            untyped.append(f"{name}.{field}: {fi.annotation}")
    assert not untyped, untyped


def shaped(annotation, value):
    """``value`` in the shape the parameter takes (a path, a list of them, a mapping)."""
    for t in (annotation, *get_args(annotation)):
        origin = get_origin(t)
        if origin is list:
            return [value]
        if origin is dict:
            return {"task": value}
    return value


def rewrite_same_size_keep_mtime(p: Path) -> None:
    """What ``cp -p`` / ``rsync --times`` of an edited file does: same size, old mtime."""
    st = p.stat()
    data = p.read_bytes()
    p.write_bytes(bytes([data[0] ^ 1]) + data[1:])
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns


INPUT_PATH_PARAMS = [(name, field) for name, cls, field, _ in every_param()
                     if field in path_params(cls)]


def test_the_known_path_parameters_are_typed():
    want = {("url_blocklist", "domain_files"), ("bad_words_filter", "path"),
            ("bad_words_filter", "paths"), ("language_id", "model_path"),
            ("megatron_shards", "tokenizer"), ("megatron_shards", "vocab_file"),
            ("megatron_shards", "merges_file"), ("quality_filter", "model_path"),
            ("decontaminate", "tasks"), ("train_tokenizer", "init_vocab"),
            ("train_tokenizer", "init_merges"), ("train", "blend"),
            ("export_triton", "checkpoint")}
    assert want <= set(INPUT_PATH_PARAMS), want - set(INPUT_PATH_PARAMS)


@pytest.mark.parametrize(("stage", "field"), INPUT_PATH_PARAMS)
@pytest.mark.parametrize("change", ["append", "same-size-mtime-restored"])
def test_changing_the_file_of_every_path_parameter_changes_the_key(tmp_path, stage, field,
                                                                    change):
    """Every input-path parameter of every registered stage: change the file it names (for a
    folder, a file inside it) and the stage's effective key changes, so the stage reruns."""
    cls = resolve(stage)
    marker: PathParam = path_params(cls)[field]
    if marker.kind == "dir":
        target = tmp_path / "folder"
        (target / "sub").mkdir(parents=True)
        (target / "a.json").write_text('{"a": 1}\n')
        changed = target / "sub" / "b.txt"
        changed.write_text("inner file\n")
    else:
        target = changed = tmp_path / "list.txt"
        target.write_text("example.com\nbad\n")
    st = object.__new__(cls)
    st.params = {field: shaped(cls.params_model().model_fields[field].annotation, str(target))}
    st.input_files = list  # only the typed parameters, whatever the stage derives from others
    before = effective_fingerprint("fp", {}, param_files(st))
    assert before == effective_fingerprint("fp", {}, param_files(st))  # stable
    if change == "append":
        with open(changed, "a") as f:
            f.write("more\n")
    else:
        rewrite_same_size_keep_mtime(changed)
    assert effective_fingerprint("fp", {}, param_files(st)) != before


# -- end to end, through the curator command ----------------------------------------------------

PIPE = """\
name: lists
work_dir: w
progress: off
stages:
  - read_jsonl: {{paths: data.jsonl}}
  - url_blocklist: {{domain_files: [{domains}]}}
  - bad_words_filter: {{path: {words}}}
  - tests.core.helpers_core:not_listed: {{words: {custom}}}
  - write_jsonl: {{path: out, compression: none}}
"""


def corpus(path: Path) -> None:
    with open(path, "w") as f:
        for i in range(60):
            f.write(json.dumps({"id": f"d{i}", "url": f"https://site{i % 6}.example/{i}",
                                "text": f"plain words number {i} and kiwi{i % 6} end"}) + "\n")


def out_ids(tmp_path: Path) -> set[str]:
    return {json.loads(ln)["id"] for p in (tmp_path / "w" / "out").iterdir()
            for ln in p.read_text().splitlines()}


@pytest.mark.parametrize("which", ["domains", "words", "custom"])
def test_editing_a_listed_file_reruns_its_stage(tmp_path, which):
    """Add an entry to url_blocklist's domain file, bad_words_filter's word list or a custom
    stage's ``FilePath`` list; then rewrite the entry with the same size and the old mtime.
    Each time ``curator status`` names the changed file and the rerun applies the list."""
    corpus(tmp_path / "data.jsonl")
    files = {"domains": tmp_path / "domains.txt", "words": tmp_path / "words.txt",
             "custom": tmp_path / "custom.txt"}
    files["domains"].write_text("nothing.example\n")
    files["words"].write_text("zzzzzz\n")
    files["custom"].write_text("zzzzzz\n")
    (tmp_path / "p.yaml").write_text(PIPE.format(**{k: v for k, v in files.items()}))
    run_cli("run", "p.yaml", cwd=tmp_path)
    assert len(out_ids(tmp_path)) == 60
    entry = {"domains": "site1.example", "words": "kiwi1", "custom": "kiwi1"}[which]
    with open(files[which], "a") as f:
        f.write(entry + "\n")
    st = run_cli("status", "p.yaml", cwd=tmp_path)
    assert f"files it reads changed: {files[which]} (" in st.stdout, st.stdout
    run_cli("run", "p.yaml", cwd=tmp_path)
    assert len(out_ids(tmp_path)) == 50
    # the same size again, the mtime put back: `cp -p` of an edited list
    text = files[which].read_text().replace(entry, entry.replace("1", "2"))
    tmp = tmp_path / "edited.txt"
    tmp.write_text(text)
    stat = files[which].stat()
    os.utime(tmp, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(tmp, files[which])  # like rsync --times: a new file, renamed into place
    # (the inode changes with a rename; the in-place case is the unit test above)
    st = run_cli("status", "p.yaml", cwd=tmp_path)
    assert "files it reads changed" in st.stdout, st.stdout
    run_cli("run", "p.yaml", cwd=tmp_path)
    got = out_ids(tmp_path)
    assert len(got) == 50 and "d1" in got and "d2" not in got


SRC = """\
name: src
work_dir: w
progress: off
identity: {identity}
stages:
  - read_jsonl: {{paths: "data/*.jsonl"}}
  - write_jsonl: {{path: out, compression: none}}
"""


@pytest.mark.parametrize("identity", ["stat", "content"])
def test_source_file_rewritten_in_place_with_its_mtime_restored(tmp_path, identity):
    """A source file edited in place, same size, mtime put back (``touch -r``, ``cp -p`` onto
    it): caught by ctime (``stat``) or by its hash (``content``); the other shard is reused.
    With ``content`` a mere touch reruns nothing; with ``stat`` it reruns that shard."""
    (tmp_path / "data").mkdir()
    for k in range(2):
        (tmp_path / "data" / f"{k}.jsonl").write_text(
            "".join(json.dumps({"id": f"{k}-{i}", "text": f"text {i} aaaa"}) + "\n"
                    for i in range(30)))
    (tmp_path / "p.yaml").write_text(SRC.format(identity=identity))
    run_cli("run", "p.yaml", cwd=tmp_path)
    f = tmp_path / "data" / "1.jsonl"
    with open(f, "r+b") as fh:  # in place: same inode, same size
        data = fh.read()
        fh.seek(0)
        fh.write(data.replace(b"aaaa", b"bbbb"))
    st0 = f.stat()
    os.utime(f, ns=(st0.st_atime_ns, st0.st_mtime_ns - 5_000_000_000))
    st = run_cli("status", "p.yaml", cwd=tmp_path)
    assert re.search(r"read_jsonl\s+stale\s+1 of 2 shards to redo", st.stdout), st.stdout
    run_cli("run", "p.yaml", cwd=tmp_path)
    text = "".join(p.read_text() for p in (tmp_path / "w" / "out").iterdir())
    assert "bbbb" in text and text.count("aaaa") == 30
    os.utime(f)  # touch: content unchanged
    st = run_cli("status", "p.yaml", cwd=tmp_path)
    if identity == "content":
        assert "nothing to do" in st.stdout, st.stdout
    else:
        assert re.search(r"read_jsonl\s+stale\s+1 of 2 shards", st.stdout), st.stdout
