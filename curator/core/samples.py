"""Sample documents a stage kept or rejected, for ``curator inspect`` and the report's examples.

People look at data before they trust a filter. A finished stage's kept documents are the
shards listed in ``stages/<id>/_SUCCESS.json`` (the upstream shard for a passthrough stage);
its rejected documents are ``rejected/<id>/*.jsonl.zst``, each with ``rejected.reason``.
Sampling is a seeded reservoir over every record in file order, so memory holds ``n``
documents whatever the size of the stage, and the same seed gives the same sample.
"""

from __future__ import annotations

import glob
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from curator.base.errors import InputError
from curator.core.stats import StageStats
from curator.storage.shards import read_records


@dataclass
class Sample:
    """One sampled document: what ``curator inspect`` prints."""

    id: str
    text: str
    source: str
    shard: str
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def stage_done(work_dir: str, stage_id: str) -> dict[str, Any]:
    """The stage's ``_SUCCESS.json``; a one-line error naming what exists when it is missing."""
    sdir = os.path.join(work_dir, "stages", stage_id)
    path = os.path.join(sdir, "_SUCCESS.json")
    try:
        with open(path, "rb") as f:
            return orjson.loads(f.read())
    except FileNotFoundError:
        have = sorted(os.listdir(os.path.join(work_dir, "stages"))) if os.path.isdir(
            os.path.join(work_dir, "stages")) else []
        if not os.path.isdir(sdir):
            raise InputError(f"{work_dir}: no stage '{stage_id}' (stages: "
                             f"{', '.join(have) or 'none: is it a work_dir?'})") from None
        raise InputError(f"stage '{stage_id}' has not finished in {work_dir} "
                         "(no _SUCCESS.json): run the pipeline first") from None
    except (OSError, orjson.JSONDecodeError) as e:
        raise InputError(f"{path}: cannot read: {e}") from None


def _kept(done: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for s in done.get("shards", []):
        if s.get("path") and os.path.exists(s["path"]):
            for rec in read_records(s["path"]):
                yield s["name"], rec


def _rejected(work_dir: str, stage_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for p in sorted(glob.glob(os.path.join(work_dir, "rejected", stage_id, "*.jsonl.zst"))):
        name = os.path.basename(p)[: -len(".jsonl.zst")]
        for rec in read_records(p):
            yield name, rec


def _sample(shard: str, rec: dict[str, Any]) -> Sample:
    meta = rec.get("meta") or {}
    rej = rec.get("rejected") or {}
    extra = {k: v for k, v in rej.items() if k not in ("stage", "reason")}
    return Sample(str(rec.get("id", "")), str(rec.get("text", "")), str(meta.get("source", "-")),
                  shard, str(rej.get("reason", "")), extra)


def sample(work_dir: str, stage_id: str, *, rejected: bool = False, reason: str | None = None,
           n: int = 5, seed: int = 0) -> tuple[list[Sample], int]:
    """``(up to n documents, how many there were to choose from)``: kept ones, or rejected
    ones (with ``reason``: only those, exactly or by prefix ``gopher_quality:`` ->
    ``gopher_quality:word_count``)."""
    done = stage_done(work_dir, stage_id)
    if rejected and reason is not None:
        known = StageStats.from_json(done.get("stats")).rejected
        if reason not in known and not any(r.startswith(reason) for r in known):
            raise InputError(f"stage '{stage_id}' rejected no document for '{reason}' "
                             f"(its reasons: {', '.join(sorted(known)) or 'none'})")
    rng = random.Random(seed)  # noqa: S311 - a reproducible sample for people to read, not a secret
    out: list[Sample] = []
    seen = 0
    it = _rejected(work_dir, stage_id) if rejected else _kept(done)
    for shard, rec in it:
        if reason is not None:
            r = str((rec.get("rejected") or {}).get("reason", ""))
            if r != reason and not r.startswith(reason):
                continue
        seen += 1
        if len(out) < n:
            out.append(_sample(shard, rec))
        else:
            j = rng.randrange(seen)
            if j < n:
                out[j] = _sample(shard, rec)
    return out, seen


def first_examples(work_dir: str, stage_id: str, per_reason: int = 3,
                   max_records: int = 20_000) -> dict[str, list[Sample]]:
    """A few rejected documents per reason, the first found (the report's examples): reads at
    most ``max_records`` records so a report never scans a huge rejected folder."""
    out: dict[str, list[Sample]] = {}
    for k, (shard, rec) in enumerate(_rejected(work_dir, stage_id)):
        if k >= max_records:
            break
        r = str((rec.get("rejected") or {}).get("reason", ""))
        got = out.setdefault(r, [])
        if len(got) < per_reason:
            got.append(_sample(shard, rec))
    return out


def render(s: Sample, k: int, total: int, lines: int = 5, width: int = 160) -> str:
    """A sampled document as ``curator inspect`` prints it."""
    head = f"--- {k}/{total}  id: {s.id}  source: {s.source}  shard: {s.shard}"
    if s.reason:
        head += f"  reason: {s.reason}"
        if s.extra:
            head += "  " + " ".join(f"{a}: {orjson.dumps(b).decode()}" for a, b in
                                    sorted(s.extra.items()))
    body = [ln if len(ln) <= width else ln[: width - 1] + "…"
            for ln in s.text.splitlines() if ln.strip()]
    more = len(body) - lines
    body = body[:lines] + ([f"[... {more} more line{'s' if more != 1 else ''}, "
                            f"{len(s.text):,} characters]"] if more > 0 else [])
    return "\n".join([head, *("  " + ln for ln in body)])


__all__ = ["Sample", "first_examples", "render", "sample", "stage_done"]
