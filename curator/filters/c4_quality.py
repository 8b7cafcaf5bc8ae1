"""``c4_quality``: C4's rules (Raffel et al. 2020, section 2.2; TFDS ``c4_utils``, as in datatrove's
``C4QualityFilter``). Unlike the presets it rewrites documents: it keeps only the lines that
pass, then decides on what is left."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import Field

from curator.base.document import Document
from curator.core.context import ShardContext
from curator.core.params import NonNegInt, StageParams
from curator.core.stage import ShardStage
from curator.text.sentences import split_sentences
from curator.text.words import segmented_language, split_words

_HAS_WORD = re.compile(r"\w").search
_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_C4_END = (".", "?", "!", '"', "'")
_C4_POLICY = ["terms of use", "privacy policy", "cookie policy", "uses cookies",
              "use of cookies", "use cookies"]


class C4Quality(ShardStage):
    """C4's rules: keep only lines that end in terminal punctuation, have 3+ words, no
    'javascript', no policy notice and no 1000+ char word; drop pages with 'lorem ipsum', a
    curly bracket or fewer than 5 sentences left. Removed lines are counted."""

    name = "c4_quality"

    class Params(StageParams):
        split_paragraph: bool = True
        """Judge lines; false: judge sentences (split with ``language``'s rules)."""
        remove_citations: bool = True
        """Remove Wikipedia-style ``[1]``, ``[edit]``, ``[citation needed]`` marks."""
        filter_no_terminal_punct: bool = True
        """Drop lines not ending in terminal punctuation (FineWeb sets false)."""
        min_num_sentences: Annotated[int, Field(ge=-1)] = 5
        """Fewest sentences left in a kept page; -1 disables."""
        min_words_per_line: NonNegInt = 3
        """Lines with fewer words are dropped."""
        max_word_length: Annotated[int, Field(ge=-1)] = 1000
        """Lines with a longer word (characters) are dropped; -1 disables."""
        filter_lorem_ipsum: bool = True
        """Drop pages containing 'lorem ipsum'."""
        filter_javascript: bool = True
        """Drop lines mentioning 'javascript'."""
        filter_curly_bracket: bool = True
        """Drop pages containing a curly bracket."""
        filter_policy: bool = True
        """Drop lines with a policy notice (terms of use, cookies...)."""
        language: str = "en"
        """`"en"` (sentence-splitting abbreviations)."""
        word_language: str | None = None
        """Split a line's words as this language: ``zh``, ``ja``, ``ko``, ``th`` with their
        segmenter, any other on whitespace (C4's split); null: the document's
        ``language_field``."""
        language_field: str = "language"
        """Meta key holding the document's language (as ``language_id`` writes it)."""

    def clean(self, text: str, count: Any = None, words_of: str | None = None
              ) -> tuple[str | None, str]:
        """(kept text or None, reason). ``count(name)`` receives line-removal counters;
        ``words_of``: the language whose segmenter splits lines into words (None, or one
        without a segmenter: whitespace)."""
        lines = text.splitlines() if self.split_paragraph else split_sentences(text, self.language)
        kept: list[str] = []
        sentences = 0
        few = self.min_words_per_line
        seg = segmented_language(words_of)
        for line in lines:
            line = line.strip()
            if seg is not None:
                line_words = [w for w in split_words(line, seg) if _HAS_WORD(w)]
                # judged as C4 judges whitespace words below, on the segmenter's words
                if self.max_word_length != -1 and any(
                        len(w) > self.max_word_length for w in line_words):
                    count and count("c4:line_long_word")
                    continue
                enough = len(line_words) >= few
            # a word is part of its line: a line no longer than the limit has no longer word
            elif (self.max_word_length != -1 and len(line) > self.max_word_length
                    and any(len(w) > self.max_word_length for w in line.split())):
                count and count("c4:line_long_word")
                continue
            else:
                # the words are counted before the citations go (as C4 and datatrove count),
                # and only up to ``few``: split(None, few - 1) gives min(words, few) pieces
                enough = not few or len(line.split(None, few - 1)) >= few
            if self.remove_citations and "[" in line:  # every citation mark starts with [
                line = _CITATION.sub("", line)
            if self.filter_no_terminal_punct and (not line.endswith(_C4_END)
                                                  or line.endswith("...")):
                count and count("c4:line_no_terminal_punct")
                continue
            if not enough:
                count and count("c4:line_few_words")
                continue
            low = line.lower()
            if self.filter_lorem_ipsum and "lorem ipsum" in low:
                return None, "c4_quality:lorem_ipsum"
            if self.filter_javascript and "javascript" in low:
                count and count("c4:line_javascript")
                continue
            if self.filter_curly_bracket and "{" in line:
                return None, "c4_quality:curly_bracket"
            # each notice holds "use" or "policy": most lines need no search for the six
            if self.filter_policy and ("use" in low or "policy" in low) and any(
                    p in low for p in _C4_POLICY):
                count and count("c4:line_policy")
                continue
            # only "fewer than min_num_sentences" is read: once there are enough, no line
            # needs splitting (the sentence split was a third of this stage's CPU)
            if sentences < self.min_num_sentences:
                sentences += len(split_sentences(line, self.language)) \
                    if self.split_paragraph else 1
            kept.append(line)
        if sentences < self.min_num_sentences:
            return None, "c4_quality:too_few_sentences"
        return ("\n" if self.split_paragraph else " ").join(kept).strip(), ""

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        for doc in docs:
            lang = self.word_language or doc.meta.get(self.language_field)
            text, reason = self.clean(doc.text, ctx.count,
                                      lang if isinstance(lang, str) else None)
            if text is None:
                ctx.reject(doc, reason)
                continue
            doc.text = text
            yield doc
