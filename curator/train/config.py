"""One training configuration shared by the ``train`` stage, ``curator train`` and the
``torchrun`` worker (it travels to the ranks as a JSON file, so every rank sees the same values).

:class:`TrainConfig` is a parameter model (:class:`~curator.core.params.StageParams`): the
``train`` stage's ``Params`` inherits it unchanged and ``curator train`` makes a flag of each
field, so the YAML keys, the flags, their defaults, constraints and help are declared once here.

Names follow Megatron-LM's ``pretrain_gpt.py`` flags where one exists, so a GPU user can carry
numbers over from a Megatron recipe unchanged.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import ValidationError

from curator.base.errors import ConfigError
from curator.core.params import (
    FilePath,
    NonNegFloat,
    NonNegInt,
    OutputDir,
    PositiveFloat,
    PositiveInt,
    StageParams,
)


class TrainConfig(StageParams):
    """Everything a training run needs. Defaults are the CPU smoke size (a tiny GPT)."""

    blend: FilePath = ""
    """Path of `blend.json`; empty = upstream `blend` artifact."""
    save: OutputDir = "train/checkpoints"
    """Checkpoint folder (relative = under work_dir)."""
    # -- model ------------------------------------------------------------------------------
    num_layers: PositiveInt = 2
    """Transformer layers."""
    hidden_size: PositiveInt = 64
    """Hidden size."""
    num_attention_heads: PositiveInt = 4
    """Attention heads."""
    ffn_hidden_size: PositiveInt | None = None
    """MLP size (default 4 x hidden_size)."""
    seq_length: PositiveInt = 64
    """Training sequence length."""
    max_position_embeddings: PositiveInt | None = None
    """Default `seq_length` (learned absolute positions)."""
    # -- optimisation -----------------------------------------------------------------------
    micro_batch_size: PositiveInt = 4
    """Sequences per rank per step."""
    global_batch_size: PositiveInt = 8
    """Per optimizer step (gradient accumulation = global / (micro x DP))."""
    train_iters: PositiveInt = 40
    """Optimizer steps."""
    lr: PositiveFloat = 3e-3
    """Cosine decay to `min_lr`."""
    min_lr: NonNegFloat = 3e-4
    """Learning rate at the end of cosine decay."""
    lr_warmup_iters: NonNegInt = 0
    """Linear warmup steps."""
    weight_decay: NonNegFloat = 0.01
    """AdamW (not on biases, norms, embeddings)."""
    clip_grad: NonNegFloat = 1.0
    """Gradient-norm clip (0 = off)."""
    seed: int = 1234
    """Model init and megatron's sample shuffle."""
    # -- evaluation, logging, checkpoints ---------------------------------------------------
    eval_interval: NonNegInt = 0
    """Validate every N steps (0 = never; then no valid split is built)."""
    eval_iters: NonNegInt = 2
    """Global batches per validation."""
    log_interval: PositiveInt = 5
    """Log loss, lr, ms/step, tokens/s every N steps."""
    save_interval: NonNegInt = 0
    """Checkpoint every N steps (the last step is always saved)."""
    # -- parallelism and hardware -----------------------------------------------------------
    tensor_model_parallel_size: PositiveInt = 1
    """Tensor parallel ranks."""
    pipeline_model_parallel_size: PositiveInt = 1
    """Pipeline parallel ranks."""
    gpus_per_node: PositiveInt | None = None
    """GPUs per node (default: all visible)."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """`auto` / `cpu` / `cuda`."""
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    """`fp32` / `bf16` / `fp16` (GPU only)."""
    attention: Literal["sdpa", "local"] = "sdpa"
    """`sdpa`: megatron-core's local attention computed by PyTorch's fused kernel (2.3x the
    bf16 tokens/s of a 125M GPT on an H200); `local`: megatron-core's own."""
    num_threads: NonNegInt = 0
    """CPU torch threads (0 = torch default)."""
    nproc_per_node: PositiveInt = 1
    """>1 (or a GPU) starts that many rank processes on this machine, around a store bound to
    127.0.0.1."""

    @property
    def max_positions(self) -> int:
        return self.max_position_embeddings or self.seq_length

    @property
    def ffn_size(self) -> int:
        return self.ffn_hidden_size or 4 * self.hidden_size

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        """Validate settings given as a mapping (the CLI's flags, a train_config.json, a
        pipeline's task); a bad one is a :class:`ConfigError` naming its key."""
        try:
            return cls(**d)
        except ValidationError as e:
            raise ConfigError(f"train: {error_line(e)}") from None

    def save_json(self, path: str) -> None:
        from curator.storage.atomic import atomic_open

        with atomic_open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1, sort_keys=True)

    @classmethod
    def load_json(cls, path: str) -> TrainConfig:
        """A train_config.json written by this or an earlier version (one without a later
        field gets its default)."""
        with open(path) as f:
            data = json.load(f)
        try:
            return cls(**data)
        except ValidationError as e:
            raise ConfigError(f"train: {path}: {error_line(e)}") from None


def error_line(e: ValidationError, flags: bool = False) -> str:
    """``key: what is wrong (got value)`` for the first error (``--flag`` spelling for the
    CLI with ``flags``)."""
    err = e.errors()[0]
    key = ".".join(str(x) for x in err["loc"])
    if flags and key:
        key = "--" + key.replace("_", "-")
    msg = "unknown setting" if err["type"] == "extra_forbidden" else err["msg"]
    got = err.get("input")
    if err["type"] != "extra_forbidden" and got is not None and not isinstance(got, dict | list):
        msg += f" (got {got!r})"
    more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return f"{key}: {msg}{more}"


#: Fields that change the model or the data order: a checkpoint is only resumed when these
#: match (the step count and intervals may change between runs).
RESUME_KEYS = ("blend", "num_layers", "hidden_size", "num_attention_heads", "ffn_hidden_size",
               "seq_length", "max_position_embeddings", "micro_batch_size", "global_batch_size",
               "seed")
