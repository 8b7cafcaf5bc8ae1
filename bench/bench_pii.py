"""pii_redact vs datatrove's PIIFormatter (e-mails and IPv4, what it covers) and vs Microsoft
Presidio's pattern recognizers (all kinds), on real text found on the machine: the Python
standard library's source, and where present Debian's changelogs and the Python HTML docs.

Run from the repository root::

    python bench/bench_pii.py [--repeat 2]

First, quality: precision and recall per kind on the labelled set
``tests/filters/data/pii_labelled.txt`` (the part the rules were tuned on, the held-out part,
and all), for curator (regex phone rules, and libphonenumber validation with the regions of
the set) and Presidio's pattern recognizers. A found span counts only with the labelled start,
end and kind.

Throughput is CPU time (``time.process_time``) in one process, both sides on the same texts in
the same run, so other load on the machine does not skew the ratio. Hits are printed per kind:
on code and documentation most numeric hits are look-alikes (version and section numbers), so
fewer hits at equal e-mail counts means fewer false positives.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import os
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Callable

from bench.common import bench_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from curator.filters.pii_redact import KINDS, PiiRedactor, PresidioRedactor  # noqa: E402
from tests.filters.pii_labelled import evaluate, load  # noqa: E402

#: Countries of the labelled phone numbers (for libphonenumber's national formats).
SET_REGIONS = ["US", "GB", "DE", "FR", "JP", "ES", "NL", "CH", "BR", "IT"]


def corpora() -> dict[str, list[str]]:
    stdlib = sysconfig.get_paths()["stdlib"]
    sets = {"python stdlib *.py": sorted(glob.glob(os.path.join(stdlib, "*.py"))),
            "debian changelogs": sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz")),
            "python html docs": sorted(glob.glob("/usr/share/doc/python3*/html/library/*.html"))}
    out = {}
    for name, files in sets.items():
        texts = []
        for f in files:
            op = gzip.open if f.endswith(".gz") else open
            with op(f, "rt", encoding="utf-8", errors="replace") as fh:
                texts.append(fh.read())
        if texts:
            out[name] = texts
    return out


def datatrove_counter() -> Callable[[str], dict[str, int]]:
    from datatrove.pipeline.formatters import PIIFormatter

    f = PIIFormatter()

    def run(text: str) -> dict[str, int]:
        c: Counter[str] = Counter()
        for kind, rep in (("email", f.emails_replacer), ("ipv4", f.ip_replacer)):
            c[kind] = sum(1 for m in rep.regex.finditer(text)
                          if rep.validator is None or rep.validator(m.group(0)))
        f.format(text)  # time the real replacement too
        return c
    return run


def timed(fn: Callable[[str], object], texts: list[str], repeat: int) -> tuple[float, Counter]:
    best, hits = float("inf"), Counter()
    for _ in range(repeat):
        t0 = time.process_time()
        c: Counter[str] = Counter()
        for t in texts:
            out = fn(t)
            c.update(out[1] if isinstance(out, tuple) else out)
        best = min(best, time.process_time() - t0)
        hits = c
    return best, hits


def quality() -> None:
    snippets = load()
    parts = {"tuned": [s for s in snippets if s.group != "heldout"],
             "held-out": [s for s in snippets if s.group == "heldout"], "all": snippets}
    sides: list[tuple[str, Callable[[str], list[tuple[int, int, str]]]]] = [
        ("curator (regex phones)", PiiRedactor().spans),
        ("curator (phonenumbers)", PiiRedactor(phone_validation="phonenumbers",
                                               phone_regions=SET_REGIONS).spans)]
    try:
        sides.append(("presidio patterns", PresidioRedactor().spans))
    except Exception as e:
        print(f"presidio not usable: {e}")
    print(f"labelled set: {len(snippets)} snippets, "
          f"{sum(len(s.spans) for s in snippets)} items, "
          f"{sum(1 for s in snippets if not s.spans)} look-alike snippets")
    for side, fn in sides:
        for part, sn in parts.items():
            scores, _ = evaluate(fn, sn, KINDS)
            row = "  ".join(f"{k} {sc.precision:.2f}/{sc.recall:.2f}" for k, sc in scores.items())
            print(f"  {side:24s} {part:9s} P/R  {row}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    quality()
    ours_ei = PiiRedactor(kinds=["email", "ipv4"])
    ours = PiiRedactor()
    sides: list[tuple[str, Callable[[str], object]]] = [
        ("curator email+ipv4", ours_ei.redact)]
    try:
        sides.append(("datatrove PIIFormatter", datatrove_counter()))
    except ImportError:
        print("datatrove not installed: skipped")
    sides.append(("curator all kinds", ours.redact))
    try:
        sides.append(("presidio patterns", PresidioRedactor().redact))
    except Exception as e:
        print(f"presidio not usable: {e}")
    for name, texts in corpora().items():
        mb = sum(map(len, texts)) / 1e6
        print(f"\n{name}: {len(texts)} files, {mb:.1f} MB")
        base: dict[str, float] = {}
        for side, fn in sides:
            secs, hits = timed(fn, texts, args.repeat)
            base[side] = secs
            print(f"  {side:24s} {mb / secs:7.2f} MB/s  hits {dict(sorted(hits.items()))}")
        if "datatrove PIIFormatter" in base:
            print(f"  speed curator/datatrove (email+ipv4): "
                  f"{base['datatrove PIIFormatter'] / base['curator email+ipv4']:.2f}x")
        if "presidio patterns" in base:
            print(f"  speed curator/presidio (all kinds):   "
                  f"{base['presidio patterns'] / base['curator all kinds']:.2f}x")


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
