"""Per-document features shared by all heuristic rules.

A preset applies a dozen rules to the same document; each needs words, lines, paragraphs or
n-grams. :class:`DocFeatures` computes each of these at most once, on first use, so a preset
costs about as much as its most expensive rule rather than the sum of all of them.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cached_property

from curator.text.words import split_words

_PARA = re.compile(r"\n{2,}")
_LINES = re.compile(r"\n+")


class DocFeatures:
    """Lazily computed views of one text (words, lines, n-grams...)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def words(self) -> list[str]:
        """All tokens: words, punctuation runs, no-space-script characters."""
        return split_words(self.text)

    @cached_property
    def alnum_words(self) -> list[str]:
        """Tokens containing at least one letter or digit (punctuation runs excluded)."""
        return [w for w in self.words if w[0].isalnum() or w[-1].isalnum()]

    @cached_property
    def lower_words(self) -> list[str]:
        return self.text.lower().split() if not self.words else [w.lower() for w in self.words]

    @cached_property
    def lines(self) -> list[str]:
        """``str.splitlines()`` lines (empty ones included)."""
        return self.text.splitlines()

    @cached_property
    def nonempty_lines(self) -> list[str]:
        return [ln for ln in self.text.split("\n") if ln.strip()]

    @cached_property
    def line_runs(self) -> list[str]:
        """Lines split on runs of newlines (Gopher repetition's unit)."""
        return _LINES.split(self.text)

    @cached_property
    def paragraphs(self) -> list[str]:
        return _PARA.split(self.text.strip())

    def ngram_counts(self, n: int) -> Counter[tuple[str, ...]]:
        """Counts of word n-grams (alnum words), computed once per ``n``."""
        cache = self.__dict__.setdefault("_ngrams", {})
        got = cache.get(n)
        if got is None:
            w = self.words
            got = Counter(zip(*(w[i:] for i in range(n)))) if len(w) >= n else Counter()
            cache[n] = got
        return got
