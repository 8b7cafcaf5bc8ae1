"""A result is keyed on what its stage used: the user's modules it imports (a factory's module
and its argument), the values a callable without source refers to, ``code_deps`` beside the
user's module, the run-wide defaults in effect, and secrets as keyed digests that never
collide. Real ``curator`` processes, real edits of real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT, cli_env


def corpus(path: Path, n: int = 300) -> None:
    """Documents of 50..1000 characters (length filters then keep a share that moves)."""
    import random

    rnd = random.Random(7)
    with open(path, "w") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "id": f"d{i}",
                        "text": "x" * rnd.randint(50, 1000),
                        "url": f"http://a.example/p{i}?token={'abc' if i % 2 else 'xyz'}",
                    }
                )
                + "\n"
            )


def curator(tmp_path: Path, *args: str, pre: str = "", env: dict | None = None) -> str:
    e = env or cli_env()
    e["PYTHONPATH"] = os.pathsep.join([e["PYTHONPATH"], str(tmp_path / "mods")])
    code = f"{pre}\nfrom curator.cli import main\nraise SystemExit(main({list(args)!r}))"
    p = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=e,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout + p.stderr


def kept(wd: Path, stage: str) -> int:
    rep = json.loads((wd / "report.json").read_text())
    return next(s for s in rep["stages"] if s["id"] == stage)["docs_out"]


def pipe(tmp_path: Path, stage: str, wd: str = "w", extra: str = "") -> None:
    (tmp_path / "p.yaml").write_text(
        f"name: u\nwork_dir: {wd}\nprogress: off\n{extra}stages:\n"
        f"  - read_jsonl: {{paths: in.jsonl}}\n  - {stage}\n  - write_jsonl: {{path: out}}\n"
    )


MYLIB = """
from curator import filter


def make(n):
    @filter
    def long_docs(doc) -> bool:
        return len(doc.text) < n
    return long_docs
"""


def test_a_factory_argument_and_the_factory_module_are_part_of_the_key(tmp_path):
    """``stages.py`` says ``long_docs = make(200)`` with ``make`` from ``mylib.py``: the class
    is defined in mylib, so only mylib's source was hashed; neither ``make(900)`` nor an edit
    of mylib.py reran anything."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "mylib.py").write_text(MYLIB)
    stages = tmp_path / "mods" / "stages.py"
    stages.write_text("from mylib import make\n\nlong_docs = make(200)\n")
    corpus(tmp_path / "in.jsonl")
    pipe(tmp_path, "stages:long_docs: {}")
    curator(tmp_path, "run", "p.yaml")
    at_200 = kept(tmp_path / "w", "long_docs")

    stages.write_text("from mylib import make\n\nlong_docs = make(900)\n")
    st = curator(tmp_path, "status", "p.yaml")
    assert "long_docs    stale" in st and "code of stages" in st, st
    curator(tmp_path, "run", "p.yaml")
    at_900 = kept(tmp_path / "w", "long_docs")
    assert at_900 > at_200
    curator(tmp_path, "run", "p.yaml", "--work-dir", "fresh")
    assert kept(tmp_path / "fresh", "long_docs") == at_900

    (tmp_path / "mods" / "mylib.py").write_text(MYLIB.replace("< n", "< n // 9"))
    st = curator(tmp_path, "status", "p.yaml")
    assert "code of mylib" in st, st
    curator(tmp_path, "run", "p.yaml")
    assert kept(tmp_path / "w", "long_docs") < at_200


NO_SOURCE = """
import curator
from curator import filter

LIMIT = {limit}


@filter
def short(doc) -> bool:
    return len(doc.text) < LIMIT


r = curator.run("p.yaml")
print("RESULT", r.stage("short")["docs_out"], r.stage("short").get("skipped"))
"""


def test_a_filter_without_source_is_keyed_on_its_code_and_the_globals_it_reads(tmp_path):
    """``curator.run`` of an ``@filter`` defined in ``python -c`` got the identity
    "<no source>": changing its threshold reran nothing."""
    corpus(tmp_path / "in.jsonl")
    pipe(tmp_path, "__main__:short: {}")
    (tmp_path / "mods").mkdir()

    def run(limit: int) -> tuple[int, bool]:
        p = subprocess.run(
            [sys.executable, "-c", NO_SOURCE.format(limit=limit)],
            cwd=tmp_path,
            env=cli_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr
        out = p.stdout
        line = next(ln for ln in out.splitlines() if ln.startswith("RESULT"))
        return int(line.split()[1]), line.split()[2] == "True"

    first = run(200)
    assert run(200) == (first[0], True)  # the same code and values: reused
    n, skipped = run(900)
    assert not skipped and n > first[0]


DEPS = """
import functools
import os

from curator.core.stage import Filter


@functools.cache
def limit():
    with open(os.path.join(os.path.dirname(__file__), "mydata", "bad.txt")) as f:
        return int(f.read())


class Bad(Filter):
    name = "bad_words_here"
    code_deps = ("mydata/bad.txt",)

    def check(self, doc):
        return None if len(doc.text) < limit() else "bad"
"""


def test_code_deps_are_found_beside_the_users_module(tmp_path):
    """``code_deps = ("mydata/bad.txt",)`` was looked for in curator's install folder,
    recorded as missing, and an edit of the file reran nothing."""
    (tmp_path / "mods" / "mydata").mkdir(parents=True)
    (tmp_path / "mods" / "mydata" / "bad.txt").write_text("200")
    (tmp_path / "mods" / "deps.py").write_text(DEPS)
    corpus(tmp_path / "in.jsonl")
    pipe(tmp_path, "deps:Bad: {}")
    curator(tmp_path, "run", "p.yaml")
    fp = json.loads((tmp_path / "w" / "stages" / "bad_words_here" / "_FINGERPRINT").read_text())
    assert fp["identity"]["code"]["modules"]["mydata/bad.txt"] != "missing"
    (tmp_path / "mods" / "mydata" / "bad.txt").write_text("900")
    st = curator(tmp_path, "status", "p.yaml")
    assert "code of mydata/bad.txt changed" in st, st


def test_a_secret_in_a_parameter_never_shares_a_fingerprint(tmp_path):
    """url_blocklist ``\\?token=abc`` -> ``\\?token=xyz`` was "nothing to do": both were
    stored as ``\\?token=***``. Now a digest keyed by the work_dir's private key: different,
    and neither value is written anywhere."""
    corpus(tmp_path / "in.jsonl", 40)
    (tmp_path / "mods").mkdir()
    pipe(tmp_path, "url_blocklist: {patterns: ['\\?token=abc']}")
    curator(tmp_path, "run", "p.yaml")
    first = kept(tmp_path / "w", "url_blocklist")
    assert first == 20
    pipe(tmp_path, "url_blocklist: {patterns: ['\\?token=xyz']}")
    st = curator(tmp_path, "status", "p.yaml")
    assert "url_blocklist  stale" in st, st
    curator(tmp_path, "run", "p.yaml")
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    docs = [
        json.loads(x)
        for p in (tmp_path / "w" / "out").glob("*")
        for x in __import__("gzip").open(p, "rt")
    ]
    assert all("token=abc" in d["url"] for d in docs) and len(docs) == 20, rep
    key = tmp_path / "w" / ".curator-key"
    assert key.stat().st_mode & 0o777 == 0o600
    for f in (p for p in (tmp_path / "w").rglob("*") if p.is_file() and "out" not in p.parts):
        if f.suffix in (".json", "") and f.name != ".curator-key":
            body = f.read_bytes()
            assert b"token=xyz" not in body and b"token=abc" not in body, f


def test_the_run_wide_default_in_effect_is_part_of_a_sources_key(tmp_path):
    """An upgrade that changes ``DEFAULT_MAX_DOC_MB`` (curator/storage/limits.py, a module the
    code digest did not follow) left old results done; a fresh run quarantined most."""
    import shutil

    shutil.copytree(
        ROOT / "curator", tmp_path / "pkg" / "curator", ignore=shutil.ignore_patterns("__pycache__")
    )
    corpus(tmp_path / "in.jsonl", 50)
    (tmp_path / "mods").mkdir()
    pipe(tmp_path, "exact_dedup: {}")
    env = cli_env()
    env["PYTHONPATH"] = str(tmp_path / "pkg")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    curator(tmp_path, "run", "p.yaml", env=dict(env))
    limits = tmp_path / "pkg" / "curator" / "storage" / "limits.py"
    limits.write_text(
        limits.read_text().replace("DEFAULT_MAX_DOC_MB = 32.0", "DEFAULT_MAX_DOC_MB = 0.0005")
    )
    st = curator(tmp_path, "status", "p.yaml", env=dict(env))
    assert "read_jsonl   stale" in st, st
    curator(tmp_path, "run", "p.yaml", env=dict(env))
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    src = next(s for s in rep["stages"] if s["id"] == "read_jsonl")
    assert src["docs_out"] < 50


def test_a_change_inside_a_nested_group_names_the_key():
    from curator.core.identity import explain

    old = {"format": 4, "stage": "fuzzy_dedup", "params": {"redis": {"url": "a", "db": 0}}}
    new = {**old, "params": {"redis": {"url": "a", "db": 1}}}
    assert explain(old, new) == ["parameter 'redis.db' changed (0 -> 1)"]
