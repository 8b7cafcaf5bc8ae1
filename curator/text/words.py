"""Word splitting that does not break on languages without spaces.

Scripts written without spaces (Han, Hiragana, Katakana, Thai...) are split per character,
which is what the published heuristics effectively assume for such text; everything else is
split on Unicode word boundaries.
"""

from __future__ import annotations

import re

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f\uac00-\ud7af"
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")


def split_words(text: str, lang: str | None = None) -> list[str]:
    """Words (and punctuation runs attached to them), CJK characters one by one."""
    return _WORD.findall(text)
