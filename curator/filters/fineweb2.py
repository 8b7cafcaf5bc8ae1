"""FineWeb-2's published per-language filter thresholds, for ``languages: fineweb2``.

Source: the FineWeb-2 repository (github.com/huggingface/fineweb-2, commit d0defb2 of
2025-10-27), ``configs/<lang>_<script>.yml``, Apache-2.0 (Penedo et al. 2025, "FineWeb2: One
Pipeline to Scale Them All"); the keys are theirs, copied as published for the languages
curator's recipes cover. How ``fineweb-2-pipeline.py`` used them, and so how :func:`table`
maps them onto curator's presets:

* ``gopher_repetition``: ``dup_line_frac``, ``top_n_grams``, ``dup_n_grams``; the paragraph
  rules and ``dup_line_char_frac`` off;
* ``fineweb_quality``: ``line_punct_thr``, ``new_line_ratio``; the short-line rule off and
  ``char_duplicates_ratio`` 0.1 (FineWeb's English used 0.01);
* ``gopher_quality``: ``min/max_avg_word_length``, ``max_non_alpha_words_ratio`` (the smallest
  share of words with a letter), ``stopwords`` (2 of them); the length rule as published.

FineWeb-2 computed the thresholds on words split by datatrove's tokenizers: the same segmenters
:mod:`curator.text.words` uses for Chinese, Japanese, Korean and Thai.
"""

from __future__ import annotations

from typing import Any

#: FineWeb-2's name of each language curator reads as ``meta.language`` (``language_id``).
NAMES = {
    "zh": "cmn_Hani",
    "ja": "jpn_Jpan",
    "ko": "kor_Hang",
    "th": "tha_Thai",
    "de": "deu_Latn",
    "fr": "fra_Latn",
    "es": "spa_Latn",
    "it": "ita_Latn",
    "pt": "por_Latn",
    "nl": "nld_Latn",
    "ru": "rus_Cyrl",
    "pl": "pol_Latn",
}

THRESHOLDS: dict[str, dict[str, Any]] = {
    "cmn_Hani": {
        "dup_line_frac": 0.287,
        "dup_n_grams": [(5, 0.198), (6, 0.182), (7, 0.167), (8, 0.154), (9, 0.14), (10, 0.127)],
        "line_punct_thr": 0.106,
        "max_avg_word_length": 5,
        "max_non_alpha_words_ratio": 0.735,
        "min_avg_word_length": 1,
        "new_line_ratio": 0.178,
        "stopwords": [
            "的",
            "年",
            "在",
            "月",
            "是",
            "和",
            "日",
            "了",
            "於",
            "·",
            "為",
            "有",
            "被",
            "人",
            "中",
            "为",
            "他",
            "與",
            "後",
            "也",
            "而",
            "由",
        ],
        "top_n_grams": [(2, 0.256), (3, 0.201), (4, 0.171)],
    },
    "deu_Latn": {
        "dup_line_frac": 0.263,
        "dup_n_grams": [(5, 0.141), (6, 0.134), (7, 0.126), (8, 0.117), (9, 0.108), (10, 0.098)],
        "line_punct_thr": 0.0,
        "max_avg_word_length": 15,
        "max_non_alpha_words_ratio": 0.774,
        "min_avg_word_length": 0,
        "new_line_ratio": 0.152,
        "stopwords": [
            "der",
            "und",
            "die",
            "in",
            "von",
            "im",
            "den",
            "des",
            "mit",
            "das",
            "er",
            "dem",
            "als",
            "wurde",
            "für",
        ],
        "top_n_grams": [(2, 0.169), (3, 0.153), (4, 0.137)],
    },
    "fra_Latn": {
        "dup_line_frac": 0.264,
        "dup_n_grams": [(5, 0.15), (6, 0.141), (7, 0.131), (8, 0.121), (9, 0.111), (10, 0.1)],
        "line_punct_thr": 0.1,
        "max_avg_word_length": 11,
        "max_non_alpha_words_ratio": 0.812,
        "min_avg_word_length": 2,
        "new_line_ratio": 0.185,
        "stopwords": [
            "de",
            "la",
            "le",
            "et",
            "à",
            "en",
            "l'",
            "des",
            "du",
            "les",
            "est",
            "d'",
            "un",
            "une",
            "il",
            "dans",
            "par",
            "au",
        ],
        "top_n_grams": [(2, 0.161), (3, 0.149), (4, 0.134)],
    },
    "ita_Latn": {
        "dup_line_frac": 0.246,
        "dup_n_grams": [(5, 0.144), (6, 0.136), (7, 0.127), (8, 0.118), (9, 0.109), (10, 0.1)],
        "line_punct_thr": 0.025,
        "max_avg_word_length": 21,
        "max_non_alpha_words_ratio": 0.807,
        "min_avg_word_length": 3,
        "new_line_ratio": 0.2,
        "stopwords": [
            "di",
            "e",
            "il",
            "la",
            "in",
            "a",
            "del",
            "che",
            "è",
            "della",
            "un",
            "per",
            "nel",
            "l'",
            "con",
            "da",
            "i",
            "una",
        ],
        "top_n_grams": [(2, 0.198), (3, 0.156), (4, 0.133)],
    },
    "jpn_Jpan": {
        "dup_line_frac": 0.328,
        "dup_n_grams": [(5, 0.243), (6, 0.225), (7, 0.207), (8, 0.19), (9, 0.175), (10, 0.159)],
        "line_punct_thr": 0.096,
        "max_avg_word_length": 6,
        "max_non_alpha_words_ratio": 0.759,
        "min_avg_word_length": 1,
        "new_line_ratio": 0.13,
        "stopwords": [
            "の",
            "に",
            "を",
            "は",
            "た",
            "て",
            "が",
            "と",
            "で",
            "年",
            "し",
            "・",
            "月",
            "れ",
            "さ",
        ],
        "top_n_grams": [(2, 0.239), (3, 0.196), (4, 0.172)],
    },
    "kor_Hang": {
        "dup_line_frac": 0.374,
        "dup_n_grams": [(5, 0.201), (6, 0.184), (7, 0.168), (8, 0.154), (9, 0.14), (10, 0.127)],
        "line_punct_thr": 0.062,
        "max_avg_word_length": 6,
        "max_non_alpha_words_ratio": 0.791,
        "min_avg_word_length": 1,
        "new_line_ratio": 0.196,
        "stopwords": [
            "의",
            "다",
            "이",
            "는",
            "에",
            "을",
            "한",
            "년",
            "하",
            "은",
            "를",
            "했",
            "고",
            "에서",
            "가",
            "있",
            "으로",
            "인",
            "월",
            "로",
            "되",
        ],
        "top_n_grams": [(2, 0.282), (3, 0.228), (4, 0.185)],
    },
    "nld_Latn": {
        "dup_line_frac": 0.296,
        "dup_n_grams": [(5, 0.156), (6, 0.146), (7, 0.136), (8, 0.126), (9, 0.115), (10, 0.104)],
        "line_punct_thr": 0.102,
        "max_avg_word_length": 17,
        "max_non_alpha_words_ratio": 0.828,
        "min_avg_word_length": 3,
        "new_line_ratio": 0.154,
        "stopwords": [
            "de",
            "van",
            "in",
            "het",
            "een",
            "en",
            "is",
            "op",
            "voor",
            "met",
            "door",
            "zijn",
            "werd",
            "hij",
            "uit",
        ],
        "top_n_grams": [(2, 0.213), (3, 0.182), (4, 0.158)],
    },
    "pol_Latn": {
        "dup_line_frac": 0.32,
        "dup_n_grams": [(5, 0.172), (6, 0.16), (7, 0.148), (8, 0.136), (9, 0.123), (10, 0.111)],
        "line_punct_thr": 0.087,
        "max_avg_word_length": 12,
        "max_non_alpha_words_ratio": 0.726,
        "min_avg_word_length": 3,
        "new_line_ratio": 0.158,
        "stopwords": [
            "w",
            "i",
            "na",
            "z",
            "do",
            "się",
            "roku",
            "od",
            "a",
            "jest",
            "przez",
            "po",
            "jako",
            "oraz",
            "o",
            "został",
            "był",
            "nie",
        ],
        "top_n_grams": [(2, 0.222), (3, 0.198), (4, 0.176)],
    },
    "por_Latn": {
        "dup_line_frac": 0.287,
        "dup_n_grams": [(5, 0.163), (6, 0.153), (7, 0.141), (8, 0.13), (9, 0.119), (10, 0.108)],
        "line_punct_thr": 0.077,
        "max_avg_word_length": 13,
        "max_non_alpha_words_ratio": 0.814,
        "min_avg_word_length": 3,
        "new_line_ratio": 0.186,
        "stopwords": [
            "de",
            "a",
            "e",
            "o",
            "em",
            "do",
            "da",
            "que",
            "um",
            "no",
            "uma",
            "com",
            "para",
            "na",
            "é",
            "foi",
        ],
        "top_n_grams": [(2, 0.371), (3, 0.191), (4, 0.163)],
    },
    "rus_Cyrl": {
        "dup_line_frac": 0.322,
        "dup_n_grams": [(5, 0.168), (6, 0.156), (7, 0.145), (8, 0.133), (9, 0.121), (10, 0.109)],
        "line_punct_thr": 0.231,
        "max_avg_word_length": 11,
        "max_non_alpha_words_ratio": 0.713,
        "min_avg_word_length": 3,
        "new_line_ratio": 0.139,
        "stopwords": [
            "в",
            "и",
            "на",
            "с",
            "года",
            "по",
            "году",
            "из",
            "был",
            "к",
            "не",
            "от",
            "что",
            "за",
            "для",
            "его",
            "как",
            "а",
            "он",
            "также",
            "до",
            "после",
        ],
        "top_n_grams": [(2, 0.184), (3, 0.164), (4, 0.146)],
    },
    "spa_Latn": {
        "dup_line_frac": 0.252,
        "dup_n_grams": [(5, 0.145), (6, 0.136), (7, 0.127), (8, 0.117), (9, 0.108), (10, 0.099)],
        "line_punct_thr": 0.182,
        "max_avg_word_length": 14,
        "max_non_alpha_words_ratio": 0.825,
        "min_avg_word_length": 3,
        "new_line_ratio": 0.138,
        "stopwords": [
            "de",
            "la",
            "en",
            "el",
            "y",
            "a",
            "que",
            "del",
            "los",
            "se",
            "por",
            "un",
            "con",
            "una",
            "las",
            "su",
        ],
        "top_n_grams": [(2, 0.156), (3, 0.14), (4, 0.125)],
    },
    "tha_Thai": {
        "dup_line_frac": 0.349,
        "dup_n_grams": [(5, 0.185), (6, 0.168), (7, 0.152), (8, 0.137), (9, 0.124), (10, 0.111)],
        "line_punct_thr": 0.0,
        "max_avg_word_length": 10,
        "max_non_alpha_words_ratio": 0.9,
        "min_avg_word_length": 2,
        "new_line_ratio": 0.153,
        "stopwords": ["ใน", "ที่", "และ", "ของ", "เป็น", "มี", "การ", "ได้"],
        "top_n_grams": [(2, 0.221), (3, 0.197), (4, 0.162)],
    },
}


def _entry(preset: str, t: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """One language's ``disable`` and ``overrides`` for ``preset`` (rules it has)."""
    disable: list[str] = []
    over: dict[str, dict[str, Any]] = {}
    if preset == "gopher_repetition":
        disable = ["dup_para_frac", "dup_para_char_frac", "dup_line_char_frac"]
        over["dup_line_frac"] = {"max_ratio": t["dup_line_frac"]}
        for n, r in t["top_n_grams"]:
            over[f"top_{n}gram"] = {"max_ratio": r}
        for n, r in t["dup_n_grams"]:
            over[f"dup_{n}gram"] = {"max_ratio": r}
    elif preset == "fineweb_quality":
        disable = ["short_line_ratio"]
        over["line_punct_ratio"] = {"min_ratio": t["line_punct_thr"]}
        over["list_ratio"] = {"max_ratio": t["new_line_ratio"]}
        over["char_dup_ratio"] = {"max_ratio": 0.1}
    elif preset == "gopher_quality":
        over["mean_word_length"] = {
            "min_length": t["min_avg_word_length"],
            "max_length": t["max_avg_word_length"],
        }
        over["alpha_words"] = {"min_ratio": t["max_non_alpha_words_ratio"]}
        over["stop_words"] = {"stop_words": t["stopwords"], "min_count": 2}
    return {
        "disable": [k for k in disable if k in keys],
        "overrides": {k: v for k, v in over.items() if k in keys},
    }


def table(preset: str, keys: set[str]) -> dict[str, dict[str, Any]]:
    """The ``languages`` table of ``languages: fineweb2`` for ``preset`` (whose rule keys are
    ``keys``): each language under its code (``zh``) and FineWeb-2's name (``cmn_Hani``);
    empty for a preset FineWeb-2 did not run."""
    out: dict[str, dict[str, Any]] = {}
    for code, name in NAMES.items():
        entry = _entry(preset, THRESHOLDS[name], keys)
        if entry["disable"] or entry["overrides"]:
            out[code] = out[name] = entry
    return out
