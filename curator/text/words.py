"""Word splitting that does not break on languages without spaces.

Scripts written without spaces between words (Han, Hiragana, Katakana, Thai, Lao, Khmer,
Myanmar) are split one character per word: without a dictionary segmenter that is the unit the
published heuristics (word counts, n-gram repetition) can be applied to consistently, and it is
what character-level CJK statistics in the Gopher / NeMo filters effectively assume. Hangul is
written with spaces, so Korean words stay whole.

Everything else is split on Unicode word characters: a word is a run of letters/digits that may
contain inner apostrophes, hyphens or dots (``don't``, ``state-of-the-art``, ``U.S``,
``3.14``); runs of other non-space characters (``...``, ``#``, ``--``) are separate tokens, as a
tokenizer such as NLTK's would produce, so filters can count or ignore them.
"""

from __future__ import annotations

import re

#: Scripts written without spaces: one character is one word.
NO_SPACE_SCRIPTS = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u31f0-\u31ff"  # Katakana extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0002fa1f"  # CJK extensions B-F, compatibility supplement
)
_NS = NO_SPACE_SCRIPTS
_WORD = re.compile(
    rf"[{_NS}]"  # one character of a no-space script
    rf"|[^\W{_NS}]+(?:['’.\-][^\W{_NS}]+)*"  # a word, with inner ' ’ . -
    r"|[^\w\s]+"  # a run of punctuation / symbols
)
_HAS_NS = re.compile(rf"[{_NS}]")


def split_words(text: str, lang: str | None = None) -> list[str]:
    """Words of ``text`` in order, punctuation runs as their own tokens, characters of
    no-space scripts one by one. ``lang`` is accepted for API stability (the split is
    script-driven, so mixed-language text works without it)."""
    return _WORD.findall(text)


def has_no_space_script(text: str) -> bool:
    """True if ``text`` contains characters of a script written without spaces."""
    return _HAS_NS.search(text) is not None
