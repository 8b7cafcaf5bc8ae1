"""Fixtures shared across test packages: the trained demo checkpoint and the Triton venv are
used by tests/train and tests/deploy (session-scoped, built once, only when a test asks)."""

pytest_plugins = ["fixtures_train"]
