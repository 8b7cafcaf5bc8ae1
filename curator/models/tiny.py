"""Tiny BERT sequence classifiers built from scratch, offline: a WordPiece tokenizer trained on
the given texts with ``tokenizers`` and a randomly initialised (optionally briefly fitted)
``BertForSequenceClassification``, saved with ``save_pretrained``. The tests, the bundled demo
model of ``pipelines/fineweb-edu.yaml`` (``scripts/make_tiny_models.py``) and the benches use
them, so nothing is downloaded."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_wordpiece(texts: Sequence[str], vocab_size: int = 1000, max_length: int = 128) -> Any:
    """A BERT-style fast tokenizer (lowercasing, WordPiece) built from ``texts``.

    The vocabulary is the special tokens, every character seen (alone and as ``##`` suffix)
    and then the most frequent words (ties by the word) up to ``vocab_size``: the same texts
    give the same tokenizer in every process. (tokenizers' WordPieceTrainer breaks ties in
    hash order, so each pytest worker built a different "same" tiny model.)"""
    from collections import Counter

    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    norm, pre = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w for w, _ in pre.pre_tokenize_str(norm.normalize_str(text)))
    chars = sorted({c for w in counts for c in w})
    vocab: dict[str, int] = {}
    for token in [*SPECIALS, *chars, *(f"##{c}" for c in chars)]:
        vocab.setdefault(token, len(vocab))
    for word, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(vocab) >= vocab_size:
            break
        vocab.setdefault(word, len(vocab))
    tok = Tokenizer(models.WordPiece(vocab=vocab, **{"unk_token": "[UNK]"}))
    tok.normalizer = norm
    tok.pre_tokenizer = pre
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    roles = {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]",
             "sep_token": "[SEP]", "mask_token": "[MASK]"}  # token names, not secrets
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=max_length, **roles)


def build_classifier(out_dir: str, texts: Sequence[str], *, num_labels: int = 1,
                     labels: Sequence[str] | None = None, hidden: int = 32, layers: int = 2,
                     heads: int = 2, max_length: int = 128, vocab_size: int = 1000,
                     seed: int = 0, targets: Sequence[float] | None = None,
                     steps: int = 0, tokenizer: Any = None, init_range: float = 0.5) -> str:
    """Save a tiny ``BertForSequenceClassification`` and its tokenizer into ``out_dir``.

    With ``targets`` (one per text) and ``steps`` > 0 its regression head is fitted for that
    many Adam steps (the whole model), so that its scores mean something; otherwise it is
    randomly initialised from ``seed`` with weights of std ``init_range`` (BERT's 0.02 gives
    near-constant outputs: no test could tell two documents apart). Returns ``out_dir``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    tok = tokenizer or train_wordpiece(texts, vocab_size, max_length)
    torch.manual_seed(seed)
    kw: dict[str, Any] = {}
    if labels is not None:
        kw = {"id2label": dict(enumerate(labels)),
              "label2id": {n: i for i, n in enumerate(labels)}}
        num_labels = len(labels)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, intermediate_size=hidden * 2,
                     max_position_embeddings=max_length, num_labels=num_labels,
                     pad_token_id=tok.pad_token_id, initializer_range=init_range, **kw)
    model = BertForSequenceClassification(cfg)
    if targets is not None and steps > 0:
        _fit(model, tok, list(texts), [float(t) for t in targets], steps, max_length, seed)
    model.eval()
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


def _fit(model: Any, tok: Any, texts: list[str], targets: list[float], steps: int,
         max_length: int, seed: int) -> None:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: threads only add synchronisation
    try:
        _steps(model, tok, texts, targets, steps, max_length, seed)
    finally:
        torch.set_num_threads(threads)


def _steps(model: Any, tok: Any, texts: list[str], targets: list[float], steps: int,
           max_length: int, seed: int) -> None:
    import torch

    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    y_all = torch.tensor(targets, dtype=torch.float32)
    enc = tok(texts, truncation=True, max_length=max_length, padding=True,
              return_tensors="pt")  # once: tokenizing every step costs more than the step
    model.train()
    for _ in range(steps):
        idx = torch.randint(len(texts), (min(16, len(texts)),), generator=gen)
        out = model(**{k: v[idx] for k, v in enc.items()}).logits.squeeze(-1)
        loss = torch.nn.functional.mse_loss(out, y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
