"""Run a pipeline from Python: ``curator.run("pipeline.yaml")`` does what ``curator run`` does.

The command line stays the main interface; this is the same code path (load, validate, run on
an executor, resume, write the report) for notebooks, tests and workflow tools::

    import curator

    result = curator.run("pipeline.yaml", overrides={"work_dir": "/tmp/w"}, executor="local")
    print(result.stage("exact_dedup")["docs_out"])
    for doc in result.documents():          # the last stage's output documents
        ...
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from curator.base.document import Document
from curator.core.stage import Shard

Overrides = Mapping[str, Any] | Sequence[str] | None


@dataclass
class RunResult:
    """What a run produced: the report data (per-stage counts, artifacts) and each stage's
    output shards."""

    name: str
    work_dir: str
    seconds: float
    #: Per-stage summaries, in pipeline order (the data of report.json).
    stages: list[dict[str, Any]]
    #: Output shards by stage id.
    shards: dict[str, list[Shard]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict, repr=False)

    def stage(self, stage_id: str) -> dict[str, Any]:
        """One stage's summary (``docs_in``, ``docs_out``, ``rejected``, ``artifacts``...)."""
        for s in self.stages:
            if s["id"] == stage_id:
                return s
        raise KeyError(f"no stage '{stage_id}' (stages: {', '.join(self.ids())})")

    def ids(self) -> list[str]:
        return [s["id"] for s in self.stages]

    def documents(self, stage_id: str | None = None) -> Iterator[Document]:
        """Stream the output documents of ``stage_id`` (default: the last stage)."""
        from curator.storage.shards import read_shard

        sid = stage_id or self.ids()[-1]
        if sid not in self.shards:
            raise KeyError(f"no stage '{sid}' (stages: {', '.join(self.ids())})")
        for sh in self.shards[sid]:
            yield from read_shard(sh.path)


def _override_list(overrides: Overrides) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        import json

        # JSON is YAML: each value keeps its Python type ("10" stays a string, 10 an int)
        return [f"{k}={json.dumps(v)}" for k, v in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    return list(overrides)


def load(path: str | int | Any, overrides: Overrides = None) -> Any:
    """Load and validate a pipeline file without running it (``curator validate``); returns
    a :class:`curator.core.pipeline.Pipeline`. ``path`` may be an open file descriptor or
    file object: it is read and left open. Raises :class:`curator.base.errors.ConfigError`
    with the same one-line message the command prints."""
    from curator.core import pipeline as pl

    return pl.load(path, _override_list(overrides))


def run(path: str, overrides: Overrides = None, executor: str | Mapping[str, Any] | None = None,
        log: Callable[[str], None] | bool = False) -> RunResult:
    """Run (or resume) the pipeline in ``path``, like ``curator run``.

    ``overrides``: ``{"work_dir": "w", "stages.dedup.threshold": 0.8}`` or ``["a.b=c"]``
    (the same keys as ``--set``; environment ``CURATOR__*`` overrides apply first).
    ``executor``: ``"local"``, ``"dask"`` or a mapping such as ``{"type": "dask",
    "workers": 4}``; default: the file's ``executor`` section.
    ``log``: ``True`` prints progress lines to stderr, or pass a function taking one line.
    Errors raise :class:`curator.base.errors.CuratorError` subclasses (``ConfigError`` for
    a bad file), never ``SystemExit``. Modules named by dotted path are imported from
    ``sys.path`` as it is: unlike the ``curator`` command, nothing is added to it.
    """
    from curator.core import pipeline as pl
    from curator.core.executors import make_executor
    from curator.core.runner import Runner

    ovs = _override_list(overrides)
    if isinstance(executor, str):
        ovs.append(f"executor.type={executor}")
    elif executor is not None:
        ovs.extend(_override_list({f"executor.{k}": v for k, v in executor.items()}))
    pipe = pl.load(path, ovs)
    if log is True:
        def logger(msg: str) -> None:
            print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)
    else:
        logger = log or None  # type: ignore[assignment]
    with make_executor(pipe.config.executor, log=logger) as ex:
        runner = Runner(pipe, ex, log=logger)
        summary = runner.run()
    shards = {sid: [Shard(s["name"], s["path"], s.get("docs", 0), s.get("bytes", 0))
                    for s in r.get("shards", [])]
              for sid, r in runner.results.items()}
    return RunResult(name=summary["name"], work_dir=summary["work_dir"],
                     seconds=summary["seconds"], stages=summary["stages"], shards=shards,
                     summary=summary)
