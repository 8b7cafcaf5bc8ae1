"""``line_dedup``: CCNet-style line dedup across the corpus (boilerplate lines: footers, menus,
cookie notices, share buttons). See :mod:`curator.dedup.subdoc` for the phases."""

from __future__ import annotations

from curator.core.context import GlobalContext
from curator.core.params import NonNegInt, PositiveFloat, PositiveInt
from curator.core.stage import GlobalStage, Shard
from curator.dedup.common import Normalize, PartitionParams
from curator.dedup.normalize import resolve
from curator.dedup.subdoc import BATCH_MB, SubdocCfg, run_subdoc


class LineDedup(GlobalStage):
    """Remove lines repeated across the corpus (normalised line hashes, CCNet-style)."""

    name = "line_dedup"

    class Params(PartitionParams):
        max_occurrences: PositiveInt = 1
        """A line seen more often than this in the corpus is removed (beyond ``keep_first``)."""
        keep_first: bool = False
        """Keep the first occurrence of each removed line (`false`: CCNet, every copy goes)."""
        normalize: Normalize = "fineweb"
        """Normalisation preset of the line before hashing (`none`, `basic`, `fineweb`)."""
        min_chars: NonNegInt = 1
        """Lines shorter than this after normalisation are never counted (blank lines are never
        counted)."""
        batch_mb: PositiveFloat = BATCH_MB
        """Text (MB) normalised and hashed together in the hashing phase: memory is about 30x this
        plus 16 bytes per line of the shard (a 62 MB shard of 100 KB pages: 277 MB peak; a batch
        of 512 documents instead of a size would take the whole shard, 1.75 GB, and 3.35 GB for a
        187 MB shard).
        CPU time is the same from 2 MB up."""

    def setup(self) -> None:
        self.normalize = resolve(self.normalize, "line_dedup.normalize")

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        cfg = SubdocCfg("line_dedup", ctx.stage_dir, self.normalize, self.max_occurrences,
                        self.keep_first, self.min_chars, batch_mb=self.batch_mb)
        return run_subdoc(cfg, shards, ctx, self.partitions, self.partition_mb,
                          "all_lines_duplicate")
