"""``cc_index``: targeted Common Crawl. Filter Common Crawl's columnar URL index (Parquet) with
a small SQL-like ``where``, then fetch only the chosen WARC records with HTTP Range requests and
extract them exactly as ``read_warc`` does (:mod:`curator.acquire.warc_pages`).

Why this shape: a snapshot is ~90,000 WARC files of ~1 GB, and a targeted corpus (one domain,
one language) needs a few records of each. The index is scanned column-wise with the filter
pushed into the Parquet reader (row groups whose statistics exclude the filter are never read),
so only the chosen rows' four location columns reach memory. Records are fetched by byte range;
records of the same WARC file that lie close together (see :data:`MERGE_GAP_KB`) are fetched by
one request, and each such *range group* is one shard: a rerun after a crash reuses the groups
that finished. ``where`` is parsed by the small grammar below, never evaluated as Python.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from curator.acquire.base import DownloadParams
from curator.acquire.download import listed_url
from curator.acquire.warc import CC_BASE_URL, MAX_MEMBER_BYTES, member_records
from curator.acquire.warc_pages import WarcExtracting, WarcParams
from curator.base.errors import ConfigError, InputError
from curator.base.redact import redact
from curator.core.context import ShardContext, StageContext
from curator.core.stage import ShardSpec
from curator.storage.paths import expand_paths

#: Two records of one WARC file are fetched by one request when at most this many KiB lie
#: between them (the bytes in between are fetched and thrown away: 64 KiB is about three
#: average Common Crawl records, far cheaper than a second round trip to S3).
MERGE_GAP_KB = 64
#: A range group (one request, one shard) spans at most this many MiB.
MAX_GROUP_MB = 16

#: The index columns a shard's location is read from.
LOCATION = ("warc_filename", "warc_record_offset", "warc_record_length")


class CcIndex(WarcExtracting):
    """Fetch the Common Crawl records a filter over the columnar index chooses, by byte range,
    and extract their HTML main text."""

    name = "cc_index"

    class Params(DownloadParams, WarcParams):
        index: str | list[str]
        """Parquet files of Common Crawl's columnar index: paths, globs or URLs (columns
        `url`, `url_host_registered_domain`, `content_mime_detected`, `content_languages`,
        `fetch_status`, `warc_filename`, `warc_record_offset`, `warc_record_length`)."""
        where: str | None = None
        """Which records: a SQL-like filter over the index's columns (`=`, `!=`, `<`, `<=`,
        `>`, `>=`, `IN (...)`, `LIKE` with `%` and `_`, `IS [NOT] NULL`, `AND`, `OR`, `NOT`,
        parentheses); none: every record of the index."""
        base_url: str = CC_BASE_URL + "/"
        """Where the index's `warc_filename` paths resolve (a mirror, `s3://commoncrawl`
        with `storage_options`, or a local folder)."""
        merge_gap_kb: Annotated[int, Field(ge=0)] = MERGE_GAP_KB
        """Records of one WARC file at most this many KiB apart are fetched by one request."""
        max_group_mb: Annotated[float, Field(gt=0)] = MAX_GROUP_MB
        """A range group (one request, one shard) spans at most this many MiB."""

    def setup(self) -> None:
        self.setup_extraction()
        self.filter = parse_where(self.where, f"{self.name}.where") if self.where else None

    def source_name(self, ctx: StageContext) -> str:
        return self.source or "common_crawl"

    def specs(self, ctx: StageContext) -> list[dict[str, Any]]:
        rows = self._chosen(ctx)
        out = []
        for g in group_ranges(rows, self.merge_gap_kb * 1024, int(self.max_group_mb * 1024 * 1024)):
            url = listed_url(self.base_url, g.filename, self._index_name())
            end = g.start + g.length
            out.append(
                {
                    "url": url,
                    "rel": f"{g.filename.strip()}.{g.start}-{end}",
                    "range": [g.start, g.length],
                    "records": g.records,
                    "verify": "none",
                }
            )
        return out

    def _index_name(self) -> str:
        return self.index if isinstance(self.index, str) else ", ".join(self.index)

    def _chosen(self, ctx: StageContext) -> list[tuple[str, int, int]]:
        """``(warc_filename, offset, length)`` of every index row ``where`` keeps, read
        batch by batch with the filter pushed into the Parquet scan."""
        import pyarrow.dataset as ds

        what = f"{ctx.stage_id}.index"
        files = expand_paths(self.index, self.storage_options, what)
        try:
            if all("://" not in f for f in files):
                data = ds.dataset(files, format="parquet")
            else:
                import fsspec
                from pyarrow.fs import FSSpecHandler, PyFileSystem

                fs, _ = fsspec.core.url_to_fs(files[0], **(self.storage_options or {}))
                data = ds.dataset(
                    [fs._strip_protocol(f) for f in files],
                    format="parquet",
                    filesystem=PyFileSystem(FSSpecHandler(fs)),
                )
        except Exception as e:
            raise InputError(
                f"{what}: '{redact(files[0])}' is not a readable Parquet index: "
                f"{type(e).__name__}: {e}"
            ) from None
        schema = data.schema
        missing = [c for c in LOCATION if c not in schema.names]
        if missing:
            raise InputError(
                f"{what}: '{redact(files[0])}' has no column "
                f"{', '.join(missing)} (is it Common Crawl's columnar index?)"
            )
        expr = self.filter.compile(schema, f"{ctx.stage_id}.where") if self.filter else None
        rows: list[tuple[str, int, int]] = []
        try:
            for batch in data.to_batches(
                columns=list(LOCATION), filter=expr, batch_readahead=4, fragment_readahead=2
            ):
                cols = [batch.column(c).to_pylist() for c in LOCATION]
                rows.extend(zip(*cols, strict=True))
        except Exception as e:
            raise InputError(
                f"{what}: reading the index failed: {type(e).__name__}: "
                f"{redact(str(e)).splitlines()[0] if str(e) else ''}"
            ) from None
        if not rows:
            raise InputError(
                f"{ctx.stage_id}.where: no row of {redact(self._index_name())} matches"
                if self.where
                else f"{what}: the index has no rows"
            )
        for name, off, length in rows:
            if not isinstance(name, str) or off is None or length is None or off < 0 or length <= 0:
                raise InputError(
                    f"{what}: a chosen row has no usable location "
                    f"({name!r}, offset {off!r}, length {length!r})"
                )
        return rows

    def shard_records(self, shard: ShardSpec, path: str, ctx: ShardContext) -> Iterator[Any]:
        url = shard.data["url"]
        recs = [(int(o), int(n)) for o, n in shard.data["records"]]
        ctx.count("cc_index_records", len(recs))
        cap = max(MAX_MEMBER_BYTES, 2 * self.max_bytes + (1 << 20))
        members = _chosen_members(path, int(shard.data["range"][0]), recs, url, cap, ctx)
        return member_records(members, url, ctx, cap, self.reader)


def _chosen_members(
    path: str, start: int, recs: list[tuple[int, int]], url: str, cap: int, ctx: ShardContext
) -> Iterator[tuple[int, bytes, bool]]:
    """``(offset in the WARC file, record bytes, True)`` of each chosen record of a fetched
    range group (``path`` holds the WARC's bytes from ``start``): each Common Crawl record is
    one gzip member, inflated here in at most ``cap`` bytes; the bytes between chosen records
    are never inflated. A member that is corrupt, too large or cut by the index's length is
    quarantined with the WARC's URL and offset."""
    with open(path, "rb") as f:
        for off, length in recs:
            f.seek(off - start)
            raw = f.read(length)
            d = zlib.decompressobj(wbits=31)
            try:
                data = d.decompress(raw, cap + 1)
            except zlib.error as e:
                ctx.quarantine(b"", f"corrupt gzip member: {e}", file=url, offset=off)
                ctx.count("warc_corrupt_members")
                continue
            if len(data) > cap or d.unconsumed_tail:
                ctx.quarantine(
                    b"", f"record inflates to more than {cap} bytes", file=url, offset=off
                )
                ctx.count("warc_oversized_records")
                continue
            if not d.eof:
                ctx.quarantine(
                    b"",
                    "truncated gzip member (the index's length ends inside the record)",
                    file=url,
                    offset=off,
                )
                continue
            yield off, data, True


# -- range groups ---------------------------------------------------------------------------------


@dataclass
class RangeGroup:
    """Records of one WARC file fetched by one Range request: ``[start, start + length)``."""

    filename: str
    start: int
    length: int
    records: list[list[int]]  # [offset, length], in file order


def group_ranges(rows: list[tuple[str, int, int]], gap: int, max_span: int) -> list[RangeGroup]:
    """Records sorted by file and offset (duplicates once), then merged into groups: the next
    record of the same file joins the current group when at most ``gap`` bytes lie between the
    group's end and the record, and the group then spans at most ``max_span`` bytes (a single
    larger record is a group of its own). The order is fixed by the rows alone, so a rerun
    names the same groups the same shards."""
    groups: list[RangeGroup] = []
    cur: RangeGroup | None = None
    for name, off, length in sorted(set(rows)):
        end = off + length
        if (
            cur is not None
            and cur.filename == name
            and off - (cur.start + cur.length) <= gap
            and max(end, cur.start + cur.length) - cur.start <= max_span
        ):
            cur.length = max(end, cur.start + cur.length) - cur.start
            cur.records.append([off, length])
            continue
        cur = RangeGroup(name, off, length, [[off, length]])
        groups.append(cur)
    return groups


# -- the where language ---------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<str>'(?:[^']|'')*')
  | (?P<num>-?\d+(?:\.\d+)?)
  | (?P<op><=|>=|!=|<>|=|<|>)
  | (?P<punct>[(),])
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
)""",
    re.VERBOSE,
)
_KEYWORDS = {"AND", "OR", "NOT", "IN", "LIKE", "IS", "NULL"}


@dataclass(frozen=True)
class _Tok:
    kind: str  # str num op punct word kw end
    value: Any
    pos: int  # 0-based character position in the expression


class Where:
    """A parsed ``where``: a tree of tuples, compiled against the index's schema into a
    :mod:`pyarrow.dataset` expression."""

    def __init__(self, tree: tuple[Any, ...], text: str) -> None:
        self.tree, self.text = tree, text

    def compile(self, schema: Any, key: str = "where") -> Any:
        return _compile(self.tree, schema, key)


class WhereError(ConfigError):
    """A ``where`` that does not parse or does not fit the index."""


def _fail(key: str, pos: int, msg: str) -> WhereError:
    return WhereError(f"{key}: {msg} (at character {pos + 1})")


def _tokens(text: str, key: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            out.append(_Tok("end", None, pos))
            return out
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _fail(key, pos, f"unexpected {text[pos]!r}")
        at = m.start(m.lastgroup or 0)
        kind = m.lastgroup or ""
        val: Any = m.group(kind)
        if kind == "str":
            val = val[1:-1].replace("''", "'")
        elif kind == "num":
            val = float(val) if "." in val else int(val)
        elif kind == "word" and val.upper() in _KEYWORDS:
            kind, val = "kw", val.upper()
        elif kind == "op" and val == "<>":
            val = "!="
        out.append(_Tok(kind, val, at))
        pos = m.end()


def parse_where(text: str, key: str = "where") -> Where:
    """Parse ``text`` (a :class:`WhereError` naming ``key`` and the character on error).

    Grammar (keywords in any case)::

        expr  := and ("OR" and)*          and := not ("AND" not)*
        not   := "NOT" not | "(" expr ")" | test
        test  := column op literal | column ["NOT"] "IN" "(" literal ("," literal)* ")"
               | column ["NOT"] "LIKE" string | column "IS" ["NOT"] "NULL"
        op    := = | != | <> | < | <= | > | >=        literal := 'string' | number
    """
    toks = _tokens(text, key)
    i = 0

    def peek() -> _Tok:
        return toks[i]

    def take() -> _Tok:
        nonlocal i
        t = toks[i]
        i += 1
        return t

    def expect(kind: str, value: Any, what: str) -> _Tok:
        t = take()
        if t.kind != kind or (value is not None and t.value != value):
            raise _fail(key, t.pos, f"expected {what}, found {_show(t)}")
        return t

    def literal() -> tuple[str, Any, int]:
        t = take()
        if t.kind not in ("str", "num"):
            raise _fail(key, t.pos, f"expected a 'string' or a number, found {_show(t)}")
        return t.kind, t.value, t.pos

    def p_or() -> tuple[Any, ...]:
        node = p_and()
        while peek().kind == "kw" and peek().value == "OR":
            take()
            node = ("or", node, p_and())
        return node

    def p_and() -> tuple[Any, ...]:
        node = p_not()
        while peek().kind == "kw" and peek().value == "AND":
            take()
            node = ("and", node, p_not())
        return node

    def p_not() -> tuple[Any, ...]:
        t = peek()
        if t.kind == "kw" and t.value == "NOT":
            take()
            return ("not", p_not())
        if t.kind == "punct" and t.value == "(":
            take()
            node = p_or()
            expect("punct", ")", "')'")
            return node
        return p_test()

    def p_test() -> tuple[Any, ...]:
        col = take()
        if col.kind != "word":
            raise _fail(key, col.pos, f"expected a column name, found {_show(col)}")
        t = take()
        negate = False
        if t.kind == "kw" and t.value == "NOT":
            negate = True
            t = take()
            if not (t.kind == "kw" and t.value in ("IN", "LIKE")):
                raise _fail(key, t.pos, f"expected IN or LIKE after NOT, found {_show(t)}")
        if t.kind == "op":
            node: tuple[Any, ...] = ("cmp", t.value, col.value, col.pos, literal())
        elif t.kind == "kw" and t.value == "IN":
            expect("punct", "(", "'(' after IN")
            items = [literal()]
            while peek().kind == "punct" and peek().value == ",":
                take()
                items.append(literal())
            expect("punct", ")", "',' or ')'")
            node = ("in", col.value, col.pos, items)
        elif t.kind == "kw" and t.value == "LIKE":
            pat = take()
            if pat.kind != "str":
                raise _fail(key, pat.pos, f"LIKE needs a 'pattern', found {_show(pat)}")
            node = ("like", col.value, col.pos, pat.value)
        elif t.kind == "kw" and t.value == "IS":
            neg = peek().kind == "kw" and peek().value == "NOT"
            if neg:
                take()
            expect("kw", "NULL", "NULL")
            return ("null", col.value, col.pos, neg)
        else:
            raise _fail(
                key,
                t.pos,
                f"expected a comparison, IN, LIKE or IS after '{col.value}', found {_show(t)}",
            )
        return ("not", node) if negate else node

    tree = p_or()
    end = peek()
    if end.kind != "end":
        raise _fail(key, end.pos, f"unexpected {_show(end)}")
    return Where(tree, text)


def _show(t: _Tok) -> str:
    if t.kind == "end":
        return "the end"
    if t.kind == "str":
        return repr(t.value)
    return str(t.value)


def _compile(node: tuple[Any, ...], schema: Any, key: str) -> Any:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    op = node[0]
    if op in ("and", "or"):
        a, b = _compile(node[1], schema, key), _compile(node[2], schema, key)
        return (a & b) if op == "and" else (a | b)
    if op == "not":
        return ~_compile(node[1], schema, key)
    if op == "cmp":
        _, rel, col, pos, lit = node
        typ = _column(schema, col, pos, key)
        value = _value(typ, lit, col, key)
        f = ds.field(col)
        return {
            "=": f == value,
            "!=": f != value,
            "<": f < value,
            "<=": f <= value,
            ">": f > value,
            ">=": f >= value,
        }[rel]
    if op == "in":
        _, col, pos, items = node
        typ = _column(schema, col, pos, key)
        return ds.field(col).isin([_value(typ, it, col, key) for it in items])
    if op == "like":
        _, col, pos, pattern = node
        typ = _column(schema, col, pos, key)
        if _kind(typ) != "str":
            raise _fail(key, pos, f"LIKE needs a text column; '{col}' is {typ}")
        return pc.match_like(ds.field(col), pattern)
    _, col, pos, neg = node  # null
    _column(schema, col, pos, key)
    e = ds.field(col).is_null()
    return ~e if neg else e


def _column(schema: Any, col: str, pos: int, key: str) -> Any:
    if col not in schema.names:
        raise _fail(key, pos, f"the index has no column '{col}' (it has {', '.join(schema.names)})")
    return schema.field(col).type


def _kind(typ: Any) -> str:
    import pyarrow as pa

    if (
        pa.types.is_string(typ)
        or pa.types.is_large_string(typ)
        or pa.types.is_string_view(typ)
        or pa.types.is_dictionary(typ)
    ):
        return "str"
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        return "num"
    return str(typ)


def _value(typ: Any, lit: tuple[str, Any, int], col: str, key: str) -> Any:
    kind, value, pos = lit
    have = _kind(typ)
    if have != kind:
        want = "a 'string'" if have == "str" else "a number" if have == "num" else str(typ)
        raise _fail(key, pos, f"'{col}' is {typ}: compare it with {want}, not {value!r}")
    return value
