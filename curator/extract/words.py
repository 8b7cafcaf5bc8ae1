"""Word counts that hold in every script: the extractor's rules compare texts by their words
(trafilatura's against resiliparse's, either against the page's ``<body>``), and a Chinese or
Japanese paragraph is one whitespace-separated "word". Counted by spaces, a CJK article of 20
paragraphs was 20 words against a menu's 100 items, and the rules replaced it with the menu."""

from __future__ import annotations

import re

#: Scripts written without spaces: a word per character (as bench/gold_set.py scores them).
NOSPACE = (r"[\u0e00-\u0e7f\u1000-\u109f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
           r"\uac00-\ud7af]")
#: A word, or one character of a script written without spaces.
TOKEN = re.compile(NOSPACE + r"|(?:(?!" + NOSPACE + r")\w)+")
_NOSPACE_CHAR = re.compile(NOSPACE)


def count_words(text: str) -> int:
    """Whitespace-separated words, plus one per character of a script written without
    spaces."""
    n = len(text.split())
    return n if text.isascii() else n + len(_NOSPACE_CHAR.findall(text))


def covers(new: str, old: str, share: float) -> bool:
    """Whether ``new`` holds at least ``share`` of ``old``'s distinct words (lower-cased, a
    character each in scripts without spaces; all of them when ``old`` has none)."""
    words = set(TOKEN.findall(old.lower()))
    if not words:
        return True
    return len(words & set(TOKEN.findall(new.lower()))) >= share * len(words)
