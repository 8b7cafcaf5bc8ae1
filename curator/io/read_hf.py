"""``read_hf``: read a Hugging Face dataset as documents.

Three kinds of ``path``, found in this order:

* a folder written by ``datasets``' ``Dataset.save_to_disk`` (``state.json`` beside
  ``data-0000N-of-0000M.arrow`` files) or ``DatasetDict.save_to_disk`` (``dataset_dict.json``
  and one such folder per split: ``split`` picks it). One shard per Arrow file, read batch by
  batch from a memory map (``datasets`` itself is not needed);
* a folder (local, or ``hf://datasets/<owner>/<name>`` through fsspec with ``huggingface_hub``
  installed) in the hub's Parquet layout: ``data/<split>-*.parquet``, ``<name>/<split>-*.parquet``,
  ``<name>/<split>/*.parquet`` (the hub's auto-converted layout), ``data/<split>/*.parquet``;
  one shard per ``row_groups_per_shard`` row groups of each file, as ``read_parquet``;
* a hub id ``<owner>/<name>`` that is not a local folder: read as ``hf://datasets/<owner>/<name>``
  (above), or with ``streaming: true`` through ``datasets.load_dataset(path, name,
  split=split, streaming=True)``, one shard per shard of the streaming dataset (its files).

Resumable like every source: a shard's key holds the identity of the files it reads, so a rerun
reads only shards whose files changed. Ids and text come from ``id_field``/``text_field`` and
follow ``read_jsonl``'s conventions (docs/io.md); every other column becomes metadata.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Annotated, Any, Literal

import orjson
from pydantic import ConfigDict, Field

from curator.base.document import Document
from curator.base.errors import ConfigError, InputError
from curator.core.context import ShardContext, StageContext
from curator.core.params import PositiveFloat, PositiveInt, StageParams
from curator.core.stage import DocumentPaths, ShardSpec, Source
from curator.io.jsonl import set_source
from curator.io.parquet import utf8_len
from curator.io.parquet_rows import BATCH_BYTES, iter_rows, row_groups, schema_depth, unreadable
from curator.storage.limits import TOO_LARGE

OUTSIDE = "file outside the dataset folder"
BAD_ARROW = "truncated or damaged Arrow file"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
#: The hub's Parquet layouts, most specific first ({name}: the config, "default" if none).
_LAYOUTS = ("{name}/{split}/*.parquet", "{name}/{split}-*.parquet", "data/{split}-*.parquet",
            "data/{split}/*.parquet", "{split}/*.parquet", "{split}-*.parquet")


class ReadHf(Source):
    """Read a Hugging Face dataset: a save_to_disk folder, a folder (or hf://) in the hub's
    Parquet layout, or a hub id streamed through datasets."""

    name = "read_hf"

    class Params(StageParams):
        # ``name`` is the stage's own YAML name attribute: the field is ``config_name``, read
        # from and written to the parameters (and so the fingerprint) as ``name``.
        model_config = ConfigDict(serialize_by_alias=True)

        path: Annotated[DocumentPaths, Field(min_length=1)]
        """A folder, an ``hf://`` URL or a hub id ``owner/name``."""
        config_name: str | None = Field(None, alias="name")
        """The dataset's config (subset), e.g. ``sample-10BT``."""
        split: str = "train"
        """The split to read."""
        text_field: str = "text"
        """Column holding the text."""
        id_field: str = "id"
        """Column holding the id; a missing or null id gets `<file>:<row>`
        (`<file>:<row group>:<row>` for Parquet)."""
        source: str | None = None
        """Written to ``meta.source``; when given it wins over a record's own ``source``."""
        streaming: bool = False
        """Read a hub id through `datasets`' streaming (needs the `hf` extra)."""
        revision: str | None = None
        """A hub branch, tag or commit."""
        row_groups_per_shard: PositiveInt = 8
        """Parquet row groups per shard."""
        storage_options: dict[str, Any] | None = None
        """Passed to fsspec (credentials, endpoints of ``hf://`` or remote folders)."""
        ids: Literal["keep", "rewrite"] = "keep"
        """``rewrite``: ids become ``<source>/<file>:<row>`` (old id in meta)."""
        metadata_field: str | None = "metadata"
        """A field holding an object (datatrove's layout: `{"text", "id", "metadata": {...}}`) whose
        fields become the document's metadata, beside the record's other fields (which win on a
        clash); `null` keeps it as one field."""
        max_doc_mb: PositiveFloat | None = None
        """This reader's cap on one text (MiB); null: the pipeline's ``max_doc_mb``."""

    def setup(self) -> None:
        self.storage_options = self.storage_options or {}

    # -- listing (root) ------------------------------------------------------------------------
    def _url(self) -> str:
        p = self.path
        if "://" in p or os.path.exists(p) or not _HUB_ID.match(p):
            return p
        rev = f"@{self.revision}" if self.revision else ""
        return f"hf://datasets/{p}{rev}"

    def _local_typo(self) -> str | None:
        """The one-line error for a path that names a local folder that is not there: an
        ``owner/name`` whose ``owner`` is a local folder (``corpora/hf_pydoc`` beside
        ``corpora/hf_pydocs``) is meant as a folder, and a hub lookup of it failed with a
        network error that said nothing about the typo."""
        p = self.path
        if "://" in p or os.path.exists(p) or not _HUB_ID.match(p):
            return None
        parent, name = p.split("/", 1)
        if not os.path.isdir(parent):
            return None
        import difflib

        near = difflib.get_close_matches(name, sorted(os.listdir(parent)), n=1, cutoff=0.6)
        hint = f" (did you mean '{parent}/{near[0]}'?)" if near else ""
        return (f"local folder '{p}' does not exist{hint}; '{parent}' is a local folder, so "
                "this is not read as a hub id (write hf://datasets/" + p + " for the hub)")

    def remote_inputs(self) -> list[str]:
        url = self._url() if self._local_typo() is None else self.path
        return [url] if "://" in url or self.streaming else []

    def shards(self, ctx: StageContext) -> list[ShardSpec]:
        where = f"{ctx.stage_id}.path"
        typo = self._local_typo()
        if typo is not None:
            raise InputError(f"{where}: {typo}")
        if self.streaming:
            return self._stream_specs(ctx)
        import fsspec

        url = self._url()
        fs, root = fsspec.core.url_to_fs(url, **self.storage_options)
        top = root
        try:
            is_dir = fs.isdir(root)
        except Exception as e:  # a remote filesystem's own errors (no network, no access)
            raise InputError(f"{where}: {url}: cannot list it: {type(e).__name__}: {e}"
                             ) from None
        if not is_dir:
            if url != self.path:
                raise InputError(f"{where}: '{self.path}' is no local folder, and {url} was not "
                                 "found or the hub cannot be reached (HF_HUB_OFFLINE, network, "
                                 "token for a gated dataset)")
            raise InputError(f"{where}: '{self.path}' is not a folder (a save_to_disk folder, "
                             "a folder in the hub's Parquet layout, or a hub id owner/name)")
        proto = url.split("://", 1)[0] + "://" if "://" in url else ""

        def full(p: str) -> str:
            return p if not proto or p.startswith(proto) else proto + p

        if fs.exists(posixpath.join(root, "dataset_dict.json")):  # DatasetDict.save_to_disk
            splits = orjson.loads(fs.cat_file(posixpath.join(root, "dataset_dict.json")))
            names = splits.get("splits", [])
            if self.split not in names:
                raise InputError(f"{where}: '{self.path}' has no split '{self.split}' "
                                 f"(splits: {', '.join(names)})")
            root = posixpath.join(root, self.split)
        inside = _inside(fs, top)
        if fs.exists(posixpath.join(root, "state.json")):  # Dataset.save_to_disk
            state = orjson.loads(fs.cat_file(posixpath.join(root, "state.json")))
            specs = []
            for i, entry in enumerate(state.get("_data_files", [])):
                name = entry.get("filename") if isinstance(entry, dict) else None
                f = posixpath.join(root, name) if isinstance(name, str) else ""
                data: dict[str, Any] = {"path": full(f), "format": "arrow",
                                        "rel": posixpath.basename(f)}
                if not inside(f):
                    # a state.json naming /etc/passwd or ../../other: never opened, never
                    # hashed for the shard's key
                    data = {"refused": (f or repr(name))[:300], "format": "arrow",
                            "rel": str(i)}
                specs.append(ShardSpec(ctx.shard_name(i), data))
            return specs
        name = self.config_name or "default"
        for layout in _LAYOUTS:
            files = sorted(fs.glob(posixpath.join(root, layout.format(name=name,
                                                                      split=self.split))))
            if files:
                break
        else:
            looked = ", ".join(x.format(name=name, split=self.split) for x in _LAYOUTS)
            raise InputError(f"{where}: no save_to_disk files (state.json) and no Parquet files "
                             f"for split '{self.split}' in '{self.path}' (looked for {looked})")
        specs: list[ShardSpec] = []
        for f in files:
            rel = posixpath.relpath(f, root)
            if not inside(f):  # a symlink leading out of the folder
                specs.append(ShardSpec(ctx.shard_name(len(specs)), {
                    "refused": rel, "format": "parquet", "rel": rel}))
                continue
            n = row_groups(partial(fs.open, f, "rb"))
            if isinstance(n, str):  # as read_parquet: quarantined, not a traceback
                specs.append(ShardSpec(ctx.shard_name(len(specs)), {
                    "path": full(f), "format": "parquet", "rel": rel, "row_groups": [],
                    "unreadable": n}))
                continue
            for start in range(0, max(n, 1), self.row_groups_per_shard):
                groups = list(range(start, min(start + self.row_groups_per_shard, n)))
                specs.append(ShardSpec(ctx.shard_name(len(specs)), {
                    "path": full(f), "format": "parquet", "rel": rel, "row_groups": groups}))
        return specs

    def _stream_specs(self, ctx: StageContext) -> list[ShardSpec]:
        ds = self._streaming_dataset()
        return [ShardSpec(ctx.shard_name(i), {"stream": self.path, "index": i,
                                              "of": ds.n_shards})
                for i in range(ds.n_shards)]

    def _streaming_dataset(self) -> Any:
        try:
            import datasets
        except ImportError:
            raise ConfigError("read_hf.streaming needs the datasets library "
                              "(pip install 'curator-pipeline[hf]')") from None
        try:
            return datasets.load_dataset(self.path, self.config_name, split=self.split,
                                         streaming=True, revision=self.revision)
        except Exception as e:  # datasets raises many kinds: one line naming the dataset
            raise InputError(f"read_hf: datasets could not stream '{self.path}' (name "
                             f"{self.config_name}, split {self.split}): {type(e).__name__}: "
                             f"{e}") from None

    def input_paths(self, shard: ShardSpec) -> list[str]:
        return [shard.data["path"]] if "path" in shard.data else []

    # -- reading (workers) ---------------------------------------------------------------------
    def read(self, shard: ShardSpec, ctx: ShardContext) -> Iterator[Document]:
        d = shard.data
        if "stream" in d:
            ds = self._streaming_dataset().shard(num_shards=d["of"], index=d["index"])
            yield from self._docs(((f"{d['index']}:{k}", r) for k, r in enumerate(ds)),
                                  ctx, f"{self.path}#{d['index']}")
            return
        import fsspec

        if "refused" in d:
            ctx.quarantine(b"", OUTSIDE, file=d["refused"], detail=f"{self.path}: the "
                           "dataset names a file outside its folder (an absolute path, ../, "
                           "or a symlink leading out); it is not read")
            return
        path = d["path"]
        if "unreadable" in d:
            unreadable(ctx, path, d["unreadable"])
            return
        fs, local_path = fsspec.core.url_to_fs(path, **self.storage_options)
        if not _inside(fs, fsspec.core.url_to_fs(self._url(), **self.storage_options)[1])(
                local_path):  # checked again where it is opened: a symlink may have moved
            ctx.quarantine(b"", OUTSIDE, file=path, detail=f"{self.path}: a symlink leads "
                           "out of the dataset folder; it is not read")
            return
        local = "://" not in path or path.startswith("file://")
        depth: list[int | None] = [None]  # the schema's depth, once known: no walk per record
        if d["format"] == "arrow":
            import pyarrow as pa

            def rows() -> Iterator[tuple[str, dict[str, Any]]]:
                k = 0
                with (pa.memory_map(path.removeprefix("file://")) if local
                      else fsspec.open(path, "rb", **self.storage_options)) as fh:
                    try:
                        stream = pa.ipc.open_stream(fh)
                        depth[0] = schema_depth(stream.schema)
                        for batch in stream:  # one record batch at a time
                            # a batch's rows become Python objects a slice of BATCH_BYTES at
                            # a time (its size is the writer's choice)
                            step = max(1, BATCH_BYTES * batch.num_rows // max(batch.nbytes, 1))
                            for i in range(0, batch.num_rows, step):
                                for rec in batch.slice(i, step).to_pylist():
                                    yield f"{d['rel']}:{k}", rec
                                    k += 1
                    except (pa.ArrowInvalid, OSError) as e:
                        if not local:  # a remote read error may pass: the shard fails
                            raise
                        # a file cut short or damaged costs its rest, not the run
                        ctx.quarantine(b"", BAD_ARROW, file=path, row=k,
                                       detail=" ".join(f"{type(e).__name__}: {e}".split())[:300])
        else:
            import pyarrow.parquet as pq

            def rows() -> Iterator[tuple[str, dict[str, Any]]]:
                with fsspec.open(path, "rb", **self.storage_options) as fh:
                    pf = pq.ParquetFile(fh)
                    depth[0] = schema_depth(pf.schema_arrow)
                    for g, k, _, rec in iter_rows(pf, fh, d["row_groups"], ctx, path, local):
                        yield f"{d['rel']}:{g}:{k}", rec
        yield from self._docs(rows(), ctx, path, lambda: depth[0])

    def _docs(self, rows: Iterable[tuple[str, dict[str, Any]]], ctx: ShardContext,
              path: str, depth: Callable[[], int | None] | None = None) -> Iterator[Document]:
        source = self.source or ctx.stage_id
        explicit = self.source is not None
        cap = ctx.doc_cap(self.max_doc_mb)
        for where, rec in rows:
            try:
                doc = Document.from_flat(rec, id_field=self.id_field, text_field=self.text_field,
                                         default_id=where, depth_bound=depth,
                                         metadata_field=self.metadata_field)
            except ValueError as e:
                ctx.quarantine({k: str(v)[:1000] for k, v in rec.items()}, str(e), file=path,
                               row=where)
                continue
            if len(doc.text) > cap // 4 and utf8_len(doc.text) > cap:
                ctx.quarantine({"id": doc.id}, TOO_LARGE, file=path, row=where,
                               detail=f"text of {utf8_len(doc.text)} bytes > max_doc_mb "
                                      f"({cap} bytes)")
                continue
            if self.ids == "rewrite":
                doc.meta["original_id"] = doc.id
                doc.id = f"{source}/{where}"
            set_source(doc, source, explicit, ctx)
            yield doc


def _inside(fs: Any, top: str) -> Callable[[str], bool]:
    """Whether a path lies inside the folder ``top``: after resolving symlinks for a local
    folder (a link may point anywhere), after normalising ``..`` for a remote one."""
    from fsspec.implementations.local import LocalFileSystem

    if isinstance(fs, LocalFileSystem):
        real_top = os.path.realpath(top)
        return lambda p: bool(p) and os.path.commonpath(
            [real_top, os.path.realpath(p)]) == real_top
    norm_top = posixpath.normpath(top)
    return lambda p: bool(p) and posixpath.commonpath(
        [norm_top, posixpath.normpath(p)]) == norm_top


__all__ = ["ReadHf"]
