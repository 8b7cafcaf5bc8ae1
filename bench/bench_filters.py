"""Docs/s per core of curator's heuristic presets and language ID vs datatrove's equivalents.

Run from the repository root::

    python bench/bench_filters.py [--docs 4000] [--repeat 3]

Both sides see the same documents (seeded synthetic web-like text: prose, menus, spam, lists,
tables, repetition) in the same process, one core, and are timed with CPU time
(``time.process_time``), so other load on the machine does not skew the ratio.

Fairness notes, printed with the results:

* datatrove's English word tokenizer needs NLTK (and its punkt data, downloaded at run time),
  which is not available offline; its rules are given curator's word splitter instead, so the
  comparison measures the rule code. Their keep/reject decisions are checked to agree.
* datatrove's ``LanguageFilter`` downloads ``lid.176.bin`` at run time; here its model is
  pointed at curator's bundled ``lid.176.ftz`` (the same file curator uses), through the
  filter's model attribute, and its check for the ``fasttext-numpy2-wheel`` distribution name
  is skipped (the same ``fasttext`` module is installed as ``fasttext-numpy2``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

from bench.common import bench_main
from curator.base.document import Document
from curator.filters.c4_quality import C4Quality
from curator.filters.fineweb_quality import FineWebQuality
from curator.filters.gopher_quality import GopherQuality
from curator.filters.gopher_repetition import GopherRepetition
from curator.filters.language_id import DEFAULT_MODEL, predict_languages
from curator.filters.nemo_english import NemoEnglish
from curator.filters.synthetic import documents
from curator.text import split_sentences, split_words


def _cpu(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from datatrove.data import Document as DTDoc
    from datatrove.pipeline.filters import c4_filters as dt_c4
    from datatrove.pipeline.filters import fineweb_quality_filter as dt_fw
    from datatrove.pipeline.filters import gopher_quality_filter as dt_gq
    from datatrove.pipeline.filters import gopher_repetition_filter as dt_gr
    from datatrove.pipeline.filters.language_filter import LanguageFilter
    from fasttext.FastText import _FastText

    def words(text: str, language: str | None = None) -> list[str]:
        return split_words(text)

    for mod in (dt_gq, dt_gr, dt_fw):
        mod.split_into_words = words
    dt_c4.split_into_sentences = lambda text, language=None: split_sentences(text)

    recs = documents(args.docs, seed=args.seed)
    texts = [r["text"] for r in recs]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    print(f"{len(texts)} docs, {mb:.1f} MB, best of {args.repeat}, CPU time of one process\n")
    print(f"{'stage':20s} {'curator docs/s':>15s} {'datatrove docs/s':>17s} {'ratio':>7s}"
          f"  agree")

    def ours_filter(stage):
        def run():
            return [stage.check(Document("x", t)) is None for t in texts]
        return run

    def theirs_filter(flt):
        def run():
            return [flt.filter(DTDoc(text=t, id="x")) is True for t in texts]
        return run

    def c4_ours():
        st = C4Quality()
        return [st.clean(t)[0] is not None for t in texts]

    rows = [
        ("gopher_quality", ours_filter(GopherQuality()),
         theirs_filter(dt_gq.GopherQualityFilter())),
        ("gopher_repetition", ours_filter(GopherRepetition()),
         theirs_filter(dt_gr.GopherRepetitionFilter())),
        ("c4_quality", c4_ours, theirs_filter(dt_c4.C4QualityFilter())),
        ("fineweb_quality", ours_filter(FineWebQuality()),
         theirs_filter(dt_fw.FineWebQualityFilter())),
    ]

    # datatrove insists on the 'fasttext-numpy2-wheel' distribution name; the same fasttext
    # module comes from 'fasttext-numpy2' here, so skip its distribution-name check.
    import datatrove.pipeline.base as dt_base

    dt_base.check_required_dependencies = lambda *a, **k: None
    lf = LanguageFilter(languages=["en"], language_threshold=0.65)
    lf.model._model = _FastText(model_path=DEFAULT_MODEL)  # no download: our bundled file

    def lid_ours():
        langs, scores = predict_languages(texts)
        return [lg == "en" and s >= 0.65 for lg, s in zip(langs, scores)]

    rows.append(("language_id", lid_ours, theirs_filter(lf)))

    for name, ours, theirs in rows:
        t_ours, a = _cpu(ours, args.repeat)
        t_theirs, b = _cpu(theirs, args.repeat)
        agree = sum(x == y for x, y in zip(a, b)) / len(texts)
        r_ours, r_theirs = len(texts) / t_ours, len(texts) / t_theirs
        print(f"{name:20s} {r_ours:15,.0f} {r_theirs:17,.0f} {r_ours / r_theirs:6.2f}x"
              f"  {agree:6.1%}")

    nemo = NemoEnglish()
    t, _ = _cpu(ours_filter(nemo), args.repeat)
    print(f"{'nemo_english':20s} {len(texts) / t:15,.0f} {'(no datatrove peer)':>17s}")

    # decontamination lookup: 3 tasks x 500 evaluation texts, 13-grams
    import tempfile

    from curator.filters.decontaminate import Matcher, _BuildTask

    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for ti in range(3):
            src = os.path.join(d, f"t{ti}.txt")
            with open(src, "w", encoding="utf-8") as f:
                for r in documents(500, seed=1000 + ti, prose_share=1.0):
                    f.write(r["text"][:300].replace("\n", " ") + "\n")
            b = _BuildTask(13, 8, None, d)((f"t{ti}", [src]))
            paths[b.task] = b.path
        m = Matcher(paths)
        m.matches("warm up")
        t, _ = _cpu(lambda: [m.matches(x) for x in texts], args.repeat)
        print(f"{'decontaminate':20s} {len(texts) / t:15,.0f} {'(no datatrove peer)':>17s}"
              f"  ({mb / t:.1f} MB/s; 3 tasks x 500 texts, 13-grams)")
    print("\nratio = curator / datatrove (higher is faster). datatrove rules use curator's word "
          "splitter\n(NLTK data cannot be downloaded here) and its LanguageFilter uses the "
          "bundled lid.176.ftz.")
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
