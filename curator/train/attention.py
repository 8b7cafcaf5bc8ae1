"""megatron-core's local core attention computed by PyTorch's ``scaled_dot_product_attention``.

curator builds megatron-core's *local* layer spec (no Transformer Engine). Its
``DotProductAttention`` materialises the ``[b, heads, s, s]`` score matrix, masks it and runs a
separate softmax: on an H200 a 135M GPT trained at 0.46x the tokens/s of a plain PyTorch GPT of
the same size in bf16 (``bench/train_step.py --device cuda --bf16``), whose encoder layer calls
PyTorch's fused attention. :class:`SdpaAttention` is the same module (same constructor, no
parameters of its own, the same checkpoints) whose forward hands query, key and value to
PyTorch's fused kernel (flash / memory-efficient on CUDA, a fused math kernel on CPU): the same
function, ``softmax(q k^T * scale + mask) v``, so the losses agree to rounding
(tests/train/test_attention.py). Cases the fused call does not cover as megatron does
(attention dropout in training, a softmax offset, sliding windows, query-key layer scaling,
attention bias, packed sequences) go to megatron's own forward.
"""

from __future__ import annotations

from typing import Any

import torch
from megatron.core.transformer.dot_product_attention import DotProductAttention
from megatron.core.transformer.enums import AttnMaskType


class SdpaAttention(DotProductAttention):
    """``DotProductAttention`` whose forward is PyTorch's fused scaled dot-product attention."""

    def _megatron_only(self, attention_bias: Any, packed_seq_params: Any) -> bool:
        return (attention_bias is not None or packed_seq_params is not None
                or self.softmax_offset is not None
                or getattr(self.scale_mask_softmax, "window_size", None) is not None
                or self.config.apply_query_key_layer_scaling
                or (self.training and self.attention_dropout.p > 0))

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                attention_mask: torch.Tensor | None, attn_mask_type: AttnMaskType | None = None,
                attention_bias: torch.Tensor | None = None,
                packed_seq_params: Any = None) -> torch.Tensor:
        """query/key/value ``[s, b, heads, head_dim]`` -> context ``[s, b, heads * head_dim]``;
        ``attention_mask`` True where a position may *not* attend (megatron's convention)."""
        if self._megatron_only(attention_bias, packed_seq_params):
            return super().forward(query, key, value, attention_mask, attn_mask_type,
                                   attention_bias, packed_seq_params)
        q, k, v = (t.permute(1, 2, 0, 3) for t in (query, key, value))  # [b, heads, s, d]
        groups = self.num_attention_heads_per_partition // self.num_query_groups_per_partition
        if groups > 1:
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        mask_type = self.attn_mask_type if attn_mask_type is None else attn_mask_type
        causal = attention_mask is None and mask_type == AttnMaskType.causal and q.size(2) > 1
        mask = None if attention_mask is None else attention_mask.logical_not()
        ctx = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal, scale=self.softmax_scale)
        s, b = ctx.size(2), ctx.size(0)
        return ctx.permute(2, 0, 1, 3).reshape(s, b, self.hidden_size_per_partition)
