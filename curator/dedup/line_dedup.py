"""``line_dedup``: CCNet-style line dedup across the corpus (boilerplate lines: footers, menus,
cookie notices, share buttons). See :mod:`curator.dedup.subdoc` for the phases."""

from __future__ import annotations

from typing import Literal

from curator.core.context import GlobalContext
from curator.core.errors import ConfigError
from curator.core.stage import GlobalStage, Shard
from curator.dedup.normalize import resolve
from curator.dedup.subdoc import BATCH_MB, SubdocCfg, run_subdoc


class LineDedup(GlobalStage):
    """Remove lines repeated across the corpus (normalised line hashes, CCNet-style)."""

    name = "line_dedup"

    def __init__(self, max_occurrences: int = 1, keep_first: bool = False,
                 normalize: bool | Literal["none", "basic", "fineweb"] = "fineweb",
                 min_chars: int = 1, partitions: int = 0, partition_mb: int = 256,
                 batch_mb: float = BATCH_MB) -> None:
        if max_occurrences < 1:
            raise ConfigError("line_dedup.max_occurrences must be >= 1")
        self.max_occurrences, self.keep_first = max_occurrences, keep_first
        self.normalize = resolve(normalize, "line_dedup.normalize")
        self.min_chars, self.partitions, self.partition_mb = min_chars, partitions, partition_mb
        if not batch_mb > 0:
            raise ConfigError("line_dedup.batch_mb must be > 0")
        self.batch_mb = batch_mb

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        cfg = SubdocCfg("line_dedup", ctx.stage_dir, self.normalize, self.max_occurrences,
                        self.keep_first, self.min_chars, batch_mb=self.batch_mb)
        return run_subdoc(cfg, shards, ctx, self.partitions, self.partition_mb,
                          "all_lines_duplicate")
