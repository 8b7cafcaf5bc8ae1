"""The typed record of a shard's work (``ShardStats``) and of a stage's (``StageStats``): what a
marker or ``_SUCCESS.json`` written by curator before these types existed says is read back
unchanged, so an old work_dir resumes; ``merge`` adds records up the way the report does.

``data/main_markers/`` holds files written by the quickstart on main before this change
(commit 5e5ad17, work_dir ``/tmp/stats25/qs``): a fused group's shard marker (web source and six
filters, with rejections and a quarantined record) and three stage results (a source, a filter,
a global stage)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner
from curator.core.shard_runner import (
    ShardTask,
    Step,
    data_path,
    marker_path,
    read_marker,
    run_shard,
)
from curator.core.stats import HIST_BINS, ShardStats, StageStats, aggregate
from tests.core.helpers_core import make_corpus

DATA = Path(__file__).parent / "data" / "main_markers"


def _group_task(wd: Path, marker: dict) -> ShardTask:
    """The task whose steps the old marker describes (keys as the old run computed them)."""
    entries = [*marker["group"], marker]
    ids = ["web", "web_urls", "web_unicode", "web_language", "web_repetition", "web_gopher",
           "web_fineweb"]
    stage: Any = None  # a resumed shard is not run: no stage is needed
    steps = [Step(stage, sid, e["fingerprint"], e["key"], write=k == len(ids) - 1)
             for k, (sid, e) in enumerate(zip(ids, entries, strict=True))]
    return ShardTask(steps, str(wd), "web-00001", None, None, True)


def test_a_marker_written_before_the_types_resumes_unchanged(tmp_path):
    """A shard marker written by main (dict stats) is read as ShardStats: the shard is not
    redone, every step's record says what the old one said (field for field, in the same
    order), and the markers of the steps above are put back from the group's."""
    wd = tmp_path / "wd"
    src = DATA / "web_fineweb-web-00001.json"
    dest = Path(marker_path(str(wd), "web_fineweb", "web-00001"))
    dest.parent.mkdir(parents=True)
    shutil.copy(src, dest)
    out = Path(data_path(str(wd), "web_fineweb", "web-00001"))
    out.parent.mkdir(parents=True)
    out.write_bytes(b"")  # the output shard the marker names must exist (not read)
    old = read_marker(str(dest), str(wd))  # rebased onto this work_dir, as a rerun reads it
    assert old is not None and old["stats"]["path"] == str(out)

    stats = run_shard(_group_task(wd, old))

    assert all(isinstance(s, ShardStats) and s.resumed for s in stats)
    want = [e["stats"] for e in (*old["group"], old)]
    got = [s.to_json() | {"resumed": False} for s in stats]
    assert [orjson.dumps(g) for g in got] == [orjson.dumps(w) for w in want]
    assert stats[0].sources == {"web": 29} and stats[0].quarantined == {"empty page": 1}
    assert stats[-2].rejected == {"gopher_quality:alpha_words": 8,
                                  "gopher_quality:word_count": 1}
    assert stats[-1].rejected == {"fineweb_quality:char_dup_ratio": 2}
    # the first step's own marker, missing here, is written back from the group entry
    first = Path(marker_path(str(wd), "web", "web-00001"))
    assert json.loads(first.read_text()) == old["group"][0]
    assert dest.read_bytes() == src.read_bytes()  # the group's marker is never rewritten


@pytest.mark.parametrize("name", ["web_SUCCESS.json", "web_gopher_SUCCESS.json",
                                  "fuzzy_dedup_SUCCESS.json"])
def test_stage_stats_of_an_old_result_round_trip_byte_for_byte(name):
    """``_SUCCESS.json``'s stats (a source with its meta.source tally, a filter with reasons,
    a global stage with counters) through StageStats and back: the same JSON bytes."""
    old = json.loads((DATA / name).read_text())["stats"]
    assert orjson.dumps(StageStats.from_json(old).to_json()) == orjson.dumps(old)


def test_shard_stats_from_a_marker_of_an_older_version_gets_defaults():
    """A marker from before CPU/RSS and per-source counts were kept: what is missing gets its
    default (not measured: no CPU figure), and writing it back adds no invented numbers."""
    st = ShardStats.from_json({"shard": "a-00000", "docs_in": 3, "docs_out": 2, "path": "/x",
                               "rejected": {"short": 1}, "seconds": 0.5, "future_field": 1})
    assert (st.docs_in, st.docs_out, st.rejected, st.cpu_s, st.sources) == (
        3, 2, {"short": 1}, None, None)
    assert "cpu_s" not in st.to_json() and "sources" not in st.to_json()
    assert st.length_hist == [] and st.rejected_by_source == {}


def _shard(name: str, n: int, reason: str, src: str, hist_bin: int) -> ShardStats:
    hist = [0] * HIST_BINS
    hist[hist_bin] = n
    return ShardStats(name, docs_in=n + 1, bytes_in=10 * n + 10, docs_out=n, bytes_out=10 * n,
                      rejected={reason: 1}, counters={f"c:{src}": n},
                      rejected_by_source={f"{src}\t{reason}": 1}, length_hist=hist,
                      seconds=0.25 * n, sources={src: n}, cpu_s=0.1, peak_rss_mb=50.0 + n)


def test_merge_adds_up_in_any_grouping():
    """Summing per shard, per half or all at once gives the same stage record (a tree of
    merges, as a distributed reduction would do, equals the runner's running sum)."""
    shards = [_shard(f"s{i}", i + 1, "short" if i % 2 else "long", f"src{i % 3}", i)
              for i in range(6)]
    whole = StageStats.of_shards(shards)
    halves = StageStats.of_shards(shards[:2]).merge(StageStats.of_shards(shards[2:]))
    pairs = StageStats()
    for i in range(0, 6, 2):
        pairs.merge(StageStats.of_shards(shards[i:i + 2]))
    for other in (halves, pairs):
        assert other.to_json() == whole.to_json()
    assert (whole.docs_in, whole.docs_out, whole.removed) == (27, 21, 6)
    assert whole.rejected == {"long": 3, "short": 3}
    assert whole.sources == {"src0": 5, "src1": 7, "src2": 9}
    assert whole.length_hist[:6] == [1, 2, 3, 4, 5, 6]


def test_aggregate_sorts_tallies_and_leaves_cpu_to_the_shards_done_now():
    """The stage record lists reasons largest first (ties by name), counts reused shards, and
    takes CPU seconds only from the shards computed in this run."""
    a = _shard("a", 1, "zeta", "x", 3)
    b = _shard("b", 2, "alpha", "x", 3)
    c = _shard("c", 3, "alpha", "y", 4)
    c.resumed = True
    agg = aggregate([a, b, c], None)
    assert list(agg.rejected.items()) == [("alpha", 2), ("zeta", 1)]
    assert agg.shards_resumed == 1
    assert agg.cpu_s == pytest.approx(0.2) and agg.peak_rss_mb == 52.0
    assert list(agg.to_json())[-1] == "sources"


def test_a_run_writes_the_stats_it_returns(tmp_path):
    """End to end: what run_shard returned is what the markers hold and what report.json
    sums, for each stage of a fused chain."""
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 40, seed=3, bad_lines=4)
    wd = tmp_path / "wd"
    text = (f"name: t\nwork_dir: {wd}\nprogress: off\nstages:\n"
            f"  - read_jsonl: {{paths: \"{data}/*.jsonl\"}}\n"
            "  - tests.core.helpers_core:min_words: {n: 8}\n")
    summary = Runner(pl.loads(text), LocalExecutor()).run()
    report = json.loads((wd / "report.json").read_text())
    for s in report["stages"]:
        markers = [json.loads(p.read_text()) for p in sorted(
            (wd / "stages" / s["id"] / "_done").glob("*.json"))]
        total = StageStats.of_shards(ShardStats.from_json(m["stats"]) for m in markers)
        assert (total.docs_in, total.docs_out, dict(total.rejected), dict(total.quarantined)) == (
            s["docs_in"], s["docs_out"], s["rejected"], s["quarantined"])
    by_id = {s["id"]: s for s in summary["stages"]}
    assert by_id["read_jsonl"]["quarantined"] and by_id["min_words"]["rejected"]


@pytest.mark.parametrize("damage", [{"docs_in": "lots"}, {"bytes_out": None},
                                    {"path": 7}, {"seconds": [1]}])
def test_a_damaged_marker_redoes_its_shard(tmp_path, damage):
    """A shard marker whose counts are not numbers (edited by hand, written by a broken
    tool) is not summed into the report: the shard is redone and gets a sound marker."""
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 30, seed=5)
    wd = tmp_path / "wd"
    text = (f"name: t\nwork_dir: {wd}\nprogress: off\nstages:\n"
            f"  - read_jsonl: {{paths: \"{data}/*.jsonl\"}}\n"
            "  - tests.core.helpers_core:min_words: {n: 8}\n"
            "  - tests.core.helpers_core:upper_first: {}\n")
    first = {s["id"]: s for s in Runner(pl.loads(text), LocalExecutor()).run()["stages"]}
    marker = next((wd / "stages" / "upper_first" / "_done").glob("*.json"))
    m = json.loads(marker.read_text())
    m["group"][1]["stats"].update(damage)  # the middle stage's record, inside the group's
    marker.write_text(json.dumps(m))
    (wd / "stages" / "upper_first" / "_SUCCESS.json").unlink()
    again = {s["id"]: s for s in Runner(pl.loads(text), LocalExecutor()).run()["stages"]}
    for sid, s in first.items():
        assert (again[sid]["docs_in"], again[sid]["docs_out"], again[sid]["rejected"]) == (
            s["docs_in"], s["docs_out"], s["rejected"])
        assert again[sid]["shards_resumed"] == 0
    redone = json.loads(marker.read_text())
    assert isinstance(redone["group"][1]["stats"]["docs_in"], int)
