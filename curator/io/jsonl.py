"""JSONL in and out: ``read_jsonl`` (a source) and ``write_jsonl`` (a writer that passes its
input through).

Large uncompressed files are split into byte-range shards so one huge file is read by many
workers; a line belongs to the shard in which its first byte lies. A malformed line is
quarantined with its file, line and byte offset, and the rest of the shard goes on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Literal

import fsspec
import orjson

from curator.core.context import ShardContext, StageContext
from curator.core.document import Document
from curator.core.errors import InputError
from curator.core.stage import ShardSpec, ShardStage, Source
from curator.io.atomic import compression_of, open_compressed_read, open_compressed_write

CORRUPT_STREAM_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, ValueError)
try:  # zstandard raises its own error type for corrupt frames
    import zstandard

    CORRUPT_STREAM_ERRORS += (zstandard.ZstdError,)
except ImportError:  # pragma: no cover
    pass


def expand_paths(paths: str | list[str], storage_options: dict[str, Any] | None = None,
                 what: str = "paths") -> list[str]:
    """Expand globs (local or remote) into a sorted list of full paths; error if none match."""
    out: list[str] = []
    for p in [paths] if isinstance(paths, str) else paths:
        fs, root = fsspec.core.url_to_fs(p, **(storage_options or {}))
        if any(ch in p for ch in "*?["):
            found = sorted(fs.glob(root))
        else:
            found = [root] if fs.exists(root) else []
        if not found:
            raise InputError(f"{what}: '{p}' matches no file")
        local = "file" in (fs.protocol if isinstance(fs.protocol, tuple | list) else [fs.protocol])
        out.extend(f if local else fs.unstrip_protocol(f) for f in found)
    return out


class ReadJsonl(Source):
    """Read documents from JSONL files (.jsonl, .jsonl.gz, .jsonl.zst, .jsonl.bz2) via fsspec."""

    name = "read_jsonl"

    def __init__(self, paths: str | list[str], text_field: str = "text", id_field: str = "id",
                 source: str | None = None, shard_size_mb: float = 64.0,
                 storage_options: dict[str, Any] | None = None) -> None:
        self.paths = paths
        self.text_field = text_field
        self.id_field = id_field
        self.source = source
        self.shard_size = int(shard_size_mb * 1024 * 1024)
        self.storage_options = storage_options or {}

    def shards(self, ctx: StageContext) -> list[ShardSpec]:
        files = expand_paths(self.paths, self.storage_options, f"{ctx.stage_id}.paths")
        specs: list[ShardSpec] = []
        for path in files:
            size = None
            if compression_of(path) is None and self.shard_size > 0:
                fs, _, (p,) = fsspec.get_fs_token_paths(path, storage_options=self.storage_options)
                size = fs.size(p)
            if size is None or size <= self.shard_size:
                specs.append(ShardSpec(ctx.shard_name(len(specs)), {"path": path}))
                continue
            for start in range(0, size, self.shard_size):
                specs.append(ShardSpec(ctx.shard_name(len(specs)), {
                    "path": path, "start": start, "end": min(start + self.shard_size, size)}))
        return specs

    def read(self, shard: ShardSpec, ctx: ShardContext) -> Iterator[Document]:
        path = shard.data["path"]
        base = os.path.basename(path)
        source = self.source or ctx.stage_id
        for lineno, offset, line in iter_lines(path, ctx, shard.data.get("start"),
                                               shard.data.get("end"), self.storage_options):
            if not line.strip():
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                ctx.quarantine(line, "invalid JSON", detail=str(e), file=path, line=lineno,
                               offset=offset)
                continue
            try:
                doc = Document.from_flat(rec, id_field=self.id_field, text_field=self.text_field,
                                         default_id=f"{base}:{offset}")
            except ValueError as e:
                ctx.quarantine(line, str(e), file=path, line=lineno, offset=offset)
                continue
            doc.meta.setdefault("source", source)
            yield doc


def iter_lines(path: str, ctx: ShardContext, start: int | None = None, end: int | None = None,
               storage_options: dict[str, Any] | None = None
               ) -> Iterator[tuple[int | None, int, bytes]]:
    """Yield ``(line number or None, byte offset, line)`` of a (possibly compressed) file, or of
    the byte range ``[start, end)`` of an uncompressed one. A truncated or corrupt compressed
    stream ends the shard early with a quarantine record instead of failing it."""
    if start is not None:
        with fsspec.open(path, "rb", **(storage_options or {})) as fh:
            pos = start
            if start > 0:
                fh.seek(start - 1)
                pos = start - 1 + len(fh.readline())
            while pos < (end or 0):
                line = fh.readline()
                if not line:
                    break
                yield None, pos, line
                pos += len(line)
        return
    lineno, pos = 0, 0
    try:
        with open_compressed_read(path) as fh:
            for line in fh:
                lineno += 1
                yield lineno, pos, line
                pos += len(line)
    except FileNotFoundError as e:
        raise InputError(f"{path}: file not found") from e
    except CORRUPT_STREAM_ERRORS as e:
        ctx.quarantine(b"", "truncated or corrupt compressed file",
                       detail=f"after line {lineno}: {type(e).__name__}: {e}", file=path,
                       line=lineno + 1, offset=pos)


class WriteJsonl(ShardStage):
    """Write documents as JSONL files, one per shard, atomically; documents pass through."""

    name = "write_jsonl"
    passthrough = True

    def __init__(self, path: str, compression: Literal["none", "gzip", "zstd"] = "gzip",
                 flat: bool = True) -> None:
        self.path = path
        self.compression = compression
        self.flat = flat

    def output_dirs(self, ctx: StageContext) -> list[str]:
        return [ctx.output_path(self.path)]

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        ext = {"none": "", "gzip": ".gz", "zstd": ".zst"}[self.compression]
        out = os.path.join(ctx.output_path(self.path), f"{ctx.shard}.jsonl{ext}")
        with open_compressed_write(out) as fh:
            for doc in docs:
                rec = doc.to_flat() if self.flat else doc.to_record()
                fh.write(orjson.dumps(rec) + b"\n")
                yield doc
        ctx.wrote(out)
