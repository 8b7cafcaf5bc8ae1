"""The run report: ``report.json`` for machines and a self-contained ``report.html`` (inline SVG
plots, no scripts, no network) for people.

Both come from a :class:`RunReport`: one :class:`StageReport` per stage, holding the stage's
:class:`~curator.core.stats.StageStats`. ``to_json`` writes report.json key for key as curator
always has, and ``from_json`` reads back what this or an older version wrote (``curator report``
re-renders it).

Stages can add to it through artifacts: ``report_tables`` (a list of
``{"title", "columns", "rows"}``) and ``report_histograms`` (a list of
``{"title", "labels", "counts"}``).
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from curator.base.redact import redact_value
from curator.core.report_svg import funnel_svg, histogram_svg, length_labels
from curator.core.stats import StageStats
from curator.storage.atomic import atomic_open, write_json

#: Tables and plots keyed by source or language list the ``TOP_N`` largest and one "other"
#: row (column, series) with the rest, so a run over 20 sources and 35 languages stays
#: readable; report.json keeps every value.
TOP_N = 10


def top_n(counts: dict[str, int] | list[tuple[str, int]], n: int = TOP_N
          ) -> list[tuple[str, int]]:
    """The ``n`` largest (name, count) pairs, largest first, and ``("other (k)", sum)`` for
    the remaining k when there are more than ``n + 1``."""
    items = sorted(dict(counts).items(), key=lambda kv: (-kv[1], kv[0]))
    if len(items) <= n + 1:
        return items
    rest = items[n:]
    return [*items[:n], (f"other ({len(rest)})", sum(v for _, v in rest))]


def collapse_groups(counters: dict[str, Any], n: int = TOP_N) -> list[tuple[str, Any]]:
    """Counters as (name, value) with every group of more than ``n + 1`` numeric counters
    sharing a prefix (``tokens:<source>``, ``bad_words:<language>``) cut to its top ``n`` and
    ``<prefix>:other (k)``; other counters as they are."""
    groups: dict[str, list[tuple[str, Any]]] = {}
    for k, v in counters.items():
        groups.setdefault(k.rpartition(":")[0] if ":" in k else k, []).append((k, v))
    out: list[tuple[str, Any]] = []
    for prefix, kv in groups.items():
        if len(kv) <= n + 1 or not all(isinstance(v, int | float) for _, v in kv):
            out.extend(kv)
            continue
        out.extend((f"{prefix}:{name}", v)
                   for name, v in top_n([(k.rpartition(":")[2], v) for k, v in kv], n))
    return out


# -- what a report holds (report.json) ---------------------------------------------------------

#: A stage entry's own keys in report.json, before its :class:`StageStats` keys.
_STAGE_KEYS = ("id", "stage", "kind", "inputs", "params", "seconds", "skipped", "artifacts",
               "shards")
#: The stats keys of a stage entry (``sources`` only for a source that has some).
_STATS_KEYS = tuple(StageStats().to_json()) + ("sources",)


@dataclass
class StageReport:
    """One stage's entry in report.json: what it is, its result and its :class:`StageStats`
    (the entry is flat: the stats keys follow the stage's own)."""

    id: str
    stage: str
    kind: str = ""
    inputs: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    #: done by an earlier run, reused
    skipped: bool = False
    artifacts: dict[str, Any] = field(default_factory=dict)
    #: output shards
    shards: int = 0
    stats: StageStats = field(default_factory=StageStats)
    #: stats keys the entry did not have (written by an older version: ``cpu_s``); they stay
    #: out of the JSON and the report shows "-" for them
    absent: frozenset[str] = frozenset()
    #: keys this version does not know, kept as they were (written back after the others)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_result(cls, stage_id: str, result: Mapping[str, Any]) -> StageReport:
        """The entry of a stage's result (its ``_SUCCESS.json``, or the run's own)."""
        return cls.from_json({
            "id": stage_id, "stage": result["stage"], "kind": result["kind"],
            "inputs": result["inputs"], "params": result["params"],
            "seconds": result["seconds"], "skipped": result.get("skipped", False),
            "artifacts": result["artifacts"], "shards": len(result["shards"]),
            **result["stats"]})

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StageReport:
        """An entry of report.json (this or an older version's); ``ValueError`` naming the key
        when it is not a stage entry."""
        if not isinstance(d, Mapping):
            raise ValueError(f"not a mapping: {type(d).__name__}")
        for k in ("id", "stage"):
            if not isinstance(d.get(k), str):
                raise ValueError(f"{k} is missing or not a string")
        for k in ("docs_in", "bytes_in", "docs_out", "bytes_out", "seconds", "shards"):
            v = d.get(k, 0)
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ValueError(f"{k} is not a number: {v!r}")
        known = set(_STAGE_KEYS) | set(_STATS_KEYS)
        return cls(
            id=d["id"], stage=d["stage"], kind=str(d.get("kind") or ""),
            inputs=list(d.get("inputs") or []), params=dict(d.get("params") or {}),
            seconds=d.get("seconds", 0.0), skipped=bool(d.get("skipped")),
            artifacts=dict(d.get("artifacts") or {}), shards=d.get("shards", 0),
            stats=StageStats.from_json({k: d[k] for k in _STATS_KEYS if k in d}),
            absent=frozenset(k for k in _STATS_KEYS if k not in d and k != "sources"),
            extra={k: v for k, v in d.items() if k not in known})

    def to_json(self) -> dict[str, Any]:
        """The entry, key for key as report.json has always held it."""
        out: dict[str, Any] = {
            "id": self.id, "stage": self.stage, "kind": self.kind, "inputs": self.inputs,
            "params": self.params, "seconds": self.seconds, "skipped": self.skipped,
            "artifacts": self.artifacts, "shards": self.shards}
        out.update((k, v) for k, v in self.stats.to_json().items() if k not in self.absent)
        out.update(self.extra)
        return out

    def measured(self, name: str) -> Any:
        """A stats value the report shows, "-" when the entry did not have it."""
        return "-" if name in self.absent else getattr(self.stats, name)


@dataclass
class RunReport:
    """A run's summary: report.json, and what report.html is rendered from."""

    name: str
    work_dir: str
    executor: str | None
    workers: int | None
    #: the run's wall time
    seconds: float
    stages: list[StageReport]
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunReport:
        """report.json as read (this or an older version's); ``ValueError`` naming the key
        when it is not a run report."""
        if not isinstance(d, Mapping):
            raise ValueError("not a JSON object")
        if not isinstance(d.get("name"), str):
            raise ValueError("name is missing or not a string")
        if not isinstance(d.get("stages"), list):
            raise ValueError("stages is missing or not a list")
        stages = []
        for i, st in enumerate(d["stages"]):
            try:
                stages.append(StageReport.from_json(st))
            except ValueError as e:
                raise ValueError(f"stages[{i}]: {e}") from None
        ex = d.get("executor") if isinstance(d.get("executor"), Mapping) else {}
        return cls(name=d["name"], work_dir=str(d.get("work_dir") or ""),
                   executor=ex.get("type"), workers=ex.get("workers"),
                   seconds=d.get("seconds", 0.0), stages=stages,
                   extra={k: v for k, v in d.items()
                          if k not in ("name", "work_dir", "executor", "seconds", "stages")})

    def to_json(self) -> dict[str, Any]:
        """report.json, key for key as curator has always written it."""
        return {"name": self.name, "work_dir": self.work_dir,
                "executor": {"type": self.executor, "workers": self.workers},
                "seconds": self.seconds, "stages": [s.to_json() for s in self.stages],
                **self.extra}


def write_report(report: RunReport, work_dir: str) -> tuple[str, str]:
    """Write ``report.json`` and ``report.html`` under ``work_dir``; return their paths."""
    jpath = os.path.join(work_dir, "report.json")
    hpath = os.path.join(work_dir, "report.html")
    # no credential of a URL or the environment anywhere; secret-named keys masked where names
    # are parameters' (counts are keyed by stage ids and sources, which are no secrets)
    data = redact_value(report.to_json(), env=True, names=False)
    for st in data.get("stages") or []:
        for part in ("params", "artifacts"):
            if isinstance(st, dict) and part in st:
                st[part] = redact_value(st[part], env=True)
    write_json(jpath, data)
    with atomic_open(hpath, "wb") as f:
        f.write(render_html(RunReport.from_json(data)).encode("utf-8"))
    return jpath, hpath


class _Raw(str):
    """HTML that ``_table`` puts in a cell as it is (a link it built itself)."""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _fmt(n: Any) -> str:
    if isinstance(n, _Raw):
        return str(n)
    if isinstance(n, float):
        return f"{n:,.2f}"
    if isinstance(n, int):
        return f"{n:,}"
    return _e(n)


#: Longer column names (a source named after a whole URL) are cut, the full text in a tooltip.
MAX_HEADER = 32


def _header(x: Any) -> str:
    if isinstance(x, str) and len(x) > MAX_HEADER:
        return f'<span title="{_e(x)}">{_e(x[: MAX_HEADER - 1])}…</span>'
    return _e(x)


def _table(columns: list[str], rows: list[list[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{_header(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


# WARC readers' own reasons for oversized pages and inflated records (they name the sizes)
_OLD_TOO_LARGE = ("page too large", "record inflates to more than", "paper too large")


def input_checks(stages: list[StageReport]) -> list[list[Any]]:
    """Per stage with any: records over ``max_doc_mb`` (quarantined ``too_large``), documents
    whose id was already seen in the source (``duplicate_ids``), and records whose own
    ``source`` an explicit ``source:`` parameter replaced (``source_overridden``)."""
    rows = []
    for s in stages:
        c = s.stats.counters
        big = sum(n for r, n in s.stats.quarantined.items()
                  if r == "too_large" or r.startswith(_OLD_TOO_LARGE))
        row = [s.id, big,
               c.get("duplicate_ids", 0), c.get("source_overridden", 0)]
        if any(row[1:]):
            rows.append(row)
    return rows


#: Prefix of the counters a source keeps of the records it read and did not make documents
#: of: ``skipped:<kind>: <why>`` (the kind a singular noun: "response", "metadata record").
#: ``records_read`` counts the records that could have been documents.
SKIPPED_PREFIX = "skipped:"


def skipped_kinds(counters: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """``(kind, why, records)`` of a stage's ``skipped:`` counters, most first."""
    out = []
    for k, v in counters.items():
        if k.startswith(SKIPPED_PREFIX):
            kind, _, why = k[len(SKIPPED_PREFIX):].partition(": ")
            out.append((kind, why, v))
    return sorted(out, key=lambda t: (-t[2], t[0], t[1]))


def skipped_note(stats: StageStats, n: int = 4) -> str:
    """What a source skipped, by kind, when it kept less than half of the records it read
    ("kept 0 of 29 candidate records: 29 responses skipped: no HTML content type"); ""
    otherwise.
    A source that silently keeps nothing is the failure this is for (ClueWeb09 once read as
    "0 -> 0 docs")."""
    c = stats.counters
    kinds = skipped_kinds(c)
    read = c.get("records_read", 0)
    if not kinds or stats.docs_out * 2 >= max(read, 1):
        return ""
    parts = [f"{v} {kind if v == 1 else kind + 's'} skipped: {why}" for kind, why, v in kinds[:n]]
    if len(kinds) > n:
        parts.append(f"{sum(v for *_, v in kinds[n:])} more of {len(kinds) - n} other kinds")
    return (f"kept {stats.docs_out} of {read} candidate records: "
            + ", ".join(parts))


#: Counters shown in their own table: items replaced by pii_redact, words matched by
#: bad_words_filter (per language).
FOUND_PREFIXES = ("pii:", "bad_words:", "bad_words_docs:")


def _source_cells(cells: dict[Any, dict[str, int]], sources: dict[str, int]
                  ) -> tuple[list[str], list[list[int]]]:
    """Source columns (the ``TOP_N`` with most removals, then "other (k)") and each cell row's
    counts in them."""
    cols = [name for name, _ in top_n(sources)]
    shown = [c for c in cols if c in sources]
    other = len(shown) < len(cols)
    rows = []
    for c in cells.values():
        row = [c.get(src, 0) for src in shown]
        if other:
            row.append(sum(c.values()) - sum(row))
        rows.append(row)
    return cols, rows


def by_source_table(stages: list[StageReport]) -> tuple[list[str], list[list[Any]]]:
    """Columns and rows of the source x rule table: one row per (stage, reason), one column
    per ``meta.source`` ('-' for documents without one; past ``TOP_N`` sources the rest in one
    "other" column), and the total."""
    cells: dict[tuple[str, str], dict[str, int]] = {}
    sources: dict[str, int] = {}
    for s in stages:
        for key, n in s.stats.rejected_by_source.items():
            src, _, reason = key.partition("\t")
            cell = cells.setdefault((s.id, reason), {})
            cell[src] = cell.get(src, 0) + n
            sources[src] = sources.get(src, 0) + n
    cols, counts = _source_cells(cells, sources)
    rows = [[sid, reason, *row, sum(c.values())]
            for ((sid, reason), c), row in zip(cells.items(), counts, strict=True)]
    if rows:
        _, [total] = _source_cells({"all": sources}, sources)
        rows.append(["all", "", *total, sum(sources.values())])
    return ["stage", "rule", *cols, "total"], rows


def stage_source_table(stages: list[StageReport]) -> tuple[list[str], list[list[Any]]]:
    """Removed documents per stage (rows) and source (columns, top ``TOP_N`` and "other")."""
    cells: dict[str, dict[str, int]] = {}
    sources: dict[str, int] = {}
    for s in stages:
        for key, n in s.stats.rejected_by_source.items():
            src = key.partition("\t")[0]
            cell = cells.setdefault(s.id, {})
            cell[src] = cell.get(src, 0) + n
            sources[src] = sources.get(src, 0) + n
    cols, counts = _source_cells(cells, sources)
    rows = [[sid, *row, sum(c.values())]
            for (sid, c), row in zip(cells.items(), counts, strict=True)]
    if rows:
        _, [total] = _source_cells({"all": sources}, sources)
        rows.append(["all", *total, sum(sources.values())])
    return ["stage", *cols, "total"], rows


def per_stage_top(stages: list[StageReport],
                  counts_of: Callable[[StageReport], Mapping[str, int]]) -> list[list[Any]]:
    """(stage, name, count, share) rows, the top ``TOP_N`` names of each stage and "other"."""
    rows = []
    for s in stages:
        counts = counts_of(s)
        total = sum(counts.values())
        for name, n in top_n(counts):
            rows.append([s.id, name, n, f"{100 * n / total:.1f}%" if total else "-"])
    return rows


def _languages(s: StageReport) -> dict[str, int]:
    return {k[9:]: v for k, v in s.stats.counters.items() if k.startswith("language:")}


def _short_table(t: dict[str, Any], n: int = TOP_N) -> list[list[Any]]:
    """A stage's own table, at most ``n`` rows and one "other (k rows)" row with the integer
    columns summed, when it has many rows (one per source, say); sorted by its first numeric
    column."""
    rows = list(t["rows"])
    if len(rows) <= n + 1:
        return rows
    num = [i for i in range(len(t["columns"]))
           if all(isinstance(r[i], int) and not isinstance(r[i], bool) for r in rows)]
    if num:
        rows.sort(key=lambda r: -r[num[0]])
    rest = rows[n:]
    other = [f"other ({len(rest)} rows)"] + [""] * (len(t["columns"]) - 1)
    for i in num:
        other[i] = sum(r[i] for r in rest)
    return [*rows[:n], other]


def _short_histograms(hists: list[dict[str, Any]], n: int = TOP_N) -> list[dict[str, Any]]:
    """A stage's histograms, at most ``n + 2``: the first (the whole), the ``n`` largest of
    the rest (one per source, say) and the others summed, when they share their bins."""
    if len(hists) <= n + 2:
        return hists
    head, rest = hists[0], sorted(hists[1:], key=lambda h: -sum(h["counts"]))
    others = rest[n:]
    if any(h["labels"] != others[0]["labels"] for h in others):
        return [head, *rest[:n]]
    width = max(len(h["counts"]) for h in others)
    summed = [sum(h["counts"][i] if i < len(h["counts"]) else 0 for h in others)
              for i in range(width)]
    return [head, *rest[:n], {"title": f"{head['title']} (other {len(others)})",
                              "labels": others[0]["labels"], "counts": summed}]


def _examples(report: RunReport, per_reason: int = 3
              ) -> dict[tuple[str, str], tuple[_Raw, str]]:
    """(stage, reason) -> (a link for the reasons table, a section with the first few rejected
    documents, their id, source and first lines; ``curator inspect`` shows more)."""
    from curator.core.samples import first_examples

    wd = report.work_dir
    out: dict[tuple[str, str], tuple[_Raw, str]] = {}
    for s in report.stages:
        if not s.stats.rejected or not os.path.isdir(os.path.join(wd, "rejected", s.id)):
            continue
        try:
            found = first_examples(wd, s.id, per_reason)
        except (OSError, ValueError):  # a damaged rejected file: the report still renders
            continue
        for reason, docs in found.items():
            if reason not in s.stats.rejected:
                continue
            anchor = "ex-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{s.id}-{reason}")
            items = "".join(
                f"<li><code>{_e(d.id)}</code> (source {_e(d.source)}, shard {_e(d.shard)})"
                f"<pre>{_e(_first_lines(d.text))}</pre></li>" for d in docs)
            cmd = f"curator inspect {wd} {s.id} --rejected {reason}"
            out[(s.id, reason)] = (
                _Raw(f'<a href="#{anchor}">{len(docs)} example{"s" if len(docs) != 1 else ""}'
                     "</a>"),
                f'<h3 id="{anchor}">{_e(s.id)}: {_e(reason)}</h3><ul class="examples">'
                f"{items}</ul><p>More: <code>{_e(cmd)}</code></p>")
    return out


#: Lines in the document length chart (more are unreadable).
MAX_SERIES = 8


def _artifact_value(v: Any, keys: int = 8, width: int = 60) -> Any:
    """A dict or list artifact (``corpus_stats``) as a few ``key: value`` lines, each cut, not
    one raw line as wide as the page; report.json keeps it whole."""
    if not isinstance(v, dict | list):
        return v
    items = list(v.items()) if isinstance(v, dict) else list(enumerate(v))
    lines = []
    for k, x in items[:keys]:
        text = f"{k}: {x}"
        lines.append(_e(text if len(text) <= width else text[: width - 1] + "…"))
    if len(items) > keys:
        lines.append(f"… {len(items) - keys} more (report.json)")
    return _Raw('<span class="artifact">' + "<br>".join(lines) + "</span>")


def _first_lines(text: str, lines: int = 4, width: int = 200) -> str:
    body = [ln if len(ln) <= width else ln[: width - 1] + "…"
            for ln in text.splitlines() if ln.strip()]
    return "\n".join(body[:lines] + (["…"] if len(body) > lines else []))


def _all_runs(report: RunReport) -> str:
    """`` (this run; 95.0s over all 3 runs of this work_dir, 1 interrupted)``: a resumed run's
    own wall time says little about what the results cost."""
    t = report.extra.get("all_runs")
    if not isinstance(t, dict) or not isinstance(t.get("runs"), int) or t["runs"] < 2:
        return ""
    cut = [f"{t[k]} {k}" for k in ("interrupted", "failed") if t.get(k)]
    return (f" (this run); <b>{float(t.get('seconds') or 0):.1f}s over all {t['runs']} runs"
            f"</b> of this work_dir{', ' + ', '.join(cut) if cut else ''}")


def _overview(stages: list[StageReport]) -> str:
    """The table of stages: documents, bytes, shards, time and memory of each."""
    return _table(
        ["stage", "type", "docs in", "docs out", "removed", "quarantined", "MB in", "MB out",
         "shards", "seconds", "CPU s", "peak RSS MB", "note"],
        [[s.id, s.stage, s.stats.docs_in, s.stats.docs_out, s.stats.removed,
          s.stats.set_aside, round(s.stats.bytes_in / 1e6, 3),
          round(s.stats.bytes_out / 1e6, 3), s.shards, s.seconds, s.measured("cpu_s"),
          s.measured("peak_rss_mb"),
          "skipped (done earlier)" if s.skipped else ""] for s in stages],
        "overview",
    )


def _lengths(stages: list[StageReport]) -> str:
    """The document length plot: one line per stage that wrote documents, at most
    :data:`MAX_SERIES` of them (the sources and the last stage), with a note when some are
    left out."""
    hists = [s.stats.length_hist for s in stages]
    nb = max((len(h) for h in hists), default=0)
    last_nz = max((i for h in hists for i, c in enumerate(h) if c), default=1)
    labels = length_labels(nb)[: last_nz + 1]
    # stages that passed shards through without reading them have no histogram of their own
    series = [(s.id, s.stats.length_hist[: last_nz + 1]) for s in stages
              if s.stats.docs_out and any(s.stats.length_hist)]
    # 20 lines in one chart are unreadable: the sources and the last stage, at most MAX_SERIES
    all_series = len(series)
    if all_series > MAX_SERIES:
        last_id = stages[-1].id
        keep = {s.id for s in stages if s.kind == "source"} | {last_id}
        picked = [x for x in series if x[0] in keep] or series
        if len(picked) > MAX_SERIES:  # the largest sources, and the last stage
            tail = [x for x in picked if x[0] == last_id]
            top = sorted((x for x in picked if x[0] != last_id),
                         key=lambda x: -sum(x[1]))[: MAX_SERIES - len(tail)]
            picked = [x for x in picked if x in top or x in tail]
        series = picked
    if not series:
        return "<p>No documents.</p>"
    series_note = (f"<p>{len(series)} of {all_series} stages shown (the sources and the last "
                   "stage); report.json has every stage's histogram.</p>"
                   if all_series > len(series) else "")
    return histogram_svg(series, labels, "document length") + series_note


def _stage_details(stages: list[StageReport]) -> list[str]:
    """The tables and plots stages added (``report_tables``, ``report_histograms``)."""
    extra: list[str] = []
    for s in stages:
        arts = s.artifacts
        for t in arts.get("report_tables", []) or []:
            extra.append(f"<h3>{_e(s.id)}: {_e(t['title'])}</h3>"
                         + _table(t["columns"], _short_table(t), "extra"))
        for hg in _short_histograms(arts.get("report_histograms", []) or []):
            if not any(hg["counts"]):  # an empty plot (no cluster at all) says nothing
                extra.append(f"<h3>{_e(s.id)}: {_e(hg['title'])}</h3>"
                             "<p class=\"empty-plot\">Nothing to plot: every count is 0.</p>")
                continue
            extra.append(f"<h3>{_e(s.id)}: {_e(hg['title'])}</h3>" + histogram_svg(
                [(hg.get("series", s.id), hg["counts"])], hg["labels"], hg["title"],
                "plot-extra"))
    return extra


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td { white-space: nowrap; }
td:first-child, td:nth-child(2) { text-align: left; white-space: normal; }
.artifacts td:nth-child(3) { text-align: left; }
.by-source td:nth-child(2) { overflow-wrap: anywhere; }
.overview td:first-child, .overview td:nth-child(2) { overflow-wrap: anywhere; }
.stage-source td:nth-child(2) { text-align: right; }
.plot { display: block; margin: 0.5em 0 1.5em; }
.examples pre { white-space: pre-wrap; font-size: 12px; background: #f8f8f8; margin: 0.2em 0 0.8em;
  padding: 4px; max-width: 1100px; }
"""


def render_html(report: RunReport) -> str:
    """report.html: one page, its sections in the order a reader asks (what was removed and
    why, then inputs, sources, lengths, counters), every table and plot inline."""
    stages = report.stages
    examples = _examples(report)
    reasons = [[s.id, r, n, examples.get((s.id, r), ("", ""))[0]]
               for s in stages for r, n in s.stats.rejected.items()]
    quarantine = [[s.id, r, n] for s in stages for r, n in s.stats.quarantined.items()]
    counters = [[s.id, k, v] for s in stages for k, v in collapse_groups(
        {k: v for k, v in s.stats.counters.items()
         if not k.startswith((*FOUND_PREFIXES, "language:", SKIPPED_PREFIX))})]
    skipped = [[s.id, kind, why, v, s.stats.counters.get("records_read", "-"), s.stats.docs_out]
               for s in stages for kind, why, v in skipped_kinds(s.stats.counters)]
    languages = per_stage_top(stages, _languages)
    extra = _stage_details(stages)
    artifacts = [[s.id, k, _artifact_value(v)] for s in stages
                 for k, v in s.artifacts.items() if not k.startswith("report_")]
    checks = input_checks(stages)
    sources = per_stage_top(stages, lambda s: s.stats.sources or {})
    by_source = by_source_table(stages)
    by_stage_source = stage_source_table(stages)
    found = [[s.id, *k.split(":", 1), v] for s in stages
             for k, v in collapse_groups({k: v for k, v in s.stats.counters.items()
                                          if k.startswith(FOUND_PREFIXES)})]
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>curator report: {_e(report.name)}</title>
<style>{_STYLE}</style></head><body>
<h1>curator run report: {_e(report.name)}</h1>
<p>executor <b>{_e(report.executor)}</b> with {_e(report.workers)} worker(s);
wall time {report.seconds:.2f}s{_all_runs(report)}; work_dir <code>{_e(report.work_dir)}</code></p>
<h2>Document funnel</h2>
{funnel_svg([(s.id, s.stats) for s in stages])}
<h2>Stages</h2>
{_overview(stages)}
<h2>Why documents were removed</h2>
{_table(["stage", "reason", "documents", "examples"], reasons, "reasons") if reasons else
 "<p>No document was removed.</p>"}
{"<h2>Examples of removed documents</h2>" + "".join(
    examples[(r[0], r[1])][1] for r in reasons if (r[0], r[1]) in examples)
 if examples else ""}
<h2>Input checks</h2>
{_table(["stage", "too large (quarantined)", "duplicate ids", "source overridden"], checks,
        "input-checks") if checks else
 "<p>No oversized record, no duplicate id, no overridden source.</p>"}
{"<h2>Sources</h2>" + _table(["stage", "meta.source", "documents", "share"], sources,
                            "sources") if sources else ""}
{"<h2>Languages</h2>" + _table(["stage", "language", "documents", "share"], languages,
                              "languages") if languages else ""}
<h2>Removed documents by stage and source</h2>
{_table(*by_stage_source, "stage-source") if by_stage_source[1] else
 "<p>No document was removed.</p>"}
<h2>Removed documents by source and rule</h2>
{_table(*by_source, "by-source") if by_source[1] else "<p>No document was removed.</p>"}
{"<h2>Found and replaced (PII per kind, listed words per language)</h2>"
 + _table(["stage", "what", "kind / language", "count"], found, "found") if found else ""}
{"<h2>Input records not made into documents, by kind</h2>" + _table(
    ["stage", "kind", "why", "records", "records read", "docs out"], skipped, "skipped")
 if skipped else ""}
<h2>Quarantined input records</h2>
{_table(["stage", "reason", "records"], quarantine, "quarantine") if quarantine else
 "<p>No input record was quarantined.</p>"}
<h2>Document length distribution (UTF-8 bytes, output of each stage)</h2>
{_lengths(stages)}
{"<h2>Counters</h2>" + _table(["stage", "counter", "value"], counters, "counters")
 if counters else ""}
{"<h2>Artifacts</h2>" + _table(["stage", "name", "value"], artifacts, "artifacts")
 if artifacts else ""}
{"<h2>Stage details</h2>" + "".join(extra) if extra else ""}
</body></html>
"""
