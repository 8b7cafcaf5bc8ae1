"""Stage family 'dedup'. Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {
    "bloom_dedup": "curator.dedup.bloom_dedup:BloomDedup",
    "exact_dedup": "curator.dedup.exact_dedup:ExactDedup",
    "fuzzy_dedup": "curator.dedup.fuzzy_dedup:FuzzyDedup",
    "line_dedup": "curator.dedup.line_dedup:LineDedup",
    "semantic_dedup": "curator.dedup.semantic_dedup:SemanticDedup",
    "sentence_span_dedup": "curator.dedup.sentence_span_dedup:SentenceSpanDedup",
}
