"""``nemo_english``: NeMo Curator's English heuristic set (``heuristic_filter_en.yaml``; see
docs/filters.md for the two deliberate differences).

Only the rule list and its published parameters live here: :class:`HeuristicPreset` runs it
(shared features, ``nemo_english:<key>`` reasons, ``disable``, ``overrides``, ``mode``); the
rules are in ``curator/filters/*_rules.py``.
"""

from __future__ import annotations

from curator.filters.char_rules import (
    NonAlphaNumeric,
    NumbersRatio,
    ParenthesesRatio,
    UrlsRatio,
    UrlSubstrings,
    WhitespaceRatio,
)
from curator.filters.line_rules import Boilerplate, BulletLines, EllipsisLines, EndPunctuation
from curator.filters.presets import HeuristicPreset, RuleSpec
from curator.filters.repetition_rules import DuplicateLines, DuplicateNgrams, TopNgram
from curator.filters.word_rules import (
    AlphaWords,
    LongWord,
    MeanWordLength,
    StopWords,
    SymbolWordRatio,
    WordCount,
)


class NemoEnglish(HeuristicPreset):
    """NeMo Curator's English heuristic set (heuristic_filter_en.yaml) in one stage."""

    name = "nemo_english"
    spec: list[RuleSpec] = [
        ("non_alnum", NonAlphaNumeric, {"max_ratio": 0.25}),
        ("symbols_to_words", SymbolWordRatio,
         {"symbols": ["#", "...", "…"], "max_ratio": 0.1}),
        ("numbers", NumbersRatio, {"max_ratio": 0.15}),
        ("urls", UrlsRatio, {"max_ratio": 0.2}),
        ("whitespace", WhitespaceRatio, {"max_ratio": 0.25}),
        ("parentheses", ParenthesesRatio, {"max_ratio": 0.1}),
        ("boilerplate", Boilerplate, {"max_ratio": 0.4, "at_top_or_bottom": True}),
        ("repeated_lines", DuplicateLines, {"unit": "lines", "by": "count", "max_ratio": 0.3}),
        ("repeated_paragraphs", DuplicateLines,
         {"unit": "paragraphs", "by": "count", "max_ratio": 0.3}),
        ("repeated_lines_char", DuplicateLines, {"unit": "lines", "by": "chars", "max_ratio": 0.2}),
        ("repeated_paragraphs_char", DuplicateLines,
         {"unit": "paragraphs", "by": "chars", "max_ratio": 0.2}),
        ("word_count", WordCount, {"min_words": 50, "max_words": 100_000}),
        ("punctuation", EndPunctuation, {"max_ratio": 0.85}),
        ("words_without_alphabets", AlphaWords, {"min_ratio": 0.8}),
        ("common_english_words", StopWords, {"min_count": 2, "lowercase": True}),
        ("mean_word_length", MeanWordLength, {"min_length": 3, "max_length": 10}),
        ("long_word", LongWord, {"max_length": 1000}),
        ("ellipsis", EllipsisLines, {"max_ratio": 0.3}),
        ("bullets", BulletLines,
         {"max_ratio": 0.9, "bullets": ["•", "-", "*", "●", "◦", "‣", "⁃"]}),
        ("porn_urls", UrlSubstrings, {"substrings": ["porn"]}),
        ("top_2gram", TopNgram, {"n": 2, "max_ratio": 0.20}),
        ("top_3gram", TopNgram, {"n": 3, "max_ratio": 0.18}),
        ("top_4gram", TopNgram, {"n": 4, "max_ratio": 0.16}),
        *[(f"dup_{n}gram", DuplicateNgrams, {"n": n, "max_ratio": r})
          for n, r in ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10))],
    ]
