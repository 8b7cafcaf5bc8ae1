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
#: From a token's first letter to its end: no token holds whitespace (curator.text.words), so
#: over the tokens joined by spaces there is one match per token that holds a letter.
_ALPHA_TOKEN = re.compile(r"[^\W\d_]\S*")
_MULT = np.uint64(0x100000001B3)
_ENCODE = methodcaller("encode", "utf-8", "surrogatepass")  # lone surrogates must not crash


class DocFeatures:
    """Lazily computed views of one text (words, lines, n-grams...)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def known(self, name: str) -> bool:
        """Whether the feature ``name`` (``words``...) has been computed already."""
        return name in self.__dict__

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
        """Number of tokens containing a letter: one regex pass over the tokens joined by
        spaces, not a search per token (a third of ``gopher_quality``'s CPU)."""
        return len(_ALPHA_TOKEN.findall(" ".join(self.words)))

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
                self.__dict__.setdefault("_nhash", {})[n] = h
            cache[n] = got
        return got

    def repeats(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The positions whose token n-gram occurs more than once, as ``(pos, hashes, ids,
        first)``: sorted positions, their n-gram hashes, a group number per position and the
        first position of each group.

        Only a position whose (n-1)-gram repeats can start a repeated n-gram, so once some
        size has been hashed in full (:meth:`ngrams`), each larger size extends the hashes
        of the previous size's repeated positions by one token (the same recurrence as
        :meth:`ngrams`) and sorts those alone, usually a small share of the text: the
        Gopher rules for n = 5..10 then cost about one full pass instead of six."""
        cache = self.__dict__.setdefault("_repeats", {})
        got = cache.get(n)
        if got is not None:
            return got
        wh = self.word_hashes
        m = len(wh) - n + 1
        if m <= 0:
            e = np.empty(0, dtype=np.int64)
            got = (e, np.empty(0, dtype=np.uint64), e, e)
        elif n - 1 in cache or n - 1 in self.__dict__.get("_ngrams", {}):
            if n - 1 in cache:
                ppos, ph = cache[n - 1][:2]
            else:
                pids, _, pcounts, _ = self.ngrams(n - 1)
                ppos = np.flatnonzero(pcounts[pids] > 1)
                ph = self.__dict__["_nhash"][n - 1][ppos]
            keep = ppos < m
            ppos, ph = ppos[keep], ph[keep]
            with np.errstate(over="ignore"):
                h = ph * _MULT + wh[ppos + (n - 1)]
            got = self._grouped(ppos, h)
        else:
            ids, _, counts, _ = self.ngrams(n)
            pos = np.flatnonzero(counts[ids] > 1)
            got = self._grouped(pos, self.__dict__["_nhash"][n][pos])
        cache[n] = got
        return got

    @staticmethod
    def _grouped(pos: np.ndarray, h: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``repeats`` of the candidate positions ``pos`` (sorted) with n-gram hashes ``h``:
        those whose hash occurs at least twice among them."""
        if not len(pos):
            return pos, h, pos, pos
        _, first, ids, counts = np.unique(h, return_index=True, return_inverse=True,
                                          return_counts=True)
        keep = counts[ids] > 1
        if not keep.all():
            pos, h = pos[keep], h[keep]
            if not len(pos):
                return pos, h, pos, pos
            _, first, ids = np.unique(h, return_index=True, return_inverse=True)
        return pos, h, ids, pos[first]

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
        pos, _, ids, first = self.repeats(n)
        if not len(pos):
            return 0
        later = first[ids] < pos  # not the first occurrence
        cand = pos[later].tolist()
        c = self.word_len_cumsum
        chars = dict(zip(cand, (c[pos[later] + n] - c[pos[later]]).tolist(), strict=True))
        ids_l = dict(zip(cand, ids[later].tolist(), strict=True))
        first_l = first.tolist()
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
