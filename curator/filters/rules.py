"""The base of the single heuristic rules (Gopher, C4, FineWeb, NeMo Curator English), one per
``*_filter``: :class:`HeuristicRule`, :class:`MaxRatioRule` and what they share.

Each rule is a small :class:`Filter` stage (usable alone in YAML as ``<key>_filter``; its class
says that name literally) with the published default thresholds, and a ``value``/``ok`` pair so
that the presets (``gopher_quality.py``, ``gopher_repetition.py``, ``fineweb_quality.py``,
``nemo_english.py``, built on :mod:`curator.filters.presets`) can run many rules over one shared
:class:`~curator.filters.features.DocFeatures` (words, lines and n-grams are computed once per
document, not once per rule). Most rules reject above a ``max_ratio``: they subclass
:class:`MaxRatioRule` and define only the measure (and their parameters with defaults).

The rules, by what they measure: :mod:`~curator.filters.word_rules`,
:mod:`~curator.filters.line_rules`, :mod:`~curator.filters.char_rules`,
:mod:`~curator.filters.repetition_rules`; ``bad_words_filter`` (word lists) in its own module.

Sources of the defaults:

* Gopher: Rae et al. 2021, "Scaling Language Models", appendix A.1.1 and table A1, as
  implemented by datatrove's ``GopherQualityFilter`` / ``GopherRepetitionFilter``.
* C4: Raffel et al. 2020, section 2.2, and TFDS ``c4_utils`` (via datatrove's
  ``C4QualityFilter``).
* FineWeb: Penedo et al. 2024, datatrove's ``FineWebQualityFilter``.
* NeMo Curator: ``nemo_curator.filters.heuristic_filter`` and its ``heuristic_filter_en.yaml``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from curator.base.document import Document
from curator.core.params import StageParams
from curator.core.stage import Filter
from curator.filters.features import DocFeatures


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


def ratio(a: float, b: float) -> float:
    """``a / b``, 0 when ``b`` is 0 (an empty text has no share of anything)."""
    return a / b if b else 0.0


def duplicates(items: list[str]) -> tuple[int, int]:
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
