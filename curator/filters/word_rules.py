"""The word-level rules (``word_count_filter``, ``mean_word_length_filter``,
``symbol_word_ratio_filter``, ``alpha_words_filter``, ``stop_words_filter``,
``long_word_filter``): measures of a document's words, split by its language's segmenter
(:mod:`curator.text.words`; sources of the defaults: :mod:`curator.filters.rules`)."""

from __future__ import annotations

from curator.core.params import NonNegFloat, NonNegInt, Ratio, StageParams
from curator.filters.features import DocFeatures
from curator.filters.rules import HeuristicRule, MaxRatioRule, WordParams, ratio

GOPHER_STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]

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
        return ratio(f.alnum_chars, f.n_alnum_words)

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
        return ratio(sum(f.text.count(s) for s in self.symbols), len(f.words))


class AlphaWords(HeuristicRule):
    """Fraction of tokens that contain at least one letter."""

    key = "alpha_words"
    name = "alpha_words_filter"
    source = "Gopher A.1.1 (80%); NeMo WordsWithoutAlphabetsFilter"

    class Params(WordParams):
        min_ratio: Ratio = 0.8
        """Smallest share of tokens with a letter kept."""

    def value(self, f: DocFeatures) -> float:
        return ratio(f.n_alpha_words, len(f.words))

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
