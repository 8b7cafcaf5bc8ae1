"""Stage family 'train'. Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {"train": "curator.train.train:Train"}
CLI = "curator.train.cli"
