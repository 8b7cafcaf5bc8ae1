"""Training-step throughput: curator's megatron-core GPT path vs a plain PyTorch GPT of the
same size (nn.TransformerEncoderLayer, causal mask, tied nothing), measured side by side on the
same batches. Run on demand:

    python bench/train_step.py [--layers 2 --hidden 64 --heads 4 --seq 64 --batch 8 --steps 40]

Prints tokens/s of both and the ratio (curator / plain). On GPU pass --device cuda.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from bench.common import bench_main


class PlainGPT(torch.nn.Module):
    def __init__(self, vocab: int, layers: int, hidden: int, heads: int, seq: int) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, hidden)
        self.pos = torch.nn.Embedding(seq, hidden)
        layer = torch.nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0,
                                                 activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, layers)
        self.norm = torch.nn.LayerNorm(hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        s = ids.shape[1]
        pos = torch.arange(s, device=ids.device)
        mask = torch.nn.Transformer.generate_square_subsequent_mask(s, device=ids.device)
        h = self.blocks(self.tok(ids) + self.pos(pos), mask=mask, is_causal=True)
        logits = self.head(self.norm(h))
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--bf16", action="store_true", help="autocast both models to bfloat16 (GPU)")
    ap.add_argument("--attention", default="sdpa", choices=["sdpa", "local"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    from curator.train.gpt import build_model, single_process_group

    g = torch.Generator().manual_seed(0)
    data = torch.randint(0, a.vocab, (a.steps + 5, a.batch, a.seq + 1), generator=g)
    mc = {"num_layers": a.layers, "hidden_size": a.hidden, "num_attention_heads": a.heads,
          "ffn_hidden_size": 4 * a.hidden, "vocab_size": a.vocab, "seq_length": a.seq,
          "max_position_embeddings": a.seq, "position_embedding_type": "learned_absolute"}
    pos = torch.arange(a.seq).expand(a.batch, a.seq).to(a.device)
    mask = torch.ones(a.seq, a.seq, dtype=torch.bool).triu(1).view(1, 1, a.seq, a.seq)
    mask = mask.to(a.device)

    def timed(step, b: torch.Tensor) -> float:
        t = time.perf_counter()
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.bf16):
            step(b)
        if a.device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t

    with single_process_group():
        torch.manual_seed(0)
        if a.device == "cuda":  # megatron's layers draw from its CUDA RNG tracker
            from megatron.core import tensor_parallel

            tensor_parallel.model_parallel_cuda_manual_seed(0)
        mg = build_model(mc, device=a.device, attention=a.attention).to(a.device)
        opt_m = torch.optim.AdamW(mg.parameters(), lr=1e-3)

        def step_m(b: torch.Tensor) -> None:
            b = b.to(a.device)
            out = mg(b[:, :-1], pos, mask, labels=b[:, 1:])
            loss = out.float().mean()
            opt_m.zero_grad()
            loss.backward()
            opt_m.step()

    plain = PlainGPT(a.vocab, a.layers, a.hidden, a.heads, a.seq).to(a.device)
    opt_p = torch.optim.AdamW(plain.parameters(), lr=1e-3)

    def step_p(b: torch.Tensor) -> None:
        b = b.to(a.device)
        loss = plain(b[:, :-1], b[:, 1:])
        opt_p.zero_grad()
        loss.backward()
        opt_p.step()

    # interleaved, step by step, so a shared machine's load hits both alike
    t_m = t_p = 0.0
    with single_process_group():
        for i in range(3):  # warm-up, not timed
            timed(step_m, data[i])
            timed(step_p, data[i])
        for i in range(a.steps):
            t_m += timed(step_m, data[5 + i])
            t_p += timed(step_p, data[5 + i])
    tokens = a.steps * a.batch * a.seq
    tps_m, tps_p = tokens / t_m, tokens / t_p
    n_m = sum(p.numel() for p in mg.parameters())
    n_p = sum(p.numel() for p in plain.parameters())
    print(f"megatron-core GPTModel (curator): {tps_m:,.0f} tokens/s ({n_m:,} params)")
    print(f"plain PyTorch GPT (peer):         {tps_p:,.0f} tokens/s ({n_p:,} params)")
    print(f"ratio curator / plain: {tps_m / tps_p:.2f}")


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
