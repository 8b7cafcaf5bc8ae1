"""A pre-token cache in front of a byte-level BPE tokenizer: the same ids as ``tokenizers``,
several times faster on ASCII text.

``tokenizers`` spends most of its time not in BPE merges but in building a ``NormalizedString``
with character alignments for every pre-token of every document. For GPT-2 style byte-level
BPE (no normalizer, the ``ByteLevel`` pre-tokenizer with its regex and no prefix space) the ids
of a document are the concatenation, over the pre-tokens the GPT-2 regex finds, of the BPE
model's ids for that pre-token. On ASCII text that regex is an ordinary ``re`` pattern
(``\\p{L}`` is ``[A-Za-z]``, ``\\p{N}`` is ``[0-9]``, ``\\s`` is ``[ \\t\\n\\v\\f\\r]``), so this
module splits with ``re`` and looks each pre-token up in a dict, asking the tokenizer's own
BPE model (``model.tokenize``) only for pre-tokens it has not seen.

Only used where that equality holds: the tokenizer's JSON must have exactly that normalizer,
pre-tokenizer and post-processor and a BPE model without dropout (:func:`pretoken_cache`);
a document that is not ASCII or contains an added token's text goes through ``tokenizers``.
Tests compare both on fuzzed ASCII text.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

#: GPT-2's pre-tokenizer regex restricted to ASCII (``re.ASCII``: ``\s`` is [ \t\n\r\f\v]).
_GPT2_ASCII = re.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""",
    re.ASCII)
#: Pre-tokens kept before the cache is emptied (bounded memory; ~50 MB at the cap).
MAX_ENTRIES = 1 << 18


def _byte_level_ascii() -> dict[int, str]:
    """GPT-2's byte -> printable character map, for the 128 ASCII bytes."""
    keep = list(range(ord("!"), ord("~") + 1))
    out = {b: chr(b) for b in keep}
    n = 0
    for b in range(256):
        if b not in out and not (0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF):
            if b < 128:
                out[b] = chr(256 + n)
            n += 1
    return out


_TRANS = str.maketrans({chr(b): c for b, c in _byte_level_ascii().items()})


class PreTokenCache(dict):
    """``pre-token -> tuple of ids``, filled by the BPE model on a miss."""

    def __init__(self, model: Any, added: Sequence[str]) -> None:
        super().__init__()
        self.model = model
        self.added = re.compile("|".join(map(re.escape, added))) if added else None

    def __missing__(self, piece: str) -> tuple[int, ...]:
        if len(self) >= MAX_ENTRIES:
            self.clear()
        ids = tuple(t.id for t in self.model.tokenize(piece.translate(_TRANS)))
        self[piece] = ids
        return ids

    def eligible(self, text: str) -> bool:
        """Whether ``text`` may take the cached path (ASCII, no added token in it)."""
        return text.isascii() and (self.added is None or self.added.search(text) is None)

    def encode_flat(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """All ids of eligible ``texts`` back to back (int64) and each text's count."""
        pieces = [_GPT2_ASCII.findall(t) for t in texts]
        ids = list(map(self.__getitem__, itertools.chain.from_iterable(pieces)))
        per_piece = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
        csum = np.concatenate(([0], np.cumsum(per_piece)))
        doc_end = csum[ends]
        lens = np.diff(doc_end, prepend=0)
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64,
                           count=int(doc_end[-1]) if len(doc_end) else 0)
        return flat, lens


def pretoken_cache(tok: Any) -> PreTokenCache | None:
    """A cache for ``tok`` (a ``tokenizers.Tokenizer``) when its pipeline is GPT-2 byte-level
    BPE as described above, else None."""
    try:
        cfg = json.loads(tok.to_str())
    except Exception:
        return None
    pre, model = cfg.get("pre_tokenizer") or {}, cfg.get("model") or {}
    post = cfg.get("post_processor")
    if (cfg.get("normalizer") is not None or cfg.get("truncation") is not None
            or cfg.get("padding") is not None
            or pre.get("type") != "ByteLevel" or pre.get("add_prefix_space", True)
            or not pre.get("use_regex", True)
            or (post is not None and post.get("type") != "ByteLevel")
            or model.get("type") != "BPE" or model.get("dropout") not in (None, 0, 0.0)):
        return None
    added = [t["content"] for t in cfg.get("added_tokens") or [] if t.get("content")]
    return PreTokenCache(tok.model, added)
