"""``gopher_repetition``: Gopher's repetition rules (Rae et al. 2021, table A1), as in datatrove's
``GopherRepetitionFilter``.

Only the rule list and its published parameters live here: :class:`HeuristicPreset` runs it
(shared features, ``gopher_repetition:<key>`` reasons, ``disable``, ``overrides``, ``mode``);
the rules are in ``curator/filters/*_rules.py``.
"""

from __future__ import annotations

from curator.filters.presets import HeuristicPreset, RuleSpec
from curator.filters.repetition_rules import DuplicateLines, DuplicateNgrams, TopNgram


class GopherRepetition(HeuristicPreset):
    """Gopher repetition rules (repeated lines/paragraphs, top and duplicated n-grams)."""

    name = "gopher_repetition"
    spec: list[RuleSpec] = [
        ("dup_para_frac", DuplicateLines, {"unit": "paragraphs", "by": "count", "max_ratio": 0.3}),
        ("dup_para_char_frac", DuplicateLines,
         {"unit": "paragraphs", "by": "chars", "max_ratio": 0.2}),
        ("dup_line_frac", DuplicateLines, {"unit": "lines", "by": "count", "max_ratio": 0.3}),
        ("dup_line_char_frac", DuplicateLines, {"unit": "lines", "by": "chars", "max_ratio": 0.2}),
        ("top_2gram", TopNgram, {"n": 2, "max_ratio": 0.20}),
        ("top_3gram", TopNgram, {"n": 3, "max_ratio": 0.18}),
        ("top_4gram", TopNgram, {"n": 4, "max_ratio": 0.16}),
        *[(f"dup_{n}gram", DuplicateNgrams, {"n": n, "max_ratio": r})
          for n, r in ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10))],
    ]
