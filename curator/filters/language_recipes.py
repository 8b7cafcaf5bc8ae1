"""``languages: recommended`` for the heuristic presets: what each language needs so that the
English-tuned rules do not drop it wholesale, measured on parallel real text (the same 189
messages in English, German, French, Spanish, Russian, Chinese and Japanese; docs/filters.md,
"Languages", and ``bench/multilingual_filters.py``).

* ``stop_words``: Gopher asks for 2 of 8 English function words, so every other language
  failed it. Each language gets its own most frequent function words (lowercased); Chinese and
  Japanese theirs as their segmenters split them (:mod:`curator.text.words`), Korean and Thai
  FineWeb-2's (:mod:`curator.filters.fineweb2`).
* ``mean_word_length``: 3-10 characters; Chinese, Japanese, Korean and Thai words are shorter:
  FineWeb-2's ranges for them.
* FineWeb's "short line" is 30 characters, a long line in Chinese or Japanese: half as many
  there.
* ``alpha_words``: quotes, brackets and punctuation are tokens of their own; German (»«),
  Russian («»), Chinese and Japanese (，。「」 beside short words) texts lose a third of the
  parallel texts to it at 0.8 (Japanese: 12%), so they get 0.7.

* n-gram repetition (``top_Ngram``, ``dup_Ngram``): Chinese and Japanese texts repeat their
  words' n-grams more than English (33% and 22% of the parallel texts removed against 17%):
  FineWeb-2's per-language limits for the four segmented languages (29% and 13%).

Word counts stay the published ones: with each language's segmenter a word is a word (split by
script a Chinese or Japanese character was one, and the limits had to change).
"""

from __future__ import annotations

from typing import Any

from curator.filters.fineweb2 import NAMES, THRESHOLDS

#: Each language's most frequent function words (characters for Chinese and Japanese).
STOP_WORDS: dict[str, list[str]] = {
    "de": ["der", "die", "das", "und", "in", "zu", "den", "von", "mit", "ist", "nicht", "ein",
           "eine", "für", "auf", "wird"],
    "fr": ["de", "la", "le", "et", "les", "des", "en", "un", "une", "du", "est", "pour", "que",
           "à", "dans", "pas"],
    "es": ["de", "la", "que", "el", "en", "y", "los", "se", "del", "las", "un", "una", "por",
           "con", "para", "es"],
    "it": ["di", "il", "la", "che", "e", "in", "un", "una", "per", "non", "del", "della", "è",
           "con", "le", "si"],
    "pt": ["de", "a", "o", "que", "e", "do", "da", "em", "um", "uma", "para", "com", "não",
           "os", "se", "é"],
    "nl": ["de", "het", "een", "en", "van", "in", "is", "dat", "op", "te", "niet", "voor",
           "met", "zijn", "er", "wordt"],
    "ru": ["и", "в", "не", "на", "что", "с", "по", "для", "это", "как", "к", "из", "или",
           "будет", "если", "от"],
    "pl": ["i", "w", "nie", "na", "się", "z", "do", "że", "to", "jest", "o", "jak", "dla",
           "lub", "jeśli", "być"],
    "zh": ["的", "是", "在", "了", "和", "有", "不", "这", "中", "为", "以", "或", "个", "到",
           "将", "可"],
    "ja": ["の", "に", "は", "を", "た", "が", "で", "て", "と", "し", "な", "す", "る", "れ",
           "さ", "ま"],
}
#: Korean and Thai stop words: FineWeb-2's (kor_Hang, tha_Thai).
STOP_WORDS.update({lang: THRESHOLDS[NAMES[lang]]["stopwords"] for lang in ("ko", "th")})
#: Languages split by a segmenter (curator.text.words), with FineWeb-2's word lengths and
#: n-gram repetition limits.
SEGMENTED = ("zh", "ja", "ko", "th")
#: Languages whose words are shorter than Gopher's 3-10 characters: FineWeb-2's ranges.
WORD_LENGTHS: dict[str, tuple[float, float]] = {
    lang: (THRESHOLDS[NAMES[lang]]["min_avg_word_length"],
           THRESHOLDS[NAMES[lang]]["max_avg_word_length"]) for lang in SEGMENTED}
#: Languages whose lines hold twice the text per character: a short line is half as long.
DENSE_LINES = ("zh", "ja")
#: Languages whose texts lose most of their words' alphabetic share to quotes, brackets and
#: punctuation split off as tokens (German »«, Russian «», <...>; Chinese and Japanese
#: ，。「」 beside words of one or two characters): alpha_words asks 0.7, not 0.8.
ALPHA_WORDS: dict[str, float] = {"de": 0.7, "ru": 0.7, "zh": 0.7, "ja": 0.7}


def _short_lines(spec: list[tuple[str, Any, dict[str, Any]]],
                 overrides: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Half the short-line length in force (FineWeb's ``short_line_ratio``), if any."""
    for key, _, params in spec:
        p = {**params, **overrides.get(key, {})}
        if key == "short_line_ratio" and "max_length" in p:
            return {key: {"max_length": p["max_length"] // 2}}
    return {}


def recommended(preset: str, overrides: dict[str, dict[str, Any]] | None = None
                ) -> dict[str, dict[str, Any]]:
    """The ``languages`` table of ``languages: recommended`` for ``preset``, relative to the
    preset's own ``overrides`` (a changed short-line length is halved for Chinese too)."""
    from curator.core.registry import resolve

    spec = resolve(preset).spec  # type: ignore[attr-defined]
    keys = {k for k, _, _ in spec}
    table: dict[str, dict[str, Any]] = {}
    for lang, words in STOP_WORDS.items():
        entry: dict[str, Any] = {"disable": [], "overrides": {}}
        if "stop_words" in keys:
            entry["overrides"]["stop_words"] = {"stop_words": words, "lowercase": True}
        if "alpha_words" in keys and lang in ALPHA_WORDS:
            entry["overrides"]["alpha_words"] = {"min_ratio": ALPHA_WORDS[lang]}
        if "mean_word_length" in keys and lang in WORD_LENGTHS:
            lo, hi = WORD_LENGTHS[lang]
            entry["overrides"]["mean_word_length"] = {"min_length": lo, "max_length": hi}
        if lang in SEGMENTED:
            t = THRESHOLDS[NAMES[lang]]
            for n, r in [*t["top_n_grams"], *t["dup_n_grams"]]:
                key = f"{'top' if n < 5 else 'dup'}_{n}gram"
                if key in keys:
                    entry["overrides"][key] = {"max_ratio": r}
        if lang in DENSE_LINES:
            entry["overrides"].update(_short_lines(spec, overrides or {}))
        if entry["disable"] or entry["overrides"]:
            table[lang] = entry
    return table
