"""``c4_quality``: C4's rules (Raffel et al. 2020, section 2.2; TFDS ``c4_utils``, as in datatrove's
``C4QualityFilter``). Unlike the presets it rewrites documents: it keeps only the lines that
pass, then decides on what is left."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from curator.core.context import ShardContext
from curator.core.document import Document
from curator.core.stage import ShardStage
from curator.text.sentences import split_sentences

_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_C4_END = (".", "?", "!", '"', "'")
_C4_POLICY = ["terms of use", "privacy policy", "cookie policy", "uses cookies",
              "use of cookies", "use cookies"]


class C4Quality(ShardStage):
    """C4's rules: keep only lines that end in terminal punctuation, have 3+ words, no
    'javascript', no policy notice and no 1000+ char word; drop pages with 'lorem ipsum', a
    curly bracket or fewer than 5 sentences left. Removed lines are counted."""

    name = "c4_quality"

    def __init__(self, split_paragraph: bool = True, remove_citations: bool = True,
                 filter_no_terminal_punct: bool = True, min_num_sentences: int = 5,
                 min_words_per_line: int = 3, max_word_length: int = 1000,
                 filter_lorem_ipsum: bool = True, filter_javascript: bool = True,
                 filter_curly_bracket: bool = True, filter_policy: bool = True,
                 language: str = "en") -> None:
        self.split_paragraph = split_paragraph
        self.remove_citations = remove_citations
        self.filter_no_terminal_punct = filter_no_terminal_punct
        self.min_num_sentences = min_num_sentences
        self.min_words_per_line = min_words_per_line
        self.max_word_length = max_word_length
        self.filter_lorem_ipsum = filter_lorem_ipsum
        self.filter_javascript = filter_javascript
        self.filter_curly_bracket = filter_curly_bracket
        self.filter_policy = filter_policy
        self.language = language

    def clean(self, text: str, count: Any = None) -> tuple[str | None, str]:
        """(kept text or None, reason). ``count(name)`` receives line-removal counters."""
        lines = text.splitlines() if self.split_paragraph else split_sentences(text, self.language)
        kept: list[str] = []
        sentences = 0
        for line in lines:
            line = line.strip()
            words = line.split()
            if self.max_word_length != -1 and any(len(w) > self.max_word_length for w in words):
                count and count("c4:line_long_word")
                continue
            if self.remove_citations:
                line = _CITATION.sub("", line)
            if self.filter_no_terminal_punct and (not line.endswith(_C4_END)
                                                  or line.endswith("...")):
                count and count("c4:line_no_terminal_punct")
                continue
            if len(words) < self.min_words_per_line:
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
            if self.filter_policy and any(p in low for p in _C4_POLICY):
                count and count("c4:line_policy")
                continue
            if self.min_num_sentences != -1:
                sentences += len(split_sentences(line, self.language)) \
                    if self.split_paragraph else 1
            kept.append(line)
        if sentences < self.min_num_sentences:
            return None, "c4_quality:too_few_sentences"
        return ("\n" if self.split_paragraph else " ").join(kept).strip(), ""

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        for doc in docs:
            text, reason = self.clean(doc.text, ctx.count)
            if text is None:
                ctx.reject(doc, reason)
                continue
            doc.text = text
            yield doc
