"""Core tests: this folder holds helpers_core (stages the tests, Dask workers and MPI ranks
import), so it goes on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
