"""Per-document features shared by all heuristic rules.

A preset applies a dozen rules to the same document; each needs words, lines, paragraphs or
n-grams. :class:`DocFeatures` computes each of these at most once, on first use, so a preset
costs about as much as its most expensive rule rather than the sum of all of them.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cached_property
from operator import methodcaller

import numpy as np
import xxhash

from curator.text.words import split_words

_PARA = re.compile(r"\n{2,}")
_LINES = re.compile(r"\n+")
_WORD_START = re.compile(r"\w").match
_HAS_ALPHA = re.compile(r"[^\W\d_]").search
_MULT = np.uint64(0x100000001B3)
_ENCODE = methodcaller("encode", "utf-8", "surrogatepass")  # lone surrogates must not crash


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
        """Word tokens (punctuation runs excluded); a C-level filter, no Python loop."""
        return list(filter(_WORD_START, self.words))

    @cached_property
    def n_alpha_words(self) -> int:
        """Number of tokens containing a letter."""
        return len(list(filter(None, map(_HAS_ALPHA, self.words))))

    @cached_property
    def word_hashes(self) -> np.ndarray:
        """64-bit hash of every token (xxh64, computed by C-level ``map``)."""
        w = self.words
        return np.fromiter(map(xxhash.xxh64_intdigest, map(_ENCODE, w)),
                           dtype=np.uint64, count=len(w))

    @cached_property
    def word_len_cumsum(self) -> np.ndarray:
        """``c[i]`` = characters in the first ``i`` tokens."""
        lens = np.fromiter(map(len, self.words), dtype=np.int64, count=len(self.words))
        return np.concatenate(([0], np.cumsum(lens)))

    @cached_property
    def lines(self) -> list[str]:
        """``str.splitlines()`` lines (empty ones included)."""
        return self.text.splitlines()

    @cached_property
    def nonempty_lines(self) -> list[str]:
        return list(filter(str.strip, self.text.split("\n")))

    @cached_property
    def line_runs(self) -> list[str]:
        """Lines split on runs of newlines (Gopher repetition's unit)."""
        return _LINES.split(self.text)

    @cached_property
    def paragraphs(self) -> list[str]:
        return _PARA.split(self.text.strip())

    def ngrams(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Token n-grams as ``(ids, first, counts, chars)``: ``ids[i]`` numbers the distinct
        n-gram at position ``i`` (in hash order), ``first[g]`` and
        ``counts[g]`` are the first position and count of n-gram ``g``, ``chars[i]`` the
        characters of the n-gram at ``i`` without separators. Vectorised; once per ``n``."""
        cache = self.__dict__.setdefault("_ngrams", {})
        got = cache.get(n)
        if got is None:
            wh = self.word_hashes
            m = len(wh) - n + 1
            if m <= 0:
                e = np.empty(0, dtype=np.int64)
                got = (e, e, e, e)
            else:
                h = np.zeros(m, dtype=np.uint64)
                with np.errstate(over="ignore"):
                    for j in range(n):
                        h = h * _MULT + wh[j:j + m]
                _, first, ids, counts = np.unique(h, return_index=True, return_inverse=True,
                                                  return_counts=True)
                c = self.word_len_cumsum
                got = (ids, first, counts, c[n:n + m] - c[:m])
            cache[n] = got
        return got

    def has_repeated_ngram(self, n: int) -> bool:
        """Whether some token n-gram occurs twice (no repeated n-gram means none for any
        larger n either, which lets repetition rules skip work)."""
        known = self.__dict__.setdefault("_no_repeat_from", None)
        if known is not None and n >= known:
            return False
        ids, first, _, _ = self.ngrams(n)
        rep = len(first) < len(ids)
        if not rep and (known is None or n < known):
            self.__dict__["_no_repeat_from"] = n
        return rep

    def top_ngram_chars(self, n: int) -> int:
        """Characters covered by all occurrences of the most frequent n-gram, separators
        included (ties: the n-gram seen first, like ``Counter.most_common``)."""
        ids, first, counts, chars = self.ngrams(n)
        if not len(ids):
            return 0
        top = np.flatnonzero(counts == counts.max())
        g = top[np.argmin(first[top])]
        return int((chars[first[g]] + n - 1) * counts[g])

    def duplicate_ngram_chars(self, n: int) -> int:
        """Characters in n-grams that repeat an earlier *counted* n-gram, scanning left to
        right and jumping past each repeat (Gopher / datatrove ``find_all_duplicate``).

        Only positions whose n-gram occurred before can be repeats, so the scan visits those
        alone; an earlier occurrence counts as seen unless it lay inside a jumped-over span.
        """
        if not self.has_repeated_ngram(n):
            return 0
        ids, first, _, chars = self.ngrams(n)
        cand = np.flatnonzero(first[ids] < np.arange(len(ids))).tolist()
        ids_l, first_l = ids.tolist(), first.tolist()
        starts: list[int] = []  # starts of jumped-over spans [s, s + n)
        seen: set[int] = set()
        skip_until = total = 0
        for i in cand:
            if i < skip_until:
                continue
            g = ids_l[i]
            if g not in seen:
                f = first_l[g]
                k = bisect_right(starts, f) - 1
                if k >= 0 and f < starts[k] + n:  # first occurrence was jumped over
                    seen.add(g)  # this occurrence is the first one seen
                    continue
            seen.add(g)
            total += int(chars[i])
            starts.append(i)
            skip_until = i + n
        return total
