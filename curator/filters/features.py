"""Per-document features shared by all heuristic rules.

A preset applies a dozen rules to the same document; each needs words, lines, paragraphs or
n-grams. :class:`DocFeatures` computes each of these at most once, on first use, so a preset
costs about as much as its most expensive rule rather than the sum of all of them.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cached_property
from operator import itemgetter

import numpy as np

from curator.text.words import segmented_language, split_words

_WORD_START = re.compile(r"\w").match
_HAS_WORD = re.compile(r"\w").search
_LETTER = re.compile(r"[^\W\d_]")
_FIRST = itemgetter(0)
#: re's verdicts on the code points below 256: word character (``\w``), letter (``[^\W\d_]``).
_LATIN1_WORD = np.array([_WORD_START(chr(c)) is not None for c in range(256)])
_LATIN1_LETTER = np.array([_LETTER.match(chr(c)) is not None for c in range(256)])


#: Token counts below this keep an n-gram key ``a * tokens + b`` (``a, b < tokens``) under
#: 2**62; longer texts (gigabytes of text) group the pairs themselves (:func:`_pair_key`).
_KEY_TOKENS = 1 << 31


def _pair_key(a: np.ndarray, b: np.ndarray, size: int) -> np.ndarray:
    """A number per position, equal where the pairs ``(a, b)`` are equal (``a``, ``b`` below
    ``size``): ``a * size + b`` while that cannot overflow 64 bits, else the pairs' group
    numbers."""
    if size < _KEY_TOKENS:
        return a * size + b
    return np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)[1].reshape(-1)


class DocFeatures:
    """Lazily computed views of one text (words, lines, n-grams...). ``language`` chooses
    the word segmenter (:func:`curator.text.words.split_words`); kept as the code of
    :data:`~curator.text.words.SEGMENTERS` it names, or None for the split by script."""

    def __init__(self, text: str, language: str | None = None) -> None:
        self.text = text
        self.language = segmented_language(language)

    def known(self, name: str) -> bool:
        """Whether the feature ``name`` (``words``...) has been computed already."""
        return name in self.__dict__

    @cached_property
    def words(self) -> list[str]:
        """All tokens: words and punctuation (the language's segmenter; else by script:
        punctuation runs, no-space-script characters one by one)."""
        return split_words(self.text, self.language)

    @cached_property
    def alnum_words(self) -> list[str]:
        """Word tokens (punctuation excluded); by script a C-level filter, no Python loop."""
        if self.language:
            return [t for t, k in zip(self.words, self.first_chars[0].tolist(), strict=True)
                    if k]
        return list(filter(_WORD_START, self.words))

    @cached_property
    def first_chars(self) -> tuple[np.ndarray, np.ndarray]:
        r"""Per token, whether its first character is a word character (``\w``: the tokens of
        :attr:`alnum_words`) and whether it is a letter (``[^\W\d_]``), as ``re`` decides:
        a table of its verdicts below U+0100, ``re`` itself once per distinct character above.
        Vectorised over the tokens' first characters instead of a regex call per token."""
        w = self.words
        codes = np.frombuffer("".join(map(_FIRST, w)).encode("utf-32-le", "surrogatepass"),
                              dtype=np.uint32)
        low = np.minimum(codes, 255)
        word, letter = _LATIN1_WORD[low], _LATIN1_LETTER[low]
        high = codes > 255
        if high.any():
            chars, inv = np.unique(codes[high], return_inverse=True)
            cs = [chr(c) for c in chars.tolist()]
            word[high] = np.array([_WORD_START(c) is not None for c in cs])[inv]
            letter[high] = np.array([_LETTER.match(c) is not None for c in cs])[inv]
        if self.language:
            # a segmenter's token may start with a symbol and hold a word (jieba: "#tag",
            # ".net"): it is a word token when it holds any word character
            rest = np.flatnonzero(~word).tolist()
            if rest:
                word[rest] = [_HAS_WORD(w[i]) is not None for i in rest]
        return word, letter

    @cached_property
    def n_alnum_words(self) -> int:
        """``len(alnum_words)``, without the list."""
        return int(self.first_chars[0].sum())

    @cached_property
    def alnum_chars(self) -> int:
        """Characters of :attr:`alnum_words` (``sum(map(len, alnum_words))``), without the list."""
        return int(np.diff(self.word_len_cumsum)[self.first_chars[0]].sum())

    @cached_property
    def n_alpha_words(self) -> int:
        r"""Number of tokens containing a letter. A token that starts with a letter holds one;
        one that starts with another word character (a digit, ``_``) is searched; the rest
        (punctuation runs, a no-space script's non-word character) hold no ``\w`` at all,
        except a segmenter's tokens, searched too."""
        word, letter = self.first_chars
        w = self.words
        others = np.flatnonzero(word & ~letter).tolist()
        return int(letter.sum()) + sum(1 for i in others if _LETTER.search(w[i]))

    @cached_property
    def word_ids(self) -> np.ndarray:
        """A number per token, equal for equal tokens only: the position where the token
        first occurs (``dict.setdefault`` in a C-level ``map``; no hashing to 64 bits, so
        n-grams below are grouped by equality, as datatrove groups its string n-grams)."""
        w = self.words
        first: dict[str, int] = {}
        return np.fromiter(map(first.setdefault, w, range(len(w))), dtype=np.int64,
                           count=len(w))

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
        """Lines split on runs of newlines (Gopher repetition's unit): ``re.split(r"\\n+")``
        by ``str.split``, a quarter of the time. Only a run of newlines leaves an empty piece
        between two others; the first and last pieces stay as the regex gives them."""
        p = self.text.split("\n")
        if len(p) <= 2:
            return p
        return [p[0], *filter(None, p[1:-1]), p[-1]]

    @cached_property
    def paragraphs(self) -> list[str]:
        """The stripped text split on runs of two or more newlines: ``re.split(r"\\n{2,}")``
        by ``str.split("\\n\\n")``. The stripped text neither starts nor ends with a
        newline, so a run of ``k`` newlines leaves ``k // 2 - 1`` empty pieces and, for odd
        ``k``, one newline at the start of the next piece: both dropped."""
        ps = self.text.strip().split("\n\n")
        if len(ps) == 1:
            return ps
        return [q for q in (x.lstrip("\n") for x in ps) if q]

    def ngrams(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Token n-grams as ``(ids, first, counts, chars)``: ``ids[i]`` numbers the distinct
        n-gram at position ``i``, ``first[g]`` and ``counts[g]`` are the first position and
        count of n-gram ``g``, ``chars[i]`` the characters of the n-gram at ``i`` without
        separators. Vectorised; once per ``n``.

        An n-gram's key is exact, not a hash: ``(n-1)-gram number * tokens + token id``
        (:func:`_pair_key`: exact at any length), for bigrams the two token ids."""
        cache = self.__dict__.setdefault("_ngrams", {})
        got = cache.get(n)
        if got is None:
            wid = self.word_ids
            size = len(wid)
            m = size - n + 1
            if m <= 0:
                e = np.empty(0, dtype=np.int64)
                got = (e, e, e, e)
            else:
                if n == 1:
                    key = wid
                elif n == 2:
                    key = _pair_key(wid[:-1], wid[1:], size)
                else:
                    key = _pair_key(self.ngrams(n - 1)[0][:m], wid[n - 1:], size)
                _, first, ids, counts = np.unique(key, return_index=True, return_inverse=True,
                                                  return_counts=True)
                c = self.word_len_cumsum
                got = (ids, first, counts, c[n:n + m] - c[:m])
            cache[n] = got
        return got

    def repeats(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The positions whose token n-gram occurs more than once, as ``(pos, ids, first)``:
        sorted positions, a group number per position (0, 1, ... for the distinct n-grams
        among them) and the first position of each group.

        Only a position whose (n-1)-gram repeats can start a repeated n-gram, so each size
        above the last one grouped in full (:meth:`ngrams`; bigrams when none was) extends
        the previous size's repeated positions by one token (key: group number * tokens +
        token id, exact as in :meth:`ngrams`) and sorts those alone, usually a small share of
        the text: the Gopher rules for n = 3..10 then cost about one full pass instead of
        eight. A size asked first (a rule alone) starts from the positions whose bigrams all
        repeat."""
        cache = self.__dict__.setdefault("_repeats", {})
        got = cache.get(n)
        if got is not None:
            return got
        full = self.__dict__.get("_ngrams", {})
        size = len(self.words)
        m = size - n + 1
        if m <= 0:
            e = np.empty(0, dtype=np.int64)
            got = (e, e, e)
        elif n in full or n <= 2:
            ids, _, counts, _ = self.ngrams(n)
            pos = np.flatnonzero(counts[ids] > 1)
            got = self._grouped(pos, ids[pos])
        elif any(k in cache or k in full for k in range(2, n)):
            if n - 1 in cache or n - 1 not in full:
                ppos, pids, _ = self.repeats(n - 1)
            else:
                pids, _, pcounts, _ = full[n - 1]
                ppos = np.flatnonzero(pcounts[pids] > 1)
                pids = pids[ppos]
            keep = ppos < m
            ppos, pids = ppos[keep], pids[keep]
            got = self._grouped(ppos, _pair_key(pids, self.word_ids[ppos + (n - 1)], size))
        else:
            # Nothing smaller known (a dup_ngram_filter alone): a repeated n-gram repeats
            # each of its bigrams, so only positions whose next n-1 bigrams all repeat are
            # grouped, their keys built token by token.
            ids, _, counts, _ = self.ngrams(2)
            run = np.concatenate(([0], np.cumsum(counts[ids] > 1)))
            pos = np.flatnonzero(run[n - 1:n - 1 + m] - run[:m] == n - 1)
            wid = self.word_ids
            key = ids[pos]
            for j in range(2, n):
                key = _pair_key(np.unique(key, return_inverse=True)[1], wid[pos + j], size)
            got = self._grouped(pos, key)
        cache[n] = got
        return got

    @staticmethod
    def _grouped(pos: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``repeats`` of the candidate positions ``pos`` (sorted) with n-gram keys ``key``:
        those whose key occurs at least twice among them."""
        if not len(pos):
            return pos, pos, pos
        _, first, ids, counts = np.unique(key, return_index=True, return_inverse=True,
                                          return_counts=True)
        many = counts > 1
        if not many.all():
            # the groups that repeat keep their order, numbered 0, 1, ... again: what a
            # second np.unique of the kept keys gave, without sorting them again
            keep = many[ids]
            if not keep.any():
                return pos[:0], pos[:0], pos[:0]
            return pos[keep], (np.cumsum(many) - 1)[ids[keep]], pos[first[many]]
        return pos, ids, pos[first]

    def top_ngram_chars(self, n: int) -> int:
        """Characters covered by all occurrences of the most frequent n-gram, separators
        included (ties: the n-gram seen first, like ``Counter.most_common``).

        Above bigrams (and when this size was not grouped in full) only the repeated
        n-grams (:meth:`repeats`) are grouped: the most frequent is one of them, or, when
        none repeats, every n-gram occurs once and the first one (position 0) is the top."""
        if n <= 2 or n in self.__dict__.get("_ngrams", {}):
            ids, first, counts, chars = self.ngrams(n)
            if not len(ids):
                return 0
            top = np.flatnonzero(counts == counts.max())
            g = top[np.argmin(first[top])]
            return int((chars[first[g]] + n - 1) * counts[g])
        if len(self.words) < n:
            return 0
        pos, ids, first = self.repeats(n)
        c = self.word_len_cumsum
        if not len(pos):
            return int(c[n] - c[0] + n - 1)
        counts = np.bincount(ids)
        top = np.flatnonzero(counts == counts.max())
        g = top[np.argmin(first[top])]
        p = first[g]
        return int((c[p + n] - c[p] + n - 1) * counts[g])

    def duplicate_ngram_chars(self, n: int) -> int:
        """Characters in n-grams that repeat an earlier *counted* n-gram, scanning left to
        right and jumping past each repeat (Gopher / datatrove ``find_all_duplicate``).

        Only positions whose n-gram occurred before can be repeats, so the scan visits those
        alone; an earlier occurrence counts as seen unless it lay inside a jumped-over span.
        """
        pos, ids, first = self.repeats(n)
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
