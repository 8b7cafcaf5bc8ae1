"""curator: turn raw web crawls into training-ready token shards, on one laptop or a cluster.

The public API is deliberately small::

    from curator import Document, Filter, Modifier, BatchStage, ShardStage, GlobalStage, Source
    from curator import filter, modifier   # decorators for plain functions
    from curator import FilePath, DirPath     # parameter types: the file's content is in the key
    from curator import StageParams, Ratio, PositiveInt, NonNegInt   # a stage's parameter model
    from curator import run, load, RunResult   # run or validate a pipeline file from Python
"""

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

__version__ = "0.1.0"

from curator.api import RunResult, load, run  # after __version__: core modules import it

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
