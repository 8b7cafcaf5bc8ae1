"""One schema for every file a writer makes, whatever source each document came from.

Tools that read a folder of JSONL or Parquet files as one table (``datasets.load_dataset("json",
data_files="out/*")``, pyarrow datasets, Spark) take the columns and their types from the first
file (``datasets``: from the first 10 MB of it) and cast every other file to them. A
multi-source output, written one shard at a time, gave each source's files its own metadata
columns ("column names don't match"), a column null throughout the first file a null type
that no later string casts to, and ``1`` in one file and ``1.5`` in the next two types.

So a writer first *surveys* its input shards (:func:`survey`: every column and nested field
with the kinds of its values, cached per shard key by the runner), and :func:`plan` merges the
surveys into one schema that every shard then writes (:class:`Conformer`):

* every file has every column, and every struct every field, in one order (nulls where a
  document has none);
* each column has one type: integers beside floats are written as floats; values of kinds no
  one type holds (``1`` and ``"many"``, an object and a string, an integer over 64 bits, an
  object without fields) are each written as their JSON text;
* JSONL only (Parquet files carry their schema): a column or field that has no value near the
  start of the first file is given one there: the smallest document that has it is written
  at the top of the first file instead of in its own shard's file (:func:`plan`'s ``take``).
  No document is repeated or lost; only which file holds it changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

#: A column is taken as typed by the first file when a value of it starts within this many
#: bytes of that file (``datasets`` infers the types from the first 10 MiB).
COVERED_BYTES = 1 << 20
_SEP = "\x1f"
_I64 = 1 << 63


def _kind(v: Any) -> str | None:
    if v is None:
        return None
    t = type(v)
    if t is bool:
        return "bool"
    if t is int:
        return "int" if -_I64 <= v < _I64 else "big"
    if t is float:
        return "float"
    if t is str:
        return "str"
    if t is dict:
        return "dict"
    if t is list:
        return "list"
    return "other"


class _Survey:
    def __init__(self) -> None:
        self.columns: dict[str, dict[str, Any]] = {}
        #: path -> byte position of its first value in the shard's file
        self.first: dict[str, int] = {}
        #: path -> [row, size] of the smallest record that has a value there
        self.small: dict[str, list[int]] = {}
        self.rows = 0

    def add(self, rec: dict[str, Any], row: int, pos: int, size: int) -> None:
        for k, v in rec.items():
            self._node(self.columns.setdefault(k, {"kinds": []}), v, k, row, pos, size)

    def _node(self, node: dict[str, Any], v: Any, path: str, row: int, pos: int, size: int) -> None:
        kind = _kind(v)
        if kind is None:
            return
        if kind not in node["kinds"]:
            node["kinds"].append(kind)
        if path not in self.first:
            self.first[path] = pos
        best = self.small.get(path)
        if best is None or size < best[1]:
            self.small[path] = [row, size]
        if kind == "dict":
            fields = node.setdefault("fields", {})
            for k, x in v.items():
                self._node(
                    fields.setdefault(k, {"kinds": []}), x, f"{path}{_SEP}{k}", row, pos, size
                )
        elif kind == "list":
            item = node.setdefault("items", {"kinds": []})
            for x in v:
                self._node(item, x, f"{path}{_SEP}[]", row, pos, size)


def survey(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """What one shard's records hold: ``{"rows", "columns": {name: node}, "first", "small"}``
    (a node: ``{"kinds", "fields"?, "items"?}``; JSON-able, cached by the runner)."""
    s = _Survey()
    pos = 0
    for row, rec in enumerate(records):
        size = len(orjson.dumps(rec)) + 1
        s.add(rec, row, pos, size)
        pos += size
        s.rows = row + 1
    return {"rows": s.rows, "columns": s.columns, "first": s.first, "small": s.small}


def _merge(into: dict[str, Any], node: dict[str, Any]) -> None:
    for k in node.get("kinds", []):
        if k not in into["kinds"]:
            into["kinds"].append(k)
    for name, sub in (node.get("fields") or {}).items():
        _merge(into.setdefault("fields", {}).setdefault(name, {"kinds": []}), sub)
    if "items" in node:
        _merge(into.setdefault("items", {"kinds": []}), node["items"])


def _resolve(node: dict[str, Any]) -> Any:
    """A node's one type: ``"null" | "bool" | "int" | "float" | "str" | "json"`` or
    ``{"struct": {field: type}}`` / ``{"list": type}``."""
    kinds = set(node.get("kinds", []))
    if not kinds:
        return "null"
    if len(kinds) == 1 and kinds <= {"bool", "int", "float", "str"}:
        return next(iter(kinds))
    if kinds == {"int", "float"}:
        return "float"
    if kinds == {"dict"} and node.get("fields"):
        return {"struct": {k: _resolve(v) for k, v in node["fields"].items()}}
    if kinds == {"list"}:
        return {"list": _resolve(node.get("items") or {"kinds": []})}
    return "json"


def _needed(t: Any, path: str) -> Iterable[str]:
    """The paths that must hold a value near the start of the first file for a reader that
    infers types to see type ``t`` at ``path``."""
    if t == "null":
        return
    yield path
    if isinstance(t, dict) and "struct" in t:
        for k, sub in t["struct"].items():
            yield from _needed(sub, f"{path}{_SEP}{k}")
    elif isinstance(t, dict) and "list" in t:
        yield from _needed(t["list"], f"{path}{_SEP}[]")


def plan(
    surveys: Sequence[dict[str, Any] | None],
    names: Sequence[str],
    paths: Sequence[str],
    *,
    exemplars: bool,
) -> dict[str, Any]:
    """The schema every shard writes (``columns``: name -> type) and, with ``exemplars``
    (JSONL), the documents written at the top of the first non-empty file (``first``) instead
    of in their own: ``take`` lists ``[shard, input path, row]``, ``skip`` maps a shard to the
    rows it leaves out."""
    merged: dict[str, dict[str, Any]] = {}
    for s in surveys:
        for name, node in ((s or {}).get("columns") or {}).items():
            _merge(merged.setdefault(name, {"kinds": []}), node)
    columns = {k: _resolve(v) for k, v in merged.items()}
    out: dict[str, Any] = {"columns": columns}
    if not exemplars:
        return out
    order = sorted(range(len(names)), key=lambda i: names[i])
    nonempty = [i for i in order if (surveys[i] or {}).get("rows")]
    if not nonempty:
        return out
    first = nonempty[0]
    out["first"] = names[first]
    head = surveys[first] or {}
    chosen: dict[tuple[int, int], None] = {}
    for col, t in columns.items():
        for path in _needed(t, col):
            if head.get("first", {}).get(path, COVERED_BYTES) < COVERED_BYTES or any(
                (i, r) in chosen and _has(i, r, path, surveys) for i, r in chosen
            ):
                continue
            best: tuple[int, int, int] | None = None  # size, shard, row
            for i in order:
                got = (surveys[i] or {}).get("small", {}).get(path)
                if got and (best is None or got[1] < best[0]):
                    best = (got[1], i, got[0])
            if best is not None and best[1] != first:
                chosen[(best[1], best[2])] = None
    out["take"] = [[names[i], paths[i], r] for i, r in chosen]
    skip: dict[str, list[int]] = {}
    for i, r in chosen:
        skip.setdefault(names[i], []).append(r)
    out["skip"] = skip
    return out


def _has(i: int, r: int, path: str, surveys: Sequence[dict[str, Any] | None]) -> bool:
    """Whether row ``r`` of shard ``i`` is the smallest record there with ``path`` (a taken
    row covers every path it was recorded for)."""
    got = (surveys[i] or {}).get("small", {}).get(path)
    return bool(got) and got[0] == r


class Conformer:
    """Rewrites records to the plan's schema (every column, one type each)."""

    def __init__(self, columns: dict[str, Any]) -> None:
        self.columns = columns

    def __call__(self, rec: dict[str, Any]) -> dict[str, Any]:
        return {k: _conform(rec.get(k), t) for k, t in self.columns.items()}

    def arrow_schema(self) -> Any:
        import pyarrow as pa

        return pa.schema([pa.field(k, _arrow(t)) for k, t in self.columns.items()])


def _conform(v: Any, t: Any) -> Any:
    if v is None:
        return None
    if t == "json":
        return orjson.dumps(v, default=str).decode()
    if t == "float" and type(v) is int:
        return float(v)
    if isinstance(t, dict):
        if "struct" in t and isinstance(v, dict):
            return {k: _conform(v.get(k), sub) for k, sub in t["struct"].items()}
        if "list" in t and isinstance(v, list):
            return [_conform(x, t["list"]) for x in v]
    return v


def _arrow(t: Any) -> Any:
    import pyarrow as pa

    if isinstance(t, dict):
        if "struct" in t:
            return pa.struct([pa.field(k, _arrow(s)) for k, s in t["struct"].items()])
        return pa.list_(_arrow(t["list"]))
    return {
        "null": pa.null(),
        "bool": pa.bool_(),
        "int": pa.int64(),
        "float": pa.float64(),
        "str": pa.string(),
        "json": pa.string(),
    }[t]
