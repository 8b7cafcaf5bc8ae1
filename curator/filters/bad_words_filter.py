"""``bad_words_filter``: occurrences of listed words or phrases, from your own lists and/or
built-in lists chosen by the document's language. Words are matched as whole tokens split by
script (:func:`curator.text.words.split_words` without a language), the same split for a list's
entries and the text, so an entry matches whatever the document's language; entries in scripts
written without spaces are found anywhere in the text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Self

from pydantic import model_validator

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.core.context import ShardContext
from curator.core.params import NonNegInt, StageParams
from curator.core.stage import FilePath
from curator.filters.features import DocFeatures
from curator.filters.rules import HeuristicRule
from curator.text.words import has_no_space_script, split_words

_KATAKANA = re.compile("[\u30a0-\u30ff]+")
#: A katakana loanword is a whole run of katakana: グロ (gore) is not in グローバル (global).
_KATAKANA_WORD = "(?<![\u30a0-\u30ff]){}(?![\u30a0-\u30ff])"


class _WordMatcher:
    """Counts occurrences of list entries in a text: single words as whole tokens (one set
    lookup per token), phrases as runs of whole tokens ("heck no" is not in "check now"),
    and entries in scripts written without spaces (or every non-ASCII entry, with
    ``substring``) anywhere in the text, by one regular expression."""

    def __init__(self, entries: set[str], substring: bool = False) -> None:
        def anywhere(w: str) -> bool:
            return has_no_space_script(w) or (substring and not w.isascii())

        if substring:  # one ideograph or syllable alone (性, 乳) is part of too many words
            entries = {w for w in entries if len(w) > 1 or w.isascii()}
        self.single = frozenset(w for w in entries
                                if split_words(w) == [w] and not anywhere(w))
        self.phrases: dict[str, list[tuple[str, ...]]] = {}
        subs = []
        for w in entries - self.single:
            if anywhere(w):
                subs.append(w)
            elif toks := tuple(split_words(w)):
                self.phrases.setdefault(toks[0], []).append(toks)
        pats = [_KATAKANA_WORD.format(re.escape(w)) if _KATAKANA.fullmatch(w) else re.escape(w)
                for w in sorted(subs, key=len, reverse=True)]
        # the look-ahead on the entries' first characters lets the engine skip to candidates
        first = "".join(sorted({re.escape(w[0]) for w in subs}))
        self.multi = re.compile(f"(?=[{first}])(?:{'|'.join(pats)})") if pats else None

    def count(self, words: list[str], lower_text: str) -> int:
        lw = list(map(str.lower, words)) if self.single or self.phrases else []
        n = sum(map(self.single.__contains__, lw)) if self.single else 0
        if self.phrases:
            starts = self.phrases
            for i, t in enumerate(lw):
                cands = starts.get(t)
                if cands:
                    n += sum(1 for p in cands if tuple(lw[i:i + len(p)]) == p)
        if self.multi is not None:
            n += len(self.multi.findall(lower_text))
        return n


class BadWords(HeuristicRule):
    """Occurrences of listed words or phrases: your own list and/or built-in lists for 24
    languages, chosen by the document's language (``language_id`` meta)."""

    key = "bad_words"
    name = "bad_words_filter"
    source = ("C4 (List of Dirty, Naughty, Obscene or Otherwise Bad Words); built-in lists: "
              "glin-profanity 4.1.0 (MIT), see docs/filters.md")

    class Params(StageParams):
        words: list[str] = []
        """Your own words or phrases, matched in every language."""
        path: FilePath | None = None
        """A file of your own words or phrases, one per line."""
        max_count: NonNegInt = 0
        """Most matches a kept document may contain."""
        builtin: bool = False
        """Use the built-in lists (chosen by the document's language)."""
        languages: list[str] | None = None
        """Built-in lists to load; null: all of them (needs ``builtin: true``)."""
        paths: dict[str, FilePath] = {}
        """Your own list files per language code, e.g. ``{de: lists/de.txt}``."""
        allow: list[str] = []
        """Words or phrases never counted (removed from every list)."""
        language_field: str = "language"
        """Meta key holding the document's language (as ``language_id`` writes it)."""
        default_language: str | None = "en"
        """List used for documents of a language without a list; null: only ``words``/``path``."""

        @model_validator(mode="after")
        def _languages_need_builtin(self) -> Self:
            if self.languages and not self.builtin:
                raise ValueError("languages selects built-in lists: set builtin: true (or give "
                                 "your own lists in 'paths')")
            return self

    def setup(self) -> None:
        from curator.filters import wordlists

        def read(p: str, key: str) -> list[str]:
            try:
                with open(p, encoding="utf-8") as f:
                    return [ln.strip().lower() for ln in f if ln.strip()]
            except OSError as e:
                raise ConfigError(
                    f"bad_words_filter.{key}: cannot read '{p}': {e.strerror}") from None

        allowed = {w.strip().lower() for w in self.allow}
        common = {w.strip().lower() for w in self.words if w.strip()}
        if self.path:
            common.update(read(self.path, "path"))
        per_lang: dict[str, set[str]] = {}
        if self.builtin:
            for lang in self.languages or wordlists.DEFAULT_LANGUAGES:
                per_lang.setdefault(lang, set()).update(wordlists.builtin_words(lang))
        for lang, p in self.paths.items():
            per_lang.setdefault(lang, set()).update(read(p, f"paths.{lang}"))
        if not common and not per_lang:
            raise ConfigError("bad_words_filter: give 'words', a 'path' to a list (one per line), "
                              "'paths' per language, or builtin: true")
        dl = self.default_language
        if dl is not None and per_lang and dl not in per_lang:
            raise ConfigError(f"bad_words_filter.default_language: no list for "
                              f"'{dl}' (lists: {', '.join(sorted(per_lang))})")
        self.common = _WordMatcher(common - allowed)
        self.tables = {lang: _WordMatcher((ws | common) - allowed,
                                          lang in wordlists.SUBSTRING_LANGUAGES)
                       for lang, ws in per_lang.items()}

    def matcher(self, doc: Document) -> tuple[str, _WordMatcher]:
        """The list that applies to ``doc``: its language's, the default language's, or only
        the language-independent words (``'*'``)."""
        lang = doc.meta.get(self.language_field)
        if isinstance(lang, str):
            lang = lang.split("-")[0].split("_")[0].lower()
            if lang in self.tables:
                return lang, self.tables[lang]
        if self.default_language is not None and self.default_language in self.tables:
            return self.default_language, self.tables[self.default_language]
        return "*", self.common

    def value(self, f: DocFeatures) -> float:
        return self.common.count(f.words, f.text.lower())

    def ok(self, v: float) -> bool:
        return v <= self.max_count

    def check(self, doc: Document) -> str | None:
        return None if self.count(doc)[1] <= self.max_count else self.name

    def count(self, doc: Document) -> tuple[str, int]:
        """(language whose list was used, number of matches)."""
        lang, m = self.matcher(doc)
        words = split_words(doc.text) if m.single else []
        return lang, m.count(words, doc.text.lower())

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        for doc in docs:
            lang, n = self.count(doc)
            if n:
                ctx.count(f"bad_words:{lang}", n)
                ctx.count(f"bad_words_docs:{lang}")
            if n <= self.max_count:
                yield doc
            else:
                ctx.reject(doc, self.name, language=lang, matches=n)
