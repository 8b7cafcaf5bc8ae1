"""Text normalisation presets of the dedup stages (``normalize:`` in exact, fuzzy, line and
sentence-span dedup).

* ``none``: the raw text.
* ``basic``: lower case, whitespace runs collapsed to one space, trimmed (``true`` in older
  pipelines).
* ``fineweb``: exactly datatrove's ``simplify_text`` with its default ``TextNormConfig`` (what
  FineWeb's MinHash dedup hashes): lower case, every number (any script, with an optional
  decimal part) replaced by ``0``, datatrove's punctuation list replaced by spaces, whitespace
  collapsed, NFD with combining marks (``Mn``) removed, trimmed. For word shingles the text is
  then split into words by spaCy's rule-based tokenizer for the language, as datatrove does
  (``dont`` -> ``do nt``, ``0km`` -> ``0 km``, symbols apart).

Fast: a batch of documents is joined with a private-use separator and every step runs once over
the joined string in C (``str.lower``, one regex substitution, ``str.translate``,
``unicodedata.normalize``); pure ASCII batches skip the Unicode steps. The word tokenizer is
only asked about the few distinct words that are not plain ``[a-z]+`` (or are one of its
special cases such as ``dont``), once per process per word.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Literal

from curator.base.errors import ConfigError

Preset = Literal["none", "basic", "fineweb"]
PRESETS: tuple[str, ...] = ("none", "basic", "fineweb")

#: datatrove.utils.text.PUNCTUATION (datatrove 0.4 .. 0.10; checked against it in the tests).
_PUNCT = ("!/—”:％１〈&(、━\\【#%「」，】；+^]~“《„';’{|∶´[=-`*．（–"
          "？！：$～«〉,><》)?）。…@_.\"}►»"
          + "".join(chr(x) for a, b in ((0, 9), (11, 13), (13, 32), (127, 160))
                    for x in range(a, b)))
#: datatrove translates only PUNCTUATION to spaces (TERMINAL_PUNCTUATION is for sentences).
_PUNCT_TRANS = str.maketrans(_PUNCT, " " * len(_PUNCT))
try:  # datatrove's pattern, with the same Unicode tables when `regex` is installed
    import regex as _re_numbers

    _NUMBERS = _re_numbers.compile(r"\p{Nd}+([.,،٫⎖⎗⎘]{1}\p{Nd}+)?")
except ImportError:  # pragma: no cover - Python's \d is also "any Unicode Nd"
    _NUMBERS = re.compile(r"\d+([.,،٫⎖⎗⎘]\d+)?")
_SPACE = re.compile(r"\s+")
#: Joins a batch; a private-use code point: unchanged by every step, no digit, no space.
_SEP = "\ue000"
#: Punctuation becomes a space and whitespace runs one space: one pass instead of two.
_PUNCT_SPACE = re.compile("[" + re.escape(_PUNCT) + r"\s]+")
#: Runs of non-ASCII characters (ASCII is NFD-invariant, has no marks and never reorders).
_NON_ASCII = re.compile(r"[^\x00-\x7f\ue000]+")


class _MarkTable(dict):  # type: ignore[type-arg]
    """``str.translate`` table deleting nonspacing marks (category ``Mn``), filled per code
    point on first sight (building it for all of Unicode takes a second)."""

    def __missing__(self, c: int) -> int | None:
        v = None if unicodedata.category(chr(c)) == "Mn" else c
        self[c] = v
        return v


_MARKS = _MarkTable()


def resolve(value: bool | str, where: str = "normalize") -> str:
    """A preset name from a YAML value (``true`` = ``basic``, ``false`` = ``none``)."""
    if value is True:
        return "basic"
    if value is False:
        return "none"
    if value not in PRESETS:
        raise ConfigError(f"{where}: unknown normalisation '{value}' (use one of "
                          f"{', '.join(PRESETS)})")
    return str(value)


def basic(text: str) -> str:
    """Lower case and single spaces: near-duplicates differ in more than formatting.

    Equal to ``re.sub(r"\\s+", " ", text).strip().lower()`` (``str.split`` and ``re``'s
    ``\\s`` both use ``str.isspace``), about 4x faster."""
    return " ".join(text.split()).lower()


def simplify(text: str) -> str:
    """One document through the ``fineweb`` preset (datatrove's ``simplify_text``)."""
    return fineweb_batch([text])[0]


def fineweb_batch(texts: Sequence[str]) -> list[str]:
    """``simplify_text`` of each text, computed over the whole batch at once."""
    if not texts:
        return []
    joined = _SEP.join(texts)
    if joined.count(_SEP) != len(texts) - 1:  # a text holds the separator: one at a time
        return [fineweb_batch([t])[0] if _SEP not in t else _simplify_one(t) for t in texts]
    t = _PUNCT_SPACE.sub(" ", _NUMBERS.sub("0", joined.lower()))
    if not t.isascii():
        t = _NON_ASCII.sub(_nfd_no_marks, t)
    return [p.strip() for p in t.split(_SEP)] if len(texts) > 1 else [t.strip()]


def _nfd_no_marks(m: re.Match[str]) -> str:
    return unicodedata.normalize("NFD", m.group()).translate(_MARKS)


def _simplify_one(text: str) -> str:
    t = _NUMBERS.sub("0", text.lower()).translate(_PUNCT_TRANS)
    t = _SPACE.sub(" ", t.strip())
    t = unicodedata.normalize("NFD", t).translate(_MARKS)
    return t.strip()


def normalize_batch(texts: Sequence[str], preset: str) -> list[str]:
    """The texts under ``preset`` (``none``, ``basic``, ``fineweb``)."""
    if preset == "fineweb":
        return fineweb_batch(texts)
    if preset == "basic":
        return [basic(t) for t in texts]
    return list(texts)


# -- words (fineweb + word shingles) ----------------------------------------------------------


class _WordSplitter:
    """Splits simplified text into words as spaCy's tokenizer for ``lang`` does. The batch is
    split on spaces in C; each distinct word is classified once per process: plain ``[a-z]*``
    words (not a special case such as ``dont``) stay, the others are tokenised by spaCy and
    cached; the words are then mapped and joined in C (``map(dict.get, ...)``)."""

    _MAX_CACHE = 1 << 20

    def __init__(self, lang: str) -> None:
        try:
            import spacy
        except ImportError:
            raise ConfigError("normalize: fineweb with word shingles splits words with spaCy's "
                              "tokenizer like datatrove; install it: pip install "
                              "'curator-pipeline[dedup]' (or spacy)") from None
        try:
            nlp = spacy.blank(lang)
        except Exception as e:  # spaCy raises ImportError/ValueError/its own errors
            raise ConfigError(f"fuzzy_dedup.language: spaCy has no tokenizer for '{lang}' "
                              f"({e})") from None
        self._tok = nlp.tokenizer
        self._special = frozenset(k for k, v in self._tok.rules.items()
                                  if len(v) > 1 and re.fullmatch(r"[a-z]+", k))
        self._plain_re = re.compile(r"[a-z]*")
        self._plain: set[str] = {_SEP}
        self._cache: dict[str, str] = {}

    def _learn(self, words: set[str]) -> None:
        if len(self._cache) + len(self._plain) + len(words) > self._MAX_CACHE:
            self._cache.clear()
            self._plain = {_SEP}
        for w in words.difference(self._plain, self._cache):
            if self._plain_re.fullmatch(w) and w not in self._special:
                self._plain.add(w)
            else:
                self._cache[w] = self._whole(w)

    def __call__(self, simplified: Sequence[str]) -> list[str]:
        if not simplified:
            return []
        joined = _SEP.join(simplified)
        if joined.count(_SEP) != len(simplified) - 1:  # a text holds the separator
            return [self._whole(t) if _SEP in t else self([t])[0]
                    for t in simplified]
        sep = f" {_SEP} "
        words = joined.replace(_SEP, sep).split(" ")
        self._learn(set(words))
        out = " ".join(map(self._cache.get, words, words))
        return out.split(sep) if len(simplified) > 1 else [out]

    def _whole(self, text: str) -> str:
        return " ".join(x for x in (t.text.strip() for t in self._tok(text)) if x)


@functools.lru_cache(maxsize=8)
def word_splitter(lang: str = "en") -> Callable[[Sequence[str]], list[str]]:
    """The cached word splitter of ``lang`` (raises ``ConfigError`` without spaCy)."""
    return _WordSplitter(lang)


def fineweb_words(texts: Sequence[str], lang: str = "en") -> list[str]:
    """Each text simplified and split into words, the words joined by single spaces."""
    return word_splitter(lang)(fineweb_batch(texts))
