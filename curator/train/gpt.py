"""megatron-core pieces: the GPT model and the blended GPT datasets over our ``.bin/.idx``.

megatron-core 0.16.1 (the newest release installable on Python 3.11) is GPU-first. On CPU two
things hard-code CUDA in a forward pass: ``GlobalMemoryBuffer.get_tensor`` allocates on
``torch.cuda.current_device()`` and dropout forks the CUDA RNG tracker. :func:`enable_cpu`
replaces exactly those two, and only when we run on CPU, so the same ``GPTModel`` and the same
dataset builders run on a laptop and on a GPU cluster.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import os
from collections.abc import Iterator
from typing import Any

import torch

from curator.train.blend import Blend
from curator.train.config import TrainConfig
from curator.train.quiet import megatron_notices_off

megatron_notices_off()  # before any megatron import (attention.py's, build_model's)

_CPU_ENABLED = False


class _CpuRngTracker:
    """Stands in for Megatron's CUDA RNG tracker on CPU: forks nothing (the CPU generator is
    shared), which is what a single CPU process with no tensor parallelism needs."""

    def fork(self, name: str = "") -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def add(self, name: str, seed: int) -> None:
        pass

    def reset(self) -> None:
        pass

    def get_states(self) -> dict[str, Any]:
        return {}

    def set_states(self, states: dict[str, Any]) -> None:
        pass

    def is_initialized(self) -> bool:
        return True


def enable_cpu() -> None:
    """Make megatron-core's GPT forward/backward run on CPU (idempotent; CPU runs only)."""
    global _CPU_ENABLED
    if _CPU_ENABLED:
        return
    import megatron.core.tensor_parallel.random as mrandom
    from megatron.core import utils as mutils

    def get_tensor(self: Any, tensor_shape: Any, dtype: torch.dtype, name: str,
                   mem_alloc_context: Any = None) -> torch.Tensor:
        n = functools.reduce(operator.mul, tensor_shape, 1)
        key = (name, dtype)
        buf = self.buffer.get(key)
        if buf is None or buf.numel() < n:
            buf = self.buffer[key] = torch.empty(n, dtype=dtype, requires_grad=False)
        return buf[:n].view(*tensor_shape)

    mutils.GlobalMemoryBuffer.get_tensor = get_tensor
    mrandom._CUDA_RNG_STATE_TRACKER = _CpuRngTracker()
    mrandom._CUDA_RNG_STATE_TRACKER_INITIALIZED = True
    _CPU_ENABLED = True


def model_config(cfg: TrainConfig, vocab_size: int, tokenizer: dict[str, Any]) -> dict[str, Any]:
    """What export needs to rebuild the model and its tokenizer (``model_config`` artifact)."""
    return {
        "arch": "megatron-core GPTModel",
        "megatron_core": _megatron_version(),
        "num_layers": cfg.num_layers, "hidden_size": cfg.hidden_size,
        "num_attention_heads": cfg.num_attention_heads, "ffn_hidden_size": cfg.ffn_size,
        "vocab_size": vocab_size, "seq_length": cfg.seq_length,
        "max_position_embeddings": cfg.max_positions,
        "position_embedding_type": "learned_absolute", "tokenizer": tokenizer,
    }


def _megatron_version() -> str:
    from megatron.core.package_info import __version__

    return str(__version__)


def build_model(mc: dict[str, Any], *, device: str = "cpu", pre_process: bool = True,
                post_process: bool = True, precision: str = "fp32",
                pipeline_parallel: int = 1, attention: str = "sdpa") -> torch.nn.Module:
    """A megatron-core ``GPTModel`` from a ``model_config`` dict (local, non-TE layers, so it
    builds without Transformer Engine; TE is a drop-in swap on GPU clusters that have it).
    ``attention="sdpa"``: the local spec's core attention computed by PyTorch's fused kernel
    (curator/train/attention.py); ``"local"``: megatron-core's own."""
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig

    if device == "cpu":
        enable_cpu()
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    tc = TransformerConfig(
        num_layers=mc["num_layers"], hidden_size=mc["hidden_size"],
        num_attention_heads=mc["num_attention_heads"], ffn_hidden_size=mc["ffn_hidden_size"],
        hidden_dropout=0.0, attention_dropout=0.0,
        use_cpu_initialization=(device == "cpu"), perform_initialization=True,
        bf16=precision == "bf16", fp16=precision == "fp16", params_dtype=dtype,
        pipeline_dtype=dtype if pipeline_parallel > 1 else None,
        pipeline_model_parallel_size=pipeline_parallel,
        # [] is what megatron turns its default "full" into, with a deprecation warning
        cuda_graph_scope=[],
    )
    spec = get_gpt_layer_local_spec()
    if attention == "sdpa":
        from curator.train.attention import SdpaAttention

        spec.submodules.self_attention.submodules.core_attention = SdpaAttention
    return GPTModel(
        config=tc, transformer_layer_spec=spec,
        vocab_size=mc["vocab_size"], max_sequence_length=mc["max_position_embeddings"],
        pre_process=pre_process, post_process=post_process,
        position_embedding_type=mc["position_embedding_type"],
    )


class BlendTokenizer:
    """The little a megatron-core GPT dataset asks of a tokenizer: vocabulary size, EOD id and
    an identity for its cache keys."""

    def __init__(self, tok: dict[str, Any]) -> None:
        self.vocab_size = int(tok["vocab_size"])
        self.eod = int(tok["eod_id"])
        self.unique_identifiers = {"class": "curator", "type": tok["type"], "path": tok["path"]}


def build_datasets(cfg: TrainConfig, blend: Blend, bookends: list[Any], sizes: list[int],
                   cache_dir: str) -> list[Any]:
    """megatron-core's ``BlendedMegatronDatasetBuilder`` + ``GPTDataset`` over the blend.

    Needs an initialised process group (rank 0 builds the index cache, the others read it).
    ``bookends`` is :func:`~curator.train.blend.plan_splits`'s matrix: splits set to ``None``
    are not built.
    """
    from megatron.core.datasets.blended_megatron_dataset_builder import (
        BlendedMegatronDatasetBuilder,
    )
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig

    os.makedirs(cache_dir, exist_ok=True)
    dcfg = GPTDatasetConfig(
        random_seed=cfg.seed, sequence_length=cfg.seq_length,
        blend=(blend.prefixes, blend.weights), split=blend.split, path_to_cache=cache_dir,
        tokenizer=BlendTokenizer(blend.tokenizer), reset_position_ids=False,
        reset_attention_mask=False, eod_mask_loss=False,
    )
    dcfg.split_matrix = list(bookends)
    # Megatron asserts a weighted blend has a size for every split; a split switched off in
    # the matrix gets 0 and is never built.
    sizes = [s if be is not None else 0 for s, be in zip(sizes, bookends)]
    return BlendedMegatronDatasetBuilder(GPTDataset, sizes, lambda: True, dcfg).build()


def batches(dataset: Any, start_sample: int, count: int, micro: int, dp_rank: int,
            dp_size: int) -> Iterator[dict[str, torch.Tensor]]:
    """Micro batches of this data-parallel rank for global samples ``[start, start+count)``.

    The sample order is a pure function of the global position, so a resumed run reads exactly
    what the uninterrupted run would have read, whatever the number of ranks.
    """
    per_rank = count // dp_size
    first = start_sample + dp_rank * per_rank
    for b in range(first, first + per_rank, micro):
        items = [dataset[i % len(dataset)] for i in range(b, b + micro)]
        yield {k: torch.stack([torch.as_tensor(it[k]) for it in items])
               for k in ("tokens", "labels", "loss_mask", "attention_mask", "position_ids")}


@contextlib.contextmanager
def single_process_group() -> Iterator[None]:
    """A size-1 gloo group with Megatron's model-parallel state, for building a ``GPTModel``
    outside training (export, tests). Reuses a group that is already up."""
    import torch.distributed as dist
    from megatron.core import parallel_state as ps

    created = not dist.is_initialized()
    if created:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    own_ps = not ps.model_parallel_is_initialized()
    if own_ps:
        ps.initialize_model_parallel(1, 1)
    try:
        yield
    finally:
        if own_ps:
            ps.destroy_model_parallel()
        if created:
            dist.destroy_process_group()
