"""How fast words are split per language: curator's ``split_words(text, lang)`` against
``str.split`` (whitespace), the split by script (no language) and datatrove's word tokenizer on
the same texts, as documents per CPU-second and as ratios (the ratios are what a shared
machine still measures well).

Run from the repository root (no network; reads the machine's gettext catalogs)::

    python -m bench.word_split_speed [--min-chars 50] [--repeat 3]

The text: every message of the Debian system's translation catalogs
(``/usr/share/locale/<lang>/LC_MESSAGES/*.mo``, human translations, GPL/LGPL) of
``--min-chars`` characters or more, per language (English: the message ids).
"""

from __future__ import annotations

import argparse
import gettext
import glob
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import bench_main
from curator.text.words import split_words

LOCALES = {"zh": "zh_CN", "ja": "ja", "ko": "ko", "th": "th", "en": "de"}


def texts(lang: str, min_chars: int) -> list[str]:
    out: set[str] = set()
    for mo in glob.glob(f"/usr/share/locale/{LOCALES[lang]}/LC_MESSAGES/*.mo"):
        try:
            with open(mo, "rb") as f:
                cat = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError):
            continue
        for k, v in cat.items():
            t = k if lang == "en" else v
            if isinstance(k, str) and k and isinstance(t, str) and len(t) >= min_chars:
                out.add(t)
    return sorted(out)


def rate(fn: Callable[[str], object], docs: list[str], repeat: int) -> float:
    """Documents per CPU-second, the best of ``repeat`` passes."""
    fn(docs[0])  # loads a segmenter outside the timing
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for d in docs:
            fn(d)
        best = min(best, time.process_time() - t)
    return len(docs) / best if best else float("inf")


def datatrove_tokenizer(lang: str) -> Callable[[str], list[str]] | None:
    try:
        from datatrove.utils.word_tokenizers import (
            KiwiTokenizer,
            SpaCyTokenizer,
            ThaiTokenizer,
        )
    except ImportError:
        return None
    tok = {"zh": lambda: SpaCyTokenizer("zh"), "ja": lambda: SpaCyTokenizer("ja"),
           "ko": lambda: KiwiTokenizer("cong"), "th": ThaiTokenizer,
           "en": lambda: SpaCyTokenizer("en")}[lang]()
    return tok.word_tokenize


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-chars", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print("| language | docs | chars/doc | split_words(lang) docs/s | / str.split | "
          "/ by script | / datatrove | words agree with datatrove |")
    print("|---|---|---|---|---|---|---|---|")
    figures: dict[str, Any] = {}
    for lang in LOCALES:
        docs = texts(lang, args.min_chars)
        if not docs:
            continue
        ours = rate(lambda t, lang=lang: split_words(t, lang), docs, args.repeat)
        ws = rate(str.split, docs, args.repeat)
        script = rate(split_words, docs, args.repeat)
        dt = datatrove_tokenizer(lang)
        dtr = rate(dt, docs, args.repeat) if dt else float("nan")
        agree = (sum(split_words(d, lang) == dt(d) for d in docs) / len(docs)
                 if dt and lang != "en" else float("nan"))
        chars = sum(map(len, docs)) / len(docs)
        print(f"| {lang} | {len(docs)} | {chars:.0f} | {ours:,.0f} | {ours / ws:.4f} | "
              f"{ours / script:.3f} | {ours / dtr:.2f} | {agree:.1%} |")
        figures[lang] = {"docs": len(docs), "docs_per_s": round(ours),
                         "vs_str_split": round(ours / ws, 4), "vs_script": round(ours / script, 3),
                         "vs_datatrove": round(ours / dtr, 2), "agree": round(agree, 4)}
    return figures


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
