"""Parquet in and out through pyarrow and fsspec. Each row group range is a shard, so a large
file is read by several workers; rows are read in batches bounded by bytes (parquet_rows)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

from curator.base.document import Document
from curator.base.urls import public_basename
from curator.core.context import ShardContext, StageContext
from curator.core.params import PositiveFloat, PositiveInt, StageParams
from curator.core.stage import DocumentPaths, OutputDir, ShardSpec, ShardStage, Source
from curator.io import schema
from curator.io.jsonl import relative_names, set_source
from curator.io.parquet_rows import iter_rows, row_groups, schema_depth, unreadable
from curator.storage.atomic import atomic_open
from curator.storage.limits import TOO_LARGE
from curator.storage.paths import expand_paths


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _table(rows: list[dict[str, Any]]) -> Any:
    """A pyarrow table of flat records, one column per key any record has (in order of first
    appearance). ``pa.Table.from_pylist`` takes its columns from the first record only, so a
    metadata field the first document lacked was dropped for every document; and a field
    whose values have types no one column holds (``1`` and ``"many"``, a number too big for
    int64) failed the shard. Such a column holds each value's JSON text instead."""
    import orjson
    import pyarrow as pa

    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols = {}
    for k in keys:
        values = [r.get(k) for r in rows]
        try:
            cols[k] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            cols[k] = pa.array([None if v is None else orjson.dumps(v, default=str).decode()
                                for v in values], pa.string())
    return pa.table(cols)


def utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class ReadParquet(Source):
    """Read documents from Parquet files (one shard per group of row groups)."""

    name = "read_parquet"

    class Params(StageParams):
        paths: DocumentPaths | list[DocumentPaths]
        """A path, glob or URL, or a list of them."""
        text_field: str = "text"
        """Column holding the text."""
        id_field: str = "id"
        """Column holding the id; missing or null: ``<file name>:<row group>:<row>``."""
        source: str | None = None
        """Written to ``meta.source``; when given it wins over a record's own ``source``."""
        row_groups_per_shard: PositiveInt = 8
        """Row groups per shard (a big file is read by several workers)."""
        storage_options: dict[str, Any] | None = None
        """Passed to fsspec (credentials, endpoints)."""
        ids: Literal["keep", "rewrite"] = "keep"
        """`rewrite`: ids become `<source>/<file>:<row group>:<row>` (record's id in
        `meta.original_id`)."""
        metadata_field: str | None = "metadata"
        """A field holding an object (datatrove's layout: `{"text", "id", "metadata": {...}}`) whose
        fields become the document's metadata, beside the record's other fields (which win on a
        clash); `null` keeps it as one field."""
        max_doc_mb: PositiveFloat | None = None
        """This reader's cap on one text (MiB); null: the pipeline's ``max_doc_mb``."""

    def setup(self) -> None:
        self.storage_options = self.storage_options or {}

    def shards(self, ctx: StageContext) -> list[ShardSpec]:
        import fsspec

        specs: list[ShardSpec] = []
        files = expand_paths(self.paths, self.storage_options, f"{ctx.stage_id}.paths")
        for path, rel in zip(files, relative_names(files), strict=True):
            n = row_groups(partial(fsspec.open, path, "rb", **self.storage_options))
            if isinstance(n, str):
                # not Parquet, its footer cut or damaged, its schema too deep for pyarrow: one
                # shard that quarantines the file, so that one bad file does not stop the
                # listing of the others
                specs.append(ShardSpec(ctx.shard_name(len(specs)), {
                    "path": path, "rel": rel, "row_groups": [], "unreadable": n}))
                continue
            for start in range(0, max(n, 1), self.row_groups_per_shard):
                groups = list(range(start, min(start + self.row_groups_per_shard, n)))
                specs.append(ShardSpec(ctx.shard_name(len(specs)),
                                       {"path": path, "rel": rel, "row_groups": groups}))
        return specs

    def read(self, shard: ShardSpec, ctx: ShardContext) -> Iterator[Document]:
        import fsspec
        import pyarrow.parquet as pq
        from fsspec.implementations.local import LocalFileSystem

        path = shard.data["path"]
        base = public_basename(path)  # ids never hold a URL's credentials or query
        rel = shard.data.get("rel", base)
        source = self.source or ctx.stage_id
        explicit = self.source is not None
        cap = ctx.doc_cap(self.max_doc_mb)
        if "unreadable" in shard.data:
            unreadable(ctx, path, shard.data["unreadable"])
            return
        local = isinstance(fsspec.core.url_to_fs(path, **self.storage_options)[0],
                           LocalFileSystem)
        with fsspec.open(path, "rb", **self.storage_options) as fh:
            pf = pq.ParquetFile(fh)
            depth = schema_depth(pf.schema_arrow)
            for g, _, row, rec in iter_rows(pf, fh, shard.data["row_groups"], ctx, path, local):
                try:
                    doc = Document.from_flat(rec, id_field=self.id_field,
                                             text_field=self.text_field,
                                             default_id=f"{base}:{g}:{row}", depth_bound=depth,
                                             metadata_field=self.metadata_field)
                except ValueError as e:
                    ctx.quarantine({k: str(v)[:1000] for k, v in rec.items()}, str(e),
                                   file=path, row_group=g, row=row)
                    continue
                if len(doc.text) > cap // 4 and utf8_len(doc.text) > cap:
                    ctx.quarantine({"id": doc.id}, TOO_LARGE, file=path, row_group=g, row=row,
                                   detail=f"text of {utf8_len(doc.text)} bytes > max_doc_mb "
                                   f"({cap} bytes)")
                    continue
                if self.ids == "rewrite":
                    doc.meta["original_id"] = doc.id
                    doc.id = f"{source}/{rel}:{g}:{row}"
                set_source(doc, source, explicit, ctx)
                yield doc


class WriteParquet(ShardStage):
    """Write documents as Parquet files (id, text, one column per metadata key), one per shard.

    Every file has the same Arrow schema, whatever source its documents came from
    (:mod:`curator.io.schema`)."""

    name = "write_parquet"
    passthrough = True
    surveys_input = True

    class Params(StageParams):
        path: OutputDir
        """Output folder: relative to ``work_dir`` (may not escape it), absolute, or a URL."""
        # a Literal, so a typo (``zstdd``) is a one-line error from ``curator validate``
        # instead of failing the first shard; pyarrow's names, any case
        compression: Annotated[Literal["none", "snappy", "gzip", "brotli", "lz4", "lz4_raw",
                                       "zstd"], BeforeValidator(_lower)] = "zstd"
        """Parquet codec (pyarrow's names, in any case)."""
        row_group_size: PositiveInt = 10_000
        """Rows per row group."""

    def output_dirs(self, ctx: StageContext) -> list[str]:
        return [ctx.output_path(self.path)]

    def survey(self, docs: Iterator[Document]) -> Any:
        return schema.survey(d.to_flat() for d in docs)

    def prepare(self, surveys: list[Any], names: list[str], paths: list[str]) -> Any:
        return schema.plan(surveys, names, paths, exemplars=False)

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = []
        for doc in docs:
            rows.append(doc.to_flat())
            yield doc
        columns = (ctx.prepared or {}).get("columns")
        if columns:
            conform = schema.Conformer(columns)
            table = pa.Table.from_pylist([conform(r) for r in rows],
                                         schema=conform.arrow_schema())
        else:
            table = _table(rows) if rows else pa.table(
                {"id": pa.array([], pa.string()), "text": pa.array([], pa.string())})
        out = os.path.join(ctx.output_path(self.path), f"{ctx.shard}.parquet")
        with atomic_open(out, "wb") as fh:
            pq.write_table(table, fh, compression=self.compression,
                           row_group_size=self.row_group_size)
        ctx.wrote(out)
