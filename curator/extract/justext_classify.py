"""jusText's paragraph classification, as trafilatura calls it, with each paragraph's text built
once.

trafilatura's ``fast=False`` comparison (``external.try_justext``, the ratio rerun on about one
page in ten) classifies every paragraph of the page with ``justext.core.classify_paragraphs``.
That function reads ``Paragraph.text`` (a property: join the paragraph's text nodes, strip,
normalise whitespace with a regex callback) seven times a paragraph: ``len(paragraph)``,
``words_count`` twice and ``stopwords_count`` through ``stopwords_density``, ``links_density``,
and the two copyright tests. :func:`classify_paragraphs` is that function with the text read
once and the density formulas of ``Paragraph`` written over it (``stopwords_count /
words_count``, 0 without words; ``chars_count_in_links / len(text)``, 0 without text): nothing
writes a paragraph's text nodes during the classification, so every read gave the same string.
The stop list's frozen set is remembered for the tuple trafilatura passes each time
(:func:`_defined`).

The argument holds for one text of jusText only: :func:`install` replaces
``trafilatura.external.classify_paragraphs`` when it is jusText's function and the SHA-256 of the
sources of ``classify_paragraphs`` and ``Paragraph`` is :data:`SOURCE_SHA256` (jusText 3.0.2);
any other source keeps jusText's function. :func:`stock` puts it back inside a block. Same
classes as jusText's own function: tests/extract/test_justext_classify.py.
"""

from __future__ import annotations

import inspect
from contextlib import AbstractContextManager
from typing import Any

from curator.extract.twins import Swap, sha256

#: SHA-256 of :func:`_source` for jusText 3.0.2.
SOURCE_SHA256 = "eb81a98cc9d6963c64df6a993b647626d2681eaef267134f8dea25059b2db356"


def _source() -> str:
    """What the twin's argument reads: jusText's classification and its paragraph class."""
    import justext.core as core
    import justext.paragraph as paragraph

    return inspect.getsource(core.classify_paragraphs) + inspect.getsource(paragraph.Paragraph)


def classify_paragraphs(paragraphs: list[Any], stoplist: Any, length_low: int = 70,
                        length_high: int = 200, stopwords_low: float = 0.30,
                        stopwords_high: float = 0.32, max_link_density: float = 0.2,
                        no_headings: bool = False) -> None:
    "Context-free paragraph classification."
    stoplist = _defined(stoplist)
    for paragraph in paragraphs:
        text = paragraph.text
        length = len(text)
        words = text.split()
        n_words = len(words)
        stopword_density = (sum(w.lower() in stoplist for w in words) / n_words
                            if n_words else 0)
        link_density = paragraph.chars_count_in_links / length if length else 0
        paragraph.heading = bool(not no_headings and paragraph.is_heading)

        # jusText's branches as jusText writes them (so the two read side by side)
        if link_density > max_link_density:  # noqa: SIM114
            paragraph.cf_class = "bad"
        elif ("\xa9" in text) or ("&copy" in text):  # noqa: SIM114
            paragraph.cf_class = "bad"
        elif "select" in paragraph.dom_path:
            paragraph.cf_class = "bad"
        elif length < length_low:
            if paragraph.chars_count_in_links > 0:
                paragraph.cf_class = "bad"
            else:
                paragraph.cf_class = "short"
        elif stopword_density >= stopwords_high:
            if length > length_high:
                paragraph.cf_class = "good"
            else:
                paragraph.cf_class = "neargood"
        elif stopword_density >= stopwords_low:
            paragraph.cf_class = "neargood"
        else:
            paragraph.cf_class = "bad"


#: the stop list given last and jusText's ``define_stoplist`` of it
_LAST: tuple[Any, frozenset[str]] | None = None


def _defined(stoplist: Any) -> frozenset[str]:
    """``define_stoplist(stoplist)``, remembered for the object given last: trafilatura passes
    the same tuple of all jusText's stop words (154,484 of them) on every call, and the
    ``lru_cache`` of ``define_stoplist`` hashed that tuple again each time (~0.8 ms). Only
    for tuples and frozensets: their words cannot change while the object lives."""
    global _LAST
    last = _LAST
    if last is not None and last[0] is stoplist:
        return last[1]
    from justext.core import define_stoplist

    defined = define_stoplist(stoplist)
    if isinstance(stoplist, (tuple, frozenset)):
        _LAST = (stoplist, defined)
    return defined


_SWAP = Swap("trafilatura.external", {"classify_paragraphs": classify_paragraphs})


def _checked(source: str | None) -> bool:
    import justext.core as core
    import trafilatura.external as external

    return (external.classify_paragraphs is core.classify_paragraphs
            and sha256(source or _source()) == SOURCE_SHA256)


def install(source: str | None = None) -> bool:
    """Use :func:`classify_paragraphs` in ``trafilatura.external`` when jusText's source (or
    ``source``) is the text it was written for; True when it is in place."""
    return _SWAP.install(lambda: _checked(source))


def stock() -> AbstractContextManager[None]:
    """jusText's own ``classify_paragraphs`` inside the block."""
    return _SWAP.stock()
