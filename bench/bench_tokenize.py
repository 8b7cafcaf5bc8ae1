"""Tokens/s per core of curator's Megatron writer against datatrove's
``MegatronDocumentTokenizer``, side by side in one run, on the same documents and the same
byte-level BPE tokenizer (trained here, so nothing is downloaded).

Both run in this process with one tokenizer thread (TOKENIZERS_PARALLELISM=false), so the
figures are per core; documents are in memory for both, so the timing covers tokenization
and writing .bin/.idx, not JSON parsing. The two outputs are also compared byte for byte.
"tokenizers library only" is ``Tokenizer.encode_batch_fast`` alone (what both would cost
without curator's pre-token cache, curator/tokenize/pretoken.py).

Text: synthetic English-like documents (default), or ``--corpus DIR``: real text, the .txt
files under DIR cut into ~10 KB documents (e.g. the Python 3.11 documentation sources from
Debian's python3.11-doc, /usr/share/doc/python3.11/html/_sources); the tokenizer is trained
on the first 3,000 documents either way.

    PYTHONPATH=. python bench/bench_tokenize.py --docs 20000 --repeat 4
    PYTHONPATH=. python bench/bench_tokenize.py --corpus /usr/share/doc/python3.11/html/_sources
"""

from __future__ import annotations

import os

from bench.common import bench_main

os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable

from curator.base.document import Document
from curator.tokenize.load import load_encoder
from curator.tokenize.megatron_shards import PartWriter
from curator.tokenize.train_tokenizer import TrainTokenizer, train_bpe


def make_corpus(n: int, seed: int = 0) -> list[str]:
    """English-like text: Zipf-distributed pseudo-words in sentences and paragraphs."""
    rng = random.Random(seed)
    syll = ["ka", "to", "ri", "an", "el", "mo", "su", "ne", "li", "ra", "th", "or", "in", "es"]
    words = ["".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) for _ in range(20000)]
    weights = [1.0 / (i + 1) for i in range(len(words))]
    docs = []
    for _ in range(n):
        paras = []
        for _ in range(rng.randint(1, 4)):
            sents = []
            for _ in range(rng.randint(2, 8)):
                w = rng.choices(words, weights, k=rng.randint(5, 25))
                sents.append(" ".join(w).capitalize() + rng.choice([".", ".", "?", "!"]))
            paras.append(" ".join(sents))
        docs.append("\n\n".join(paras))
    return docs


def timed(fn: Callable[[], None]) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--corpus", default="", help="folder of .txt files (real text)")
    args = ap.parse_args(argv)

    from datatrove.data import Document as DTDocument
    from datatrove.pipeline.tokens.megatron_tokenizer import MegatronDocumentTokenizer

    tmp = tempfile.mkdtemp(prefix="bench-tokenize-")
    try:
        if args.corpus:
            from bench.bench_minhash import load_corpus

            texts = load_corpus(args.corpus, limit=args.docs)
            args.docs = len(texts)
        else:
            texts = make_corpus(args.docs)
        mb = sum(len(t.encode()) for t in texts) / 1e6
        tok = train_bpe(TrainTokenizer(vocab_size=args.vocab), iter(texts[:3000]),
                        os.path.join(tmp, "tok"))
        enc = load_encoder({"type": "huggingface", "path": tok.path})
        ours_docs = [Document(str(i), t, {}) for i, t in enumerate(texts)]
        dt_docs = [DTDocument(text=t, id=str(i)) for i, t in enumerate(texts)]

        def run_ours(stats: float) -> Callable[[], None]:
            def go() -> None:
                w = PartWriter(os.path.join(tmp, "ours"), enc, sentence_stats=stats)
                for i in range(0, len(ours_docs), args.batch):
                    w.add(ours_docs[i:i + args.batch])
                run_ours.tokens = w.close().tokens  # type: ignore[attr-defined]
            return go

        def run_datatrove() -> None:
            step = MegatronDocumentTokenizer(
                output_folder=os.path.join(tmp, "dt"), save_filename="dt",
                tokenizer_name_or_path=tok.path, eos_token="<|endoftext|>",
                batch_size=args.batch)
            step.run(iter(dt_docs))

        def run_tokenizer_only() -> None:
            for i in range(0, len(texts), args.batch):
                enc.impl.encode_batch_fast(texts[i:i + args.batch], add_special_tokens=False)

        results: dict[str, list[tuple[float, float]]] = {
            "curator": [], "curator+stats": [], "datatrove": [], "tokenizers library only": []}
        # curator: sentence statistics off; curator+stats: the default (1 document in 10)
        runs = [("datatrove", run_datatrove), ("curator", run_ours(0.0)),
                 ("curator+stats", run_ours(0.1)), ("tokenizers library only", run_tokenizer_only)]
        # interleaved, best of N; the order rotates every round because whichever runs first
        # in a round was measured up to 40% faster on this machine
        for r in range(args.repeat):
            for name, fn in runs[r % len(runs):] + runs[:r % len(runs)]:
                results[name].append(timed(fn))
        tokens = run_ours.tokens  # type: ignore[attr-defined]

        with open(os.path.join(tmp, "ours.bin"), "rb") as a, \
                open(os.path.join(tmp, "dt", "dt_00000_tokens.bin"), "rb") as b:
            same_bin = a.read() == b.read()
        with open(os.path.join(tmp, "ours.idx"), "rb") as a, \
                open(os.path.join(tmp, "dt", "dt_00000_tokens.idx"), "rb") as b:
            same_idx = a.read() == b.read()

        what = f"real text from {args.corpus}" if args.corpus else "synthetic text"
        print(f"{args.docs} documents ({what}), {mb:.1f} MB, {tokens} tokens, "
              f"vocab {tok.vocab_size}, batch {args.batch}, best of {args.repeat}, "
              "1 tokenizer thread")
        best = {k: min(v, key=lambda x: x[1]) for k, v in results.items()}
        for k, (wall, cpu) in best.items():
            print(f"  {k:24s} {tokens / cpu / 1e6:7.3f} M tokens/s per core (CPU time), "
                  f"{tokens / wall / 1e6:7.3f} M tokens/s wall")
        ref = best["datatrove"][1]
        print(f"  ratio curator/datatrove (per core): {ref / best['curator'][1]:.2f}x; "
              f"with default sentence stats (1 doc in 10): "
              f"{ref / best['curator+stats'][1]:.2f}x")
        tok_cpu = best["tokenizers library only"][1]
        print(f"  CPU time relative to the tokenizers library alone: curator "
              f"{best['curator'][1] / tok_cpu - 1:+.0%}, datatrove {ref / tok_cpu - 1:+.0%}")
        print(f"  outputs byte-identical: .bin {same_bin}, .idx {same_idx}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
