"""Runs you can trust: a rerun notices changed inputs and code and redoes exactly
the shards concerned; a package upgrade that leaves a stage's code alone reruns nothing;
`curator status` says why; one run per work_dir. Real `curator` processes throughout."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.core.helpers_core import make_corpus, tree_digest
from tests.helpers import cli_env, run_cli

PIPE = """\
name: trust
work_dir: {wd}
progress: off
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl"}}
  - tests.core.helpers_core:min_words: {{n: 5}}
  - tests.core.helpers_core:upper_first: {{}}
  - write_jsonl: {{path: out}}
"""


def report(wd: Path) -> dict:
    return {s["id"]: s for s in json.loads((wd / "report.json").read_text())["stages"]}


def stamps(wd: Path) -> dict[str, tuple[int, int]]:
    """(inode, mtime_ns) of every output shard, shard marker and written file."""
    out = {}
    for pat in ("stages/*/data/*", "stages/*/_done/*", "out/*"):
        for p in sorted(wd.glob(pat)):
            st = p.stat()
            out[p.relative_to(wd).as_posix()] = (st.st_ino, st.st_mtime_ns)
    return out


def out_docs(wd: Path) -> list[dict]:
    docs = []
    for p in sorted((wd / "out").glob("*.jsonl.gz")):
        with gzip.open(p, "rt") as f:
            docs += [json.loads(x) for x in f]
    return docs


def setup(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for i, name in enumerate("abc"):
        make_corpus(str(data / f"{name}.jsonl"), 40, seed=10 + i)
    (tmp_path / "p.yaml").write_text(PIPE.format(wd=tmp_path / "w", data=data))
    return data


def test_changed_input_reruns_exactly_its_shards_and_what_is_below(tmp_path):
    data = setup(tmp_path)
    wd = tmp_path / "w"
    run_cli("run", "p.yaml", cwd=tmp_path)
    before = stamps(wd)
    assert len([k for k in before if k.startswith("out/")]) == 3

    with open(data / "b.jsonl", "a") as f:  # same name, new content
        f.write(json.dumps({"id": "added", "text": "a brand new document with enough words"})
                + "\n")
    st = run_cli("status", "p.yaml", cwd=tmp_path).stdout
    assert "1 of 3 shards to redo" in st and "b.jsonl (ctime_ns, mtime_ns, size)" in st
    run_cli("run", "p.yaml", cwd=tmp_path)
    after = stamps(wd)
    changed = {k for k in before if before[k] != after.get(k)}
    # shard 1 read b.jsonl: it and everything computed from it was redone, nothing else
    assert changed == {k for k in before if "read_jsonl-00001" in k}
    # 1 data shard (read_jsonl -> min_words -> upper_first run fused: only the last is
    # written), 4 shard markers (every stage keeps its own), 1 written file
    assert len(changed) == 1 + 4 + 1
    rep = report(wd)
    assert all(rep[s]["shards_resumed"] == 2 for s in rep)
    assert "A brand new document with enough words" in [d["text"] for d in out_docs(wd)]
    # the same bytes as a run from scratch on the new inputs
    run_cli("run", "p.yaml", "--work-dir", str(tmp_path / "fresh"), cwd=tmp_path)
    assert tree_digest(wd / "out") == tree_digest(tmp_path / "fresh" / "out")

    # an input removed: its shard's outputs (the written file included) go away
    (data / "c.jsonl").unlink()
    run_cli("run", "p.yaml", cwd=tmp_path)
    assert sorted(p.name for p in (wd / "out").glob("*")) == [
        "read_jsonl-00000.jsonl.gz", "read_jsonl-00001.jsonl.gz"]
    assert not list(wd.glob("stages/*/_done/read_jsonl-00002.json"))
    assert "nothing to do" in run_cli("status", "p.yaml", cwd=tmp_path).stdout


def test_global_stage_reruns_when_any_input_changes(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 60, seed=1)
    make_corpus(str(data / "b.jsonl"), 60, seed=2)
    text = (f"name: g\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
            f"  - read_jsonl: {{paths: '{data}/*.jsonl'}}\n"
            "  - tests.core.helpers_core:AboveMedian: {}\n  - write_jsonl: {path: out}\n")
    (tmp_path / "p.yaml").write_text(text)
    run_cli("run", "p.yaml", cwd=tmp_path)
    make_corpus(str(data / "a.jsonl"), 30, seed=3)
    st = run_cli("status", "p.yaml", cwd=tmp_path).stdout
    assert "input shards changed (1 of 2 changed or new)" in st
    assert "upstream 'above_median' reruns first" in st
    run_cli("run", "p.yaml", cwd=tmp_path)
    rep = report(tmp_path / "w")
    assert rep["read_jsonl"]["shards_resumed"] == 1
    assert not rep["above_median"]["skipped"] and not rep["write_jsonl"]["skipped"]
    run_cli("run", "p.yaml", "--work-dir", str(tmp_path / "fresh"), cwd=tmp_path)
    assert tree_digest(tmp_path / "w" / "out") == tree_digest(tmp_path / "fresh" / "out")
    assert (report(tmp_path / "w")["above_median"]["artifacts"]
            == report(tmp_path / "fresh")["above_median"]["artifacts"])


CUSTOM = '''
from curator import filter


@filter
def long_enough(doc, n: int = 5) -> bool:
    return len(doc.text.split()) >= n{extra}
'''


def run_env(tmp_path: Path, *args: str, pre: str = "") -> subprocess.CompletedProcess:
    env = cli_env()
    env["PYTHONPATH"] += os.pathsep + str(tmp_path / "mods")
    code = f"{pre}\nfrom curator.cli import main\nraise SystemExit(main({list(args)!r}))"
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def test_custom_code_change_reruns_that_stage_and_package_version_reruns_nothing(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 80, seed=4)
    (tmp_path / "mods").mkdir()
    mod = tmp_path / "mods" / "myfilters.py"
    mod.write_text(CUSTOM.format(extra=""))
    (tmp_path / "p.yaml").write_text(
        f"name: c\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
        # checkpointed: read_jsonl is its own pass, so it is reused when the filter changes
        # (fused with it, it would be read again: test_fusion.py)
        f"  - read_jsonl: {{paths: '{data}/*.jsonl'}}\n    checkpoint: true\n"
        "  - myfilters:long_enough: {}\n  - tests.core.helpers_core:upper_first: {}\n"
        "  - write_jsonl: {path: out}\n")
    run_env(tmp_path, "run", "p.yaml")
    first = report(tmp_path / "w")

    # a newer curator (same stage versions): nothing reruns
    run_env(tmp_path, "run", "p.yaml", pre="import curator; curator.__version__ = '99.0'")
    assert all(s["skipped"] for s in report(tmp_path / "w").values())

    # the filter's code changes (same name, same parameters): it and what is below rerun
    mod.write_text(CUSTOM.format(extra=" and len(doc.text) % 2 == 0"))
    st = run_env(tmp_path, "status", "p.yaml").stdout
    assert "code of myfilters changed" in st
    run_env(tmp_path, "run", "p.yaml")
    rep = report(tmp_path / "w")
    assert [rep[s]["skipped"] for s in rep] == [True, False, False, False]
    assert rep["long_enough"]["docs_out"] < first["long_enough"]["docs_out"]


def test_builtin_fingerprint_ignores_package_version_and_takes_version_as_salt(tmp_path,
                                                                              monkeypatch):
    """A built-in stage is keyed on its YAML name and code, not on curator's version number;
    its ``version`` is an extra manual salt: bumping it changes it and everything below.
    (Code digests: tests/core/test_codehash.py.)"""
    import curator
    from curator.core import pipeline as pl
    from curator.io.jsonl import ReadJsonl

    text = (f"name: m\nwork_dir: {tmp_path}\nstages:\n  - read_jsonl: {{paths: x.jsonl}}\n"
            "  - write_jsonl: {path: out}\n")
    fps = [n.fingerprint for n in pl.loads(text).nodes]
    monkeypatch.setattr(curator, "__version__", "42.0")
    assert [n.fingerprint for n in pl.loads(text).nodes] == fps
    monkeypatch.setattr(ReadJsonl, "version", 2)
    bumped = [n.fingerprint for n in pl.loads(text).nodes]
    assert bumped[0] != fps[0] and bumped[1] != fps[1]  # downstream follows


def test_status_names_changed_parameter(tmp_path):
    setup(tmp_path)
    st = run_cli("status", "p.yaml", cwd=tmp_path).stdout
    assert "never run" in st and "a rerun redoes 4 of 4 stages" in st
    run_cli("run", "p.yaml", cwd=tmp_path)
    st = run_cli("run", "p.yaml", "--dry-run", "--set", "stages.min_words.n=9",
                 cwd=tmp_path).stdout
    lines = {ln.split()[0]: ln for ln in st.splitlines()[1:-1]}
    assert " done " in lines["read_jsonl"]
    assert "stale" in lines["min_words"] and "parameter 'n' changed (5 -> 9)" in lines["min_words"]
    assert "upstream stage 'min_words' changed" in lines["upper_first"]
    assert report(tmp_path / "w")["min_words"]["params"] == {"n": 5}  # nothing ran


def test_rerun_reason_of_a_stage_below_a_changed_one_names_the_upstream(tmp_path):
    """A stage below one whose parameter changed is said to rerun because of the upstream
    stage, not of a parameter of its own. Two stages sharing their parameters through a YAML
    anchor are two mappings: `--set` on the first leaves the second as it was."""
    data = setup(tmp_path)
    (tmp_path / "p.yaml").write_text(
        f"name: a\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
        f"  - read_jsonl: {{paths: '{data}/*.jsonl'}}\n"
        "  - tests.core.helpers_core:min_words: &common {n: 5}\n    checkpoint: true\n"
        "  - tests.core.helpers_core:min_words: *common\n    id: again\n"
        "  - write_jsonl: {path: out}\n")
    run_cli("run", "p.yaml", cwd=tmp_path)
    st = run_cli("status", "p.yaml", "--set", "stages.min_words.n=9", cwd=tmp_path).stdout
    lines = {ln.split()[0]: ln for ln in st.splitlines()[1:-1]}
    assert "parameter 'n' changed (5 -> 9)" in lines["min_words"]
    assert "upstream stage 'min_words' changed" in lines["again"]
    assert "parameter" not in lines["again"]
    log = run_cli("run", "p.yaml", "--set", "stages.min_words.n=9", cwd=tmp_path).stderr
    assert "[again] rerunning: upstream stage 'min_words' changed\n" in log
    rep = report(tmp_path / "w")
    assert rep["min_words"]["params"] == {"n": 9} and rep["again"]["params"] == {"n": 5}


def wait_for(cond, what: str, timeout: float = 60.0):
    """Poll a real condition (a file's content), not a fixed sleep."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_second_run_on_a_work_dir_fails_fast_naming_the_holder(tmp_path):
    setup(tmp_path)
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    text = (tmp_path / "p.yaml").read_text().replace(
        "tests.core.helpers_core:upper_first: {}",
        f"tests.core.helpers_core:gate: {{fifo: '{fifo}'}}")
    (tmp_path / "p.yaml").write_text(text)
    lone = tmp_path / "lone"
    first = subprocess.Popen([sys.executable, "-m", "curator", "run", "p.yaml"], cwd=tmp_path,
                             env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        lock = tmp_path / "w" / ".lock"
        wait_for(lambda: lock.exists() and f'"pid":{first.pid}' in lock.read_text(),
                 "the first run to hold the lock")
        t0 = time.monotonic()
        second = run_cli("run", "p.yaml", cwd=tmp_path, check=False, timeout=60)
        assert second.returncode == 1 and time.monotonic() - t0 < 30
        err = second.stderr.strip().splitlines()
        assert len(err) == 1, second.stderr
        assert f"host {socket.gethostname()}, PID {first.pid}" in err[0]
        assert err[0].startswith("curator: error: work_dir ") and "in use" in err[0]
        # status while the run is held: its unfinished stages are the live run's
        st = run_cli("status", "p.yaml", cwd=tmp_path).stdout
        assert f"a run is in progress (host {socket.gethostname()}, PID {first.pid}" in st
        assert "started by the run in progress" in st and "interrupted earlier" not in st
        with open(fifo, "w") as f:  # let the first run go on
            f.write("go")
        _, ferr = first.communicate(timeout=120)
        assert first.returncode == 0, ferr
    finally:
        if first.poll() is None:
            first.kill()
    # the first run's output is the one a lone run gives (gate open from the start)
    (tmp_path / "p2.yaml").write_text(text.replace(f"fifo: '{fifo}'", "fifo: ''"))
    run_cli("run", "p2.yaml", "--work-dir", str(lone), cwd=tmp_path)
    assert tree_digest(tmp_path / "w" / "out") == tree_digest(lone / "out")
    assert (tmp_path / "w" / ".lock").read_text() == ""  # released: no holder to name


KILLED_HOLDER = """
import os, signal, sys
from curator.core.lock import WorkDirLock
WorkDirLock(sys.argv[1]).acquire()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_lock_of_a_dead_run_is_taken_over(tmp_path):
    setup(tmp_path)
    p = subprocess.run([sys.executable, "-c", KILLED_HOLDER, str(tmp_path / "w")],
                       env=cli_env())
    assert p.returncode == -9
    assert '"pid"' in (tmp_path / "w" / ".lock").read_text()  # its record is still there
    run_cli("run", "p.yaml", cwd=tmp_path)
    assert len(out_docs(tmp_path / "w")) > 0


def test_a_newer_dump_under_latest_reruns_the_source(tmp_path):
    """``dump_date: latest`` resolves to a date: the shard's data (URL, date, checksum) is part
    of its key, so a newer finished dump appearing in the mirror reruns the source."""
    import shutil

    root = Path(__file__).resolve().parents[2]
    mirror = tmp_path / "mirror"
    shutil.copytree(root / "data/sample/wikimedia", mirror)
    (tmp_path / "p.yaml").write_text(
        f"name: wl\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
        f"  - wikipedia: {{dump_date: latest, base_url: '{mirror}', limit_per_file: 5}}\n"
        "  - write_jsonl: {path: out}\n")
    run_cli("run", "p.yaml", cwd=tmp_path)
    assert "nothing to do" in run_cli("status", "p.yaml", cwd=tmp_path).stdout
    old, new = mirror / "enwiki/20160501", mirror / "enwiki/20160601"
    new.mkdir()
    for f in old.iterdir():
        (new / f.name.replace("20160501", "20160601")).write_bytes(
            f.read_bytes().replace(b"20160501", b"20160601") if f.suffix == ".json"
            else f.read_bytes())
    st = run_cli("status", "p.yaml", cwd=tmp_path).stdout
    assert "wikipedia-00000: " in st and "20160601" in st and "(new)" in st
    run_cli("run", "p.yaml", cwd=tmp_path)
    rep = report(tmp_path / "w")
    assert not rep["wikipedia"]["skipped"] and rep["wikipedia"]["shards_resumed"] == 0
    marker = json.loads((tmp_path / "w/stages/wikipedia/_done/wikipedia-00000.json").read_text())
    assert list(marker["read"]) == [str(new / "enwiki-20160601-pages-articles1.xml-p10p30302.bz2")]


def test_a_source_glob_that_reaches_the_runs_own_output_is_refused(tmp_path):
    """``paths: data/**/*.jsonl*`` with the work_dir (or a writer's output folder) under
    ``data/``: the rerun read the first run's shards and outputs as input, 1 document, then
    3, then 7, the duplicates only a warning. The rerun now stops with one line naming the
    file and whose output it is, and leaves the first run's output as it was."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text('{"id": "a", "text": "one document"}\n')
    for out, what in [("out", f"the work_dir '{data / 'work'}'"),
                      (str(data / "clean"), f"the output folder of stage 'write_jsonl' "
                                            f"'{data / 'clean'}'")]:
        wd = data / "work" if out == "out" else tmp_path / "w"
        (tmp_path / "p.yaml").write_text(
            f"name: p\nwork_dir: {wd}\nstages:\n"
            f"  - read_jsonl: {{paths: '{data}/**/*.jsonl*'}}\n"
            f"  - write_jsonl: {{path: {out}, compression: none}}\n")
        run_cli("run", "p.yaml", cwd=tmp_path)
        written = wd / "out" if out == "out" else Path(out)
        before = tree_digest(written)
        r = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert r.stderr.strip().splitlines()[-1] == (
            f"curator: error: stage 'read_jsonl': its paths match "
            f"'{written / 'read_jsonl-00000.jsonl'}', inside {what}: this pipeline's own "
            "output, which every rerun would read again; narrow the pattern or move the "
            "work_dir or output elsewhere")
        assert tree_digest(written) == before
        assert (written / "read_jsonl-00000.jsonl").read_text().count("\n") == 1
        assert [p.name for p in written.iterdir()] == ["read_jsonl-00000.jsonl"]
        shutil.rmtree(wd)
