"""Stage family 'dedup'. Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {
    "exact_dedup": "curator.dedup.exact:ExactDedup",
    "fuzzy_dedup": "curator.dedup.fuzzy:FuzzyDedup",
}
