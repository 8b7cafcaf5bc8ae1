"""Sentence splitting with abbreviation handling, without models or downloads.

API (stable, used by stats, filters and the tokenizer's split-sentences mode):
``split_sentences(text, lang="en") -> list[str]``: sentences without surrounding whitespace,
in order; their concatenation covers all non-space text.

A candidate boundary is a run of ``.!?…`` (or the Devanagari, Arabic, Urdu and Armenian full
stops and question marks; plus closing quotes/brackets) followed by space, or
a CJK full stop ``。！？`` (no space needed), or a blank line. A period is *not* a boundary
when the word before it is a known abbreviation (per language), a single letter (initials,
``J. R. R. Tolkien``), a dotted abbreviation (``e.g.``, ``U.S.``) followed by a lowercase
word or digit, or when the next word starts lowercase or with a digit (``approx. 5``,
``etc. and``). Titles (``Dr.``, ``Mr.``) never end a sentence.
"""

from __future__ import annotations

import re

_COMMON = {
    "e.g", "i.e", "etc", "vs", "cf", "al", "approx", "ca", "no", "nos", "vol", "vols", "fig",
    "figs", "eq", "eqs", "ed", "eds", "p", "pp", "para", "ch", "sec", "art", "dept", "est",
    "inc", "ltd", "co", "corp", "bros", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "a.m", "p.m",
    "u.s", "u.k", "u.s.a", "e.u", "ph.d", "b.a", "m.a", "b.sc", "m.sc", "op", "cit", "ibid",
    "misc", "min", "max", "avg", "tel", "ext", "dist", "govt", "univ", "assn", "ave", "blvd",
    "rd", "mt", "ft", "lb", "lbs", "oz", "km", "cm", "mm", "kg",
}
#: Words after which a period never ends the sentence (they precede a name).
_TITLES = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "rev", "hon", "gen", "col", "capt", "lt",
    "sgt", "gov", "sen", "rep", "pres", "messrs", "mme", "mlle", "hr", "fr", "frau", "sra", "srta",
}
_LANG = {
    "de": {"z.b", "bzw", "usw", "ca", "ggf", "evtl", "d.h", "u.a", "vgl", "nr", "bzgl", "inkl",
           "str", "s", "abs", "jh", "mio", "mrd", "dr", "prof", "hr", "fr"},
    "fr": {"p.ex", "cf", "env", "mme", "mlle", "m", "mm", "av", "apr", "j.-c", "éd", "vol", "n°"},
    "es": {"sr", "sra", "srta", "dr", "dra", "ud", "uds", "p.ej", "etc", "pág", "núm", "av"},
    "it": {"sig", "sigg", "dott", "ing", "avv", "ecc", "pag", "es", "n"},
    "pt": {"sr", "sra", "dr", "dra", "p.ex", "pág", "etc", "av"},
    "nl": {"bijv", "dhr", "mevr", "o.a", "d.w.z", "enz", "blz", "nr"},
}
#: Abbreviations that commonly end a sentence: a capital after them starts a new one.
_OFTEN_FINAL = {"etc", "al", "inc", "ltd", "co", "corp", "bros"}
_ABBREV_CACHE: dict[str, frozenset[str]] = {}

_BOUNDARY = re.compile(
    r"(?P<term>[.!?…।॥؟۔։]+[\"'”’»)\]]*)(?=\s|$)"  # terminator (Latin, Devanagari, Arabic,
    # Urdu, Armenian) followed by space or end
    r"|(?P<cjk>[。！？]+[」』”’）)]*)"  # CJK terminators need no space
    r"|(?P<para>\n[ \t]*\n\s*)"  # blank line: paragraph break
)


def _abbrevs(lang: str) -> frozenset[str]:
    key = (lang or "en").split("-")[0].split("_")[0].lower()
    got = _ABBREV_CACHE.get(key)
    if got is None:
        got = frozenset(_COMMON | _TITLES | _LANG.get(key, set()))
        _ABBREV_CACHE[key] = got
    return got


def _is_abbreviation(before: str, after: str, abbrevs: frozenset[str]) -> bool:
    """Whether the single period that ends ``before`` belongs to an abbreviation/initial."""
    last = before.rsplit(None, 1)  # the last word (a regex search here backtracks badly)
    if not last:
        return False
    word = last[-1].lstrip("(\"'“‘[«").rstrip(".").lower()
    if not word:
        return False
    nxt = after.lstrip()[:1]
    if word in _TITLES:
        return True
    if nxt and (nxt.islower() or nxt.isdigit() or nxt in ",;:"):
        return True  # "approx. 5", "etc. and so on", "e.g. the"
    if len(word) == 1 and word.isalpha():
        return True  # initials: "J. Smith"
    # Known abbreviations followed by a capital usually continue ("Fig. 3", "Vol. II",
    # "U.S. Army"), except the few that often end a sentence.
    return word in abbrevs and word not in _OFTEN_FINAL


def split_sentences(text: str, lang: str = "en") -> list[str]:
    """Split ``text`` into sentences (see the module docstring for the rules)."""
    abbrevs = _abbrevs(lang)
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        if m.group("term"):
            term = m.group("term")
            # only the last word before the period matters: look at a bounded tail, or a long
            # run of periods that are not boundaries costs quadratic time
            if term.rstrip("\"'”’»)]") == "." and _is_abbreviation(
                    text[max(start, m.start() - 200):m.start()], text[m.end():m.end() + 3],
                    abbrevs):
                continue
            end = m.end()
        elif m.group("cjk"):
            end = m.end()
        else:
            end = m.start()
        s = text[start:end].strip()
        if s:
            out.append(s)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out
