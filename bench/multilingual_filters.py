"""The heuristic presets on parallel real text in seven languages: what each removes per
language with Gopher's published (English) rules and with ``languages: recommended``, and how
often curator's and datatrove's decisions differ, both splitting words by the document's
language (the same segmenters for Chinese and Japanese).

Run from the repository root (no network; reads the machine's gettext catalogs)::

    python bench/multilingual_filters.py [--min-chars 150]

The text: every message of the Debian system's translation catalogs
(``/usr/share/locale/<lang>/LC_MESSAGES/*.mo``: coreutils, bash, PostgreSQL, dpkg, apt,
GnuPG... human translations by the Translation Project and the projects' teams, GPL/LGPL) whose
English original has ``--min-chars`` characters or more, is translated into all of German,
French, Spanish, Russian, Chinese (zh_CN) and Japanese, and passes ``gopher_quality`` (without
its length rule) in English: the same prose-like texts, 150-600 characters, in each language.
"""

from __future__ import annotations

import argparse
import collections
import gettext
import glob
import os
import sys

from bench.common import bench_main
from curator.base.document import Document
from curator.core.registry import resolve

LOCALES = {"de": "de", "fr": "fr", "es": "es", "ru": "ru", "zh": "zh_CN", "ja": "ja"}
LANGS = ["en", *LOCALES]
#: datatrove's names where its two-letter code loads another tokenizer (0.10.1 maps "zh" to
#: its whitespace "xx" tokenizer: the CSV's "FALSE" strings are read as true)
DT_NAMES = {"zh": "cmn_Hani", "ja": "jpn_Jpan"}


def parallel_texts(min_chars: int) -> list[dict[str, str]]:
    by_msg: dict[tuple[str, str], dict[str, str]] = {}
    for lang, loc in LOCALES.items():
        for mo in glob.glob(f"/usr/share/locale/{loc}/LC_MESSAGES/*.mo"):
            try:
                with open(mo, "rb") as f:
                    cat = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
            except Exception:  # a catalog Python cannot read is skipped
                continue
            for k, v in cat.items():
                if isinstance(k, str) and isinstance(v, str) and v and v != k and \
                        len(k) >= min_chars:
                    by_msg.setdefault((os.path.basename(mo), k), {})[lang] = v
    gq = resolve("gopher_quality").from_params({"disable": ["word_count"]}, id="g")
    return [{"catalog": mo, "en": k, **d} for (mo, k), d in sorted(by_msg.items())
            if len(d) == len(LOCALES) and gq.check(Document("x", k, {})) is None]


def removal(texts: list[dict[str, str]], name: str, params: dict) -> dict[str, tuple[int, str]]:
    st = resolve(name).from_params(params, id=name)
    out = {}
    for lang in LANGS:
        why = collections.Counter()
        for i, t in enumerate(texts):
            r = st.check(Document(str(i), t[lang], {"language": lang}))
            if r:
                why[r.split(":")[1]] += 1
        out[lang] = (sum(why.values()), ", ".join(f"{k} {v}" for k, v in why.most_common(2)))
    return out


def datatrove_agreement(texts: list[dict[str, str]]) -> dict[str, dict[str, int]]:
    from datatrove.data import Document as DTDoc
    from datatrove.pipeline.filters.gopher_quality_filter import GopherQualityFilter
    from datatrove.pipeline.filters.gopher_repetition_filter import GopherRepetitionFilter

    out: dict[str, dict[str, int]] = {}
    for lang in LANGS:
        row = {}
        for name, dt_cls in (("gopher_quality", GopherQualityFilter),
                             ("gopher_repetition", GopherRepetitionFilter)):
            try:
                dt = dt_cls(language=DT_NAMES.get(lang, lang))
                dt_keep = [dt.filter(DTDoc(text=t[lang], id=str(i))) is True
                           for i, t in enumerate(texts)]
            except ImportError:  # its Japanese tokenizer (SudachiPy) is not installed
                row[name] = -1
                continue
            ours = resolve(name).from_params({}, id=name)
            keep = [ours.check(Document(str(i), t[lang], {"language": lang})) is None
                    for i, t in enumerate(texts)]
            row[name] = sum(a != b for a, b in zip(keep, dt_keep, strict=True))
        out[lang] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-chars", type=int, default=150)
    args = ap.parse_args()
    texts = parallel_texts(args.min_chars)
    print(f"{len(texts)} parallel texts in {len(LANGS)} languages")
    runs = [("gopher_quality", {"overrides": {"word_count": {"min_words": 20}}}),
            ("gopher_quality", {"overrides": {"word_count": {"min_words": 20}},
                                "languages": "recommended"}),
            ("gopher_repetition", {}), ("gopher_repetition", {"languages": "recommended"}),
            ("fineweb_quality", {}), ("fineweb_quality", {"languages": "recommended"}),
            ("gopher_quality", {"overrides": {"word_count": {"min_words": 20}},
                                "languages": "fineweb2"}),
            ("gopher_repetition", {"languages": "fineweb2"}),
            ("fineweb_quality", {"languages": "fineweb2"})]
    print("| preset | " + " | ".join(LANGS) + " |\n|---|" + "---|" * len(LANGS))
    for name, params in runs:
        got = removal(texts, name, params)
        label = name + (f" {params['languages']}" if "languages" in params else "")
        print(f"| {label} | " + " | ".join(f"{100 * got[lang][0] / len(texts):.0f}%"
                                           for lang in LANGS) + " |")
    print("\ndecisions that differ from datatrove's (its own word tokenizer per language; "
          "-1: tokenizer not installed)")
    for lang, row in datatrove_agreement(texts).items():
        print(f"  {lang}: " + ", ".join(f"{k} {v}/{len(texts)}" for k, v in row.items()))


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
