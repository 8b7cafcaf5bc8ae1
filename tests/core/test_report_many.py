"""report.html stays readable for a run over 20 sources and 35 languages: tables keyed by source
or language list the top 10 and one "other" row or column whose count is the sum of the rest,
and nothing in the page Chromium lays out is wider than the window."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from curator.core.report import TOP_N, RunReport, render_html
from tests.core.helpers_chromium import chromium

SOURCES = [f"crawl-{i:02d}" for i in range(19)] + ["a_source_with_a_very_long_name_" * 3]
LANGS = ["en", "de", "fr", "es", "it", "pt", "nl", "pl", "ru", "uk", "cs", "sk", "sl", "hr",
         "sr", "bg", "ro", "hu", "fi", "sv", "da", "no", "is", "et", "lv", "lt", "el", "tr",
         "ar", "he", "fa", "hi", "zh", "ja", "ko"]
RULES = ["gopher_quality:word_count", "gopher_quality:alpha_words", "gopher_repetition:dup_5gram"]
WIDTH = 1280

# Write the page's layout (widest element, elements past the window's right edge) into the DOM
LAYOUT_JS = """<script>
const over = [];
for (const el of document.querySelectorAll("table, svg, h2, h3, p")) {
  const r = el.getBoundingClientRect();
  if (r.right > window.innerWidth) over.push(el.tagName + "." + el.getAttribute("class"));
}
const pre = document.createElement("pre");
pre.id = "layout";
pre.textContent = JSON.stringify({inner: window.innerWidth, over: over,
  scroll: document.documentElement.scrollWidth});
document.body.appendChild(pre);
</script>"""


def stage(sid: str, kind: str = "shard", **kw: object) -> dict:
    s = {"id": sid, "stage": sid, "kind": kind, "inputs": [], "params": {}, "seconds": 1.5,
         "skipped": False, "artifacts": {}, "shards": 40, "docs_in": 0, "bytes_in": 0,
         "docs_out": 0, "bytes_out": 0, "rejected": {}, "quarantined": {}, "counters": {},
         "rejected_by_source": {}, "length_hist": [0] * 24, "shard_seconds": 1.0,
         "shards_resumed": 0, "cpu_s": 12.5, "peak_rss_mb": 321.4}
    s.update(kw)
    return s


def synthetic_summary() -> tuple[dict, dict]:
    """A run over 20 sources and 35 languages, and the exact counts it was built from."""
    rng = random.Random(7)
    per_source = {src: rng.randint(1_000, 90_000) for src in SOURCES}
    per_lang = {lang: rng.randint(10, 50_000) for lang in LANGS}
    removed = {(src, rule): rng.randint(0, 3_000) for src in SOURCES for rule in RULES}
    lid_removed = {src: rng.randint(1, 500) for src in SOURCES}
    total = sum(per_source.values())
    hist = [0] * 24
    hist[10] = total
    stages = [
        stage("read", "source", docs_in=total, docs_out=total, sources=per_source,
              length_hist=hist),
        stage("language_id", docs_in=total, docs_out=total - sum(lid_removed.values()),
              counters={f"language:{lang}": n for lang, n in per_lang.items()},
              rejected={"language_id:low_score": sum(lid_removed.values())},
              rejected_by_source={f"{src}\tlanguage_id:low_score": n
                                  for src, n in lid_removed.items()}),
        stage("gopher", docs_in=total, docs_out=total - sum(removed.values()),
              rejected={rule: sum(n for (_, r), n in removed.items() if r == rule)
                        for rule in RULES},
              rejected_by_source={f"{src}\t{rule}": n for (src, rule), n in removed.items()}),
        stage("bad_words_filter", counters={
            **{f"bad_words:{lang}": n // 7 for lang, n in per_lang.items()},
            **{f"bad_words_docs:{lang}": n // 11 for lang, n in per_lang.items()}}),
        stage("megatron", "global", counters={f"tokens:{src}": n * 900
                                              for src, n in per_source.items()},
              artifacts={"report_tables": [{
                  "title": "tokens per source", "columns": ["source", "documents", "tokens",
                                                            "avg tokens/doc"],
                  "rows": [[src, n, n * 900, 900.0] for src, n in per_source.items()]}],
                  "report_histograms": [
                      {"title": f"document length in tokens{f' ({g})' if g else ''}",
                       "labels": [str(1 << i) for i in range(12)],
                       "counts": [rng.randint(0, 500) for _ in range(12)]}
                      for g in ["", *SOURCES]]}),
    ]
    summary = {"name": "many", "work_dir": "/w", "executor": {"type": "dask", "workers": 16},
               "seconds": 3600.0, "stages": stages}
    return summary, {"sources": per_source, "langs": per_lang, "removed": removed,
                     "lid_removed": lid_removed}


def table(dom: str, cls: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the page's table of class ``cls``; a label cut short on the page
    reads as the full text of its tooltip."""
    body = dom.split(f'class="{cls}"', 1)[1].split("</table>", 1)[0]
    body = re.sub(r'<span title="([^"]*)">[^<]*…</span>', r"\1", body)
    head = re.findall(r"<th>([^<]*)</th>", body)
    rows = [re.findall(r"<td>([^<]*)</td>", r) for r in body.split("<tr>")[2:]]
    return head, rows


def num(cell: str) -> int:
    return int(cell.replace(",", ""))


def expect_top(counts: dict[str, int]) -> list[tuple[str, int]]:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [*ranked[:TOP_N], (f"other ({len(ranked) - TOP_N})",
                              sum(n for _, n in ranked[TOP_N:]))]


def test_report_with_20_sources_and_35_languages_in_chromium(tmp_path: Path) -> None:
    summary, truth = synthetic_summary()
    page = render_html(RunReport.from_json(summary))
    (tmp_path / "report.html").write_text(page.replace("</body>", LAYOUT_JS + "</body>"))
    dom = chromium([f"--window-size={WIDTH},1000", "--dump-dom",
                    (tmp_path / "report.html").as_uri()], tmp_path).stdout

    # nothing is wider than the window: no horizontal scrolling
    layout = json.loads(re.search(r'<pre id="layout">([^<]*)</pre>', dom).group(1))
    assert layout["inner"] == WIDTH and layout["over"] == [], layout
    assert layout["scroll"] <= WIDTH, layout

    # a source named by a long URL is cut short, its full name in the tooltip
    assert f'<span title="{SOURCES[-1]}">' in dom
    # overview: CPU seconds and peak RSS per stage
    head, rows = table(dom, "overview")
    assert head[10:12] == ["CPU s", "peak RSS MB"] and rows[0][10:12] == ["12.50", "321.40"]

    # documents per source: top 10 and "other (10)" with the rest
    _, rows = table(dom, "sources")
    assert [(r[1], num(r[2])) for r in rows] == expect_top(truth["sources"])

    # documents per language: top 10 and "other (25)"; shares add up to 100%
    _, rows = table(dom, "languages")
    assert [(r[1], num(r[2])) for r in rows] == expect_top(truth["langs"])
    assert abs(sum(float(r[3].rstrip("%")) for r in rows) - 100) < 0.5

    # removed per stage x source: 10 source columns, "other (10)", total; every row adds up
    removed_by_src: dict[str, int] = {}
    for (src, _), n in truth["removed"].items():
        removed_by_src[src] = removed_by_src.get(src, 0) + n
    all_src = {s: removed_by_src[s] + truth["lid_removed"][s] for s in SOURCES}
    head, rows = table(dom, "stage-source")
    top = expect_top(all_src)
    assert head == ["stage", *[name for name, _ in top], "total"]
    want = {"language_id": truth["lid_removed"], "gopher": removed_by_src, "all": all_src}
    assert [r[0] for r in rows] == ["language_id", "gopher", "all"]
    for r in rows:
        counts = want[r[0]]
        shown = [counts[name] for name, _ in top[:TOP_N]]
        assert [num(c) for c in r[1:]] == [*shown, sum(counts.values()) - sum(shown),
                                           sum(counts.values())], r

    # removed per (stage, rule) x source: the same columns; the last row sums the table
    head, rows = table(dom, "by-source")
    assert len(head) == 2 + TOP_N + 1 + 1 and head[2 + TOP_N] == "other (10)"
    assert rows[-1][0] == "all" and [num(c) for c in rows[-1][2:]] == \
        [num(c) for c in table(dom, "stage-source")[1][-1][1:]]
    for r in rows[:-1]:
        assert sum(num(c) for c in r[2:-1]) == num(r[-1]), r

    # per-language and per-source counters: top 10 and other
    _, rows = table(dom, "found")
    words = [(r[2], num(r[3])) for r in rows if r[1] == "bad_words"]
    assert words == expect_top({k: n // 7 for k, n in truth["langs"].items()})
    _, rows = table(dom, "counters")
    tokens = [(r[1].split(":", 1)[1], num(r[2])) for r in rows if r[1].startswith("tokens:")]
    assert tokens == expect_top({k: n * 900 for k, n in truth["sources"].items()})

    # the stage's own per-source table and histograms
    _, rows = table(dom, "extra")
    assert len(rows) == TOP_N + 1 and rows[-1][0] == "other (10 rows)"
    assert num(rows[-1][1]) == sum(n for _, n in expect_top(truth["sources"])[TOP_N:])
    assert dom.count('class="plot plot-extra"') == TOP_N + 2


def test_report_with_20_source_stages_stays_readable_in_chromium(tmp_path: Path) -> None:
    """A wide report: 20 source stages (20 length series), an artifact dict as wide
    as a corpus_stats, and a histogram with nothing in it."""
    hist = [0] * 24
    stages = []
    for i, src in enumerate(SOURCES):
        h = list(hist)
        h[6 + i % 10] = 1_000 + i
        stages.append(stage(src, "source", docs_in=1_000 + i, docs_out=1_000 + i,
                            length_hist=h))
    stages.append(stage("fuzzy_dedup", "global", docs_in=20_190, docs_out=20_190,
                        length_hist=[0] * 10 + [20_190] + [0] * 13, artifacts={
                            "corpus_stats": {f"stat_{k}_{'x' * 30}": list(range(40))
                                             for k in range(30)},
                            "report_histograms": [{"title": "documents per cluster size",
                                                   "labels": ["2", "3", "4-7", "8+"],
                                                   "counts": [0, 0, 0, 0]}]}))
    summary = {"name": "twenty", "work_dir": "/w", "executor": {"type": "local", "workers": 1},
               "seconds": 10.0, "stages": stages}
    page = render_html(RunReport.from_json(summary))
    (tmp_path / "report.html").write_text(page.replace("</body>", LAYOUT_JS + "</body>"))
    dom = chromium([f"--window-size={WIDTH},1000", "--dump-dom",
                    (tmp_path / "report.html").as_uri()], tmp_path).stdout
    layout = json.loads(re.search(r'<pre id="layout">([^<]*)</pre>', dom).group(1))
    assert layout["over"] == [] and layout["scroll"] <= WIDTH, layout
    # the length chart: at most 8 lines, the last stage's among them, and a note
    chart = dom.split('aria-label="document length"', 1)[1].split("</svg>", 1)[0]
    names = re.findall(r'<polyline class="series"[^>]*><title>([^<]*)</title>', chart)
    assert len(names) == 8 and names[-1] == "fuzzy_dedup"
    # legend labels never overlap: each fits its 170 px column (the full name in a tooltip)
    legend = re.findall(r'<text class="legend" x="([\d.]+)"[^>]*><title>([^<]*)</title>([^<]*)'
                        r"</text>", chart)
    assert len(legend) == 8 and all(len(short) <= 22 for _, _, short in legend)
    assert (SOURCES[-1], SOURCES[-1][:21] + "…") in {(full, short) for _, full, short in legend}
    assert "8 of 21 stages shown (the sources and the last stage)" in dom
    # the empty histogram is a sentence, not an empty plot
    assert "fuzzy_dedup: documents per cluster size</h3><p class=\"empty-plot\">Nothing to " \
           "plot: every count is 0.</p>" in dom
    assert 'aria-label="documents per cluster size"' not in dom
    # the dict artifact: 8 short lines and how many more
    cell = dom.split('<span class="artifact">', 1)[1].split("</span>", 1)[0]
    lines = cell.split("<br>")
    assert len(lines) == 9 and lines[-1] == "… 22 more (report.json)"
    assert all(len(ln) <= 60 for ln in lines[:8])
    chromium([f"--window-size={WIDTH},1400", f"--screenshot={tmp_path / 'shot.png'}",
              (tmp_path / "report.html").as_uri()], tmp_path)
    assert (tmp_path / "shot.png").stat().st_size > 10_000
