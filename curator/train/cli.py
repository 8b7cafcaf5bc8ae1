"""``curator train``: train from a blend.json without a pipeline, in-process, as several local
ranks, or by writing an sbatch script for Slurm."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Literal, get_args, get_origin

from curator.train.config import TrainConfig

#: Flags whose help differs from the stage's (a path given here is under the current folder).
_CLI_HELP = {"blend": "blend.json written by the tokenize stages",
             "save": "checkpoint folder (resumes from it)",
             "nproc_per_node": "rank processes to start on this machine (1: in-process)"}
_REQUIRED = ("blend", "save")


def _arg_type(annotation: Any) -> dict[str, Any]:
    """argparse ``type``/``choices`` of a field's annotation (``PositiveInt | None`` -> int);
    the field's constraints are checked by the model, naming the flag."""
    if get_origin(annotation) is Literal:
        return {"choices": get_args(annotation)}
    if annotation in (int, float):
        return {"type": annotation}
    for arg in get_args(annotation):  # X | None, Annotated[X, ...]
        if arg is not type(None):
            return _arg_type(arg)
    return {"type": str}


def register(sub: Any) -> None:
    p = sub.add_parser("train", help="train a megatron-core GPT on a blend.json (CPU or GPU)",
                       description=__doc__.split("\n")[0])
    for name, fi in TrainConfig.model_fields.items():
        help_ = _CLI_HELP.get(name) or " ".join((fi.description or "").split())
        if name not in _REQUIRED and fi.default is not None:
            help_ += f" (default: {fi.default})"
        # only the flags given reach the model: the defaults are TrainConfig's
        p.add_argument("--" + name.replace("_", "-"), dest=name, default=argparse.SUPPRESS,
                       required=name in _REQUIRED, help=help_, **_arg_type(fi.annotation))
    p.add_argument("--sbatch", metavar="FILE",
                   help="write a Slurm batch script to FILE instead of training")
    p.add_argument("--nodes", type=int, default=1, help="nodes for --sbatch")
    p.add_argument("--partition", help="Slurm partition for --sbatch")
    p.add_argument("--time", default="04:00:00", help="Slurm time limit for --sbatch")
    p.set_defaults(func=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    from curator.train.launch import run_local_ranks, write_sbatch
    from curator.train.layout import layout_for

    given = {k: getattr(args, k) for k in TrainConfig.model_fields if hasattr(args, k)}
    cfg = config_of_flags(given)
    if args.sbatch:
        gpus = cfg.gpus_per_node or cfg.nproc_per_node
        layout_for(cfg, args.nodes * gpus, "cuda")
        os.makedirs(cfg.save, exist_ok=True)
        write_sbatch(cfg, args.sbatch, nodes=args.nodes, gpus_per_node=gpus,
                     partition=args.partition, time_limit=args.time)
        print(f"wrote {args.sbatch}: submit with `sbatch {args.sbatch}`")
        return 0
    from curator.train.trainer import resolve_device, train  # torch from here on

    device = resolve_device(cfg)
    layout_for(cfg, cfg.nproc_per_node, device)
    if cfg.nproc_per_node == 1 and device == "cpu":
        summary = train(cfg, log=lambda m: print(m, file=sys.stderr, flush=True))
        from curator.storage.atomic import atomic_open

        with atomic_open(os.path.join(cfg.save, "train_summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    else:
        run_local_ranks(cfg, cfg.nproc_per_node,
                     log=lambda m: print(m, file=sys.stderr, flush=True))
        with open(os.path.join(cfg.save, "train_summary.json")) as f:
            summary = json.load(f)
    losses = summary["losses"]
    if not losses:
        print(f"nothing left to train: {summary['checkpoint']} is at iteration "
              f"{summary['iteration']}")
    else:
        print(f"trained to iteration {summary['iteration']} on {summary['device']}: loss "
              f"{losses[0]:.4f} -> {losses[-1]:.4f}, {summary['tokens_per_second']:.0f} "
              f"tokens/s; checkpoint {summary['checkpoint']}")
    return 0


def config_of_flags(given: dict[str, Any]) -> TrainConfig:
    """The configuration of the flags given (paths made absolute); a value the model refuses is
    a :class:`ConfigError` naming its flag."""
    from pydantic import ValidationError

    from curator.base.errors import ConfigError
    from curator.train.config import error_line

    try:
        cfg = TrainConfig(**given)
    except ValidationError as e:
        raise ConfigError(f"train: {error_line(e, flags=True)}") from None
    return cfg.model_copy(update={"blend": os.path.abspath(cfg.blend),
                                  "save": os.path.abspath(cfg.save)})
