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
from typing import Any, ClassVar, Literal, Self

from pydantic import model_validator

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.core.context import ShardContext
from curator.core.params import NonNegFloat, NonNegInt, PositiveInt, Ratio, StageParams
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


class WordParams(StageParams):
    """The parameters of a rule that splits words: which language's segmenter splits them."""

    language: str | None = None
    """Split words as this language (``zh``, ``ja``, ``ko``, ``th`` have segmenters, the rest
    are split by script); null: the document's language (``language_field``)."""
    language_field: str = "language"
    """Meta key holding the document's language (as ``language_id`` writes it)."""


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

    def passes(self, f: DocFeatures) -> bool:
        """``ok(value(f))``; a rule may decide it from a cheaper bound of its value (the
        presets' filter mode asks this; ``annotate`` records the exact ``value``)."""
        return self.ok(self.value(f))

    def language_of(self, doc: Document) -> str | None:
        """The language whose segmenter splits ``doc``'s words: the ``language`` parameter,
        else the document's ``language_field`` meta (rules without them: None, by script)."""
        lang = getattr(self, "language", None) or doc.meta.get(
            getattr(self, "language_field", "language"))
        return lang if isinstance(lang, str) else None

    def check(self, doc: Document) -> str | None:
        return None if self.passes(DocFeatures(doc.text, self.language_of(doc))) else self.name


class MaxRatioRule(HeuristicRule):
    """A rule that keeps a document while its measure is at most ``max_ratio``. Subclasses
    define ``value`` and a ``Params`` model with ``max_ratio`` (each rule keeps its own
    published default)."""

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

    class Params(WordParams):
        min_words: NonNegInt = 50
        """Fewest words kept."""
        max_words: NonNegInt = 100_000
        """Most words kept."""

    def value(self, f: DocFeatures) -> float:
        return f.n_alnum_words

    def ok(self, v: float) -> bool:
        return self.min_words <= v <= self.max_words


class MeanWordLength(HeuristicRule):
    """Mean word length in characters (punctuation tokens excluded)."""

    key = "mean_word_length"
    name = "mean_word_length_filter"
    source = "Gopher A.1.1 (3..10); NeMo MeanWordLengthFilter"

    class Params(WordParams):
        min_length: NonNegFloat = 3.0
        """Smallest mean word length kept (characters)."""
        max_length: NonNegFloat = 10.0
        """Largest mean word length kept (characters)."""

    def value(self, f: DocFeatures) -> float:
        return _ratio(f.alnum_chars, f.n_alnum_words)

    def ok(self, v: float) -> bool:
        return self.min_length <= v <= self.max_length


class SymbolWordRatio(MaxRatioRule):
    """Occurrences of symbols (hash, ellipsis) per word."""

    key = "symbol_word_ratio"
    name = "symbol_word_ratio_filter"
    source = "Gopher A.1.1 (0.1 for # and for ellipsis); NeMo SymbolsToWordsFilter"

    class Params(WordParams):
        symbols: list[str] = ["#", "...", "…"]
        """Symbols counted (each occurrence in the text)."""
        max_ratio: NonNegFloat = 0.1
        """Most symbols per word kept."""

    def value(self, f: DocFeatures) -> float:
        return _ratio(sum(f.text.count(s) for s in self.symbols), len(f.words))


class AlphaWords(HeuristicRule):
    """Fraction of tokens that contain at least one letter."""

    key = "alpha_words"
    name = "alpha_words_filter"
    source = "Gopher A.1.1 (80%); NeMo WordsWithoutAlphabetsFilter"

    class Params(WordParams):
        min_ratio: Ratio = 0.8
        """Smallest share of tokens with a letter kept."""

    def value(self, f: DocFeatures) -> float:
        return _ratio(f.n_alpha_words, len(f.words))

    def ok(self, v: float) -> bool:
        return v >= self.min_ratio


class StopWords(HeuristicRule):
    """Number of distinct common words present (filters text that is not prose)."""

    key = "stop_words"
    name = "stop_words_filter"
    source = "Gopher A.1.1 (2 of the, be, to, of, and, that, have, with); NeMo CommonEnglishWords"

    class Params(WordParams):
        min_count: NonNegInt = 2
        """Fewest distinct stop words a kept document contains."""
        stop_words: list[str] = GOPHER_STOP_WORDS
        """The common words looked for (whole tokens)."""
        lowercase: bool = False
        """Compare lowercased tokens (NeMo) rather than exact ones (Gopher)."""

    def setup(self) -> None:
        sw = self.stop_words
        self.stop_words = frozenset(w.lower() for w in sw) if self.lowercase else frozenset(sw)

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

    class Params(StageParams):
        max_length: NonNegInt = 1000
        """Longest word kept (characters)."""

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

    class Params(StageParams):
        max_ratio: Ratio = 0.9
        """Largest share of lines starting with a bullet kept."""
        bullets: list[str] = ["•", "-"]
        """Line starts (after leading spaces) that count as bullets."""

    def setup(self) -> None:
        self.bullets = tuple(self.bullets)

    def value(self, f: DocFeatures) -> float:
        lines = f.lines  # map/methodcaller keep the per-line loop in C
        return _ratio(sum(map(methodcaller("startswith", self.bullets), map(str.lstrip, lines))),
                      len(lines))


class EllipsisLines(MaxRatioRule):
    """Fraction of lines that end with an ellipsis."""

    key = "ellipsis_lines"
    name = "ellipsis_lines_filter"
    source = "Gopher A.1.1 (30%); NeMo EllipsisFilter"

    class Params(StageParams):
        max_ratio: Ratio = 0.3
        """Largest share of lines ending with an ellipsis kept."""

    def value(self, f: DocFeatures) -> float:
        lines = f.lines
        return _ratio(sum(map(methodcaller("endswith", ("...", "…")), map(str.rstrip, lines))),
                      len(lines))


class LinePunctuation(HeuristicRule):
    """Fraction of non-empty lines that end with terminal punctuation."""

    key = "line_punct"
    name = "line_punct_filter"
    source = "FineWeb line_punct_thr (0.12)"

    class Params(StageParams):
        min_ratio: Ratio = 0.12
        """Smallest share of non-empty lines ending in terminal punctuation kept."""
        exclude_zero: bool = False
        """Also keep documents where no line ends in terminal punctuation."""
        stop_chars: str = TERMINAL_PUNCTUATION
        """The terminal punctuation characters (default: Unicode sentence terminals)."""

    def setup(self) -> None:
        self.stop_chars = frozenset(self.stop_chars)  # single characters: test the last one

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

    class Params(StageParams):
        max_ratio: Ratio = 0.67
        """Largest share of short non-empty lines kept."""
        max_length: NonNegInt = 30
        """A line of at most this many characters is short."""

    def value(self, f: DocFeatures) -> float:
        lines = f.nonempty_lines
        return _ratio(sum(map(self.max_length.__ge__, map(len, lines))), len(lines)) \
            if lines else 1.0


class DuplicateLineChars(MaxRatioRule):
    """Characters in repeated non-empty lines / characters of the text without newlines."""

    key = "char_dup"
    name = "char_dup_filter"
    source = "FineWeb char_duplicates_ratio (0.01)"

    class Params(StageParams):
        max_ratio: Ratio = 0.01
        """Largest share of characters in repeated lines kept."""

    def value(self, f: DocFeatures) -> float:
        return _ratio(_duplicates(f.nonempty_lines)[1],
                      len(f.text) - f.text.count("\n"))


class NewlineRatio(MaxRatioRule):
    """Newlines per word (lists and menus have one line per few words)."""

    key = "newline_ratio"
    name = "newline_ratio_filter"
    source = "FineWeb new_line_ratio (0.3)"

    class Params(WordParams):
        max_ratio: NonNegFloat = 0.3
        """Most newlines per word kept."""

    def value(self, f: DocFeatures) -> float:
        n = f.text.count("\n")
        return _ratio(n, len(f.words)) if f.words else float(n > 0)

    def passes(self, f: DocFeatures) -> bool:
        # Split by script, each whitespace-separated chunk holds at least one token (every
        # non-space character is in one; a segmenter may drop some: Kiwi long numbers), so
        # str.split's count is a lower bound of the tokens and newlines / chunks an upper
        # bound of the value (float division is monotone): a text under the limit by that
        # bound passes without splitting it into tokens. In FineWeb's chain the text is
        # c4_quality's rewrite, whose tokens nothing else needs.
        if not f.known("words") and f.language is None:
            chunks = len(f.text.split())
            if chunks and self.ok(f.text.count("\n") / chunks):
                return True
        return self.ok(self.value(f))


class EndPunctuation(MaxRatioRule):
    """Fraction of sentences (non-empty lines) that do not end with an end mark."""

    key = "punctuation"
    name = "punctuation_filter"
    source = "NeMo PunctuationFilter (0.85)"

    class Params(StageParams):
        max_ratio: Ratio = 0.85
        """Largest share of non-empty lines without an end mark kept."""
        end_marks: str = ".!?\"'”’" + TERMINAL_PUNCTUATION
        """Characters that end a sentence (default: quotes and Unicode sentence terminals)."""

    def setup(self) -> None:
        self.end_marks = tuple(self.end_marks)

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

    class Params(StageParams):
        max_ratio: Ratio = 0.4
        """Largest share of characters in boilerplate paragraphs kept."""
        at_top_or_bottom: bool = True
        """Reject whenever the first or last paragraph is boilerplate."""
        strings: list[str] = BOILERPLATE_STRINGS
        """Boilerplate markers, matched case-insensitively inside paragraphs."""

    def setup(self) -> None:
        self.strings = [s.lower() for s in self.strings]

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

    class Params(StageParams):
        max_ratio: Ratio = 0.25
        """Largest share of characters that are not letters or digits kept."""

    def value(self, f: DocFeatures) -> float:
        n = len(f.text)
        return _ratio(n - sum(map(len, _ALNUM.findall(f.text))), n) if n else 1.0


class NumbersRatio(_CharRatio):
    """Fraction of characters that are digits."""

    key = "numbers"
    name = "numbers_filter"
    source = "NeMo NumbersFilter (0.15)"
    pattern = _DIGIT

    class Params(StageParams):
        max_ratio: Ratio = 0.15
        """Largest share of digit characters kept."""


class WhitespaceRatio(_CharRatio):
    """Fraction of characters that are whitespace."""

    key = "whitespace"
    name = "whitespace_filter"
    source = "NeMo WhiteSpaceFilter (0.25)"
    pattern = _SPACE

    class Params(StageParams):
        max_ratio: Ratio = 0.25
        """Largest share of whitespace characters kept."""


class ParenthesesRatio(_CharRatio):
    """Fraction of characters that are parentheses or brackets."""

    key = "parentheses"
    name = "parentheses_filter"
    source = "NeMo ParenthesesFilter (0.1)"
    pattern = _PAREN

    class Params(StageParams):
        max_ratio: Ratio = 0.1
        """Largest share of parentheses and brackets kept."""


class UrlsRatio(MaxRatioRule):
    """Fraction of characters inside URLs."""

    key = "urls"
    name = "urls_filter"
    source = "NeMo UrlsFilter (0.2)"

    class Params(StageParams):
        max_ratio: Ratio = 0.2
        """Largest share of characters inside URLs kept."""

    def value(self, f: DocFeatures) -> float:
        return _ratio(sum(len(u) for u in _URL.findall(f.text)), len(f.text))


class UrlSubstrings(HeuristicRule):
    """1 if a URL in the text contains one of ``substrings`` (e.g. pornographic domains)."""

    key = "url_substrings"
    name = "url_substrings_filter"
    source = "NeMo PornographicUrlsFilter ('porn')"

    class Params(StageParams):
        substrings: list[str] = ["porn"]
        """Reject when a URL in the text contains one of these (case-insensitive)."""

    def setup(self) -> None:
        self.substrings = [s.lower() for s in self.substrings]

    def value(self, f: DocFeatures) -> float:
        return float(any(s in u.lower() for u in _URL.findall(f.text) for s in self.substrings))

    def ok(self, v: float) -> bool:
        return v == 0


class ContainsString(HeuristicRule):
    """1 if the (lowercased) text contains one of ``strings`` (C4: 'lorem ipsum', '{')."""

    key = "contains"
    name = "contains_filter"
    source = "C4 (lorem ipsum, curly bracket)"

    class Params(StageParams):
        strings: list[str] = ["lorem ipsum"]
        """Reject when the text contains one of these."""
        lowercase: bool = True
        """Compare case-insensitively."""

    def setup(self) -> None:
        self.strings = [s.lower() for s in self.strings] if self.lowercase \
            else list(self.strings)

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

    class Params(StageParams):
        words: list[str] = []
        """Your own words or phrases, matched in every language."""
        path: FilePath | None = None
        """A file of your own words or phrases, one per line."""
        max_count: NonNegInt = 0
        """Most matches a kept document may contain."""
        builtin: bool = False
        """Use the built-in lists (chosen by the document's language)."""
        languages: list[str] | None = None
        """Built-in lists to load; null: all of them (needs ``builtin: true``)."""
        paths: dict[str, FilePath] = {}
        """Your own list files per language code, e.g. ``{de: lists/de.txt}``."""
        allow: list[str] = []
        """Words or phrases never counted (removed from every list)."""
        language_field: str = "language"
        """Meta key holding the document's language (as ``language_id`` writes it)."""
        default_language: str | None = "en"
        """List used for documents of a language without a list; null: only ``words``/``path``."""

        @model_validator(mode="after")
        def _languages_need_builtin(self) -> Self:
            if self.languages and not self.builtin:
                raise ValueError("languages selects built-in lists: set builtin: true (or give "
                                 "your own lists in 'paths')")
            return self

    def setup(self) -> None:
        from curator.filters import wordlists

        def read(p: str, key: str) -> list[str]:
            try:
                with open(p, encoding="utf-8") as f:
                    return [ln.strip().lower() for ln in f if ln.strip()]
            except OSError as e:
                raise ConfigError(
                    f"bad_words_filter.{key}: cannot read '{p}': {e.strerror}") from None

        allowed = {w.strip().lower() for w in self.allow}
        common = {w.strip().lower() for w in self.words if w.strip()}
        if self.path:
            common.update(read(self.path, "path"))
        per_lang: dict[str, set[str]] = {}
        if self.builtin:
            for lang in self.languages or wordlists.DEFAULT_LANGUAGES:
                per_lang.setdefault(lang, set()).update(wordlists.builtin_words(lang))
        for lang, p in self.paths.items():
            per_lang.setdefault(lang, set()).update(read(p, f"paths.{lang}"))
        if not common and not per_lang:
            raise ConfigError("bad_words_filter: give 'words', a 'path' to a list (one per line), "
                              "'paths' per language, or builtin: true")
        dl = self.default_language
        if dl is not None and per_lang and dl not in per_lang:
            raise ConfigError(f"bad_words_filter.default_language: no list for "
                              f"'{dl}' (lists: {', '.join(sorted(per_lang))})")
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

    class Params(StageParams):
        unit: Literal["lines", "paragraphs"] = "lines"
        """Count repeated lines or repeated paragraphs."""
        by: Literal["count", "chars"] = "count"
        """Measure the repeats by their number or by their characters."""
        max_ratio: Ratio = 0.3
        """Largest share of repeated units (or of their characters) kept."""

    def value(self, f: DocFeatures) -> float:
        items = f.line_runs if self.unit == "lines" else f.paragraphs
        n, chars = _duplicates(items)
        return _ratio(n, len(items)) if self.by == "count" else _ratio(chars, len(f.text))


class TopNgram(MaxRatioRule):
    """Characters covered by the most frequent word n-gram / characters of the text."""

    key = "top_ngram"
    name = "top_ngram_filter"
    source = "Gopher table A1 (2: 0.20, 3: 0.18, 4: 0.16); NeMo RepeatingTopNGramsFilter"

    class Params(WordParams):
        n: PositiveInt = 2
        """Words per n-gram."""
        max_ratio: Ratio = 0.2
        """Largest share of characters covered by the most frequent n-gram kept."""

    def value(self, f: DocFeatures) -> float:
        return _ratio(f.top_ngram_chars(self.n), len(f.text))


class DuplicateNgrams(MaxRatioRule):
    """Characters in word n-grams that repeat an earlier one (non-overlapping) / characters of
    the text."""

    key = "dup_ngram"
    name = "dup_ngram_filter"
    source = ("Gopher table A1 (5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10); "
              "NeMo RepeatingDuplicateNGramsFilter")

    class Params(WordParams):
        n: PositiveInt = 5
        """Words per n-gram."""
        max_ratio: Ratio = 0.15
        """Largest share of characters in repeated n-grams kept."""

    def value(self, f: DocFeatures) -> float:
        return _ratio(f.duplicate_ngram_chars(self.n), len(f.text))

