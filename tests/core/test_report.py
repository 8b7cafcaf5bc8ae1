"""The run report (JSON and a self-contained HTML page rendered in headless Chromium), the
rejected-documents output, custom filters by dotted path, and progress output."""

from __future__ import annotations

import io
import json
import re
import struct
from pathlib import Path

from curator.core.progress import Progress
from curator.storage.shards import read_records
from tests.core.helpers_chromium import chromium
from tests.core.helpers_core import make_corpus
from tests.helpers import run_cli

PIPE = """\
name: report-test
work_dir: {wd}
save_rejected: {save}
stages:
  - read_jsonl: {{paths: "{data}"}}
  - tests.core.helpers_core:min_words: {{n: 20}}
  - tests.core.helpers_core:AboveMedian: {{}}
  - write_jsonl: {{path: out}}
"""

def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def setup(tmp_path: Path, save: bool = True) -> Path:
    make_corpus(str(tmp_path / "in.jsonl"), 200, seed=4, bad_lines=3)
    (tmp_path / "p.yaml").write_text(PIPE.format(
        wd=tmp_path / "w", data=tmp_path / "in.jsonl", save=str(save).lower()))
    run_cli("run", "p.yaml", cwd=tmp_path)
    return tmp_path / "w"


def test_report_json_counts_and_rejected_output(tmp_path):
    wd = setup(tmp_path)
    rep = json.loads((wd / "report.json").read_text())
    st = {s["id"]: s for s in rep["stages"]}
    assert st["read_jsonl"]["docs_out"] == 200
    assert st["read_jsonl"]["quarantined"] and sum(st["read_jsonl"]["quarantined"].values()) == 3
    mw = st["min_words"]
    assert mw["docs_in"] == 200 and mw["rejected"] == {"min_words": 200 - mw["docs_out"]}
    assert st["above_median"]["rejected"]["below_median"] > 0
    assert st["above_median"]["counters"] == {"documents_seen": mw["docs_out"]}
    for s in rep["stages"]:
        assert s["docs_in"] - sum(s["rejected"].values()) == s["docs_out"] or \
            s["kind"] == "source"
        assert sum(s["length_hist"]) == s["docs_out"]
        assert s["seconds"] >= 0
    # every removed document is in rejected/<stage>/ with its stage and reason
    rej = [r for p in sorted((wd / "rejected" / "min_words").glob("*")) for r in
           read_records(str(p))]
    assert len(rej) == mw["docs_in"] - mw["docs_out"]
    assert all(r["rejected"] == {"stage": "min_words", "reason": "min_words"} for r in rej)
    assert all(len(r["text"].split()) < 20 for r in rej)
    med = [r for p in (wd / "rejected" / "above_median").glob("*") for r in read_records(str(p))]
    assert med and all(r["rejected"]["median"] == st["above_median"]["artifacts"]["median"]
                       for r in med)


def test_rejected_output_can_be_switched_off(tmp_path):
    wd = setup(tmp_path, save=False)
    assert not (wd / "rejected").exists()
    rep = json.loads((wd / "report.json").read_text())
    assert rep["stages"][1]["rejected"]["min_words"] > 0  # still counted


def test_report_html_renders_in_chromium_with_plots(tmp_path):
    wd = setup(tmp_path)
    html = wd / "report.html"
    dom = chromium(["--dump-dom", html.as_uri()], tmp_path).stdout
    assert "curator run report: report-test" in dom
    assert dom.count('class="plot plot-funnel"') == 1
    assert dom.count('class="bar"') == 4  # one bar per stage
    assert 'class="plot plot-hist"' in dom and dom.count('class="series"') == 4
    assert "below_median" in dom and "invalid JSON" in dom
    assert "http" not in html.read_text().split("<body>")[0]  # self-contained: no external refs

    shot, blank = tmp_path / "report.png", tmp_path / "blank.png"
    chromium([f"--screenshot={shot}", "--window-size=1000,1400", html.as_uri()], tmp_path)
    (tmp_path / "blank.html").write_text("<html><body></body></html>")
    chromium([f"--screenshot={blank}", "--window-size=1000,1400",
              (tmp_path / "blank.html").as_uri()], tmp_path)
    assert png_size(shot) == (1000, 1400)
    assert shot.stat().st_size > 10 * blank.stat().st_size  # plots and tables were drawn


def test_custom_filter_by_dotted_path_in_ten_lines(tmp_path):
    pkg = tmp_path / "my_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "filters.py").write_text(
        "from curator import filter\n\n"
        "@filter\n"
        "def too_many_emojis(doc, max_ratio: float = 0.01) -> bool:\n"
        "    emojis = sum(1 for ch in doc.text if ord(ch) >= 0x1F300)\n"
        "    return emojis / max(len(doc.text), 1) <= max_ratio\n")
    recs = [{"id": "calm", "text": "a plain sentence"}, {"id": "loud", "text": "wow 🎉🎉🎉🎉"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "p.yaml").write_text(
        "name: custom\nwork_dir: w\nstages:\n  - read_jsonl: {paths: in.jsonl}\n"
        "  - my_pkg.filters:too_many_emojis: {max_ratio: 0.1}\n")
    import os

    env_pp = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env_pp}"
    try:
        run_cli("run", "p.yaml", "--executor", "dask", "--workers", "1", cwd=tmp_path)
    finally:
        os.environ["PYTHONPATH"] = env_pp
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    assert rep["stages"][1]["id"] == "too_many_emojis"
    assert rep["stages"][1]["rejected"] == {"too_many_emojis": 1}
    [kept] = [r for p in (tmp_path / "w/stages/too_many_emojis/data").glob("*")
              for r in read_records(str(p))]
    assert kept["id"] == "calm"
    # The current directory and the pipeline file's folder are on the import path; a copy of
    # the pipeline in a folder without my_pkg/, run from there, cannot import it.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "p.yaml").write_text((tmp_path / "p.yaml").read_text())
    res = run_cli("validate", "p.yaml", cwd=elsewhere, check=False)
    assert res.returncode == 2 and "cannot import 'my_pkg.filters:too_many_emojis'" in res.stderr
    # (its input path is relative to the current folder, which validate checks too)
    (elsewhere / "in.jsonl").write_text((tmp_path / "in.jsonl").read_text())
    res = run_cli("validate", str(tmp_path / "p.yaml"), cwd=elsewhere)
    assert "imports: my_pkg.filters (custom stage: too_many_emojis)" in res.stdout


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_terminal_and_lines_otherwise():
    tty, plain = TTY(), io.StringIO()
    for stream in (tty, plain):
        p = Progress("stage_x", stream=stream)
        p.start(3)
        for _ in range(3):
            p({"docs_in": 10})
        p.finish()
    assert "\r[stage_x] |" in tty.getvalue() and "3/3 shards" in tty.getvalue()
    assert "\r" not in plain.getvalue()
    assert plain.getvalue().splitlines()[-1].startswith("[stage_x] 3/3 shards, 30 docs")


SOURCES_PIPE = """\
name: by-source
work_dir: {wd}
stages:
  - read_jsonl: {{paths: "{web}", source: web}}
    id: web
  - read_jsonl: {{paths: "{books}", source: books}}
    id: books
  - tests.core.helpers_core:min_words: {{n: 20}}
    inputs: [web, books]
  - pii_redact: {{}}
  - bad_words_filter: {{words: [{bad}], max_count: 0}}
  - select: {{expr: "length < 1500"}}
"""


def test_report_removals_by_source_and_rule(tmp_path):
    """Two sources through three rules: the source x rule table in report.json and in the page
    Chromium renders matches the rejected documents themselves; PII and word counts are
    listed per kind."""
    web = make_corpus(str(tmp_path / "web.jsonl"), 120, seed=1)
    make_corpus(str(tmp_path / "books.jsonl"), 80, seed=2)
    bad = sorted({r["text"].split()[0] for r in web})[0]  # a word some documents start with
    with open(tmp_path / "web.jsonl", "a") as f:
        f.write(json.dumps({"id": "pii", "text": " ".join(["mail jane.doe@example.org"] * 12)})
                + "\n")
    (tmp_path / "p.yaml").write_text(SOURCES_PIPE.format(
        wd=tmp_path / "w", web=tmp_path / "web.jsonl", books=tmp_path / "books.jsonl", bad=bad))
    run_cli("run", "p.yaml", cwd=tmp_path)
    wd = tmp_path / "w"
    rep = json.loads((wd / "report.json").read_text())
    want: dict[str, int] = {}
    for stage in ("min_words", "bad_words_filter", "select"):
        for p in (wd / "rejected" / stage).glob("*"):
            for r in read_records(str(p)):
                key = f"{r['meta']['source']}\t{r['rejected']['reason']}"
                want[key] = want.get(key, 0) + 1
    got = {k: v for s in rep["stages"] for k, v in s["rejected_by_source"].items()}
    assert got == want and len({k.split("\t")[0] for k in got}) == 2, got
    assert {k.split("\t")[1] for k in got} >= {"min_words", "bad_words_filter"}
    pii = next(s for s in rep["stages"] if s["id"] == "pii_redact")
    assert pii["counters"]["pii:email"] == 12

    dom = chromium(["--dump-dom", (wd / "report.html").as_uri()], tmp_path).stdout
    table = dom.split('class="by-source"', 1)[1].split("</table>", 1)[0]
    head = re.findall(r"<th>([^<]*)</th>", table)
    assert head[:2] == ["stage", "rule"] and set(head[2:4]) == {"web", "books"}
    rows = [re.findall(r"<td>([^<]*)</td>", r) for r in table.split("<tr>")[2:]]
    for row in rows[:-1]:
        stage_reason = (row[0], row[1])
        for src, cell in zip(head[2:4], row[2:4]):
            assert int(cell.replace(",", "")) == want.get(f"{src}\t{stage_reason[1]}", 0)
    assert rows[-1][0] == "all" and int(rows[-1][-1].replace(",", "")) == sum(want.values())
    assert 'class="found"' in dom and "email" in dom
