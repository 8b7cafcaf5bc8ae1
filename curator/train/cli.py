"""``curator train``: train from a blend.json without a pipeline, locally, with torchrun, or by
writing an sbatch script for Slurm."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from curator.train.config import TrainConfig


def _type(f: dataclasses.Field) -> Any:
    t = str(f.type)
    if "float" in t:
        return float
    if "int" in t:
        return int
    return str


def register(sub: Any) -> None:
    p = sub.add_parser("train", help="train a megatron-core GPT on a blend.json (CPU or GPU)",
                       description=__doc__.split("\n")[0])
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        help_ = f.metadata.get("help", "")
        p.add_argument(flag, type=_type(f), default=f.default, dest=f.name,
                       required=f.name in ("blend", "save"),
                       help=f"{help_} (default: {f.default})".strip())
    p.add_argument("--nproc-per-node", type=int, default=1,
                   help="ranks to start on this machine with torchrun (default 1: in-process)")
    p.add_argument("--sbatch", metavar="FILE",
                   help="write a Slurm batch script to FILE instead of training")
    p.add_argument("--nodes", type=int, default=1, help="nodes for --sbatch")
    p.add_argument("--partition", help="Slurm partition for --sbatch")
    p.add_argument("--time", default="04:00:00", help="Slurm time limit for --sbatch")
    p.set_defaults(func=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    from curator.train.launch import run_torchrun, write_sbatch
    from curator.train.layout import layout_for

    cfg = TrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)})
    cfg.blend = os.path.abspath(cfg.blend)
    cfg.save = os.path.abspath(cfg.save)
    if args.sbatch:
        gpus = cfg.gpus_per_node or args.nproc_per_node
        layout_for(cfg, args.nodes * gpus, "cuda")
        os.makedirs(cfg.save, exist_ok=True)
        write_sbatch(cfg, args.sbatch, nodes=args.nodes, gpus_per_node=gpus,
                     partition=args.partition, time_limit=args.time)
        print(f"wrote {args.sbatch}: submit with `sbatch {args.sbatch}`")
        return 0
    from curator.train.trainer import resolve_device, train  # torch from here on

    device = resolve_device(cfg)
    layout_for(cfg, args.nproc_per_node, device)
    if args.nproc_per_node == 1 and device == "cpu":
        summary = train(cfg, log=lambda m: print(m, file=sys.stderr, flush=True))
        from curator.storage.atomic import atomic_open

        with atomic_open(os.path.join(cfg.save, "train_summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    else:
        run_torchrun(cfg, args.nproc_per_node,
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
