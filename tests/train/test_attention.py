"""SdpaAttention (curator/train/attention.py): megatron-core's local attention through PyTorch's
fused kernel gives megatron's own outputs and gradients; the cases it does not cover go to
megatron's forward."""

from __future__ import annotations

import pytest
import torch

from curator.train.gpt import build_model, single_process_group

MC = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "ffn_hidden_size": 256,
      "vocab_size": 300, "seq_length": 48, "max_position_embeddings": 48,
      "position_embedding_type": "learned_absolute"}


def _pair() -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    local = build_model(MC, attention="local")
    sdpa = build_model(MC, attention="sdpa")
    sdpa.load_state_dict(local.state_dict())  # no parameters of its own: the same checkpoint
    return local, sdpa


def _batch(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    s = MC["seq_length"]
    ids = torch.randint(0, MC["vocab_size"], (3, s + 1), generator=g)
    mask = torch.ones(s, s, dtype=torch.bool).triu(1).view(1, 1, s, s)
    return ids, torch.arange(s).expand(3, s), mask


def test_default_model_uses_pytorch_fused_attention() -> None:
    from curator.train.attention import SdpaAttention

    with single_process_group():
        core = build_model(MC).decoder.layers[0].self_attention.core_attention
        assert type(core) is SdpaAttention
        local = build_model(MC, attention="local").decoder.layers[0].self_attention
        assert type(local.core_attention) is not SdpaAttention


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_losses_and_gradients_as_megatron_attention(seed: int) -> None:
    with single_process_group():
        local, sdpa = _pair()
        ids, pos, mask = _batch(seed)
        ref = local(ids[:, :-1], pos, mask, labels=ids[:, 1:])
        # with the dataset's causal mask, and with none (what the CUDA step passes)
        for m in (mask, None):
            sdpa.zero_grad()
            out = sdpa(ids[:, :-1], pos, m, labels=ids[:, 1:])
            torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        local.zero_grad()
        ref.mean().backward()
        out.mean().backward()
        for (name, a), (_, b) in zip(local.named_parameters(), sdpa.named_parameters(),
                                     strict=True):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_a_padding_mask_is_honoured() -> None:
    """A mask that is not causal (here: the last 8 keys hidden from every query) is applied
    as megatron applies it, not replaced by the causal one."""
    with single_process_group():
        local, sdpa = _pair()
        ids, pos, mask = _batch(3)
        mask = mask.clone()
        mask[..., -8:] = True
        torch.testing.assert_close(sdpa(ids[:, :-1], pos, mask, labels=ids[:, 1:]),
                                   local(ids[:, :-1], pos, mask, labels=ids[:, 1:]),
                                   rtol=1e-5, atol=1e-5)


def test_attention_dropout_in_training_goes_to_megatron(monkeypatch) -> None:
    from megatron.core.transformer.dot_product_attention import DotProductAttention

    calls = []
    real = DotProductAttention.forward

    def spy(self, *a, **k):
        calls.append(type(self).__name__)
        return real(self, *a, **k)

    monkeypatch.setattr(DotProductAttention, "forward", spy)
    with single_process_group():
        _, sdpa = _pair()
        core = sdpa.decoder.layers[0].self_attention.core_attention
        ids, pos, mask = _batch(4)
        sdpa(ids[:, :-1], pos, mask, labels=ids[:, 1:])
        assert calls == []  # the fused path
        core.attention_dropout.p = 0.1
        sdpa.train()
        sdpa(ids[:, :-1], pos, mask, labels=ids[:, 1:])
        assert calls == ["SdpaAttention"]  # only the layer with dropout fell back
        sdpa.eval()  # no dropout at evaluation: fused again
        sdpa(ids[:, :-1], pos, mask, labels=ids[:, 1:])
        assert calls == ["SdpaAttention"]


def test_training_runs_agree(tmp_path, blend_path: str) -> None:
    from curator.train.config import TrainConfig
    from curator.train.trainer import train

    runs = {att: train(TrainConfig(blend=blend_path, save=str(tmp_path / att), train_iters=12,
                                   num_threads=1, attention=att), log=None)
            for att in ("local", "sdpa")}
    torch.testing.assert_close(torch.tensor(runs["sdpa"]["losses"]),
                               torch.tensor(runs["local"]["losses"]), rtol=1e-4, atol=1e-4)
