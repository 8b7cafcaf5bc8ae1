"""Errors that end a run with one clear line (the CLI prints ``str(err)`` and exits non-zero)."""


class CuratorError(Exception):
    """Base class: the message is shown to the user as is, without a traceback."""

    exit_code = 1


class ConfigError(CuratorError):
    """The pipeline YAML or a stage's parameters are invalid (nothing has run yet)."""

    exit_code = 2


class InputError(CuratorError):
    """An input file, URL or model cannot be used at all (a bad *record* is quarantined instead)."""


class StageError(CuratorError):
    """A stage failed; the message names the stage and, where known, the shard."""
