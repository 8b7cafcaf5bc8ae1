"""``curator train-quality-classifier``: train the fastText quality model from JSONL files."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import TextIO

#: quality.MIN_AUC (not imported: registering the command must not import numpy and fastText)
MIN_AUC = 0.6


def cmd_train(args: argparse.Namespace) -> int:
    from curator.base.errors import CuratorError
    from curator.classifiers.quality import check_auc, train_from_parts

    _check_args(args.tqc_parser, args)
    out = os.path.abspath(args.output)
    try:
        os.makedirs(os.path.dirname(out), exist_ok=True)
    except OSError as e:
        raise CuratorError(f"--output '{args.output}': cannot create its folder: "
                           f"{e.strerror}") from None
    work = tempfile.mkdtemp(prefix="quality-", dir=os.path.dirname(out) or ".")
    try:
        tr, ho = os.path.join(work, "part.train.txt"), os.path.join(work, "part.holdout.txt")
        te = os.path.join(work, "part.teacher.txt") if args.labels_from else None
        with open(tr, "w", encoding="utf-8") as ftr, open(ho, "w", encoding="utf-8") as fho:
            if args.labels_from:
                counts = _write_teacher_labels(args, ftr, fho, te or "")
                sources = f"--labels-from {args.labels_from} >= {args.threshold:g} vs below"
            else:
                counts = _write_source_labels(args, ftr, fho)
                sources = (f"--positive {' '.join(args.positive)} vs --negative "
                           f"{' '.join(args.negative)}")
        sizes = {k: v for k, v in (("dim", args.dim), ("bucket", args.bucket)) if v}
        result = train_from_parts([tr], [ho], work, epoch=args.epoch, lr=args.lr,
                                  word_ngrams=args.word_ngrams, seed=args.seed,
                                  quantize=args.quantize, **sizes,
                                  max_docs_per_label=args.max_docs_per_label,
                                  teacher_parts=[te] if te else None)
        check_auc(result.metrics, args.min_auc, args.holdout, "train-quality-classifier",
                  "--split", sources, "--min-auc 0")
        os.replace(result.model, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m = result.metrics
    if args.labels_from:  # the headline a user checks first; stdout stays one JSON object
        sys.stderr.write(f"held-out ROC AUC {m.auc}, Spearman {m.spearman} vs "
                         f"{args.labels_from} ({m.holdout_docs} documents)\n")
    print(json.dumps({"model": out, **counts, **m.to_json()}, indent=2))
    return 0


def _write_source_labels(args: argparse.Namespace, ftr: TextIO, fho: TextIO) -> dict[str, int]:
    """--positive / --negative: the label is the file a document comes from."""
    from curator.classifiers.quality import HQ, LQ, holdout_unit, iter_jsonl_texts, normalize
    from curator.storage.paths import expand_paths

    for label, paths in ((HQ, args.positive), (LQ, args.negative)):
        for doc_id, text in iter_jsonl_texts(expand_paths(paths, what=label), args.text_field):
            t = normalize(text)
            if len(t.split()) < args.min_words:
                continue
            f = fho if holdout_unit(args.seed, doc_id) < args.holdout else ftr
            f.write(f"{label} {t}\n")
    return {}


def _write_teacher_labels(args: argparse.Namespace, ftr: TextIO, fho: TextIO,
                          teacher: str) -> dict[str, int]:
    """--labels-from: a document is high-quality when its teacher score is >= --threshold.
    Records without a finite numeric score are counted and left out (a student must not learn
    a guessed label); none with a score at all is an error naming the field."""
    from curator.base.errors import InputError
    from curator.classifiers.quality import HQ, LQ, holdout_unit, normalize
    from curator.storage.paths import expand_paths

    field, threshold = args.labels_from, args.threshold
    counts = {"docs_labelled": 0, "docs_without_score": 0, "docs_too_short": 0}
    hq = 0
    lo, hi = float("inf"), float("-inf")
    with open(teacher, "w", encoding="utf-8") as fte:
        for doc_id, text, score in _iter_scored(expand_paths(args.input, what="input"),
                                                args.text_field, field):
            if score is None:
                counts["docs_without_score"] += 1
                continue
            t = normalize(text)
            if len(t.split()) < args.min_words:
                counts["docs_too_short"] += 1
                continue
            counts["docs_labelled"] += 1
            hq += score >= threshold
            lo, hi = min(lo, score), max(hi, score)
            line = f"{HQ if score >= threshold else LQ} {t}\n"
            if holdout_unit(args.seed, doc_id) < args.holdout:
                fho.write(line)
                fte.write(f"{score!r}\n")
            else:
                ftr.write(line)
    if not counts["docs_labelled"]:
        why = (f"none of the {counts['docs_without_score']} records has a finite number in "
               f"'{field}'" if counts["docs_without_score"] else "no record with text found")
        raise InputError(f"--labels-from {field}: {why} (in {' '.join(args.input)}); "
                         f"name the field model_classifier wrote (its `field`, e.g. "
                         f"edu_score)")
    n = counts["docs_labelled"]
    if hq in (0, n):  # one class only: nothing to learn, whatever the student
        side = "at or above" if hq else "below"
        raise InputError(f"--labels-from {field} --threshold {threshold:g}: all {n} labelled "
                         f"documents score {side} it ({field} from {lo:g} to {hi:g}); choose "
                         "a threshold inside that range")
    return counts


def _iter_scored(paths: list[str], text_field: str, field: str
                 ) -> Iterator[tuple[str, str, float | None]]:
    """(id, text, teacher score or None) of the JSONL records that have text. The score is
    looked up in the record (flat output of write_jsonl) or in its ``meta``, nested by dots;
    NaN / inf (Python's json writes them), booleans and non-numbers give None."""
    import math

    import orjson

    from curator.base.document import meta_value
    from curator.base.errors import InputError
    from curator.classifiers.quality import iter_jsonl_lines

    for path, i, line in iter_jsonl_lines(paths):
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:  # NaN / Infinity: not JSON, but what Python's json writes
                rec = json.loads(line)
            except ValueError:
                raise InputError(f"{path}:{i}: not a JSON record") from None
        if not isinstance(rec, dict) or not isinstance(rec.get(text_field), str):
            continue
        v = meta_value(rec, field)
        if v is None and isinstance(rec.get("meta"), dict):
            v = meta_value(rec["meta"], field)
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        yield str(rec.get("id", f"{path}:{i}")), rec[text_field], float(v) if ok else None


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
                       help="train a fastText quality classifier (high-quality vs crawl JSONL, "
                            "or a teacher's score)")
    p.add_argument("--positive", nargs="+",
                   help="JSONL file(s)/globs of high-quality reference text (e.g. Wikipedia)")
    p.add_argument("--negative", nargs="+", help="JSONL file(s)/globs of crawl")
    p.add_argument("--labels-from", metavar="FIELD",
                   help="instead of --positive/--negative: learn a teacher's score, the record "
                        "field FIELD (flat, in 'meta', or nested a.b; e.g. edu_score written "
                        "by model_classifier) of the --input records")
    p.add_argument("--threshold", type=float,
                   help="with --labels-from: documents scoring >= this are the positives "
                        "(3 on FineWeb-Edu's 0-5 scale)")
    p.add_argument("--input", nargs="+", metavar="JSONL",
                   help="with --labels-from: JSONL file(s)/globs of scored documents")
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
    p.set_defaults(func=cmd_train, tqc_parser=p)


def _check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The two ways to label documents exclude each other (a usage error, exit 2)."""
    if args.labels_from is not None:
        if args.positive or args.negative:
            p.error("--labels-from learns from a score: drop --positive/--negative")
        if args.threshold is None:
            p.error("--labels-from needs --threshold (the score from which a document is a "
                    "positive, e.g. 3 for FineWeb-Edu's 0-5 scale)")
        if not args.input:
            p.error("--labels-from needs --input (the scored JSONL files)")
        if args.threshold != args.threshold:
            p.error("--threshold nan: give a number")
        return
    if args.threshold is not None or args.input:
        p.error("--threshold and --input go with --labels-from")
    if not args.positive or not args.negative:
        p.error("give --positive and --negative (JSONL files), or --labels-from FIELD "
                "--threshold X --input FILES")
