"""The character-level rules (``non_alnum_filter``, ``numbers_filter``, ``whitespace_filter``,
``parentheses_filter``, ``urls_filter``, ``url_substrings_filter``, ``contains_filter``):
shares of a document's characters, and strings it must not contain (sources of the defaults:
:mod:`curator.filters.rules`)."""

from __future__ import annotations

import re
from typing import ClassVar

from curator.core.params import Ratio, StageParams
from curator.filters.features import DocFeatures
from curator.filters.rules import HeuristicRule, MaxRatioRule, ratio

_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
_ALNUM = re.compile(r"[^\W_]+")
_DIGIT = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
_PAREN = re.compile(r"[()\[\]]+")

class _CharRatio(MaxRatioRule):
    """Characters matched by ``pattern`` / characters of the text."""

    pattern: ClassVar[re.Pattern[str]]

    def value(self, f: DocFeatures) -> float:
        # the patterns match runs, so far fewer match objects than characters are made
        return ratio(sum(map(len, self.pattern.findall(f.text))), len(f.text))


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
        return ratio(n - sum(map(len, _ALNUM.findall(f.text))), n) if n else 1.0


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
        return ratio(sum(len(u) for u in _URL.findall(f.text)), len(f.text))


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
