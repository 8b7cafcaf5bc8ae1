"""``curator train-quality-classifier``: train the fastText quality model from JSONL files."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile

#: quality.MIN_AUC (not imported: registering the command must not import numpy and fastText)
MIN_AUC = 0.6


def cmd_train(args: argparse.Namespace) -> int:
    from curator.classifiers.quality import (
        HQ,
        LQ,
        check_auc,
        holdout_unit,
        iter_jsonl_texts,
        normalize,
        train_from_parts,
    )
    from curator.core.errors import CuratorError
    from curator.storage.paths import expand_paths

    out = os.path.abspath(args.output)
    try:
        os.makedirs(os.path.dirname(out), exist_ok=True)
    except OSError as e:
        raise CuratorError(f"--output '{args.output}': cannot create its folder: "
                           f"{e.strerror}") from None
    work = tempfile.mkdtemp(prefix="quality-", dir=os.path.dirname(out) or ".")
    try:
        tr, ho = os.path.join(work, "part.train.txt"), os.path.join(work, "part.holdout.txt")
        with open(tr, "w", encoding="utf-8") as ftr, open(ho, "w", encoding="utf-8") as fho:
            for label, paths in ((HQ, args.positive), (LQ, args.negative)):
                for doc_id, text in iter_jsonl_texts(expand_paths(paths, what=label),
                                                     args.text_field):
                    t = normalize(text)
                    if len(t.split()) < args.min_words:
                        continue
                    f = fho if holdout_unit(args.seed, doc_id) < args.holdout else ftr
                    f.write(f"{label} {t}\n")
        sizes = {k: v for k, v in (("dim", args.dim), ("bucket", args.bucket)) if v}
        result = train_from_parts([tr], [ho], work, epoch=args.epoch, lr=args.lr,
                                  word_ngrams=args.word_ngrams, seed=args.seed,
                                  quantize=args.quantize, **sizes,
                                  max_docs_per_label=args.max_docs_per_label)
        sources = f"--positive {' '.join(args.positive)} vs --negative {' '.join(args.negative)}"
        check_auc(result["metrics"], args.min_auc, args.holdout, "train-quality-classifier",
                  "--split", sources, "--min-auc 0")
        os.replace(result["model"], out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"model": out, **result["metrics"]}, indent=2))
    return 0


def _share(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        x = -1.0
    if not 0.0 <= x < 1.0:
        raise argparse.ArgumentTypeError(f"'{value}' is not a share in [0, 1), e.g. 0.1")
    return x


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train-quality-classifier",
                       help="train a fastText quality classifier (high-quality vs crawl JSONL)")
    p.add_argument("--positive", nargs="+", required=True,
                   help="JSONL file(s)/globs of high-quality reference text (e.g. Wikipedia)")
    p.add_argument("--negative", nargs="+", required=True, help="JSONL file(s)/globs of crawl")
    p.add_argument("--output", "-o", required=True, help="where to save the model (.bin)")
    p.add_argument("--text-field", default="text")
    p.add_argument("--split", "--holdout", dest="holdout", type=_share, default=0.1,
                   metavar="SHARE",
                   help="share of documents held out to evaluate the model (by a hash of "
                        "the id; default 0.1)")
    p.add_argument("--min-auc", type=float, default=MIN_AUC,
                   help=f"stop without writing the model when the held-out ROC AUC is below "
                        f"this (default {MIN_AUC}; 0 accepts any model)")
    p.add_argument("--min-words", type=int, default=5)
    p.add_argument("--max-docs-per-label", type=int, default=200_000)
    p.add_argument("--epoch", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--dim", type=int, help="vector size (default 16)")
    p.add_argument("--bucket", type=int,
                   help="hash rows for word n-grams (default 100000; fastText's own default, "
                        "2000000, makes a model of ~512 MB at dim 64)")
    p.add_argument("--quantize", action="store_true",
                   help="product-quantize the model (about 8x smaller, slower to train)")
    p.add_argument("--word-ngrams", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_train)
