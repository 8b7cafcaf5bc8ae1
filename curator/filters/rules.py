"""The single heuristic rules (Gopher, C4, FineWeb, NeMo Curator English), one per ``*_filter``.

Each rule is a small :class:`Filter` stage (usable alone in YAML as ``<key>_filter``; its class
says that name literally) with the published default thresholds, and a ``value``/``ok`` pair so
that the presets (``gopher_quality.py``, ``gopher_repetition.py``, ``fineweb_quality.py``,
``nemo_english.py``, built on :mod:`curator.filters.presets`) can run many rules over one shared
:class:`~curator.filters.features.DocFeatures` (words, lines and n-grams are computed once per
document, not once per rule). Most rules reject above a ``max_ratio``: they subclass
:class:`MaxRatioRule` and define only the measure (and their parameters with defaults).

Sources of the defaults:

* Gopher: Rae et al. 2021, "Scaling Language Models", appendix A.1.1 and table A1, as
  implemented by datatrove's ``GopherQualityFilter`` / ``GopherRepetitionFilter``.
* C4: Raffel et al. 2020, section 2.2, and TFDS ``c4_utils`` (via datatrove's
  ``C4QualityFilter``).
* FineWeb: Penedo et al. 2024, datatrove's ``FineWebQualityFilter``.
* NeMo Curator: ``nemo_curator.filters.heuristic_filter`` and its ``heuristic_filter_en.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from operator import itemgetter, methodcaller
from typing import Any, ClassVar, Literal

from curator.core.context import ShardContext
from curator.core.document import Document
from curator.core.errors import ConfigError
from curator.core.stage import FilePath, Filter
from curator.filters.features import DocFeatures
from curator.text.words import has_no_space_script, split_words

#: Unicode sentence terminals (the BMP part of datatrove's TERMINAL_PUNCTUATION).
TERMINAL_PUNCTUATION = (
    "!.?։؝؞؟۔܀܁܂߹࠷࠹࠽࠾।॥၊။።፧፨᙮᜵᜶។៕៖៙៚᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᭽᭾᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼⹓⹔。"
    "꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？｡"
)
GOPHER_STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]
BOILERPLATE_STRINGS = ["lorem ipsum", "privacy policy", "terms of use", "cookie policy",
                       "uses cookies", "use of cookies", "use cookies"]
_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
_ALNUM = re.compile(r"[^\W_]+")
_DIGIT = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
_PAREN = re.compile(r"[()\[\]]+")


class HeuristicRule(Filter):
    """Base of the rules: ``value`` measures one feature, ``ok`` compares it to thresholds."""

    #: Short key used in preset reasons (``gopher_quality:word_count``).
    key: ClassVar[str] = ""
    #: Where the rule and its defaults come from.
    source: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # One rule for names: a rule's YAML name is its key + "_filter", written literally in
        # the class so that grep for the quoted name lands here.
        key = cls.__dict__.get("key")
        if key and cls.__dict__.get("name") != f"{key}_filter":
            raise TypeError(f"{cls.__name__}: name must be '{key}_filter'")
        super().__init_subclass__(**kwargs)

    def value(self, f: DocFeatures) -> float:
        raise NotImplementedError

    def ok(self, v: float) -> bool:
        raise NotImplementedError

    def check(self, doc: Document) -> str | None:
        return None if self.ok(self.value(DocFeatures(doc.text))) else self.name


class MaxRatioRule(HeuristicRule):
    """A rule that keeps a document while its measure is at most ``max_ratio``. Subclasses
    define ``value`` and an ``__init__`` that sets ``self.max_ratio`` (its signature is the
    YAML schema, so each rule keeps its own published default)."""

    max_ratio: float

    def ok(self, v: float) -> bool:
        return v <= self.max_ratio


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def _duplicates(items: list[str]) -> tuple[int, int]:
    """(number of repeated elements, characters in them), first occurrences not counted."""
    seen: set[str] = set()
    n = chars = 0
    for x in items:
        if x in seen:
            n += 1
            chars += len(x)
        else:
            seen.add(x)
    return n, chars


# -- word-level rules ----------------------------------------------------------------------


class WordCount(HeuristicRule):
    """Document length in words (punctuation tokens excluded)."""

    key = "word_count"
    name = "word_count_filter"
    source = "Gopher A.1.1 (50..100000); NeMo WordCountFilter"

    def __init__(self, min_words: int = 50, max_words: int = 100_000) -> None:
        self.min_words, self.max_words = min_words, max_words

    def value(self, f: DocFeatures) -> float:
        return len(f.alnum_words)

    def ok(self, v: float) -> bool:
        return self.min_words <= v <= self.max_words


class MeanWordLength(HeuristicRule):
    """Mean word length in characters (punctuation tokens excluded)."""

    key = "mean_word_length"
    name = "mean_word_length_filter"
    source = "Gopher A.1.1 (3..10); NeMo MeanWordLengthFilter"

    def __init__(self, min_length: float = 3.0, max_length: float = 10.0) -> None:
        self.min_length, self.max_length = min_length, max_length

    def value(self, f: DocFeatures) -> float:
        w = f.alnum_words
        return _ratio(sum(map(len, w)), len(w))

    def ok(self, v: float) -> bool:
        return self.min_length <= v <= self.max_length


class SymbolWordRatio(MaxRatioRule):
    """Occurrences of symbols (hash, ellipsis) per word."""

    key = "symbol_word_ratio"
    name = "symbol_word_ratio_filter"
    source = "Gopher A.1.1 (0.1 for # and for ellipsis); NeMo SymbolsToWordsFilter"

    def __init__(self, symbols: list[str] = ["#", "...", "…"],  # noqa: B006
                 max_ratio: float = 0.1) -> None:
        self.symbols, self.max_ratio = list(symbols), max_ratio

    def value(self, f: DocFeatures) -> float:
        return _ratio(sum(f.text.count(s) for s in self.symbols), len(f.words))


class AlphaWords(HeuristicRule):
    """Fraction of tokens that contain at least one letter."""

    key = "alpha_words"
    name = "alpha_words_filter"
    source = "Gopher A.1.1 (80%); NeMo WordsWithoutAlphabetsFilter"

    def __init__(self, min_ratio: float = 0.8) -> None:
        self.min_ratio = min_ratio

    def value(self, f: DocFeatures) -> float:
        return _ratio(f.n_alpha_words, len(f.words))

    def ok(self, v: float) -> bool:
        return v >= self.min_ratio


class StopWords(HeuristicRule):
    """Number of distinct common words present (filters text that is not prose)."""

    key = "stop_words"
    name = "stop_words_filter"
    source = "Gopher A.1.1 (2 of the, be, to, of, and, that, have, with); NeMo CommonEnglishWords"

    def __init__(self, min_count: int = 2, stop_words: list[str] = GOPHER_STOP_WORDS,
                 lowercase: bool = False) -> None:
        self.min_count, self.lowercase = min_count, lowercase
        self.stop_words = frozenset(w.lower() for w in stop_words) if lowercase \
            else frozenset(stop_words)

    def value(self, f: DocFeatures) -> float:
        words = f.words
        if self.lowercase:
            return len(self.stop_words.intersection(w.lower() for w in words))
        return len(self.stop_words.intersection(words))

    def ok(self, v: float) -> bool:
        return v >= self.min_count


class LongWord(HeuristicRule):
    """Length of the longest whitespace-separated word."""

    key = "long_word"
    name = "long_word_filter"
    source = "NeMo LongWordFilter (1000); C4 max_word_length"

    def __init__(self, max_length: int = 1000) -> None:
        self.max_length = max_length

    def value(self, f: DocFeatures) -> float:
        return max(map(len, f.text.split()), default=0)

    def ok(self, v: float) -> bool:
        return v <= self.max_length


# -- line-level rules ----------------------------------------------------------------------


class BulletLines(MaxRatioRule):
    """Fraction of lines that start with a bullet."""

    key = "bullet_lines"
    name = "bullet_lines_filter"
    source = "Gopher A.1.1 (90%); NeMo BulletsFilter"

    def __init__(self, max_ratio: float = 0.9, bullets: list[str] = ["•", "-"]  # noqa: B006
                 ) -> None:
        self.max_ratio, self.bullets = max_ratio, tuple(bullets)

    def value(self, f: DocFeatures) -> float:
        lines = f.lines  # map/methodcaller keep the per-line loop in C
        return _ratio(sum(map(methodcaller("startswith", self.bullets), map(str.lstrip, lines))),
                      len(lines))


class EllipsisLines(MaxRatioRule):
    """Fraction of lines that end with an ellipsis."""

    key = "ellipsis_lines"
    name = "ellipsis_lines_filter"
    source = "Gopher A.1.1 (30%); NeMo EllipsisFilter"

    def __init__(self, max_ratio: float = 0.3) -> None:
        self.max_ratio = max_ratio

    def value(self, f: DocFeatures) -> float:
        lines = f.lines
        return _ratio(sum(map(methodcaller("endswith", ("...", "…")), map(str.rstrip, lines))),
                      len(lines))


class LinePunctuation(HeuristicRule):
    """Fraction of non-empty lines that end with terminal punctuation."""

    key = "line_punct"
    name = "line_punct_filter"
    source = "FineWeb line_punct_thr (0.12)"

    def __init__(self, min_ratio: float = 0.12, exclude_zero: bool = False,
                 stop_chars: str = TERMINAL_PUNCTUATION) -> None:
        self.min_ratio, self.exclude_zero = min_ratio, exclude_zero
        self.stop_chars = frozenset(stop_chars)  # single characters: test the last one

    def value(self, f: DocFeatures) -> float:
        lines = f.nonempty_lines  # non-empty, so line[-1] exists
        return _ratio(sum(map(self.stop_chars.__contains__, map(itemgetter(-1), lines))),
                      len(lines))

    def ok(self, v: float) -> bool:
        return v >= self.min_ratio or (v == 0 and self.exclude_zero)


class ShortLines(MaxRatioRule):
    """Fraction of non-empty lines of at most ``max_length`` characters."""

    key = "short_lines"
    name = "short_lines_filter"
    source = "FineWeb short_line_thr (0.67, 30 chars)"

    def __init__(self, max_ratio: float = 0.67, max_length: int = 30) -> None:
        self.max_ratio, self.max_length = max_ratio, max_length

    def value(self, f: DocFeatures) -> float:
        lines = f.nonempty_lines
        return _ratio(sum(map(self.max_length.__ge__, map(len, lines))), len(lines)) \
            if lines else 1.0


class DuplicateLineChars(MaxRatioRule):
    """Characters in repeated non-empty lines / characters of the text without newlines."""

    key = "char_dup"
    name = "char_dup_filter"
    source = "FineWeb char_duplicates_ratio (0.01)"

    def __init__(self, max_ratio: float = 0.01) -> None:
        self.max_ratio = max_ratio

    def value(self, f: DocFeatures) -> float:
        return _ratio(_duplicates(f.nonempty_lines)[1],
                      len(f.text) - f.text.count("\n"))


class NewlineRatio(MaxRatioRule):
    """Newlines per word (lists and menus have one line per few words)."""

    key = "newline_ratio"
    name = "newline_ratio_filter"
    source = "FineWeb new_line_ratio (0.3)"

    def __init__(self, max_ratio: float = 0.3) -> None:
        self.max_ratio = max_ratio

    def value(self, f: DocFeatures) -> float:
        n = f.text.count("\n")
        return _ratio(n, len(f.words)) if f.words else float(n > 0)


class EndPunctuation(MaxRatioRule):
    """Fraction of sentences (non-empty lines) that do not end with an end mark."""

    key = "punctuation"
    name = "punctuation_filter"
    source = "NeMo PunctuationFilter (0.85)"

    def __init__(self, max_ratio: float = 0.85,
                 end_marks: str = ".!?\"'”’" + TERMINAL_PUNCTUATION) -> None:
        self.max_ratio, self.end_marks = max_ratio, tuple(end_marks)

    def value(self, f: DocFeatures) -> float:
        lines = f.nonempty_lines
        return _ratio(sum(1 for ln in lines if not ln.rstrip().endswith(self.end_marks)),
                      len(lines)) if lines else 1.0


class Boilerplate(MaxRatioRule):
    """Share of the text in paragraphs containing boilerplate strings (cookie/legal notices);
    1.0 when such a paragraph is the first or last one and ``at_top_or_bottom`` is set."""

    key = "boilerplate"
    name = "boilerplate_filter"
    source = "NeMo BoilerPlateStringFilter (0.4, remove if at top or bottom); C4 policy lines"

    def __init__(self, max_ratio: float = 0.4, at_top_or_bottom: bool = True,
                 strings: list[str] = BOILERPLATE_STRINGS) -> None:
        self.max_ratio, self.at_top_or_bottom = max_ratio, at_top_or_bottom
        self.strings = [s.lower() for s in strings]

    def value(self, f: DocFeatures) -> float:
        paras = f.paragraphs
        total = sum(map(len, paras))
        bad = 0
        for i, p in enumerate(paras):
            lp = p.lower()
            if any(s in lp for s in self.strings):
                if self.at_top_or_bottom and (i == 0 or i == len(paras) - 1):
                    return 1.0
                bad += len(p)
        return _ratio(bad, total)


# -- character-level rules -----------------------------------------------------------------


class _CharRatio(MaxRatioRule):
    """Characters matched by ``pattern`` / characters of the text."""

    pattern: ClassVar[re.Pattern[str]]

    def value(self, f: DocFeatures) -> float:
        # the patterns match runs, so far fewer match objects than characters are made
        return _ratio(sum(map(len, self.pattern.findall(f.text))), len(f.text))


class NonAlphaNumeric(_CharRatio):
    """Fraction of characters that are not letters or digits (spaces count)."""

    key = "non_alnum"
    name = "non_alnum_filter"
    source = "NeMo NonAlphaNumericFilter (0.25)"

    def __init__(self, max_ratio: float = 0.25) -> None:
        self.max_ratio = max_ratio

    def value(self, f: DocFeatures) -> float:
        n = len(f.text)
        return _ratio(n - sum(map(len, _ALNUM.findall(f.text))), n) if n else 1.0


class NumbersRatio(_CharRatio):
    """Fraction of characters that are digits."""

    key = "numbers"
    name = "numbers_filter"
    source = "NeMo NumbersFilter (0.15)"
    pattern = _DIGIT

    def __init__(self, max_ratio: float = 0.15) -> None:
        self.max_ratio = max_ratio


class WhitespaceRatio(_CharRatio):
    """Fraction of characters that are whitespace."""

    key = "whitespace"
    name = "whitespace_filter"
    source = "NeMo WhiteSpaceFilter (0.25)"
    pattern = _SPACE

    def __init__(self, max_ratio: float = 0.25) -> None:
        self.max_ratio = max_ratio


class ParenthesesRatio(_CharRatio):
    """Fraction of characters that are parentheses or brackets."""

    key = "parentheses"
    name = "parentheses_filter"
    source = "NeMo ParenthesesFilter (0.1)"
    pattern = _PAREN

    def __init__(self, max_ratio: float = 0.1) -> None:
        self.max_ratio = max_ratio


class UrlsRatio(MaxRatioRule):
    """Fraction of characters inside URLs."""

    key = "urls"
    name = "urls_filter"
    source = "NeMo UrlsFilter (0.2)"

    def __init__(self, max_ratio: float = 0.2) -> None:
        self.max_ratio = max_ratio

    def value(self, f: DocFeatures) -> float:
        return _ratio(sum(len(u) for u in _URL.findall(f.text)), len(f.text))


class UrlSubstrings(HeuristicRule):
    """1 if a URL in the text contains one of ``substrings`` (e.g. pornographic domains)."""

    key = "url_substrings"
    name = "url_substrings_filter"
    source = "NeMo PornographicUrlsFilter ('porn')"

    def __init__(self, substrings: list[str] = ["porn"]) -> None:  # noqa: B006
        self.substrings = [s.lower() for s in substrings]

    def value(self, f: DocFeatures) -> float:
        return float(any(s in u.lower() for u in _URL.findall(f.text) for s in self.substrings))

    def ok(self, v: float) -> bool:
        return v == 0


class ContainsString(HeuristicRule):
    """1 if the (lowercased) text contains one of ``strings`` (C4: 'lorem ipsum', '{')."""

    key = "contains"
    name = "contains_filter"
    source = "C4 (lorem ipsum, curly bracket)"

    def __init__(self, strings: list[str] = ["lorem ipsum"],  # noqa: B006
                 lowercase: bool = True) -> None:
        self.lowercase = lowercase
        self.strings = [s.lower() for s in strings] if lowercase else list(strings)

    def value(self, f: DocFeatures) -> float:
        t = f.text.lower() if self.lowercase else f.text
        return float(any(s in t for s in self.strings))

    def ok(self, v: float) -> bool:
        return v == 0


_KATAKANA = re.compile("[\u30a0-\u30ff]+")
#: A katakana loanword is a whole run of katakana: グロ (gore) is not in グローバル (global).
_KATAKANA_WORD = "(?<![\u30a0-\u30ff]){}(?![\u30a0-\u30ff])"


class _WordMatcher:
    """Counts occurrences of list entries in a text: single words as whole tokens (one set
    lookup per token), phrases as runs of whole tokens ("heck no" is not in "check now"),
    and entries in scripts written without spaces (or every non-ASCII entry, with
    ``substring``) anywhere in the text, by one regular expression."""

    def __init__(self, entries: set[str], substring: bool = False) -> None:
        def anywhere(w: str) -> bool:
            return has_no_space_script(w) or (substring and not w.isascii())

        if substring:  # one ideograph or syllable alone (性, 乳) is part of too many words
            entries = {w for w in entries if len(w) > 1 or w.isascii()}
        self.single = frozenset(w for w in entries
                                if split_words(w) == [w] and not anywhere(w))
        self.phrases: dict[str, list[tuple[str, ...]]] = {}
        subs = []
        for w in entries - self.single:
            if anywhere(w):
                subs.append(w)
            elif toks := tuple(split_words(w)):
                self.phrases.setdefault(toks[0], []).append(toks)
        pats = [_KATAKANA_WORD.format(re.escape(w)) if _KATAKANA.fullmatch(w) else re.escape(w)
                for w in sorted(subs, key=len, reverse=True)]
        # the look-ahead on the entries' first characters lets the engine skip to candidates
        first = "".join(sorted({re.escape(w[0]) for w in subs}))
        self.multi = re.compile(f"(?=[{first}])(?:{'|'.join(pats)})") if pats else None

    def count(self, words: list[str], lower_text: str) -> int:
        lw = list(map(str.lower, words)) if self.single or self.phrases else []
        n = sum(map(self.single.__contains__, lw)) if self.single else 0
        if self.phrases:
            starts = self.phrases
            for i, t in enumerate(lw):
                cands = starts.get(t)
                if cands:
                    n += sum(1 for p in cands if tuple(lw[i:i + len(p)]) == p)
        if self.multi is not None:
            n += len(self.multi.findall(lower_text))
        return n


class BadWords(HeuristicRule):
    """Occurrences of listed words or phrases: your own list and/or built-in lists for 24
    languages, chosen by the document's language (``language_id`` meta)."""

    key = "bad_words"
    name = "bad_words_filter"
    source = ("C4 (List of Dirty, Naughty, Obscene or Otherwise Bad Words); built-in lists: "
              "glin-profanity 4.1.0 (MIT), see docs/filters.md")

    def __init__(self, words: list[str] = [], path: FilePath | None = None,  # noqa: B006
                 max_count: int = 0, builtin: bool = False,
                 languages: list[str] | None = None,
                 paths: dict[str, FilePath] = {},  # noqa: B006
                 allow: list[str] = [],  # noqa: B006
                 language_field: str = "language",
                 default_language: str | None = "en") -> None:
        from curator.filters import wordlists

        def read(p: str, key: str) -> list[str]:
            try:
                with open(p, encoding="utf-8") as f:
                    return [ln.strip().lower() for ln in f if ln.strip()]
            except OSError as e:
                raise ConfigError(
                    f"bad_words_filter.{key}: cannot read '{p}': {e.strerror}") from None

        allowed = {w.strip().lower() for w in allow}
        common = {w.strip().lower() for w in words if w.strip()}
        if path:
            common.update(read(path, "path"))
        per_lang: dict[str, set[str]] = {}
        if builtin:
            for lang in languages or wordlists.DEFAULT_LANGUAGES:
                per_lang.setdefault(lang, set()).update(wordlists.builtin_words(lang))
        elif languages:
            raise ConfigError("bad_words_filter.languages selects built-in lists: set builtin: "
                              "true (or give your own lists in 'paths')")
        for lang, p in paths.items():
            per_lang.setdefault(lang, set()).update(read(p, f"paths.{lang}"))
        if not common and not per_lang:
            raise ConfigError("bad_words_filter: give 'words', a 'path' to a list (one per line), "
                              "'paths' per language, or builtin: true")
        if default_language is not None and per_lang and default_language not in per_lang:
            raise ConfigError(f"bad_words_filter.default_language: no list for "
                              f"'{default_language}' (lists: {', '.join(sorted(per_lang))})")
        self.max_count = max_count
        self.language_field, self.default_language = language_field, default_language
        self.common = _WordMatcher(common - allowed)
        self.tables = {lang: _WordMatcher((ws | common) - allowed,
                                          lang in wordlists.SUBSTRING_LANGUAGES)
                       for lang, ws in per_lang.items()}

    def matcher(self, doc: Document) -> tuple[str, _WordMatcher]:
        """The list that applies to ``doc``: its language's, the default language's, or only
        the language-independent words (``'*'``)."""
        lang = doc.meta.get(self.language_field)
        if isinstance(lang, str):
            lang = lang.split("-")[0].split("_")[0].lower()
            if lang in self.tables:
                return lang, self.tables[lang]
        if self.default_language is not None and self.default_language in self.tables:
            return self.default_language, self.tables[self.default_language]
        return "*", self.common

    def value(self, f: DocFeatures) -> float:
        return self.common.count(f.words, f.text.lower())

    def ok(self, v: float) -> bool:
        return v <= self.max_count

    def check(self, doc: Document) -> str | None:
        return None if self.count(doc)[1] <= self.max_count else self.name

    def count(self, doc: Document) -> tuple[str, int]:
        """(language whose list was used, number of matches)."""
        lang, m = self.matcher(doc)
        words = split_words(doc.text) if m.single else []
        return lang, m.count(words, doc.text.lower())

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        for doc in docs:
            lang, n = self.count(doc)
            if n:
                ctx.count(f"bad_words:{lang}", n)
                ctx.count(f"bad_words_docs:{lang}")
            if n <= self.max_count:
                yield doc
            else:
                ctx.reject(doc, self.name, language=lang, matches=n)


# -- repetition rules ----------------------------------------------------------------------


class DuplicateLines(MaxRatioRule):
    """Repeated lines or paragraphs, as a fraction of their count or of the text's characters
    (first occurrences do not count)."""

    key = "dup_lines"
    name = "dup_lines_filter"
    source = "Gopher table A1 (lines/paragraphs: 0.3 by count, 0.2 by chars); NeMo Repeated*"

    def __init__(self, unit: Literal["lines", "paragraphs"] = "lines",
                 by: Literal["count", "chars"] = "count", max_ratio: float = 0.3) -> None:
        self.unit, self.by, self.max_ratio = unit, by, max_ratio

    def value(self, f: DocFeatures) -> float:
        items = f.line_runs if self.unit == "lines" else f.paragraphs
        n, chars = _duplicates(items)
        return _ratio(n, len(items)) if self.by == "count" else _ratio(chars, len(f.text))


class TopNgram(MaxRatioRule):
    """Characters covered by the most frequent word n-gram / characters of the text."""

    key = "top_ngram"
    name = "top_ngram_filter"
    source = "Gopher table A1 (2: 0.20, 3: 0.18, 4: 0.16); NeMo RepeatingTopNGramsFilter"

    def __init__(self, n: int = 2, max_ratio: float = 0.2) -> None:
        self.n, self.max_ratio = n, max_ratio

    def value(self, f: DocFeatures) -> float:
        return _ratio(f.top_ngram_chars(self.n), len(f.text))


class DuplicateNgrams(MaxRatioRule):
    """Characters in word n-grams that repeat an earlier one (non-overlapping) / characters of
    the text."""

    key = "dup_ngram"
    name = "dup_ngram_filter"
    source = ("Gopher table A1 (5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10); "
              "NeMo RepeatingDuplicateNGramsFilter")

    def __init__(self, n: int = 5, max_ratio: float = 0.15) -> None:
        self.n, self.max_ratio = n, max_ratio

    def value(self, f: DocFeatures) -> float:
        return _ratio(f.duplicate_ngram_chars(self.n), len(f.text))

