"""One training configuration shared by the ``train`` stage, ``curator train`` and the
``torchrun`` worker (it travels to the ranks as a JSON file, so every rank sees the same values).

Names follow Megatron-LM's ``pretrain_gpt.py`` flags where one exists, so a GPU user can carry
numbers over from a Megatron recipe unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from curator.core.errors import ConfigError


@dataclass
class TrainConfig:
    """Everything a training run needs. Defaults are the CPU smoke size (a tiny GPT)."""

    blend: str = field(default="", metadata={"help": "blend.json written by the tokenize stages"})
    save: str = field(default="", metadata={"help": "checkpoint folder (resumes from it)"})
    # -- model ------------------------------------------------------------------------------
    num_layers: int = 2
    hidden_size: int = 64
    num_attention_heads: int = 4
    ffn_hidden_size: int | None = field(default=None, metadata={"help": "default 4 x hidden"})
    seq_length: int = 64
    max_position_embeddings: int | None = field(default=None,
                                                metadata={"help": "default seq_length"})
    # -- optimisation -----------------------------------------------------------------------
    micro_batch_size: int = 4
    global_batch_size: int = 8
    train_iters: int = 40
    lr: float = 3e-3
    min_lr: float = 3e-4
    lr_warmup_iters: int = 0
    weight_decay: float = 0.01
    clip_grad: float = 1.0
    seed: int = 1234
    # -- evaluation, logging, checkpoints ---------------------------------------------------
    eval_interval: int = 0
    eval_iters: int = 2
    log_interval: int = 5
    save_interval: int = 0
    # -- parallelism and hardware -----------------------------------------------------------
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    gpus_per_node: int | None = None
    device: str = field(default="auto", metadata={"help": "auto | cpu | cuda"})
    precision: str = field(default="fp32", metadata={"help": "fp32 | bf16 | fp16 (GPU only)"})
    num_threads: int = field(default=0, metadata={"help": "CPU torch threads (0: torch default)"})

    def __post_init__(self) -> None:
        if self.device not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"train: device must be auto, cpu or cuda (got '{self.device}')")
        if self.precision not in ("fp32", "bf16", "fp16"):
            raise ConfigError(
                f"train: precision must be fp32, bf16 or fp16 (got '{self.precision}')")

    @property
    def max_positions(self) -> int:
        return self.max_position_embeddings or self.seq_length

    @property
    def ffn_size(self) -> int:
        return self.ffn_hidden_size or 4 * self.hidden_size

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"train: unknown setting(s) {', '.join(unknown)}")
        return cls(**d)

    def save_json(self, path: str) -> None:
        from curator.storage.atomic import atomic_open

        with atomic_open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1, sort_keys=True)

    @classmethod
    def load_json(cls, path: str) -> TrainConfig:
        with open(path) as f:
            return cls.from_dict(json.load(f))


#: Fields that change the model or the data order: a checkpoint is only resumed when these
#: match (the step count and intervals may change between runs).
RESUME_KEYS = ("blend", "num_layers", "hidden_size", "num_attention_heads", "ffn_hidden_size",
               "seq_length", "max_position_embeddings", "micro_batch_size", "global_batch_size",
               "seed")
