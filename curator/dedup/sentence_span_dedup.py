"""``sentence_span_dedup``: C4's dedup: "we discarded all but one of any three-sentence span
occurring more than once in the data set". Spans are the sliding windows of ``span``
consecutive sentences of a document; the sentences of every repeated span but its first
occurrence (input order) are cut. See :mod:`curator.dedup.subdoc` for the phases."""

from __future__ import annotations

from curator.core.context import GlobalContext
from curator.core.params import NonNegInt, PositiveFloat, PositiveInt
from curator.core.stage import GlobalStage, Shard
from curator.dedup.common import Normalize, PartitionParams
from curator.dedup.normalize import resolve
from curator.dedup.subdoc import BATCH_MB, SubdocCfg, run_subdoc


class SentenceSpanDedup(GlobalStage):
    """Remove repeated spans of consecutive sentences, keeping the first (C4)."""

    name = "sentence_span_dedup"

    class Params(PartitionParams):
        span: PositiveInt = 3
        """Consecutive sentences hashed together."""
        max_occurrences: PositiveInt = 1
        """A span seen more than this many times is removed."""
        keep_first: bool = True
        """Keep the first occurrence (C4); `false` removes every copy."""
        normalize: Normalize = "fineweb"
        """Normalisation preset of the span before hashing."""
        language: str = "en"
        """Language of the sentence splitter's abbreviation list."""
        min_chars: NonNegInt = 1
        """Spans shorter than this after normalisation are never counted."""
        batch_mb: PositiveFloat = BATCH_MB
        """Text hashed per batch, in MB (bounds memory)."""

    def setup(self) -> None:
        self.normalize = resolve(self.normalize, "sentence_span_dedup.normalize")

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        cfg = SubdocCfg("sentence_span_dedup", ctx.stage_dir, self.normalize,
                        self.max_occurrences, self.keep_first, self.min_chars, self.span,
                        self.language, self.batch_mb)
        return run_subdoc(cfg, shards, ctx, self.partitions, self.partition_mb,
                          "all_spans_duplicate")
