"""What a stage's result is keyed on, tried the way a user breaks it: a word list a custom module
reads as it is imported (into a compiled pattern, whose ``repr`` is cut at 200 characters), a
module it imports by a computed name as it is imported, a file a custom stage's ``setup()``
reads, a C extension module of the user's, results of a run killed half-way whose inputs then
change (finished shards, a global stage's phase results), and a Redis setting under the
embedded backend. Real processes through the ``curator`` command, a real compiler, real
SIGKILLs."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.helpers import cli_env, unavailable

IMPORTED = """
import importlib
import os
import re

from curator import Filter, filter

HERE = os.path.dirname(__file__)
with open(os.path.join(HERE, "mydata", "words.txt")) as f:  # read once, as it is imported
    BAD = re.compile("|".join(re.escape(w) for w in f.read().split()))
helper = importlib.import_module("help" + "er_lim")  # a name the source does not show


@filter
def no_bad(doc) -> bool:
    return not BAD.search(doc.text)


@filter
def dyn_lim(doc) -> bool:
    return len(doc.text) < helper.LIM


class Shorter(Filter):
    def setup(self):
        with open(os.path.join(HERE, "mydata", "lim.txt")) as f:  # read when it is built
            self.most = int(f.read())

    def check(self, doc):
        return None if len(doc.text) < self.most else "long"
"""

KILLED = """
import os
import signal

from curator import GlobalStage, filter

HERE = os.path.dirname(__file__)


def _limit():
    with open(os.path.join(HERE, "mydata", "lim.txt")) as f:
        return int(f.read())


def _die_once(what):
    flag = os.path.join(HERE, "kill-" + what)
    if os.path.exists(flag):
        os.unlink(flag)
        os.killpg(os.getpgid(0), signal.SIGKILL)


@filter
def under(doc) -> bool:
    if doc.id == "1-5":
        _die_once("shard")
    return len(doc.text) < _limit()


def _count_short(path):
    from curator.storage.shards import read_shard

    if path.endswith("00002.jsonl.zst"):
        _die_once("phase")
    return sum(len(d.text) < _limit() for d in read_shard(path))


class CountShort(GlobalStage):
    name = "count_short"

    def run(self, shards, ctx):
        counts = ctx.map(_count_short, [s.path for s in shards], phase="count",
                         keys=[s.name for s in shards])
        ctx.artifacts["short"] = sum(counts)
        return ctx.passthrough(shards)
"""


def _setup(tmp_path: Path, module: str, name: str) -> Path:
    mods = tmp_path / "mods"
    (mods / "mydata").mkdir(parents=True)
    (mods / f"{name}.py").write_text(module)
    (mods / "mydata" / "lim.txt").write_text("500")
    rnd = random.Random(1)
    (tmp_path / "data").mkdir()
    for part in range(3):
        with open(tmp_path / "data" / f"in{part}.jsonl", "w") as f:
            for i in range(100):
                text = "x" * rnd.randint(50, 1000) + (" w050" if i % 3 == 0 else "")
                f.write(json.dumps({"id": f"{part}-{i}", "text": text}) + "\n")
    return mods


def _pipe(tmp_path: Path, stage: str, name: str = "p.yaml") -> None:
    (tmp_path / name).write_text(
        "name: t\nwork_dir: w\nprogress: off\nstages:\n"
        f"  - read_jsonl: {{paths: 'data/*.jsonl'}}\n  - {stage}: {{}}\n"
        "  - write_jsonl: {path: out}\n"
    )


def curator(tmp_path: Path, *args: str, ok: bool = True, cwd: Path | None = None,
            env: dict[str, str | None] | None = None) -> str:
    """``python -m curator *args`` with the test's modules importable (``env``: more
    variables, ``None`` removes one), run in ``cwd`` (default ``tmp_path``)."""
    full = cli_env()
    full["PYTHONPATH"] = os.pathsep.join([full["PYTHONPATH"], str(tmp_path / "mods")])
    full["PYTHONDONTWRITEBYTECODE"] = "1"
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    p = subprocess.run(
        [sys.executable, "-m", "curator", *args],
        cwd=cwd or tmp_path,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )
    if ok:
        assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout + p.stderr


def kept(tmp_path: Path, wd: str = "w") -> int:
    n = 0
    for p in (tmp_path / wd / "out").glob("*.jsonl.gz"):
        with gzip.open(p, "rt") as f:
            n += sum(1 for _ in f)
    return n


def fresh(tmp_path: Path, *args: str) -> int:
    shutil.rmtree(tmp_path / "fresh", ignore_errors=True)
    curator(tmp_path, "run", "p.yaml", "--work-dir", "fresh", *args)
    return kept(tmp_path, "fresh")


def line(status: str, stage: str) -> str:
    return next(ln for ln in status.splitlines() if ln.startswith(stage + " "))


def words(last: str) -> str:
    return " ".join([f"w{i:03d}" for i in range(100)] + [last])  # a pattern of 600 characters


def test_a_file_a_custom_module_reads_at_import_or_in_setup_is_part_of_its_key(tmp_path):
    mods = _setup(tmp_path, IMPORTED, "imported")
    (mods / "helper_lim.py").write_text("LIM = 500\n")
    (mods / "mydata" / "words.txt").write_text(words("zzzzz"))
    _pipe(tmp_path, "imported:no_bad")
    curator(tmp_path, "run", "p.yaml")
    before = kept(tmp_path)
    assert before == fresh(tmp_path) < 250  # every third document has w050
    (mods / "mydata" / "words.txt").write_text(words("zzzzz").replace("w050", "w051"))
    st = curator(tmp_path, "status", "p.yaml")
    assert "stale" in line(st, "no_bad") and "mydata/words.txt" in line(st, "no_bad"), st
    curator(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) == fresh(tmp_path) > before + 50

    _pipe(tmp_path, "imported:Shorter")
    curator(tmp_path, "run", "p.yaml")
    before = kept(tmp_path)
    (mods / "mydata" / "lim.txt").write_text("900")
    st = curator(tmp_path, "status", "p.yaml")
    assert "mydata/lim.txt" in line(st, "shorter"), st
    curator(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) == fresh(tmp_path) > before
    assert "nothing to do" in curator(tmp_path, "status", "p.yaml")

    _pipe(tmp_path, "imported:dyn_lim")
    curator(tmp_path, "run", "p.yaml")
    before = kept(tmp_path)
    (mods / "helper_lim.py").write_text("# a comment changes nothing\nLIM = 500\n")
    assert "nothing to do" in curator(tmp_path, "status", "p.yaml")
    (mods / "helper_lim.py").write_text("LIM = 900\n")
    st = curator(tmp_path, "status", "p.yaml")
    assert "code of helper_lim.py changed" in line(st, "dyn_lim"), st
    curator(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) == fresh(tmp_path) > before


def _compiler() -> str:
    cc = shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]) or shutil.which("cc")
    if cc is None:
        unavailable("a C compiler (the C extension case)")
    return cc


def _build(cc: str, mods: Path, limit: int) -> None:
    src = mods / "fastlim.c"
    src.write_text(
        "#include <Python.h>\n"
        f"static PyObject* lim(PyObject* s, PyObject* a) {{ return PyLong_FromLong({limit}); }}\n"
        'static PyMethodDef M[] = {{"lim", lim, METH_NOARGS, ""}, {0}};\n'
        'static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "fastlim", 0, -1, M};\n'
        "PyMODINIT_FUNC PyInit_fastlim(void) { return PyModule_Create(&D); }\n"
    )
    target = mods / ("fastlim" + sysconfig.get_config_var("EXT_SUFFIX"))
    tmp = target.with_name(target.name + ".new")
    subprocess.run(
        [cc, "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(src), "-o", str(tmp)],
        check=True,
        timeout=120,
    )
    tmp.replace(target)


def test_a_c_extension_of_the_users_is_part_of_the_key(tmp_path):
    cc = _compiler()
    mods = _setup(
        tmp_path,
        "import fastlim\nfrom curator import filter\n\n\n@filter\n"
        "def cfilt(doc) -> bool:\n    return len(doc.text) < fastlim.lim()\n",
        "cmod",
    )
    _build(cc, mods, 500)
    _pipe(tmp_path, "cmod:cfilt")
    curator(tmp_path, "run", "p.yaml")
    before = kept(tmp_path)
    _build(cc, mods, 900)
    st = curator(tmp_path, "status", "p.yaml")
    assert "stale" in line(st, "cfilt") and "fastlim" in line(st, "cfilt"), st
    curator(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) == fresh(tmp_path) > before


def test_shards_of_a_killed_run_are_not_reused_once_what_they_read_changed(tmp_path):
    mods = _setup(tmp_path, KILLED, "killed")
    _pipe(tmp_path, "killed:under")
    (mods / "kill-shard").touch()
    curator(tmp_path, "run", "p.yaml", ok=False)  # killed in the second shard
    assert not (mods / "kill-shard").exists()
    assert list((tmp_path / "w" / "stages" / "under" / "_done").glob("*.json"))
    (mods / "mydata" / "lim.txt").write_text("900")
    st = curator(tmp_path, "status", "p.yaml")
    assert "3 of 3 shards to redo" in line(st, "under") and "lim.txt" in line(st, "under"), st
    curator(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) == fresh(tmp_path)


def test_phase_results_carry_what_computing_them_read(tmp_path):
    mods = _setup(tmp_path, KILLED, "killed")
    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nprogress: off\nstages:\n"
        "  - read_jsonl: {paths: 'data/*.jsonl', shard_size_mb: 0.02}\n"
        "  - killed:CountShort: {}\n"
    )
    sdir = tmp_path / "w" / "stages" / "count_short"

    def short(wd: str = "w") -> int:
        return json.loads((tmp_path / wd / "stages" / "count_short" / "_SUCCESS.json").read_text())[
            "artifacts"
        ]["short"]

    # killed inside the phase: the finished items' results stay; what they read changes
    (mods / "kill-phase").touch()
    curator(tmp_path, "run", "p.yaml", ok=False)
    assert len(list((sdir / "_phases" / "count").glob("*.pkl"))) >= 2
    (mods / "mydata" / "lim.txt").write_text("900")
    curator(tmp_path, "run", "p.yaml")
    fresh(tmp_path)
    assert short() == short("fresh")

    # a finished stage whose results are reused (its marker lost): its record keeps the file
    (sdir / "_SUCCESS.json").unlink()
    log = curator(tmp_path, "run", "p.yaml")
    assert "recomputing" not in log, log
    used = json.loads((sdir / "_FINGERPRINT").read_text())["used"]
    assert str(mods / "mydata" / "lim.txt") in used, used
    (mods / "mydata" / "lim.txt").write_text("300")
    assert "lim.txt" in line(curator(tmp_path, "status", "p.yaml"), "count_short")
    curator(tmp_path, "run", "p.yaml")
    fresh(tmp_path)
    assert short() == short("fresh")


def test_a_phase_result_without_a_record_of_what_it_read_is_recomputed(tmp_path):
    from curator.storage import sealed

    _setup(tmp_path, KILLED, "killed")
    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nprogress: off\nstages:\n"
        "  - read_jsonl: {paths: 'data/*.jsonl', shard_size_mb: 0.02}\n"
        "  - killed:CountShort: {}\n"
    )
    curator(tmp_path, "run", "p.yaml")
    sdir = tmp_path / "w" / "stages" / "count_short"
    (sdir / "_SUCCESS.json").unlink()
    key = sealed.work_dir_key(str(tmp_path / "w"))
    phase = sorted((sdir / "_phases" / "count").glob("*.pkl"))[0]
    label = f"count_short/count/{phase.stem}"
    fp, result, _used = sealed.load(str(phase), key, label)
    sealed.dump(str(phase), (fp, result), key, label)  # as saved before records existed
    log = curator(tmp_path, "run", "p.yaml")
    assert f"{phase}: not used (no record of what computing it read); recomputing" in log, log


def test_a_redis_setting_changes_nothing_under_the_embedded_backend(tmp_path):
    _setup(tmp_path, "", "nothing")
    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nprogress: off\nstages:\n"
        "  - read_jsonl: {paths: 'data/*.jsonl'}\n"
        "  - fuzzy_dedup: {backend: embedded, redis: {key_prefix: a, batch: 100}}\n"
    )
    curator(tmp_path, "run", "p.yaml")
    other = [
        "--set",
        "stages.fuzzy_dedup.redis.key_prefix=b",
        "--set",
        "stages.fuzzy_dedup.redis.nodes=[127.0.0.1:7100]",
    ]
    assert "nothing to do" in curator(tmp_path, "status", "p.yaml", *other)
    st = curator(tmp_path, "status", "p.yaml", "--set", "stages.fuzzy_dedup.threshold=0.7")
    assert "stale" in line(st, "fuzzy_dedup"), st  # a setting that applies still counts
    # under the backend it belongs to, the Redis group is keyed as given
    from curator.dedup.fuzzy_dedup import FuzzyDedup

    def keyed(backend: str) -> str:
        stage = FuzzyDedup.from_params({"backend": backend, "redis": {"key_prefix": "b"}})
        return stage.key_params()["redis"]["key_prefix"]

    assert (keyed("redis"), keyed("embedded")) == ("b", "curator")
