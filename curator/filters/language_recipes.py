"""``languages: recommended`` for the heuristic presets: what each language needs so that the
English-tuned rules do not drop it wholesale, measured on parallel real text (the same 189
messages in English, German, French, Spanish, Russian, Chinese and Japanese; docs/filters.md,
"Languages", and ``bench/multilingual_filters.py``).

* ``stop_words``: Gopher asks for 2 of 8 English function words, so every other language
  failed it. Each language gets its own most frequent function words (lowercased); Chinese and
  Japanese are split one character per word (:mod:`curator.text.words`), so theirs are
  characters.
* ``mean_word_length``: 3-10 characters; a Chinese or Japanese "word" is one character, so the
  rule is off there.
* n-gram repetition (``top_Ngram``, ``dup_Ngram``) and ``word_count``: a character of Chinese
  or Japanese text is about half a word, so their word counts are twice the English ones, and
  n-grams of single characters repeat far more often than n-grams of words (31-35% of the
  parallel texts were removed against 17% of English): their limits are 1.5 times the
  published ones; a "short line" (FineWeb) is half as many characters.
* ``alpha_words``: quotes and brackets are tokens of their own; German (»«) and Russian («»)
  texts lose a third of the parallel texts to it at 0.8, so they get 0.7.
"""

from __future__ import annotations

from typing import Any

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
#: Languages written without spaces: a character is a word (curator.text.words).
CHARACTER_WORDS = ("zh", "ja")


def _character_words(spec: list[tuple[str, Any, dict[str, Any]]],
                     overrides: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """For a language whose words are characters: twice the word limits of ``word_count``
    and the n-gram limits of ``CHARACTER_NGRAMS``, from the parameters in force."""
    out: dict[str, dict[str, Any]] = {}
    for key, _, params in spec:
        p = {**params, **overrides.get(key, {})}
        if key == "word_count":
            out[key] = {k: v * 2 for k, v in p.items() if k in ("min_words", "max_words")}
        elif key == "short_line_ratio" and "max_length" in p:  # a line's characters
            out[key] = {"max_length": p["max_length"] // 2}
        elif key.startswith(("top_", "dup_")) and "max_ratio" in p and "n" in p:
            out[key] = {"max_ratio": round(min(p["max_ratio"] * CHARACTER_NGRAM_SCALE, 1.0), 4)}
    return out


#: Chinese and Japanese n-grams are of characters: their repetition limits, as a multiple of
#: the published (word n-gram) ones, chosen so that the parallel texts lose about what English
#: loses (docs/filters.md, "Languages").
CHARACTER_NGRAM_SCALE = 1.5
#: Languages whose texts lose most of their words' alphabetic share to quotes and brackets
#: split off as tokens (German »«, Russian «», <...>): alpha_words asks 0.7, not 0.8.
ALPHA_WORDS: dict[str, float] = {"de": 0.7, "ru": 0.7}


def recommended(preset: str, overrides: dict[str, dict[str, Any]] | None = None
                ) -> dict[str, dict[str, Any]]:
    """The ``languages`` table of ``languages: recommended`` for ``preset``, relative to the
    preset's own ``overrides`` (a lowered ``word_count`` is lowered for Chinese too)."""
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
        if lang in CHARACTER_WORDS:
            if "mean_word_length" in keys:
                entry["disable"].append("mean_word_length")
            entry["overrides"].update(_character_words(spec, overrides or {}))
        if entry["disable"] or entry["overrides"]:
            table[lang] = entry
    return table
