"""JSONL in and out: ``read_jsonl`` (a source) and ``write_jsonl`` (a writer that passes its
input through).

Large uncompressed files are split into byte-range shards so one huge file is read by many
workers; a line belongs to the shard in which its first byte lies. A malformed line is
quarantined with its file, line and byte offset, and the rest of the shard goes on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from typing import Annotated, Any, Literal

import fsspec
import orjson
from pydantic import Field

from curator.base.document import MAX_NESTING, Document
from curator.base.errors import InputError
from curator.base.urls import distinct, public_basename, public_url
from curator.core.context import ShardContext, StageContext
from curator.core.params import PositiveFloat, StageParams
from curator.core.stage import DocumentPaths, OutputDir, ShardSpec, ShardStage, Source
from curator.io import schema
from curator.storage import read_position
from curator.storage.atomic import compression_of, open_compressed_read, open_compressed_write
from curator.storage.encoding import is_utf8, sniff, utf8_stream
from curator.storage.limits import TOO_LARGE, iter_capped_lines, line_reader
from curator.storage.paths import expand_paths

CORRUPT_STREAM_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, ValueError)
try:  # zstandard raises its own error type for corrupt frames
    import zstandard

    CORRUPT_STREAM_ERRORS += (zstandard.ZstdError,)
except ImportError:  # pragma: no cover
    pass


class ReadJsonl(Source):
    """Read documents from JSONL files (.jsonl, .jsonl.gz, .jsonl.zst, .jsonl.bz2) via fsspec.

    Conventions (see docs/io.md): a UTF-8 byte order mark at the start of a file is ignored;
    ids are strings (a number becomes its decimal text, so ``1`` and ``"1"`` are the same id);
    a missing or ``null`` id gets the default ``<file name>:<byte offset>``; ids seen twice in
    one source are counted (``duplicate_ids``) and kept unless ``ids: rewrite``; an explicit
    ``source`` overrides a record's own ``source`` field. A line longer than ``max_doc_mb`` is
    skipped while it streams and quarantined as ``too_large``.
    """

    name = "read_jsonl"

    class Params(StageParams):
        paths: DocumentPaths | list[DocumentPaths]
        """A path, glob or URL, or a list of them."""
        text_field: str = "text"
        """Field holding the text."""
        id_field: str = "id"
        """Field holding the id; when missing or `null`, the id is `<file name>:<byte offset>` (see
        [the id rule](#ids-sources-and-the-size-cap))."""
        source: str | None = None
        """Written to `meta.source` (used for blending per source, classifier labels, Megatron
        grouping). **When given it wins** over a record's own `source` field; when not given, a
        record's own `source` is kept and the stage id fills in where there is none."""
        shard_size_mb: Annotated[float, Field(ge=0)] = 64.0
        """Uncompressed files larger than this are split into byte-range shards, so one big file is
        read by many workers; each line belongs to the shard holding its first byte."""
        storage_options: dict[str, Any] | None = None
        """Passed to fsspec (credentials, endpoints)."""
        ids: Literal["keep", "rewrite"] = "keep"
        """`rewrite`: every id becomes `<source>/<file>:<byte offset>` (`<file>` relative to the
        folder shared by all matched files), unique by construction; the record's id is kept in
        `meta.original_id`."""
        metadata_field: str | None = "metadata"
        """A field holding an object (datatrove's layout: `{"text", "id", "metadata": {...}}`) whose
        fields become the document's metadata, beside the record's other fields (which win on a
        clash); `null` keeps it as one field."""
        max_doc_mb: PositiveFloat | None = None
        """This reader's own cap on one line; `null`: the pipeline's `max_doc_mb` (default 32)."""

    def setup(self) -> None:
        self.shard_size = int(self.shard_size_mb * 1024 * 1024)
        self.storage_options = self.storage_options or {}

    def shards(self, ctx: StageContext) -> list[ShardSpec]:
        files = expand_paths(self.paths, self.storage_options, f"{ctx.stage_id}.paths")
        rels = relative_names(files)
        specs: list[ShardSpec] = []
        for path, rel in zip(files, rels, strict=True):
            size = None
            if compression_of(path) is None and self.shard_size > 0:
                fs, _, (p,) = fsspec.get_fs_token_paths(path, storage_options=self.storage_options)
                size = fs.size(p)
            if size is not None and size > self.shard_size and not _utf8_file(
                    fs, p):  # UTF-16/32: byte ranges would cut characters; one shard
                size = None
            if size is None or size <= self.shard_size:
                specs.append(ShardSpec(ctx.shard_name(len(specs)), {"path": path, "rel": rel}))
                continue
            for start in range(0, size, self.shard_size):
                specs.append(ShardSpec(ctx.shard_name(len(specs)), {
                    "path": path, "rel": rel, "start": start,
                    "end": min(start + self.shard_size, size)}))
        return specs

    def read(self, shard: ShardSpec, ctx: ShardContext) -> Iterator[Document]:
        path = shard.data["path"]
        base = public_basename(path)  # ids never hold a URL's credentials or query
        rel = shard.data.get("rel", base)
        source = self.source or ctx.stage_id
        explicit = self.source is not None
        rewrite = self.ids == "rewrite"
        cap = ctx.doc_cap(self.max_doc_mb)
        for lineno, offset, line in iter_lines(path, ctx, shard.data.get("start"),
                                               shard.data.get("end"), self.storage_options,
                                               cap=cap):
            if line is None:
                continue  # over the cap: iter_lines quarantined it
            if not line.strip():
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                # orjson stops at 1,024 levels: the reason deeper records get at any depth
                reason = TOO_DEEP if "depth limit" in str(e) else "invalid JSON"
                ctx.quarantine(line, reason, detail=str(e), file=path, line=lineno,
                               offset=offset)
                continue
            try:
                doc = Document.from_flat(rec, id_field=self.id_field, text_field=self.text_field,
                                         default_id=f"{base}:{offset}",
                                         depth_bound=partial(_brackets, line),
                                         metadata_field=self.metadata_field)
            except ValueError as e:
                ctx.quarantine(line, str(e), file=path, line=lineno, offset=offset)
                continue
            if type(rec.get(self.id_field)) is float:
                doc.id = str(_exact_id(rec[self.id_field], line, self.id_field))
            if rewrite:
                doc.meta["original_id"] = doc.id
                doc.id = f"{source}/{rel}:{offset}"
            if explicit or doc.meta.get("source") is None:
                set_source(doc, source, explicit, ctx)
            yield doc


TOO_DEEP = f"nested deeper than {MAX_NESTING} levels"


def _brackets(line: bytes) -> int:
    """How deep the JSON text ``line`` can nest at most."""
    return line.count(b"[") + line.count(b"{")


def _exact_id(value: float, line: bytes, id_field: str) -> Any:
    """A numeric id of 2**64 or more as the integer it was written as: orjson reads an integer
    over 64 bits as a float, so ``123456789012345678901234`` became the id
    ``"1.2345678901234568e+22"``, the same id as its neighbours. The standard library's parse
    keeps it exact (the line is valid JSON: orjson read it). Metadata keeps orjson's float:
    the shard files cannot hold a bigger integer."""
    if -_HUGE < value < _HUGE:
        return value
    import json

    return json.loads(line).get(id_field, value)


_HUGE = float(2 ** 64)


def set_source(doc: Document, source: str, explicit: bool, ctx: ShardContext) -> None:
    """The source rule of the file readers: an explicit ``source`` parameter wins over a
    record's own ``source`` field (counted as ``source_overridden``, the record's value kept
    in ``meta.original_source``); without one, the record's field is kept and the stage id
    fills in when there is none."""
    own = doc.meta.get("source")
    if explicit:
        if own is not None and own != source:
            doc.meta["original_source"] = own
            ctx.count("source_overridden")
        doc.meta["source"] = source
    elif own is None:
        doc.meta["source"] = source


def relative_names(files: list[str]) -> list[str]:
    """Each file's path relative to the deepest folder shared by all of them (what rewritten
    ids use: unique within the source, short, stable when the data moves), made from the
    files' public names (:func:`~curator.base.urls.public_url`: no URL credentials, no query
    values)."""
    return distinct(_relative_names([public_url(f) for f in files]), files)


def _relative_names(files: list[str]) -> list[str]:
    if not files:
        return []
    if len(files) == 1:
        return [os.path.basename(files[0])]
    if all("://" in f for f in files):  # commonpath would fold the scheme's '//'
        common = os.path.commonprefix(files)  # noqa: RUF071 - cut back to a '/' below
        common = common[:common.rfind("/") + 1]
        return [f[len(common):] for f in files]
    try:
        common = os.path.commonpath(files)
    except ValueError:  # mixed protocols or absolute/relative
        return list(files)
    if common in files:  # pragma: no cover - a file cannot be a parent of another
        common = os.path.dirname(common)
    return [os.path.relpath(f, common) if "://" not in f else f[len(common):].lstrip("/")
            for f in files]


def iter_lines(path: str, ctx: ShardContext, start: int | None = None, end: int | None = None,
               storage_options: dict[str, Any] | None = None, cap: int | None = None
               ) -> Iterator[tuple[int | None, int, bytes | None]]:
    """Yield ``(line number or None, byte offset, line)`` of a (possibly compressed) file, or of
    the byte range ``[start, end)`` of an uncompressed one. A truncated or corrupt compressed
    stream ends the shard early with a quarantine record instead of failing it. A line longer
    than ``cap`` bytes is skipped without being held, quarantined as ``too_large`` and yielded
    as ``None``. A UTF-8 byte order mark at the start of the file is dropped (offsets still
    count it). A UTF-16 or UTF-32 file (by its BOM) is read through a transcoder to UTF-8
    (offsets are then in the UTF-8 text); text not valid in its encoding ends the shard with
    one quarantine record."""
    cap = ctx.max_doc_bytes if cap is None else cap
    if start is not None:
        with fsspec.open(path, "rb", **(storage_options or {})) as raw:
            read_position.track(raw, end, start)
            fh = line_reader(raw)
            # the line holding byte start-1 belongs to the previous shard: read past it
            first = start > 0
            if first:
                fh.seek(start - 1)
            for off, line, n in iter_capped_lines(fh, cap, start - 1 if first else 0, end or 0):
                if first:
                    first = False
                    continue
                if off == 0 and line is not None and line.startswith(_BOM):
                    line = line[len(_BOM):]
                if line is None:
                    _too_large(ctx, path, None, off, n, cap)
                yield None, off, line
        return
    lineno, pos, enc = 0, 0, "utf-8"
    try:
        with open_compressed_read(path, storage_options, track=True) as raw:
            fh, enc = utf8_stream(line_reader(raw))
            if not is_utf8(enc):
                ctx.count(f"encoding:{enc}")
            for off, line, n in iter_capped_lines(fh, cap):
                lineno += 1
                if off == 0 and line is not None and line.startswith(_BOM):
                    line = line[len(_BOM):]
                if line is None:
                    _too_large(ctx, path, lineno, off, n, cap)
                yield lineno, off, line
                pos = off + n
    except FileNotFoundError as e:
        raise InputError(f"{path}: file not found") from e
    except UnicodeDecodeError as e:
        ctx.quarantine(b"", f"text not valid {enc}", detail=f"after line {lineno}: {e}",
                       file=path, line=lineno + 1, offset=pos)
    except CORRUPT_STREAM_ERRORS as e:
        ctx.quarantine(b"", "truncated or corrupt compressed file",
                       detail=f"after line {lineno}: {type(e).__name__}: {e}", file=path,
                       line=lineno + 1, offset=pos)


_BOM = b"\xef\xbb\xbf"


def _utf8_file(fs: Any, path: str) -> bool:
    """Whether an uncompressed file is UTF-8 by its first bytes (no UTF-16/32 BOM)."""
    with fs.open(path, "rb") as f:
        return is_utf8(sniff(f.read(4))[0])


def _too_large(ctx: ShardContext, path: str, lineno: int | None, offset: int, n: int,
               cap: int) -> None:
    ctx.quarantine(b"", TOO_LARGE, detail=f"line of {n} bytes > max_doc_mb ({cap} bytes), "
                   "skipped without being read whole", file=path, line=lineno, offset=offset)


class WriteJsonl(ShardStage):
    """Write documents as JSONL files, one per shard, atomically; documents pass through.

    Every file has the same columns with one type each, whatever source its documents came
    from (:mod:`curator.io.schema`): ``datasets.load_dataset("json", data_files="out/*")``
    reads a multi-source output in one call."""

    name = "write_jsonl"
    passthrough = True
    surveys_input = True

    class Params(StageParams):
        path: OutputDir
        """Output folder: relative to `work_dir` (may not escape it), or absolute, or a URL."""
        compression: Literal["none", "gzip", "zstd"] = "gzip"
        """`none`, `gzip` (deterministic header) or `zstd`."""
        flat: bool = True
        """`{"id", "text", **meta}`; `false` writes `{"id", "text", "meta": {...}}`."""

    def output_dirs(self, ctx: StageContext) -> list[str]:
        return [ctx.output_path(self.path)]

    def record(self, doc: Document) -> dict[str, Any]:
        return doc.to_flat() if self.flat else doc.to_record()

    def survey(self, docs: Iterator[Document]) -> Any:
        return schema.survey(self.record(d) for d in docs)

    def prepare(self, surveys: list[Any], names: list[str], paths: list[str]) -> Any:
        return schema.plan(surveys, names, paths, exemplars=True)

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        ext = {"none": "", "gzip": ".gz", "zstd": ".zst"}[self.compression]
        out = os.path.join(ctx.output_path(self.path), f"{ctx.shard}.jsonl{ext}")
        plan = ctx.prepared or {}
        conform = schema.Conformer(plan["columns"]) if plan.get("columns") else None
        skip = set(plan.get("skip", {}).get(ctx.shard, ()))
        with open_compressed_write(out) as fh:
            if plan.get("first") == ctx.shard:  # documents that type a column for readers
                for doc in taken_documents(plan.get("take") or []):
                    rec = self.record(doc)
                    fh.write(orjson.dumps(conform(rec) if conform else rec) + b"\n")
            for row, doc in enumerate(docs):
                if row not in skip:  # else written at the top of the first file
                    rec = self.record(doc)
                    fh.write(orjson.dumps(conform(rec) if conform else rec) + b"\n")
                yield doc
        ctx.wrote(out)


def taken_documents(take: list[list[Any]]) -> Iterator[Document]:
    """The documents ``[shard, input path, row]`` names, in that order (each input read
    once, up to its last row taken)."""
    from curator.storage.shards import read_shard

    by_path: dict[str, set[int]] = {}
    for _, path, row in take:
        by_path.setdefault(path, set()).add(row)
    found: dict[tuple[str, int], Document] = {}
    for path, rows in by_path.items():
        last = max(rows)
        for row, doc in enumerate(read_shard(path)):
            if row in rows:
                found[(path, row)] = doc
            if row >= last:
                break
    for _, path, row in take:
        yield found[(path, row)]
