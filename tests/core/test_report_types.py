"""report.py renders typed records (RunReport, StageReport holding a StageStats): a report.json
written before them reads back key for key, re-renders with ``curator report``, and a run now
writes the same keys (a renamed key fails here)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from curator.core.report import RunReport, StageReport, render_html
from curator.core.stats import StageStats
from tests.helpers import run_cli

MAIN = Path(__file__).parent / "data" / "main_report"
#: Values that differ between two runs of the same pipeline.
TIMINGS = {"seconds", "cpu_s", "peak_rss_mb", "shard_seconds"}


def _main_report() -> dict[str, Any]:
    return json.loads((MAIN / "report.json").read_text())


def _without_timings(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: None if k in TIMINGS else _without_timings(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_without_timings(v) for v in x]
    return x


def test_a_report_json_written_by_main_reads_back_key_for_key() -> None:
    data = _main_report()
    report = RunReport.from_json(data)
    assert json.dumps(report.to_json()) == json.dumps(data)  # same keys, same order, same values
    by_id = {s.id: s for s in report.stages}
    assert isinstance(by_id["read_jsonl"].stats, StageStats)
    assert by_id["read_jsonl"].stats.sources == {"web": 20, "books": 20, "news": 20}
    assert by_id["read_jsonl"].stats.quarantined == {"invalid JSON": 1}
    assert by_id["word_count_filter"].stats.removed == 16
    assert by_id["fuzzy_dedup"].artifacts["report_tables"]


def test_an_older_entry_keeps_its_keys_and_shows_a_dash() -> None:
    """A stage reused from a run of a version without CPU figures has no ``cpu_s`` in its
    entry, and an entry may hold a key this version does not know: both come back as they
    were, and the report shows "-" for the missing figures."""
    data = _main_report()
    old = data["stages"][1]
    del old["cpu_s"], old["peak_rss_mb"]
    old["from_the_future"] = {"x": 1}
    report = RunReport.from_json(data)
    assert json.dumps(report.to_json()) == json.dumps(data)
    assert report.stages[1].measured("cpu_s") == "-"
    row = render_html(report).split(f"<td>{old['id']}</td>", 1)[1].split("</tr>", 1)[0]
    assert row.count("<td>-</td>") == 2


def test_curator_report_re_renders_a_report_json_written_by_main(tmp_path: Path) -> None:
    wd = tmp_path / "w"
    wd.mkdir()
    shutil.copy(MAIN / "report.json", wd / "report.json")
    p = run_cli("report", str(wd), cwd=tmp_path)
    assert p.stdout.strip() == str(wd / "report.html")
    assert (wd / "report.json").read_bytes() == (MAIN / "report.json").read_bytes()
    page = (wd / "report.html").read_text()
    for s in _main_report()["stages"]:
        assert f"<td>{s['id']}</td><td>{s['stage']}</td><td>{s['docs_in']:,}</td>" in page
    assert "<td>read_jsonl</td><td>invalid JSON</td><td>1</td>" in page


def test_a_run_now_writes_what_main_wrote(tmp_path: Path) -> None:
    """The same pipeline on the same input: every key (in order) and every count of main's
    report.json, only the timings and the work_dir differ."""
    for name in ("p.yaml", "docs.jsonl"):
        shutil.copy(MAIN / name, tmp_path / name)
    run_cli("run", "p.yaml", cwd=tmp_path)
    now = json.loads((tmp_path / "w" / "report.json").read_text())
    then = _main_report()
    assert now["work_dir"] == str(tmp_path / "w")
    now["work_dir"] = then["work_dir"]
    # added since: the tally of every run of the work_dir (the header's total wall time)
    assert now.pop("all_runs")["runs"] == 1
    # and the readers' metadata_field parameter (datatrove's nested metadata)
    assert now["stages"][0]["params"].pop("metadata_field") == "metadata"
    # and the word rules' language parameters (per-language word splitting)
    for stage in now["stages"]:
        if "language_field" in stage["params"]:
            assert stage["params"].pop("language") is None
            assert stage["params"].pop("language_field") == "language"
    assert json.dumps(_without_timings(now)) == json.dumps(_without_timings(then))


@pytest.mark.parametrize("damage, message", [
    (lambda d: d["stages"][2].pop("id"), "stages[2]: id is missing or not a string"),
    (lambda d: d["stages"][0].update(docs_out="many"),
     "stages[0]: docs_out is not a number: 'many'"),
    (lambda d: d.update(stages={}), "stages is missing or not a list"),
    (lambda d: d["stages"].append(7), "stages[5]: not a mapping: int"),
])
def test_a_damaged_report_json_is_one_line_naming_the_key(tmp_path: Path, damage,
                                                          message: str) -> None:
    data = _main_report()
    damage(data)
    (tmp_path / "report.json").write_text(json.dumps(data))
    p = run_cli("report", str(tmp_path), cwd=tmp_path, check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert p.stderr.strip() == (f"curator: error: {tmp_path / 'report.json'}: not a curator "
                                f"run report: {message}")
    assert not (tmp_path / "report.html").exists()


def test_a_stage_entry_is_its_result_and_its_stats() -> None:
    """The runner builds each entry from the stage's result (``_SUCCESS.json``)."""
    stats = StageStats(docs_in=3, docs_out=2)
    stats.rejected["short"] = 1
    result = {"stage": "word_count_filter", "kind": "shard", "inputs": ["read_jsonl"],
              "params": {"min_words": 3}, "seconds": 0.5, "artifacts": {},
              "shards": [{"name": "a"}, {"name": "b"}], "stats": stats.to_json()}
    entry = StageReport.from_result("wc", result)
    assert entry.shards == 2 and not entry.skipped and entry.stats == stats
    assert list(entry.to_json())[:9] == ["id", "stage", "kind", "inputs", "params", "seconds",
                                         "skipped", "artifacts", "shards"]
    assert {k: entry.to_json()[k] for k in stats.to_json()} == stats.to_json()
