"""The progress line carries an ETA from the time per finished shard."""

from __future__ import annotations

import io
import re
import time

import pytest

from curator.core.progress import Progress, format_seconds


def test_eta_from_time_per_shard():
    out = io.StringIO()
    p = Progress("s", stream=out, mode="log")
    p.start(10)
    assert p.eta() == "?"  # nothing finished yet: no estimate rather than a wrong one
    p.done = 4
    p.t0 -= 8.0  # 4 shards took 8 s: 6 left at 2 s each
    assert p.eta() in ("12s", "13s")
    p.done = 9
    p({"docs_in": 5})  # the last shard
    assert out.getvalue().rstrip().endswith("ETA 0s")


def test_format_seconds_units():
    assert [format_seconds(x) for x in (0.4, 59, 61, 3599, 3600 * 5 + 120, 86400 * 2 + 7200)] \
        == ["0s", "59s", "1m01s", "59m59s", "5h02m", "2d02h"]


# -- progress inside a long shard ----------------------------------------------------------------


def test_heartbeats_show_the_shard_in_flight(tmp_path):
    """A worker's heartbeat file reaches the driver's line while the shard is still read."""
    from curator.base.document import Document
    from curator.core.progress import heartbeat, heartbeat_path, read_beats

    out = io.StringIO()
    live = tmp_path / "stages" / "web" / "_progress"
    p = Progress("web", stream=out, mode="log", live_dir=str(live))
    p.line_s = 0.05
    p.start(2)
    docs = (Document(f"d{i}", "é" * 10) for i in range(10**9))  # 20 UTF-8 bytes each
    it = heartbeat(docs, heartbeat_path(str(tmp_path), "web", "web-00000"), every=0.0)
    n = 0
    deadline = time.monotonic() + 60
    while "in flight" not in out.getvalue():  # the watcher thread prints between shards
        next(it)
        n += 1
        assert time.monotonic() < deadline, out.getvalue()
    line = next(ln for ln in out.getvalue().splitlines() if "in flight" in ln)
    m = re.fullmatch(r"\[web\] 0/2 shards, 0 docs, 0 docs/s, ETA \?; in flight: ([\d,]+) docs, "
                     r"([\d.,]+) MB, ([\d,]+) docs/s \(web-00000\)", line)
    assert m, line
    seen = int(m.group(1).replace(",", ""))
    assert 0 < seen <= n and float(m.group(2).replace(",", "")) == pytest.approx(
        seen * 20 / 1e6, abs=0.051)
    assert list(read_beats(str(live))) == ["web-00000"]
    it.close()  # the shard ends: its heartbeat goes
    assert read_beats(str(live)) == {}
    p({"docs_in": n})
    p({"docs_in": 0})
    p.finish()
    assert out.getvalue().rstrip().endswith("ETA 0s") and not live.exists()


def test_a_long_shard_shows_progress_in_a_real_run(tmp_path):
    """One 400,000-line JSONL shard: the run's log has in-flight lines before it ends."""
    import json
    import os
    import subprocess
    import sys

    from tests.helpers import cli_env

    with open(tmp_path / "big.jsonl", "w") as f:
        for i in range(400_000):
            f.write(json.dumps({"id": str(i), "text": f"document number {i}"}) + "\n")
    (tmp_path / "p.yaml").write_text("name: p\nwork_dir: work\nstages:\n"
                                     "  - {id: big, read_jsonl: {paths: big.jsonl}}\n")
    env = {**cli_env(), "CURATOR_PROGRESS_S": "0.2", "CURATOR_HEARTBEAT_S": "0.05"}
    r = subprocess.run([sys.executable, "-m", "curator", "run", "p.yaml"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    live = [ln for ln in r.stderr.splitlines() if "in flight" in ln]
    # the share of the file read gives the shard, and so the stage, an ETA before it ends
    pat = (r"\[big\] 0/1 shards, 0 docs, 0 docs/s, ETA (\w+|\?); in flight: [\d,]+ docs, "
           r"[\d.,]+ MB, [\d,]+ docs/s \(big-00000 (\d+)%, ETA (\w+)\)$")
    got = [re.match(pat, ln) for ln in live]
    assert live and all(got), r.stderr
    pcts = [int(m.group(2)) for m in got]
    assert pcts == sorted(pcts) and 0 < pcts[0] < 100, pcts
    assert all(m.group(1) != "?" for m in got)  # no shard finished, yet the stage has an ETA
    assert not os.path.exists(tmp_path / "work" / "stages" / "big" / "_progress")


def test_stage_eta_counts_the_share_read_of_shards_in_flight(tmp_path):
    """No shard finished, one a quarter read after 10 s, two in the stage: 70 s left (it was
    '?' until the first shard ended); the named shard shows its share and its own ETA."""
    from curator.core.progress import _write_beat

    out = io.StringIO()
    live = tmp_path / "_progress"
    p = Progress("web", stream=out, mode="log", live_dir=str(live))
    p.start(2)
    p.t0 -= 10.0
    now = time.time()
    _write_beat(str(live / "web-00000.json"), {"docs": 100, "bytes": 1000, "started": now - 10,
                                               "at": now, "fraction": 0.25})
    assert p._live_text().endswith("(web-00000 25%, ETA 30s)")
    assert p.eta() in ("1m10s", "1m11s")
    p({"docs_in": 400})  # a shard ends: the estimate is from finished shards until reread
    assert p.eta() in ("10s", "11s")
    p.finish()


# -- global stages: a line per phase -----------------------------------------------------------


def test_a_global_stage_shows_its_phases_in_log_mode(tmp_path):
    """exact_dedup on one 100,000-document shard: its hash phase has lines of its own, named
    by stage and phase, counting the documents of the task in flight before the task ends
    (a global stage used to print nothing between its start and its summary line)."""
    import json
    import subprocess
    import sys

    from tests.helpers import cli_env

    with open(tmp_path / "big.jsonl", "w") as f:
        for i in range(100_000):
            f.write(json.dumps({"id": str(i), "text": f"document {i % 75_000} and words"}) + "\n")
    (tmp_path / "p.yaml").write_text("name: p\nwork_dir: work\nstages:\n"
                                     "  - {id: big, read_jsonl: {paths: big.jsonl}}\n"
                                     "  - {id: dedup, exact_dedup: {}}\n")
    env = {**cli_env(), "CURATOR_PROGRESS_S": "0.05", "CURATOR_HEARTBEAT_S": "0.02"}
    r = subprocess.run([sys.executable, "-m", "curator", "run", "p.yaml"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("[dedup:hash]")]
    pat = (r"\[dedup:hash\] 0/1 tasks, 0 docs, 0 docs/s, ETA (\S+); in flight: ([\d,]+) docs, "
           r"([\d,]+) docs/s \(big-00000( \d+%, ETA \w+)?\)")
    live = [m for m in map(re.fullmatch, [pat] * len(lines), lines) if m]
    seen = [int(m.group(2).replace(",", "")) for m in live]
    # a line every interval while the task runs, in flight once its first beat is written
    # (the count grows; before its first document the line shows the task without a count)
    assert all(ln.startswith(("[dedup:hash] 0/1 tasks, 0 docs, 0 docs/s, ETA ",
                              "[dedup:hash] 0/1 tasks, ETA ")) for ln in lines[:-1]), r.stderr
    assert live and seen == sorted(seen), r.stderr
    assert any(0 < n < 100_000 for n in seen), seen
    assert all(int(m.group(3).replace(",", "")) > 0 for m, n in zip(live, seen) if n)
    assert re.fullmatch(r"\[dedup:hash\] 1/1 tasks, 100000 docs, [\d,]+ docs/s, ETA 0s",
                        lines[-1]), lines[-1]
    assert "25000 removed" in r.stderr
    assert not (tmp_path / "work" / "stages" / "dedup" / "_progress").exists()


def test_a_phase_line_every_interval_even_without_news():
    """A phase task that counts nothing (one k-means fit) still gets a line every interval
    in log mode, so a long one is seen to be alive, showing tasks only (never "0 docs" for
    work not counted in documents); a phase shorter than the interval gets none."""
    out = io.StringIO()
    stage = Progress("sd", stream=out, mode="log")
    stage.line_s = 0.05
    p = stage.phase("sd:kmeans")
    p.start(1)
    deadline = time.monotonic() + 60
    while out.getvalue().count("\n") < 3:
        assert time.monotonic() < deadline, out.getvalue()
        time.sleep(0.01)
    p((None, None))
    p.finish()
    lines = out.getvalue().splitlines()
    assert all(ln == "[sd:kmeans] 0/1 tasks, ETA ?" for ln in lines[:-1]), lines
    assert lines[-1] == "[sd:kmeans] 1/1 tasks, ETA 0s"
    quiet = io.StringIO()
    q = Progress("sd", stream=quiet, mode="log").phase("sd:assign")
    q.start(1)
    q((None, None))
    q.finish()
    assert quiet.getvalue() == ""


def test_a_phase_bar_on_a_terminal():
    """On a terminal a phase draws its bar (tasks, rate, ETA) as items finish; a phase over
    in a moment wipes it, a longer one leaves its last state on its own line."""
    out = io.StringIO()
    stage = Progress("sd", stream=out, mode="bar")
    p = stage.phase("sd:embed", docs_of=lambda r: r)
    p.start(2)
    p(100)
    assert out.getvalue().startswith("\r[sd:embed] |############............| 1/2 tasks  ")
    p(50)
    p.finish()
    assert "] |########################| 2/2 tasks  " in out.getvalue()
    assert "ETA 0s" in out.getvalue().rsplit("\r[sd:embed]", 1)[1]
    assert out.getvalue().endswith("\r\033[K")  # under 2 s: wiped
    slow = io.StringIO()
    q = Progress("sd", stream=slow, mode="bar").phase("sd:embed")
    q.start(1)
    q.t0 -= 5
    q(None)
    q.finish()
    assert slow.getvalue().endswith("\033[K\n") and "1/1 tasks" in slow.getvalue()


def test_global_stage_phase_lines_count_their_documents(tmp_path):
    """A real run in log mode through exact_dedup, fuzzy_dedup, train_tokenizer and
    megatron_shards: each phase that handles documents ends on the corpus size (the
    tokenizer's train phase, fed on the trainer's own threads, and the shard merge
    included); a phase not counted in documents (hash groups, LSH buckets, components)
    shows tasks only: no phase line ever ends on "0 docs"."""
    import json
    import random
    import subprocess
    import sys

    from tests.helpers import cli_env

    rng = random.Random(7)
    vocab = [f"w{i}x{rng.randrange(10**6)}" for i in range(3000)]
    n = 240
    for i in range(n):  # three files: three shards, so phases have several tasks
        with open(tmp_path / f"c{i % 3}.jsonl", "a") as f:
            text = " ".join(rng.choice(vocab) for _ in range(60))
            f.write(json.dumps({"id": str(i), "text": text}) + "\n")
    (tmp_path / "p.yaml").write_text(
        "name: p\nwork_dir: work\nprogress: log\nreport: false\nstages:\n"
        "  - {id: c, read_jsonl: {paths: 'c*.jsonl'}}\n"
        "  - exact_dedup: {}\n  - fuzzy_dedup: {}\n"
        "  - train_tokenizer: {type: bpe, vocab_size: 300}\n"
        "  - megatron_shards: {output_dir: mg}\n")
    # interval 0: every phase, however short, ends on a line (a phase done in under the
    # interval prints none, and on a fast machine a phase can take under a millisecond)
    env = {**cli_env(), "CURATOR_PROGRESS_S": "0"}
    r = subprocess.run([sys.executable, "-m", "curator", "run", "p.yaml"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"[fuzzy_dedup] {n} -> {n} docs" in r.stderr  # nothing removed: all phases see n
    last: dict[str, str] = {}
    for ln in r.stderr.splitlines():
        m = re.match(r"\[(\w+:\w+)\] ", ln)
        if m:
            last[m.group(1)] = ln
    counted = ["exact_dedup:hash", "fuzzy_dedup:signatures", "train_tokenizer:sample",
               "train_tokenizer:train", "megatron_shards:tokenize", "megatron_shards:merge"]
    for phase in counted:
        assert re.fullmatch(rf"\[{phase}\] (\d+)/\1 tasks, {n} docs, [\d,]+ docs/s, ETA 0s",
                            last.get(phase, "")), (phase, r.stderr)
    uncounted = set(last) - set(counted)
    assert {"exact_dedup:groups", "fuzzy_dedup:components"} <= uncounted, sorted(last)
    for phase in uncounted:
        assert re.fullmatch(rf"\[{phase}\] (\d+)/\1 tasks, ETA 0s", last[phase]), last[phase]
