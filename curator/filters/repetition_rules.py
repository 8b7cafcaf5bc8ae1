"""The repetition rules (``dup_lines_filter``, ``top_ngram_filter``, ``dup_ngram_filter``):
repeated lines, paragraphs and word n-grams, words split by the document's language's segmenter
(sources of the defaults: :mod:`curator.filters.rules`)."""

from __future__ import annotations

from typing import Literal

from curator.core.params import PositiveInt, Ratio, StageParams
from curator.filters.features import DocFeatures
from curator.filters.rules import MaxRatioRule, WordParams, duplicates, ratio


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
        n, chars = duplicates(items)
        return ratio(n, len(items)) if self.by == "count" else ratio(chars, len(f.text))


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
        return ratio(f.top_ngram_chars(self.n), len(f.text))


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
        return ratio(f.duplicate_ngram_chars(self.n), len(f.text))
