"""Extraction quality per page family and per language, against trafilatura's defaults.

    python -m bench.family_quality                        # unseen set, held-out split
    python -m bench.family_quality --jobs 2 --rs-python /var/tmp/rsvenv/bin/python
    python -m bench.family_quality --set gold --split heldout
    python -m bench.family_quality --set heldout3 --split heldout   # every page held out
    python -m bench.family_quality --set heldout4 --split heldout   # every page held out
    python -m bench.family_quality --report bench/results/family_quality/<file>.json
    python -m bench.family_quality --set both --split tuning \\
        --lofo "curator default, no fallback" --lofo "curator fast=True recall"

Pages: ``--set unseen`` is ``bench/gold/unseen.jsonl.zst`` (news in many languages, forum
threads and trafilatura's evaluation pages from public test suites no option was chosen on;
bench/gold/SOURCES.md), ``--set gold`` is ``pages.jsonl.zst`` (its page types become families
``gold-article``, ``gold-forum``..., the few Wikipedia, fiction, how-to and essay pages
``gold-other``), ``--set both`` is both; ``--set heldout3`` is ``bench/gold/heldout3.jsonl.zst``
(news of fundus's Git history and of newspaper's tests; every page ``heldout``), ``--set
heldout4`` is ``bench/gold/heldout4.jsonl.zst`` (trafilatura's evaluation pages the other sets
do not hold, with its authors' snippets; families ``news`` and ``mixed`` by the page's own
article markup; every page ``heldout``) and ``--set all`` is all four. The first two sets
have a fixed split (``sha1(id) % 10 < 4`` is ``heldout``): choose on ``tuning``, score
``heldout`` once per candidate default.

Per page and config: token F1 against the full gold where there is one (bench/
extraction_quality.py's tokens: CJK, Thai, Burmese per character), the share of must-appear
snippets found and of must-not snippets absent where there are snippets (matched
case-insensitively, whitespace ignored), empty output, CPU ms. Printed per family and per
language: mean F1 with a 95% bootstrap interval, the paired difference to trafilatura's
defaults with its interval, pages losing (and winning) more than 0.3 F1 against it, empty
outputs, snippet rates, CPU. Each run leaves its result file (bench/common.py: command,
commit, machine, date; the headline figures, every figure under ``detail``), which
``--report FILE`` prints again. ``--lofo NAME`` (repeatable) adds candidate option sets of
bench/extraction_quality.py and reports leave-one-family-out (bench/lofo.py): for each
family, the candidate chosen on all other families and its score on the one left out; then
each candidate alone against the default (a rule switched off, judged by itself) and every
candidate's mean score per family minus the default's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field

from bench.common import REPO, bench_main
from bench.extraction_quality import configs, extract_pooled
from bench.gold_set import bootstrap, load_gold, prf
from bench.lofo import (
    FoldResult,
    each_against,
    family_means,
    format_each,
    format_folds,
    leave_one_family_out,
)

UNSEEN = os.path.join(REPO, "bench", "gold", "unseen.jsonl.zst")
HELDOUT3 = os.path.join(REPO, "bench", "gold", "heldout3.jsonl.zst")
HELDOUT4 = os.path.join(REPO, "bench", "gold", "heldout4.jsonl.zst")
BASE = "trafilatura defaults"
MAIN = ["curator default", BASE, "resiliparse"]
LOSS = 0.3  # a page "lost" when its F1 is this much below trafilatura's


@dataclass
class Page:
    """A page with its full gold text and/or must-appear / must-not snippets."""

    id: str
    html: str
    gold: str
    lang: str
    family: str
    type: str
    split: str
    source: str
    url: str = ""
    must: list[str] = field(default_factory=list)
    must_not: list[str] = field(default_factory=list)


@dataclass
class Scored:
    """One config's output on one page, scored."""

    f1: float | None
    must_found: list[bool]
    must_not_absent: list[bool]
    empty: bool
    cpu_s: float

    @property
    def score(self) -> float:
        """F1 where there is a full gold, else the share of snippets judged right."""
        if self.f1 is not None:
            return self.f1
        hits = self.must_found + self.must_not_absent
        return sum(hits) / len(hits) if hits else 0.0


def load_unseen(split: str = "heldout", path: str = UNSEEN) -> list[Page]:
    """The pages of ``unseen.jsonl.zst`` (or of ``path``, a file of the same rows, such as
    ``HELDOUT3``, ``HELDOUT4``) in ``split`` (``tuning``, ``heldout`` or ``all``)."""
    import zstandard

    with open(path, "rb") as f:
        raw = zstandard.ZstdDecompressor().stream_reader(f).read()
    rows = (json.loads(line) for line in raw.decode("utf-8").split("\n") if line)
    return [
        Page(
            r["id"],
            r["html"],
            r["gold"],
            r["lang"],
            r["family"],
            r["type"],
            r["split"],
            r["source"],
            r["url"],
            r["must"],
            r["must_not"],
        )
        for r in rows
        if split == "all" or r["split"] == split
    ]


# Page types of pages.jsonl.zst with 30 or more pages; the few Wikipedia, fiction, how-to
# and essay pages are one family, too small alone for a leave-one-family-out fold.
_GOLD_FAMILIES = {"article", "forum", "product", "docs", "collection", "listing", "service"}


def _gold_family(ptype: str) -> str:
    return f"gold-{ptype if ptype in _GOLD_FAMILIES else 'other'}"


def load_pages(which: str, split: str) -> list[Page]:
    """``unseen``, ``gold`` (page types as families ``gold-<type>``), ``both`` (those two),
    ``heldout3``, ``heldout4`` or ``all`` (gold, unseen, heldout3 and heldout4)."""
    pages = load_unseen(split) if which in ("unseen", "both", "all") else []
    if which in ("heldout3", "all"):
        pages += load_unseen(split, HELDOUT3)
    if which in ("heldout4", "all"):
        pages += load_unseen(split, HELDOUT4)
    if which in ("gold", "both", "all"):
        pages += [
            Page(
                p.id, p.html, p.gold, p.lang, _gold_family(p.type), p.type, p.split, p.source, p.url
            )
            for p in load_gold(split)
        ]
    return pages


_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub("", text).casefold()


def score_page(page: Page, text: str, cpu_s: float) -> Scored:
    """Score one output against the page's gold and snippets."""
    flat = _norm(text)
    return Scored(
        prf(text, page.gold)[2] if page.gold else None,
        [_norm(s) in flat for s in page.must],
        [_norm(s) not in flat for s in page.must_not],
        not text.strip(),
        cpu_s,
    )


def run(
    names: list[str], pages: list[Page], jobs: int, rs_python: str | None
) -> dict[str, list[Scored]]:
    """Every config's scored output on every page (rs-trafilatura in its own interpreter)."""
    out: dict[str, list[Scored]] = {}
    pairs = [(p.id, p.html) for p in pages]
    for name in names:
        text, cpu = extract_pooled(name, pairs, jobs)
        out[name] = [score_page(p, text[p.id], cpu[p.id]) for p in pages]
        print(f"  ran {name}", file=sys.stderr)
    if rs_python:
        from bench.rs_trafilatura_row import predictions

        text, cpu = predictions([(p.id, p.html, p.url) for p in pages], rs_python)
        out["rs-trafilatura"] = [score_page(p, text[p.id], cpu[p.id]) for p in pages]
    return out


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def group_figures(idx: list[int], res: dict[str, list[Scored]]) -> dict:
    """Figures of one group of pages (indexes into the page list) for every config."""
    base = res.get(BASE)
    fig: dict = {"pages": len(idx)}
    gold_idx = [i for i in idx if res[next(iter(res))][i].f1 is not None]
    fig["pages_with_gold"] = len(gold_idx)
    fig["pages_with_must_not"] = sum(bool(res[next(iter(res))][i].must_not_absent) for i in idx)
    for name, scored in res.items():
        f1 = [scored[i].f1 for i in gold_idx]
        c: dict = {
            "empty": sum(scored[i].empty for i in idx),
            "cpu_ms": 1000 * _mean([scored[i].cpu_s for i in idx]),
        }
        if f1:
            c["f1"] = _mean(f1)  # type: ignore[arg-type]
            c["f1_ci"] = bootstrap(f1) if len(f1) >= 2 else (c["f1"], c["f1"])
            if base is not None and name != BASE:
                diff = [scored[i].f1 - base[i].f1 for i in gold_idx]  # type: ignore[operator]
                c["diff_vs_trafilatura"] = _mean(diff)
                c["diff_ci"] = bootstrap(diff) if len(diff) >= 2 else (_mean(diff),) * 2
                c["pages_losing_0.3"] = sum(d < -LOSS for d in diff)
                c["pages_winning_0.3"] = sum(d > LOSS for d in diff)
        must = [h for i in idx for h in scored[i].must_found]
        must_not = [h for i in idx for h in scored[i].must_not_absent]
        if must:
            c["must_found"] = _mean([float(h) for h in must])
            c["must_snippets"] = len(must)
        if must_not:
            c["must_not_absent"] = _mean([float(h) for h in must_not])
            c["must_not_snippets"] = len(must_not)
        fig[name] = c
    return fig


def figures(pages: list[Page], res: dict[str, list[Scored]], min_lang: int = 5) -> dict:
    """All figures: overall, per family, per family x language (languages with fewer than
    ``min_lang`` pages in a family are pooled as ``other``) and per language."""
    out: dict = {
        "all": group_figures(list(range(len(pages))), res),
        "family": {},
        "family_lang": {},
        "lang": {},
    }
    for fam in sorted({p.family for p in pages}):
        idx = [i for i, p in enumerate(pages) if p.family == fam]
        out["family"][fam] = group_figures(idx, res)
        langs = Counter(pages[i].lang for i in idx)
        for lang in sorted(langs, key=lambda g: -langs[g]):
            if langs[lang] >= min_lang:
                sub = [i for i in idx if pages[i].lang == lang]
                out["family_lang"][f"{fam}/{lang}"] = group_figures(sub, res)
        other = [i for i in idx if langs[pages[i].lang] < min_lang]
        if other:
            out["family_lang"][f"{fam}/other"] = group_figures(other, res)
    langs = Counter(p.lang for p in pages)
    for lang in sorted(langs, key=lambda g: -langs[g]):
        out["lang"][lang] = group_figures([i for i, p in enumerate(pages) if p.lang == lang], res)
    return out


def _row(label: str, fig: dict, names: list[str]) -> str:
    cells = []
    for name in names:
        c = fig.get(name, {})
        if "f1" in c:
            cell = f"{c['f1']:.3f} [{c['f1_ci'][0]:.2f},{c['f1_ci'][1]:.2f}]"
            if "diff_vs_trafilatura" in c:
                cell += (
                    f" {c['diff_vs_trafilatura']:+.3f} [{c['diff_ci'][0]:+.2f},"
                    f"{c['diff_ci'][1]:+.2f}]"
                )
        else:
            cell = "-"
        cells.append(f"{cell:>36s}")
    return f"{label[:22]:22s} {fig['pages']:4d} {fig['pages_with_gold']:4d} |" + " |".join(cells)


def print_report(fig: dict, names: list[str]) -> None:
    """Print the figures: F1 tables, then losses, empties, snippets and CPU."""
    print(
        "F1 [95% CI] of pages with a full gold; for each config but trafilatura: paired "
        "difference to trafilatura's defaults [95% CI]"
    )
    print(f"{'group':22s} {'all':>4s} {'gold':>4s} |" + " |".join(f"{n[:34]:>36s}" for n in names))
    print(_row("all", fig["all"], names))
    for key in ("family", "family_lang", "lang"):
        print(f"-- by {key.replace('_', ' x ')}")
        for label, g in fig[key].items():
            print(_row(label, g, names))
    print(
        "\nper family: pages losing / winning > 0.3 F1 vs trafilatura, empty outputs, "
        "must-appear found, must-not absent, CPU ms/page"
    )
    for label, g in [("all", fig["all"])] + list(fig["family"].items()):
        print(
            f"{label}: {g['pages']} pages, {g['pages_with_gold']} with gold, "
            f"{g['pages_with_must_not']} with must-not snippets"
        )
        for name in names:
            c = g.get(name, {})
            parts = [f"empty {c.get('empty', 0)}", f"CPU {c.get('cpu_ms', 0):.1f} ms"]
            if "pages_losing_0.3" in c:
                parts.insert(0, f"lose/win >0.3: {c['pages_losing_0.3']}/{c['pages_winning_0.3']}")
            if "must_found" in c:
                parts.append(f"must found {100 * c['must_found']:.1f}% of {c['must_snippets']}")
            if "must_not_absent" in c:
                parts.append(
                    f"must-not absent {100 * c['must_not_absent']:.1f}% of {c['must_not_snippets']}"
                )
            print(f"  {name[:34]:34s} " + ", ".join(parts))


def summary(fig: dict, names: list[str]) -> dict[str, str]:
    """The headline figures of a run (bench/RESULTS.md shows these; the rest is detail)."""
    out: dict[str, str] = {}
    for label, g in [("all", fig["all"])] + list(fig["family"].items()):
        for name in names:
            c = g.get(name, {})
            parts = []
            if "f1" in c:
                parts.append(f"F1 {c['f1']:.3f} on {g['pages_with_gold']}")
            if "diff_vs_trafilatura" in c:
                lo, hi = c["diff_ci"]
                parts.append(
                    f"vs trafilatura {c['diff_vs_trafilatura']:+.3f} [{lo:+.3f}, {hi:+.3f}], "
                    f"lose/win >0.3: {c['pages_losing_0.3']}/{c['pages_winning_0.3']}"
                )
            if "must_not_absent" in c:
                parts.append(f"must-not absent {100 * c['must_not_absent']:.1f}%")
            parts.append(f"empty {c.get('empty', 0)}, {c.get('cpu_ms', 0):.1f} ms CPU")
            out[f"{label} ({g['pages']} pages), {name}"] = "; ".join(parts)
    return out


def report_file(path: str) -> int:
    """Print the figures of a result file this bench wrote."""
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    d = doc["detail"]
    print(f"{doc['command']}\ncommit {doc['commit']}, {doc['date']}, {doc['machine']}\n")
    print_report(
        d["figures"],
        [n for n in d["configs"] if n in MAIN or n == "rs-trafilatura"] or d["configs"],
    )
    if d.get("lofo"):
        print("\nleave-one-family-out")
        print(format_folds([FoldResult(**f) for f in d["lofo"]], "curator default"))
    if d.get("lofo_each"):
        each = {n: [FoldResult(**f) for f in fs] for n, fs in d["lofo_each"].items()}
        print("\neach candidate alone against the default")
        print(format_each(each, "curator default"))
    return 0


def main(argv: list[str] | None = None) -> int | tuple[dict, dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--set",
        dest="which",
        default="unseen",
        choices=["unseen", "gold", "both", "heldout3", "heldout4", "all"],
    )
    ap.add_argument("--split", default="heldout", choices=["heldout", "tuning", "all"])
    ap.add_argument("--family", action="append", help="only these families (repeatable)")
    ap.add_argument("--only", action="append", help="configs instead of the main three")
    ap.add_argument(
        "--lofo",
        action="append",
        default=[],
        metavar="CONFIG",
        help="a candidate option set for leave-one-family-out (repeatable)",
    )
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument(
        "--rs-python",
        metavar="PYTHON",
        help="also score rs-trafilatura, run by this Python 3.12 interpreter",
    )
    args = ap.parse_args(argv)
    pages = load_pages(args.which, args.split)
    if args.family:
        pages = [p for p in pages if p.family in args.family]
    if not pages:
        print(f"no pages in set {args.which!r}, split {args.split!r}")
        return 2
    known = configs()
    names = list(dict.fromkeys((args.only or MAIN) + args.lofo))
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown config(s) {unknown}; known: {list(known)}")
        return 2
    if args.lofo and "curator default" not in names:
        names.insert(0, "curator default")
    if BASE not in names:
        names.append(BASE)
    print(
        f"{len(pages)} pages ({args.which}, split {args.split}): "
        f"{dict(Counter(p.family for p in pages))}, {len({p.lang for p in pages})} languages",
        file=sys.stderr,
    )
    res = run(names, pages, args.jobs, args.rs_python)
    fig = figures(pages, res)
    shown = [n for n in res if n in MAIN or n == "rs-trafilatura" or n in (args.only or [])]
    print_report(fig, shown or list(res))
    folds: list[FoldResult] = []
    each: dict[str, list[FoldResult]] = {}
    means: dict[str, dict[str, float]] = {}
    if args.lofo:
        cands = ["curator default"] + [n for n in args.lofo if n != "curator default"]
        scores = {n: {p.id: s.score for p, s in zip(pages, res[n])} for n in cands}
        fam = {p.id: p.family for p in pages}
        folds = leave_one_family_out(scores, fam, "curator default")
        print(
            "\nleave-one-family-out (score: F1 where a full gold exists, else the share of "
            "snippets judged right; chosen by macro mean over the other families)"
        )
        print(format_folds(folds, "curator default"))
        each = each_against(scores, fam, "curator default")
        print(
            "\neach candidate alone against the default, leave-one-family-out (gain on the "
            "left-out family where the candidate was chosen without it; '.': default kept)"
        )
        print(format_each(each, "curator default"))
        means = {n: family_means(s, fam) for n, s in scores.items()}
        fams = sorted(means["curator default"])
        print("\nmean score per family minus the default's")
        for n in cands[1:]:
            print(
                f"{n[:44]:44s}"
                + "".join(f"{means[n][f] - means['curator default'][f]:+10.4f}" for f in fams)
            )
    detail = {
        "set": args.which,
        "split": args.split,
        "pages": len(pages),
        "configs": list(res),
        "figures": fig,
        "lofo": [f.__dict__ for f in folds],
        "lofo_each": {n: [f.__dict__ for f in fs] for n, fs in each.items()},
        "lofo_family_means": means,
    }
    return summary(fig, shown or list(res)), detail


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--report":
        sys.exit(report_file(sys.argv[2]))
    sys.exit(bench_main(__file__, main))
