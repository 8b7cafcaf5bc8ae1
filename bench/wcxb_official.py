"""WCXB with its own scorer: curator's default beside the benchmark's published systems.

    python bench/wcxb_official.py                    # test split (511 pages), main configs
    python bench/wcxb_official.py --split dev        # dev split (1,497 pages)
    python bench/wcxb_official.py --only "curator default" --jobs 2

WCXB publishes rs-trafilatura (dev F1 0.859, test 0.893) and trafilatura (0.791 / 0.833) as
reference figures. Those figures come from WCXB's own ``evaluate.py`` (word F1 over ``\\w+`` tokens,
mean over pages, every page of the split counted). This bench writes each config's predictions
as WCXB's results file (``{file_id: text}``) and runs that ``evaluate.py``, unchanged, on it, so
curator's figure is on the same scale as the published ones. The ``trafilatura defaults`` row
reproduces the published trafilatura figure, which checks that the pages and the scoring
match.

Needs a checkout of the WCXB mirror (``fetch github:Murrough-Foley/web-content-extraction-
benchmark``, then ``git --git-dir <mirror>/repo archive HEAD | tar -x -C /var/tmp/wcxb``), or
``--wcxb DIR``. Some WCXB pages are also gold pages (bench/gold, tuning or held-out), so the
bench also prints the mean over the pages of the split that are *not* in curator's tuning set
(``untuned``): the one figure on pages no option was chosen on.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

from bench.common import bench_main

WCXB_DIR = "/var/tmp/wcxb"
MAIN = ["curator default", "trafilatura defaults", "datatrove settings", "resiliparse"]
# WCXB's README, "Baseline Results" (v1.0): dev and test F1 of its published systems
PUBLISHED = {"rs-trafilatura": (0.859, 0.893), "trafilatura": (0.791, 0.833),
             "dom-smoothie": (0.762, 0.808), "Readability": (0.675, 0.726)}


def load_pages(wcxb: str, split: str) -> list[tuple[str, str, str]]:
    """``(file id, decoded HTML, URL)`` of every page of the split, read once for every config."""
    from curator.extract.charset import decode_html

    pages = []
    for fid in sorted(f.removesuffix(".json")
                      for f in os.listdir(os.path.join(wcxb, split, "ground-truth"))):
        with open(os.path.join(wcxb, split, "html", fid + ".html.gz"), "rb") as f:
            html = decode_html(gzip.decompress(f.read()))[0]
        with open(os.path.join(wcxb, split, "ground-truth", fid + ".json")) as f:
            url = json.load(f).get("url") or ""
        pages.append((fid, html, url))
    return pages


def run(name: str, pages: list[tuple[str, str, str]], jobs: int, rs_python: str | None = None
        ) -> tuple[dict[str, str], float]:
    """A config's text of each page and its mean CPU seconds a page; ``rs-trafilatura`` runs
    in the Python 3.12 interpreter ``rs_python`` (bench/rs_trafilatura_row.py)."""
    if name == "rs-trafilatura":
        from bench.rs_trafilatura_row import predictions

        text, cpu = predictions(pages, rs_python or "")
    else:
        from bench.extraction_quality import extract_pooled

        text, cpu = extract_pooled(name, [(fid, html) for fid, html, _ in pages], jobs)
    return text, sum(cpu.values()) / max(1, len(cpu))


def per_page(wcxb: str, split: str, preds: dict[str, str]) -> dict[str, float]:
    """WCXB F1 of each page of the split, by file id, from WCXB's own scorer."""
    import importlib.util

    # WCXB's own scorer, loaded from its file: the checkout is not a package
    path = os.path.join(wcxb, "evaluate.py")
    spec = importlib.util.spec_from_file_location("wcxb_evaluate", path)
    assert spec is not None and spec.loader is not None
    evaluate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(evaluate)

    return {k: evaluate.word_f1(preds.get(k, ""), v["main_content"])[2]
            for k, v in sorted(evaluate.load_ground_truth(split).items())}


def official(wcxb: str, split: str, preds: dict[str, str]) -> str:
    """WCXB's evaluate.py, unchanged, on these predictions: its printed report."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(preds, f)
    try:
        return subprocess.run([sys.executable, os.path.join(wcxb, "evaluate.py"), "--split",
                               split, "--results", f.name, "--per-type"], capture_output=True,
                              text=True, check=True).stdout
    finally:
        os.unlink(f.name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="test", choices=["dev", "test"])
    ap.add_argument("--only", action="append", help="score only this config (repeatable)")
    ap.add_argument("--wcxb", default=WCXB_DIR, help="a checkout of the WCXB repository")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--save", help="folder to keep each config's predictions in")
    ap.add_argument("--rs-python", metavar="PYTHON",
                    help="also run rs-trafilatura with this Python 3.12 interpreter "
                    "(bench/rs_trafilatura_row.py)")
    args = ap.parse_args(argv)
    if not os.path.isfile(os.path.join(args.wcxb, "evaluate.py")):
        print(f"{args.wcxb}: no WCXB checkout (see this file's docstring)", file=sys.stderr)
        return 2
    col = 0 if args.split == "dev" else 1
    print(f"WCXB {args.split} split, scored by WCXB's evaluate.py; published "
          + ", ".join(f"{k} {v[col]:.3f}" for k, v in PUBLISHED.items()))
    names = list(args.only or MAIN) + (["rs-trafilatura"] if args.rs_python else [])
    from bench.gold_set import load_gold

    tuned = {g.id.split("/", 1)[1] for g in load_gold("tuning") if g.source == "wcxb"}
    pages = load_pages(args.wcxb, args.split)
    scores: dict[str, list[float]] = {}
    for name in names:
        preds, cpu = run(name, pages, args.jobs, args.rs_python)
        f1s = per_page(args.wcxb, args.split, preds)
        scores[name] = list(f1s.values())
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            with open(os.path.join(args.save, re.sub(r"\W+", "_", name) + ".json"), "w") as f:
                json.dump(preds, f)
        rep = official(args.wcxb, args.split, preds)
        untuned = [f for k, f in f1s.items() if k not in tuned]
        print(f"\n== {name}: {cpu * 1000:.1f} ms CPU per page; mean F1 over the {len(untuned)} "
              f"pages that are not curator tuning pages {sum(untuned) / len(untuned):.4f}")
        print(rep.strip())
    if "curator default" in scores:
        from bench.gold_set import bootstrap

        cur = scores["curator default"]
        for name, other in scores.items():
            if name != "curator default":
                d = [a - b for a, b in zip(cur, other, strict=True)]
                lo, hi = bootstrap(d)
                print(f"curator default - {name}: {sum(d) / len(d):+.4f} [{lo:+.4f}, {hi:+.4f}] "
                      f"(paired, 95% bootstrap), pages up {sum(x > 0 for x in d)} / down "
                      f"{sum(x < 0 for x in d)}")
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
