"""Stage family 'classifiers'. Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {}
