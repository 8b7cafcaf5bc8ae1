"""Text utilities shared by stages: sentence and word splitting that work beyond English."""

from curator.text.sentences import split_sentences
from curator.text.words import split_words

__all__ = ["split_sentences", "split_words"]
