"""curator: turn raw web crawls into training-ready token shards, on one laptop or a cluster.

The public API is deliberately small::

    from curator import Document, Filter, Modifier, BatchStage, ShardStage, GlobalStage, Source
    from curator import filter, modifier   # decorators for plain functions
    from curator import FilePath, DirPath     # parameter types: the file's content is in the key
    from curator import StageParams, Ratio, PositiveInt, NonNegInt   # a stage's parameter model
    from curator import run, load, RunResult   # run or validate a pipeline file from Python
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: Where each public name lives: imported on first use, so that ``curator --version``, the
#: native-reads re-exec (curator/core/native_reads.py) and a worker that needs one module do
#: not pay for pydantic and the whole core first.
_PUBLIC = {
    "Document": "curator.base.document",
    **dict.fromkeys(("NonNegFloat", "NonNegInt", "PositiveFloat", "PositiveInt", "Ratio",
                     "StageParams"), "curator.core.params"),
    **dict.fromkeys(("BatchStage", "DirPath", "FilePath", "Filter", "GlobalStage", "Modifier",
                     "Shard", "ShardSpec", "ShardStage", "Source", "Stage", "filter",
                     "modifier"), "curator.core.stage"),
    **dict.fromkeys(("RunResult", "load", "run"), "curator.api"),
}


def __getattr__(name: str) -> object:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'curator' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from curator.api import RunResult, load, run
    from curator.base.document import Document
    from curator.core.params import (
        NonNegFloat,
        NonNegInt,
        PositiveFloat,
        PositiveInt,
        Ratio,
        StageParams,
    )
    from curator.core.stage import (
        BatchStage,
        DirPath,
        FilePath,
        Filter,
        GlobalStage,
        Modifier,
        Shard,
        ShardSpec,
        ShardStage,
        Source,
        Stage,
        filter,
        modifier,
    )

__all__ = [
    "BatchStage",
    "DirPath",
    "Document",
    "FilePath",
    "Filter",
    "GlobalStage",
    "Modifier",
    "NonNegFloat",
    "NonNegInt",
    "PositiveFloat",
    "PositiveInt",
    "Ratio",
    "RunResult",
    "Shard",
    "ShardSpec",
    "ShardStage",
    "Source",
    "Stage",
    "StageParams",
    "__version__",
    "filter",
    "load",
    "modifier",
    "run",
]
