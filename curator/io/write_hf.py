"""``write_hf``: a dataset in the Hugging Face hub's layout, ready for ``load_dataset(<folder>)``
or a push to the hub.

The folder holds Parquet shards named as the hub names them (``data/train-00000-of-00003.parquet``)
and a dataset card (``README.md``) whose YAML header declares the config (which files make
which split), the features and the sizes. Every shard has the same Arrow schema
(:mod:`curator.io.schema`): ``datasets`` takes the features from the card and casts every file
to them, so one file whose metadata column was all null (or int where another had float) would
fail the whole load. With ``repo_id`` the folder is uploaded with ``huggingface_hub``; whether
that can work (a token, the hub reachable and accepting it) is checked before any stage of the
run starts (:meth:`WriteHf.driver_check`), not after hours of upstream work.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, StringConstraints

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.core.context import GlobalContext, StageContext
from curator.core.params import PositiveInt, StageParams
from curator.core.shard_context import ShardContext
from curator.core.stage import GlobalStage, OutputDir, Shard
from curator.io import schema
from curator.storage import nofollow
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard

_TRUE = {"1", "on", "yes", "true"}
_SPLIT = r"^[A-Za-z0-9_]+$"
_REPO = r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$|^[A-Za-z0-9][A-Za-z0-9._-]*$"


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def shard_file(split: str, i: int, n: int) -> str:
    """The hub's name for shard ``i`` of ``n`` of a split, relative to the dataset folder."""
    return f"data/{split}-{i:05d}-of-{n:05d}.parquet"


def features_yaml(arrow_schema: Any) -> list[dict[str, Any]]:
    """The ``dataset_info.features`` list of a card for an Arrow schema, in the form
    ``datasets`` writes (``{name, dtype}``, ``{name, struct: [...]}``, ``{name, list: ...}``)."""
    return [{"name": f.name, **_feature(f.type)} for f in arrow_schema]


def _feature(t: Any) -> dict[str, Any]:
    import pyarrow as pa

    if pa.types.is_struct(t):
        return {
            "struct": [
                {"name": t.field(i).name, **_feature(t.field(i).type)} for i in range(t.num_fields)
            ]
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _feature(t.value_type)
        return {
            "list": inner.get("dtype", next(iter(inner.values()))) if len(inner) == 1 else inner
        }
    names = {
        pa.string(): "string",
        pa.large_string(): "large_string",
        pa.bool_(): "bool",
        pa.int64(): "int64",
        pa.float64(): "float64",
        pa.null(): "null",
    }
    return {"dtype": names.get(t, str(t))}


@dataclass(frozen=True)
class SurveyNode:
    """A column or nested field in a survey: the kinds of its values in the order first met,
    its fields (of ``dict`` values) and what its lists hold (of ``list`` values)."""

    kinds: tuple[str, ...]
    fields: tuple[tuple[str, SurveyNode], ...] = ()
    items: SurveyNode | None = None

    @classmethod
    def of(cls, node: dict[str, Any]) -> SurveyNode:
        items = node.get("items")
        return cls(
            tuple(node.get("kinds", ())),
            tuple((k, cls.of(v)) for k, v in (node.get("fields") or {}).items()),
            None if items is None else cls.of(items),
        )

    def to_json(self) -> dict[str, Any]:
        """``{"kinds", "fields"?, "items"?}``: the last two in the order their kinds were met,
        as :func:`schema.survey` builds them."""
        out: dict[str, Any] = {"kinds": list(self.kinds)}
        for k in self.kinds:
            if k == "dict":
                out["fields"] = {name: f.to_json() for name, f in self.fields}
            elif k == "list":
                out["items"] = (self.items or SurveyNode(())).to_json()
        return out


@dataclass(frozen=True, kw_only=True)
class ShardSurvey:
    """A ``survey`` phase result: what :func:`schema.survey` found in one shard, typed;
    :meth:`to_json` is the form :func:`schema.plan` reads (and the runner caches for the
    writers that survey per shard)."""

    rows: int
    columns: tuple[tuple[str, SurveyNode], ...]
    #: path -> byte position of its first value in the shard's file
    first: tuple[tuple[str, int], ...]
    #: path -> (row, size) of the smallest record with a value there
    small: tuple[tuple[str, tuple[int, int]], ...]

    @classmethod
    def of(cls, found: dict[str, Any]) -> ShardSurvey:
        return cls(
            rows=found["rows"],
            columns=tuple((k, SurveyNode.of(v)) for k, v in found["columns"].items()),
            first=tuple(found["first"].items()),
            small=tuple((k, (v[0], v[1])) for k, v in found["small"].items()),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "columns": {k: n.to_json() for k, n in self.columns},
            "first": dict(self.first),
            "small": {k: list(v) for k, v in self.small},
        }


class _Survey:
    """Phase 1, per input shard: the columns and kinds of its documents (schema.survey)."""

    def __call__(self, item: tuple[str, str]) -> ShardSurvey:
        return ShardSurvey.of(schema.survey(d.to_flat() for d in read_shard(item[1])))


class _WriteShard:
    """Phase 2, per input shard: its documents as one Parquet file of the planned schema."""

    def __init__(
        self,
        out_dir: str,
        files: dict[str, str],
        columns: dict[str, Any],
        compression: str,
        row_group_size: int,
    ) -> None:
        self.out_dir, self.files, self.columns = out_dir, files, columns
        self.compression, self.row_group_size = compression, row_group_size

    def __call__(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        conform = schema.Conformer(self.columns)
        rows = []
        for doc in docs:  # passed on downstream, as a writer does
            rows.append(conform(doc.to_flat()))
            yield doc
        rel = self.files.get(ctx.shard)
        if rel is None:  # an empty shard: no file of its own
            return
        table = pa.Table.from_pylist(rows, schema=conform.arrow_schema())
        out = os.path.join(self.out_dir, rel)
        nofollow.makedirs(os.path.dirname(out))
        with atomic_open(out, "wb") as fh:
            pq.write_table(
                table, fh, compression=self.compression, row_group_size=self.row_group_size
            )
        ctx.wrote(out)


class WriteHf(GlobalStage):
    """Write a dataset in the Hugging Face hub's layout (Parquet shards and a dataset card),
    optionally uploaded to the hub."""

    name = "write_hf"

    class Params(StageParams):
        path: OutputDir
        """Output folder: relative to ``work_dir`` (may not escape it), or absolute; local."""
        repo_id: Annotated[str, StringConstraints(pattern=_REPO)] | None = None
        """A hub dataset (``user/name``) to upload the folder to, with the token in
        ``HF_TOKEN`` (or a stored ``hf auth login``); checked before the run starts."""
        split: Annotated[str, StringConstraints(pattern=_SPLIT)] = "train"
        """The split the documents make (``data/<split>-*.parquet``)."""
        private: bool = False
        """Create the hub repository as private (an existing one is left as it is)."""
        compression: Annotated[
            Literal["none", "snappy", "gzip", "brotli", "lz4", "zstd"], BeforeValidator(_lower)
        ] = "zstd"
        """Parquet codec (pyarrow's names, in any case)."""
        row_group_size: PositiveInt = 10_000
        """Rows per row group."""

    def setup(self) -> None:
        if "://" in self.path and not self.path.startswith("file://"):
            raise ConfigError(
                f"write_hf.path: '{self.path}' is a URL; give a local folder (and "
                "repo_id to upload it to the hub)"
            )

    def output_dirs(self, ctx: StageContext) -> list[str]:
        return [ctx.output_path(self.path)]

    def driver_check(self) -> None:
        """With ``repo_id``: a token, the hub not switched off (``HF_HUB_OFFLINE``), reachable
        and accepting the token; else one line, before any stage runs."""
        if not self.repo_id:
            return
        if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
            raise ConfigError(
                f"write_hf.repo_id: HF_HUB_OFFLINE is set, so '{self.repo_id}' "
                "cannot be uploaded; unset it or drop repo_id; nothing ran"
            )
        from huggingface_hub import HfApi, constants, get_token

        token = get_token()
        if not token:
            raise ConfigError(
                f"write_hf.repo_id: no hub token to upload '{self.repo_id}': set "
                f"HF_TOKEN (or run `hf auth login`); nothing ran"
            )
        endpoint = os.environ.get("HF_ENDPOINT") or constants.ENDPOINT
        u = urlsplit(endpoint)
        shown = f"{u.scheme}://{u.hostname}" + (f":{u.port}" if u.port else "")
        try:
            socket.create_connection(
                (u.hostname or "", u.port or (443 if u.scheme == "https" else 80)), timeout=10
            ).close()
        except OSError as e:
            raise ConfigError(
                f"write_hf.repo_id: the hub at {shown} cannot be reached "
                f"({e.strerror or e}); nothing ran"
            ) from None
        try:
            HfApi(endpoint=endpoint, token=token).whoami()
        except Exception as e:  # HTTPError 401, a proxy's page...: one line, never the token
            status = getattr(getattr(e, "response", None), "status_code", None)
            why = f"HTTP {status}" if status else type(e).__name__
            raise ConfigError(
                f"write_hf.repo_id: the hub at {shown} refused the token "
                f"({why}); check HF_TOKEN; nothing ran"
            ) from None

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        out_dir = ctx.output_path(self.path)
        items = [(s.name, s.path) for s in shards]
        keys = [s.name for s in shards]
        surveys = ctx.map(_Survey(), items, phase="survey", keys=keys)
        columns = schema.plan(
            [sv.to_json() for sv in surveys], keys, [s.path for s in shards], exemplars=False
        )["columns"] or {"id": "str", "text": "str"}
        # an empty input shard makes no file, unless every one is empty: one file then, so
        # the dataset still has its columns
        full = [s.name for s, sv in zip(shards, surveys, strict=True) if sv.rows]
        full = full or keys[:1]
        files = {name: shard_file(self.split, i, len(full)) for i, name in enumerate(full)}
        out = ctx.write_shards(
            _WriteShard(out_dir, files, columns, self.compression, self.row_group_size), shards
        )
        if ctx.is_root:
            self._remove_stale(out_dir, set(files.values()))
            arrow = schema.Conformer(columns).arrow_schema()
            self._write_card(out_dir, [files[n] for n in full], arrow, ctx)
            if self.repo_id:
                self._upload(out_dir)
        ctx.artifacts["hf_dataset"] = out_dir
        return out

    def _remove_stale(self, out_dir: str, keep: set[str]) -> None:
        """Shards of this split left by an earlier run with more input shards: ``load_dataset``
        would read them too."""
        data = os.path.join(out_dir, "data")
        pat = re.compile(rf"^{re.escape(self.split)}-\d{{5}}-of-\d{{5}}\.parquet$")
        if not os.path.isdir(data):
            return
        for f in os.listdir(data):
            if pat.match(f) and f"data/{f}" not in keep:
                nofollow.unlink(os.path.join(data, f))

    def _write_card(self, out_dir: str, files: list[str], arrow: Any, ctx: GlobalContext) -> None:
        import pyarrow.parquet as pq
        import yaml

        rows = nbytes = size = 0
        for rel in files:
            p = os.path.join(out_dir, rel)
            md = pq.read_metadata(p)
            rows += md.num_rows
            nbytes += sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
            size += os.path.getsize(p)
        meta = {
            "configs": [
                {
                    "config_name": "default",
                    "data_files": [{"split": self.split, "path": f"data/{self.split}-*"}],
                }
            ],
            "dataset_info": {
                "features": features_yaml(arrow),
                "splits": [{"name": self.split, "num_bytes": nbytes, "num_examples": rows}],
                "download_size": size,
                "dataset_size": nbytes,
            },
        }
        pipeline = getattr(ctx, "pipeline", "") or os.path.basename(os.path.normpath(ctx.work_dir))
        body = (
            f"# {self.repo_id or os.path.basename(os.path.normpath(out_dir))}\n\n"
            f"Made by the curator pipeline `{pipeline}` (stage `{ctx.stage_id}`): "
            f"{rows} documents in {len(files)} Parquet file(s), split `{self.split}`.\n\n"
            "```python\nfrom datasets import load_dataset\n"
            f"ds = load_dataset({(self.repo_id or out_dir)!r}, split={self.split!r})\n```\n"
        )
        text = "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n\n"
        with atomic_open(os.path.join(out_dir, "README.md"), "wb") as fh:
            fh.write((text + body).encode("utf-8"))

    def _upload(self, out_dir: str) -> None:
        from huggingface_hub import HfApi

        api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None)
        api.create_repo(self.repo_id, repo_type="dataset", private=self.private, exist_ok=True)
        api.upload_folder(
            folder_path=out_dir,
            repo_id=self.repo_id,
            repo_type="dataset",
            allow_patterns=["README.md", "data/*.parquet"],
            delete_patterns=[f"data/{self.split}-*.parquet"],
            commit_message="curator write_hf",
        )
