"""``curator train-tokenizer`` and ``curator tokenize``: the tokenize stages without writing a
pipeline file. Each builds a two-stage pipeline (``read_jsonl`` then the stage) and runs it
with the normal runner, so it resumes, reports and parallelises like any pipeline."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import yaml


def _run(name: str, work_dir: str, inputs: list[str], stage: dict[str, Any],
         executor: str, workers: int | None, text_field: str) -> dict[str, Any]:
    from curator.core import pipeline as pl
    from curator.core.executors import make_executor
    from curator.core.runner import Runner

    ex_cfg: dict[str, Any] = {"type": executor}
    if workers:
        ex_cfg["workers"] = workers
    doc = {"name": name, "work_dir": os.path.abspath(work_dir), "executor": ex_cfg,
           "progress": "off",
           "stages": [{"read_jsonl": {"paths": [os.path.abspath(p) for p in inputs],
                                      "text_field": text_field}, "id": "input"}, stage]}
    pipe = pl.loads(yaml.safe_dump(doc), source=f"<{name}>")
    with make_executor(pipe.config.executor) as ex:
        summary = Runner(pipe, ex).run()
    return summary["stages"][-1]["artifacts"]


def cmd_train_tokenizer(args: argparse.Namespace) -> int:
    out = os.path.abspath(args.output)
    params: dict[str, Any] = {"type": args.type, "vocab_size": args.vocab_size,
                              "max_docs": args.max_docs, "max_mb": args.max_mb,
                              "output_dir": out}
    if args.special_tokens:
        params["special_tokens"] = args.special_tokens
    for k in ("eod_token", "init_vocab", "init_merges"):
        if getattr(args, k):
            params[k] = os.path.abspath(getattr(args, k)) if k.startswith("init") else getattr(
                args, k)
    if args.character_coverage is not None:
        params["character_coverage"] = args.character_coverage
    arts = _run("train-tokenizer", args.work_dir or os.path.join(out, "_work"), args.inputs,
                {"train_tokenizer": params}, args.executor, args.workers, args.text_field)
    print(json.dumps(arts["tokenizer"], indent=2))
    return 0


def cmd_tokenize(args: argparse.Namespace) -> int:
    out = os.path.abspath(args.output)
    params: dict[str, Any] = {"output_dir": out, "append_eod": not args.no_eod,
                              "split_sentences": args.split_sentences,
                              "prefix_size_mb": args.prefix_size_mb,
                              "group_by": "none" if args.single else "source"}
    if args.tokenizer:
        params["tokenizer"] = os.path.abspath(args.tokenizer)
    if args.vocab_file:
        params["vocab_file"] = os.path.abspath(args.vocab_file)
        params["merges_file"] = os.path.abspath(args.merges_file or "")
    if args.eod_token:
        params["eod_token"] = args.eod_token
    arts = _run("tokenize", args.work_dir or os.path.join(out, "_work"), args.inputs,
                {"megatron_shards": params}, args.executor, args.workers, args.text_field)
    for src, prefixes in arts["prefixes"].items():
        for p in prefixes:
            print(f"{src}\t{arts['token_counts'][src]}\t{p}")
    return 0


def register(sub: Any) -> None:
    t = sub.add_parser("train-tokenizer", help="train a BPE or SentencePiece tokenizer on JSONL")
    t.add_argument("inputs", nargs="+", help="JSONL files (.jsonl, .gz, .zst) or globs")
    t.add_argument("--output", "-o", required=True, help="folder for the tokenizer files")
    t.add_argument("--type", choices=["bpe", "sentencepiece"], default="bpe")
    t.add_argument("--vocab-size", type=int, default=32000)
    t.add_argument("--special-tokens", nargs="*", metavar="TOKEN")
    t.add_argument("--eod-token")
    t.add_argument("--max-docs", type=int, default=1_000_000)
    t.add_argument("--max-mb", type=float, default=1024.0)
    t.add_argument("--init-vocab", help="extend this vocab.json (BPE)")
    t.add_argument("--init-merges", help="... with these merges.txt")
    t.add_argument("--character-coverage", type=float)
    _common(t)
    t.set_defaults(func=cmd_train_tokenizer)

    k = sub.add_parser("tokenize", help="tokenize JSONL into Megatron .bin/.idx files")
    k.add_argument("inputs", nargs="+", help="JSONL files or globs")
    k.add_argument("--output", "-o", required=True, help="folder for <prefix>_text_document.*")
    k.add_argument("--tokenizer", help="tokenizer.json, a SentencePiece .model, or a folder")
    k.add_argument("--vocab-file")
    k.add_argument("--merges-file")
    k.add_argument("--eod-token")
    k.add_argument("--no-eod", action="store_true", help="do not append the EOD token")
    k.add_argument("--split-sentences", action="store_true")
    k.add_argument("--prefix-size-mb", type=float, default=0.0)
    k.add_argument("--single", action="store_true", help="one prefix for all sources")
    _common(k)
    k.set_defaults(func=cmd_tokenize)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text-field", default="text")
    p.add_argument("--work-dir", help="resumable intermediates (default: OUTPUT/_work)")
    p.add_argument("--executor", choices=["local", "dask", "mpi"], default="local")
    p.add_argument("--workers", type=int)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: python -m curator train-tokenizer|tokenize ...")
