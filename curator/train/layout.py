"""Parallel layout checks, run before anything is launched.

A wrong layout in Megatron surfaces as an assertion deep inside ``initialize_model_parallel`` on
every rank, minutes into a Slurm job. These checks say the same thing in one line, up front.
Pure Python: no torch import, so ``curator validate`` and the CLI stay fast.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from curator.base.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from curator.train.config import TrainConfig


@dataclass(frozen=True)
class ParallelLayout:
    """A validated layout: ``world_size = dp * tp * pp`` and the batch arithmetic that follows."""

    world_size: int
    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int
    micro_batch_size: int
    global_batch_size: int
    #: Micro batches per step on each data-parallel rank (gradient accumulation).
    num_micro_batches: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def validate_layout(
    *,
    world_size: int,
    tensor_parallel: int = 1,
    pipeline_parallel: int = 1,
    data_parallel: int | None = None,
    micro_batch_size: int,
    global_batch_size: int,
    num_attention_heads: int,
    num_layers: int,
    seq_length: int,
    max_position_embeddings: int,
    gpus_per_node: int | None = None,
    device: str = "cuda",
) -> ParallelLayout:
    """Check a training layout; raise :class:`ConfigError` naming the first rule it breaks.

    ``data_parallel`` may be left out (it is ``world_size / (tp * pp)``); when given it must
    agree. ``gpus_per_node`` bounds tensor parallelism, which needs NVLink-speed links and so
    never spans nodes.
    """
    for key, v in (("world_size", world_size), ("tensor_model_parallel_size", tensor_parallel),
                   ("pipeline_model_parallel_size", pipeline_parallel),
                   ("micro_batch_size", micro_batch_size),
                   ("global_batch_size", global_batch_size),
                   ("num_attention_heads", num_attention_heads), ("num_layers", num_layers),
                   ("seq_length", seq_length)):
        if v < 1:
            raise ConfigError(f"train: {key} must be >= 1 (got {v})")
    mp = tensor_parallel * pipeline_parallel
    if world_size % mp:
        raise ConfigError(
            f"train: world size {world_size} is not divisible by TP x PP = {tensor_parallel} x "
            f"{pipeline_parallel} = {mp}; world size must equal DP x TP x PP")
    dp = world_size // mp
    if data_parallel is not None and data_parallel != dp:
        raise ConfigError(
            f"train: world size {world_size} != DP x TP x PP = {data_parallel} x "
            f"{tensor_parallel} x {pipeline_parallel} = {data_parallel * mp}")
    if global_batch_size % (micro_batch_size * dp):
        raise ConfigError(
            f"train: global batch {global_batch_size} is not a multiple of micro batch x DP = "
            f"{micro_batch_size} x {dp} = {micro_batch_size * dp}")
    if num_attention_heads % tensor_parallel:
        raise ConfigError(
            f"train: {num_attention_heads} attention heads are not divisible by TP = "
            f"{tensor_parallel}")
    if gpus_per_node is not None and tensor_parallel > gpus_per_node:
        raise ConfigError(
            f"train: TP = {tensor_parallel} is larger than the {gpus_per_node} GPUs per node; "
            "tensor parallelism must stay inside one node")
    if num_layers % pipeline_parallel:
        raise ConfigError(
            f"train: {num_layers} layers cannot be split evenly over PP = {pipeline_parallel} "
            "pipeline stages")
    if seq_length > max_position_embeddings:
        raise ConfigError(
            f"train: sequence length {seq_length} exceeds max_position_embeddings "
            f"{max_position_embeddings}")
    if device == "cpu" and mp != 1:
        raise ConfigError(
            f"train: the CPU path supports data parallelism only (got TP = {tensor_parallel}, "
            f"PP = {pipeline_parallel}); tensor/pipeline parallelism need GPUs")
    return ParallelLayout(
        world_size=world_size, tensor_parallel=tensor_parallel,
        pipeline_parallel=pipeline_parallel, data_parallel=dp,
        micro_batch_size=micro_batch_size, global_batch_size=global_batch_size,
        num_micro_batches=global_batch_size // (micro_batch_size * dp),
    )


def layout_for(cfg: TrainConfig, world_size: int, device: str) -> ParallelLayout:
    """:func:`validate_layout` for a :class:`~curator.train.config.TrainConfig`."""
    return validate_layout(
        world_size=world_size, tensor_parallel=cfg.tensor_model_parallel_size,
        pipeline_parallel=cfg.pipeline_model_parallel_size,
        micro_batch_size=cfg.micro_batch_size, global_batch_size=cfg.global_batch_size,
        num_attention_heads=cfg.num_attention_heads, num_layers=cfg.num_layers,
        seq_length=cfg.seq_length, max_position_embeddings=cfg.max_positions,
        gpus_per_node=cfg.gpus_per_node, device=device)
