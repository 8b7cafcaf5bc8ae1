"""curator: turn raw web crawls into training-ready token shards, on one laptop or a cluster.

The public API is deliberately small::

    from curator import Document, Filter, Modifier, BatchStage, ShardStage, GlobalStage, Source
    from curator import filter, modifier   # decorators for plain functions
"""

from curator.core.document import Document
from curator.core.stage import (
    BatchStage,
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

__all__ = [
    "BatchStage",
    "Document",
    "Filter",
    "GlobalStage",
    "Modifier",
    "Shard",
    "ShardSpec",
    "ShardStage",
    "Source",
    "Stage",
    "__version__",
    "filter",
    "modifier",
]
