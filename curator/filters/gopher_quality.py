"""``gopher_quality``: Gopher's quality rules (Rae et al. 2021, appendix A.1.1), as in datatrove's
``GopherQualityFilter``.

Only the rule list and its published parameters live here: :class:`HeuristicPreset` runs it
(shared features, ``gopher_quality:<key>`` reasons, ``disable``, ``overrides``, ``mode``); the
rules are in ``curator/filters/*_rules.py``.
"""

from __future__ import annotations

from curator.filters.line_rules import BulletLines, EllipsisLines
from curator.filters.presets import HeuristicPreset, RuleSpec
from curator.filters.word_rules import (
    AlphaWords,
    MeanWordLength,
    StopWords,
    SymbolWordRatio,
    WordCount,
)


class GopherQuality(HeuristicPreset):
    """Gopher quality rules (length, word length, symbols, bullets, ellipses, stop words)."""

    name = "gopher_quality"
    spec: list[RuleSpec] = [
        ("word_count", WordCount, {"min_words": 50, "max_words": 100_000}),
        ("mean_word_length", MeanWordLength, {"min_length": 3, "max_length": 10}),
        ("hash_ratio", SymbolWordRatio, {"symbols": ["#"], "max_ratio": 0.1}),
        ("ellipsis_ratio", SymbolWordRatio, {"symbols": ["...", "…"], "max_ratio": 0.1}),
        ("bullet_lines", BulletLines, {"max_ratio": 0.9}),
        ("ellipsis_lines", EllipsisLines, {"max_ratio": 0.3}),
        ("alpha_words", AlphaWords, {"min_ratio": 0.8}),
        ("stop_words", StopWords, {"min_count": 2}),
    ]
