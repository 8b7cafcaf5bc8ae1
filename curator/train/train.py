"""The ``train`` pipeline stage: hands the tokenized blend to a megatron-core GPT run.

Documents pass through unchanged; the stage publishes ``checkpoint`` (the checkpoint folder)
and ``model_config`` for ``export_triton``. One CPU rank trains in-process; more ranks (or a
GPU) run as rank processes around a loopback-only store (``launch.run_local_ranks``).
Rerunning after a crash resumes from the last checkpoint.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from curator.base.errors import InputError
from curator.core.context import GlobalContext
from curator.core.identity import content_hash
from curator.core.stage import GlobalStage, Shard
from curator.storage.atomic import JsonDoc, write_json
from curator.train.config import TrainConfig
from curator.train.layout import ParallelLayout


@dataclass(frozen=True, kw_only=True)
class TrainSummary:
    """The ``train`` phase result: what the run did (``train_summary.json``'s fields)."""

    checkpoint: str
    iteration: int
    resumed_from: int | None
    steps_run: int
    losses: tuple[float, ...]
    valid_losses: tuple[float, ...]
    seconds: float
    tokens_per_second: float
    layout: ParallelLayout
    device: str
    #: ``model_config.json`` as the checkpoint holds it: published whole as the
    #: ``model_config`` artifact
    model_config: JsonDoc
    train_samples: int

    @classmethod
    def of(cls, summary: dict[str, Any]) -> TrainSummary:
        """From the trainer's summary (a mapping, as ``train_summary.json`` holds it)."""
        return cls(**{**summary, "losses": tuple(summary["losses"]),
                      "valid_losses": tuple(summary["valid_losses"]),
                      "layout": ParallelLayout(**summary["layout"])})


class Train(GlobalStage):
    """Train a megatron-core GPT on the tokenized blend (CPU smoke size by default)."""

    name = "train"

    class Params(TrainConfig):
        """The fields of :class:`~curator.train.config.TrainConfig`, which ``curator train``
        takes as flags: one declaration for the stage, the command and the ranks."""

    def config(self, ctx: GlobalContext) -> TrainConfig:
        """The run's configuration: ``blend`` defaults to the upstream artifact and ``save``
        is resolved under work_dir."""
        return TrainConfig.from_dict({
            **self.params, "blend": os.path.abspath(self.blend or ctx.artifact("blend")),
            "save": ctx.output_path(self.save)})

    def input_files(self) -> list[str]:
        return _blend_files(self.blend) if self.blend else []

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        from curator.train.layout import layout_for
        from curator.train.trainer import resolve_device

        cfg = self.config(ctx)
        # fail before launching anything when the layout is wrong
        layout_for(cfg, self.nproc_per_node, resolve_device(cfg))
        error = _check_data(cfg.save, cfg.blend) if ctx.is_root else None
        error = ctx.executor.broadcast(error)
        if error:
            raise InputError(error)
        # One task on one worker, whatever the executor (under MPI every rank gets the
        # result). Keyed on the stage fingerprint: a finished run is not repeated, an
        # interrupted one resumes from its last checkpoint.
        summary = ctx.map(_run_training, [cfg.to_dict()],
                          phase="train", keys=["run"])[0]
        if ctx.is_root:
            self._report(summary, ctx)
        ctx.artifacts["model_config"] = summary.model_config
        ctx.artifacts["checkpoint"] = cfg.save
        return ctx.passthrough(shards)

    @staticmethod
    def _report(summary: TrainSummary, ctx: GlobalContext) -> None:
        losses = summary.losses
        ctx.count("train_steps", summary.steps_run)
        ctx.artifacts["report_tables"] = [{
            "title": "Training run",
            "columns": ["device", "iterations", "steps run", "first loss", "last loss",
                        "tokens/s", "checkpoint"],
            "rows": [[summary.device, summary.iteration, summary.steps_run,
                      round(losses[0], 4) if losses else None,
                      round(losses[-1], 4) if losses else None,
                      round(summary.tokens_per_second), summary.checkpoint]],
        }]


DATA_STAMP = "curator_data.json"


def _blend_files(blend: str) -> list[str]:
    """blend.json and the .bin/.idx of every prefix it names (just the blend when it cannot be
    read: the run then stops with the blend's own error)."""
    from curator.base.errors import CuratorError
    from curator.train.blend import load_blend

    try:
        prefixes = load_blend(blend).prefixes
    except CuratorError:
        return [blend]
    return [blend] + [p + ext for p in prefixes for ext in (".bin", ".idx")]


def _check_data(save: str, blend: str) -> str | None:
    """The stage reruns when its inputs change, but training resumes from the checkpoints in
    ``save``: checkpoints trained on other data would silently stand for the new data. The data
    a run started on (blend.json and its .bin/.idx: size, mtime_ns, inode and a hash of the
    bytes) is recorded beside the checkpoints; other data with checkpoints present is an error
    naming what changed (deleting days of training is the user's call, not ours). Files
    rewritten with the same bytes (an upstream stage rerun) are the same data: training goes
    on."""
    from curator.core.identity import describe_input_change, identities
    from curator.train.trainer import latest_iteration

    files = _blend_files(blend)
    now = identities(files)
    stamp = os.path.join(save, DATA_STAMP)
    try:
        with open(stamp) as f:
            old = json.load(f)
    except (OSError, ValueError):
        old = None
    if old is not None and _same_data(old, now):
        if {p: _on_disk(ident) for p, ident in old.items()} != now:  # same bytes, rewritten
            write_json(stamp, {p: {**ident, **{k: v for k, v in old[p].items() if k == HASH_KEY}}
                               for p, ident in now.items()})
        return None
    if latest_iteration(save) is not None and old is not None:
        meta = ({p: _on_disk(ident) for p, ident in old.items()}
                if isinstance(old, dict) else old)
        return (f"train: the checkpoints in {save} were trained on other data "
                f"({describe_input_change(meta, now)}); remove them or set another 'save' "
                "folder to train on the new data")
    os.makedirs(save, exist_ok=True)
    write_json(stamp, {p: {**ident, HASH_KEY: content_hash(p)} for p, ident in now.items()})
    return None


#: The key of a file's byte hash in the data stamp.
HASH_KEY = "xxh3_128"


def _on_disk(ident: Any) -> Any:
    """A stamp entry without its byte hash: what :func:`identities` gives of the file."""
    return {k: v for k, v in ident.items() if k != HASH_KEY} if isinstance(ident, dict) else ident


def _same_data(old: Any, now: dict[str, dict[str, Any]]) -> bool:
    """Whether the recorded data is ``now``'s: each file unchanged on disk, or rewritten with
    the same bytes (hashed only then). Stamps without hashes compare on disk only."""
    if not isinstance(old, dict) or set(old) != set(now):
        return False
    for path, ident in now.items():
        was = old[path]
        if not isinstance(was, dict):
            return False
        if _on_disk(was) == ident:
            continue
        if was.get(HASH_KEY) is None or content_hash(path) != was[HASH_KEY]:
            return False
    return True


def _run_training(task: dict[str, Any]) -> TrainSummary:
    """Train in this process (one CPU rank) or as local rank processes; returns the summary."""
    from curator.train.launch import run_local_ranks
    from curator.train.trainer import resolve_device, train

    cfg = TrainConfig.from_dict(task)
    nproc = cfg.nproc_per_node
    if nproc == 1 and resolve_device(cfg) == "cpu":
        summary = train(cfg, log=lambda m: print(m, flush=True))
    else:
        run_local_ranks(cfg, nproc, log=lambda m: print(m, flush=True))
        with open(os.path.join(cfg.save, "train_summary.json")) as f:
            summary = json.load(f)
    return TrainSummary.of(summary)
