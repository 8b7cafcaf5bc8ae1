"""Sentence splitting with abbreviation handling (a first version; the filters family owns it).

API (stable, used by stats and the tokenizer's split-sentences mode):
``split_sentences(text, lang="en") -> list[str]``: sentences without surrounding whitespace,
in order; their concatenation covers all non-space text.
"""

from __future__ import annotations

import re

_ABBREV = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "fig", "no",
    "inc", "ltd", "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
    "oct", "nov", "dec", "u.s", "u.k", "approx", "dept", "est", "vol", "al", "eq", "cf",
}
_BOUNDARY = re.compile(r"([.!?。！？]+[\"'”’)\]]*)(\s+|$)|([。！？])")


def split_sentences(text: str, lang: str = "en") -> list[str]:
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end(1) if m.group(1) else m.end(3)
        chunk = text[start:end]
        if m.group(1) and m.group(1).startswith(".") and len(m.group(1)) == 1:
            words = chunk[:-1].split()
            last = words[-1].lower() if words else ""
            if last in _ABBREV or (len(last) == 1 and last.isalpha()):
                continue
            nxt = text[m.end():m.end() + 1]
            if nxt and nxt.islower():
                continue
        s = chunk.strip()
        if s:
            out.append(s)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out
