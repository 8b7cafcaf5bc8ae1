"""``fineweb_quality``: FineWeb's extra rules (Penedo et al. 2024), as in datatrove's
``FineWebQualityFilter``.

Only the rule list and its published parameters live here: :class:`HeuristicPreset` runs it
(shared features, ``fineweb_quality:<key>`` reasons, ``disable``, ``overrides``, ``mode``); the
rules are in ``curator/filters/*_rules.py``.
"""

from __future__ import annotations

from curator.filters.line_rules import (
    DuplicateLineChars,
    LinePunctuation,
    NewlineRatio,
    ShortLines,
)
from curator.filters.presets import HeuristicPreset, RuleSpec


class FineWebQuality(HeuristicPreset):
    """FineWeb's extra rules (line punctuation, short lines, duplicated lines, list-likeness)."""

    name = "fineweb_quality"
    spec: list[RuleSpec] = [
        ("line_punct_ratio", LinePunctuation, {"min_ratio": 0.12}),
        ("short_line_ratio", ShortLines, {"max_ratio": 0.67, "max_length": 30}),
        ("char_dup_ratio", DuplicateLineChars, {"max_ratio": 0.01}),
        ("list_ratio", NewlineRatio, {"max_ratio": 0.3}),
    ]
