"""The unit of data: a document is text plus an id and free-form metadata.

Kept deliberately tiny (a slotted dataclass) because millions of them flow through every
stage; anything stage-specific lives in ``meta``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

#: Record keys that are not metadata when reading user files.
ID_KEY = "id"
TEXT_KEY = "text"
#: How deep a record read from a user file may nest (the record itself is level 1). Every
#: record curator writes wraps a document's metadata in at most three more levels (a rejected
#: or quarantined record: ``{"record": {"meta": {key: ...}}}``) and orjson writes at most 254:
#: a deeper record could be read but never written, and stopped the run where it was written.
MAX_NESTING = 200

_CONTAINERS = (dict, list, tuple)


@dataclass(slots=True)
class Document:
    """A document: ``id`` is the user's id, kept end to end; ``meta`` holds everything else."""

    id: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str | None:
        """The source this document came from (set by source stages), used for blending."""
        return self.meta.get("source")

    def to_record(self) -> dict[str, Any]:
        """Internal shard record (lossless): ``{"id", "text", "meta"}``."""
        return {"id": self.id, "text": self.text, "meta": self.meta}

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> Document:
        return cls(rec["id"], rec["text"], rec.get("meta") or {})

    def to_flat(self) -> dict[str, Any]:
        """User-facing record: metadata fields sit beside ``id`` and ``text``.

        A metadata field named ``id`` or ``text`` (a record read with ``id_field: doc_id`` or
        ``text_field: content`` keeps its own ``id``/``text`` columns in meta) is written as
        ``meta_id`` / ``meta_text`` (``meta_`` repeated while the name is taken), so that no
        field of the input is lost from the output."""
        out: dict[str, Any] = {ID_KEY: self.id, TEXT_KEY: self.text}
        for k, v in self.meta.items():
            if k in (ID_KEY, TEXT_KEY):
                k = f"meta_{k}"
                while k in self.meta or k in out:
                    k = f"meta_{k}"
            out[k] = v
        return out

    @classmethod
    def from_flat(
        cls, rec: dict[str, Any], *, id_field: str = ID_KEY, text_field: str = TEXT_KEY,
        default_id: str | None = None,
        depth_bound: int | Callable[[], int | None] | None = None,
        metadata_field: str | None = None,
    ) -> Document:
        """Build from a user record; raises ``ValueError`` with a reason if it is not usable.

        The id rule: ids are strings. A number becomes its text (``1`` and ``"1"`` are the same
        id, ``1.5`` is ``"1.5"``); a missing or ``null`` id gets ``default_id``; any other
        type (object, list, boolean) is not an id and the record is rejected.

        A record nesting deeper than :data:`MAX_NESTING` is rejected here, where every reader
        quarantines with the record's file and line, instead of where it is written.
        Only fields holding lists or objects are walked; ``depth_bound``, a depth the caller
        knows the record cannot exceed (the brackets of its JSON line, its Arrow schema's
        depth) or a function computing it, skips the walk when it is within the limit (a flat
        list of 768 floats costs 50 us to walk, its line's brackets 5 us to count).

        ``metadata_field``: a field holding an object (or its JSON text) whose fields become
        metadata beside the record's other fields, which win on a clash: datatrove writes
        ``{"text", "id", "metadata": {"source", "url", ...}}``, and kept as one opaque field its
        ``source`` was never seen."""
        if not isinstance(rec, dict):
            raise ValueError(f"record is a {type(rec).__name__}, not an object")
        text = rec.get(text_field)
        if not isinstance(text, str):
            raise ValueError(f"field '{text_field}' is missing or not a string")
        raw_id = rec.get(id_field)
        kind = type(raw_id)
        if kind is not str:
            if raw_id is None:
                raw_id = default_id
                if raw_id is None:
                    raise ValueError(f"field '{id_field}' is missing")
            elif kind is int or kind is float:  # not bool: type(True) is bool
                raw_id = str(raw_id)
            else:
                raise ValueError(f"field '{id_field}' is a {kind.__name__}, not a string "
                                 "or a number")
        meta = {k: v for k, v in rec.items() if k not in (id_field, text_field)}
        lifted = False
        if metadata_field is not None and metadata_field in meta:
            inner = meta[metadata_field]
            if isinstance(inner, str) and inner.startswith("{"):
                try:
                    inner = orjson.loads(inner)
                    lifted = True  # from text: no caller's bound covers what it holds
                except orjson.JSONDecodeError:
                    pass
            if isinstance(inner, dict):
                del meta[metadata_field]
                meta = {**{k: v for k, v in inner.items() if k not in (id_field, text_field)},
                        **meta}
        nested = [v for v in meta.values() if isinstance(v, _CONTAINERS)]
        if nested:
            bound = None if lifted else (depth_bound() if callable(depth_bound) else depth_bound)
            if (bound is None or bound > MAX_NESTING) and too_deep(nested):
                raise ValueError(f"nested deeper than {MAX_NESTING} levels")
        return cls(raw_id, text, meta)


def too_deep(values: Any, limit: int = MAX_NESTING) -> bool:
    """Whether values at level 2 of a record (a record's fields) hold containers nested past
    level ``limit``. Iterative and stops at the limit: any depth (cycles too) costs at most
    the containers above the limit, never Python's recursion limit."""
    stack = [(v, 2) for v in values if isinstance(v, _CONTAINERS)]
    while stack:
        value, level = stack.pop()
        if level > limit:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((c, level + 1) for c in children if isinstance(c, _CONTAINERS))
    return False


def meta_value(meta: dict[str, Any], path: str) -> Any:
    """``meta[path]``, or nested ``meta[a][b]`` for ``a.b`` when ``path`` itself is not a key
    (signal names such as ``gopher_quality:word_count`` contain no dots); ``None`` when missing.
    Shared by every family that reads a signal stored earlier (``select``, ``quality_buckets``,
    ``fuzzy_dedup``'s ``score_field``, ``megatron_shards``' ``bucket_field``)."""
    if path in meta:
        return meta[path]
    cur: Any = meta
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur
