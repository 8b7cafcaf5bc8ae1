"""bloom_dedup: the filter against a plain-Python reference, its false-positive arithmetic against
what real text with planted repeats gives, paragraph level on a fixture and on real pages, and
the same removals on the local, Dask and MPI executors."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import orjson
import pytest

from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner
from curator.dedup import bloom
from curator.dedup.normalize import normalize_batch
from curator.storage.shards import read_records
from tests.dedup.helpers_dedup import (
    output_ids,
    rejected,
    wiki_pages,
    wiki_paragraphs,
    write_pipeline,
)
from tests.helpers import run_cli

FIXTURE = Path(__file__).parent / "data" / "bloom_paragraphs"


def run_local(path: Path) -> dict:
    res = Runner(pl.load(str(path)), LocalExecutor()).run()
    return {s["id"]: s for s in res["stages"]}


def write_shards(folder: Path, docs: list[dict], shards: int) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(shards):
        with open(folder / f"part{k}.jsonl", "wb") as f:
            for d in docs[k::shards]:
                f.write(orjson.dumps(d) + b"\n")
    return f"{folder}/part*.jsonl"


def outputs(work_dir: Path, stage: str) -> dict[str, str]:
    out = {}
    for f in sorted((work_dir / "stages" / stage / "data").glob("*.jsonl.zst")):
        out.update((r["id"], r["text"]) for r in read_records(str(f)))
    return out


@pytest.fixture(scope="module")
def wiki() -> tuple[list[str], list[str]]:
    return wiki_paragraphs(), wiki_pages()


# -- the filter -----------------------------------------------------------------------------


def reference_flags(h: list[int], k: int, m: int) -> tuple[list[bool], int]:
    """The module docstring's rule, one item after the other, in plain Python integers; also
    the number of bits set at the end."""
    bits = [False] * m
    out = []
    mask = (1 << 64) - 1
    for x in h:
        y = x ^ 0x9E3779B97F4A7C15
        y ^= y >> 33
        y = (y * 0xFF51AFD7ED558CCD) & mask
        y ^= y >> 33
        y = (y * 0xC4CEB9FE1A85EC53) & mask
        y ^= y >> 33
        h2 = y | 1
        pos = [((x + i * h2) & mask) % m for i in range(k)]
        out.append(all(bits[p] for p in pos))
        for p in pos:
            bits[p] = True
    return out, sum(bits)


@pytest.mark.parametrize("words,k", [(4, 1), (16, 3), (64, 7), (1000, 2)])
def test_compiled_and_numpy_filters_equal_the_reference(words, k):
    rng = np.random.default_rng(words * 31 + k)
    base = rng.integers(0, 2**63, 3000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    h = np.concatenate([base, base[rng.integers(0, 3000, 1500)]])
    rng.shuffle(h)
    want, set_bits = reference_flags([int(x) for x in h], k, words * 64)
    assert 0 < sum(want) < len(want)
    for compiled in (True, False):
        w = np.zeros(words, dtype=np.uint64)
        got = bloom.insert_test(w, k, h, compiled=compiled)
        assert got.tolist() == want, f"compiled={compiled}"
        assert bloom.bits_set(w) == set_bits
    assert bloom.insert_test(np.zeros(words, np.uint64), k, h[:0]).shape == (0,)


def test_fp_arithmetic():
    assert bloom.optimal_k(9_600, 1_000) == 7  # 9.6 bits per item: k = 6.65 -> 7, ~1 %
    assert bloom.optimal_k(10, 10_000) == 1 and bloom.optimal_k(10**9, 1) == bloom.K_MAX
    assert bloom.fp_rate(9_600, 1_000, 7) == pytest.approx(0.01, rel=0.05)
    # the sum is exact below 65,536 items and within 0.1 % of it above
    m, k = 1 << 20, 5
    for n in (1000, 200_000):
        exact = float(((1 - np.exp(-k * np.arange(n) / m)) ** k).sum())
        assert bloom.expected_false_positives(m, n, k) == pytest.approx(exact, rel=1e-3)


# -- document level on real text ------------------------------------------------------------


def test_false_positives_on_real_text_match_the_prediction(tmp_path, wiki):
    """Real Wikipedia paragraphs plus planted repeats (case and spacing changed): every repeat
    goes, and the false removals are as many as the reported expectation says."""
    paras, _ = wiki
    rng = random.Random(3)
    docs = [{"id": f"w{i}", "text": t} for i, t in enumerate(paras)]
    for j in range(1500):
        src = rng.choice(paras)
        docs.insert(
            rng.randrange(len(docs) + 1),
            {"id": f"copy{j}", "text": "  " + src.upper().replace(" ", "  ")},
        )
    n = len(docs)
    memory_mb = n * 6 / 8 / (1 << 20)  # 6 bits per item: ~5 % at the end of the pass
    inputs = write_shards(tmp_path / "in", docs, 4)
    y = write_pipeline(
        tmp_path / "p.yaml",
        tmp_path / "w",
        inputs,
        f"  - bloom_dedup: {{memory_mb: {memory_mb!r}, partitions: 2}}\n",
    )
    stage = run_local(y)["bloom_dedup"]
    ordered = [d for k in range(4) for d in docs[k::4]]  # the stage's input order
    seen: set[str] = set()
    repeats = set()
    for d, key in zip(ordered, normalize_batch([d["text"] for d in ordered], "basic"), strict=True):
        if key in seen:
            repeats.add(d["id"])
        seen.add(key)
    got = rejected(tmp_path / "w", "bloom_dedup")
    assert all(v["reason"] == "bloom_duplicate" for v in got.values())
    assert repeats <= set(got) and len(repeats) > 1400  # no repeat is missed
    false = len(set(got) - repeats)
    info = stage["artifacts"]["bloom"]
    assert info["items"] == n and info["repeats_removed"] == len(got)
    assert info["hashes"] == bloom.optimal_k(info["bits"], n) == 4
    assert info["predicted_fp_rate"] == pytest.approx(bloom.fp_rate(info["bits"], n, 4))
    expected = info["expected_false_removals"]
    assert 20 < expected < 300
    print(f"false removals {false}, expected {expected:.1f}")
    assert abs(false - expected) < 4 * math.sqrt(expected) + 2, (false, expected)
    assert stage["counters"]["documents_repeated"] == len(got)
    assert sorted(output_ids(tmp_path / "w", "bloom_dedup")) == sorted(
        d["id"] for d in docs if d["id"] not in got
    )


# -- paragraph level --------------------------------------------------------------------------


def test_paragraph_level_on_the_fixture(tmp_path):
    y = write_pipeline(
        tmp_path / "p.yaml",
        tmp_path / "w",
        f"{FIXTURE}/*.jsonl",
        "  - bloom_dedup: {level: paragraph}\n",
    )
    stage = run_local(y)["bloom_dedup"]
    assert outputs(tmp_path / "w", "bloom_dedup") == {
        "p1": "Home | About | Contact\nWelcome to the first article.\nIt has two lines.\n\n"
        "Copyright 2024 Example Inc.",
        "p2": "A second article about birds.\n",
        "p4": "A new page.\n  \nShare this page",
    }
    assert rejected(tmp_path / "w", "bloom_dedup") == {
        "p3": {"stage": "bloom_dedup", "reason": "all_paragraphs_duplicate"}
    }
    c = stage["counters"]
    assert (c["paragraphs_hashed"], c["paragraphs_repeated"], c["paragraphs_removed"]) == (13, 6, 6)
    assert (c["documents_changed"], c["documents_emptied"]) == (2, 1)


def test_paragraph_level_on_real_pages_equals_a_seen_set(tmp_path, wiki):
    """With memory to spare (expected false removals < 1e-6) the output is exactly what a set
    of seen lines gives, over real wikitext pages in shard order."""
    _, pages = wiki
    docs = [{"id": f"p{i}", "text": t} for i, t in enumerate(pages)]
    inputs = write_shards(tmp_path / "in", docs, 3)
    y = write_pipeline(
        tmp_path / "p.yaml",
        tmp_path / "w",
        inputs,
        "  - bloom_dedup: {level: paragraph, memory_mb: 4, partitions: 3, min_chars: 3}\n",
    )
    stage = run_local(y)["bloom_dedup"]
    assert stage["artifacts"]["bloom"]["expected_false_removals"] < 1e-6
    seen: set[str] = set()
    want: dict[str, str] = {}
    cut = 0
    for d in (d for k in range(3) for d in docs[k::3]):
        lines = d["text"].split("\n")
        keep = []
        for line, key in zip(lines, normalize_batch(lines, "basic"), strict=True):
            if len(key) >= 3 and key in seen:
                cut += 1
                continue
            if len(key) >= 3:
                seen.add(key)
            keep.append(line)
        text = "\n".join(keep)
        if text.strip():
            want[d["id"]] = text
    assert cut > 1000
    assert stage["counters"]["paragraphs_removed"] == cut
    assert outputs(tmp_path / "w", "bloom_dedup") == want


def test_truncated_flag_file_is_one_clear_error(tmp_path):
    import shutil

    from curator.base.errors import StageError

    y = write_pipeline(
        tmp_path / "p.yaml",
        tmp_path / "w",
        f"{FIXTURE}/*.jsonl",
        "  - bloom_dedup: {level: paragraph}\n",
    )
    run_local(y)
    sdir = tmp_path / "w" / "stages" / "bloom_dedup"
    for gone in ("_SUCCESS.json", "_phases/removals", "removals"):
        shutil.rmtree(sdir / gone) if (sdir / gone).is_dir() else (sdir / gone).unlink()
    flags = sdir / "flags" / "p00000.u8"
    flags.write_bytes(flags.read_bytes()[:3])
    with pytest.raises(
        StageError,
        match=r"p00000.u8' is shorter than expected; delete the "
        r"stage folder and rerun",
    ):
        run_local(y)


# -- executors ----------------------------------------------------------------------------


def test_local_dask_mpi_identical(tmp_path, wiki):
    """Paragraph then document level, both with filters small enough to make false positives
    (so their choice is checked too), in several partitions: the same output everywhere."""
    paras, pages = wiki
    rng = random.Random(9)
    docs = [{"id": f"p{i}", "text": t} for i, t in enumerate(pages[:80])]
    docs += [{"id": f"q{i}", "text": rng.choice(paras)} for i in range(1200)]
    rng.shuffle(docs)
    inputs = write_shards(tmp_path / "in", docs, 5)
    stages = (
        "  - bloom_dedup: {level: paragraph, memory_mb: 0.004, partitions: 3}\n"
        "  - id: docs\n    bloom_dedup: {memory_mb: 0.0005, partitions: 2}\n"
    )
    results = {}
    for name, executor, ranks in (
        ("local", "{type: local}", 0),
        ("dask", "{type: dask, workers: 2}", 0),
        ("mpi", "{type: mpi}", 2),
    ):
        wd = tmp_path / f"w{name}"
        y = write_pipeline(tmp_path / f"{name}.yaml", wd, inputs, stages, executor)
        r = run_cli("run", str(y), mpi=ranks, check=False)
        assert r.returncode == 0, f"{name}: {r.stderr[-2000:]}"
        results[name] = (rejected(wd, "bloom_dedup"), rejected(wd, "docs"), outputs(wd, "docs"))
    para_rej, doc_rej, _ = results["local"]
    assert len(para_rej) > 10 and len(doc_rej) > 10
    assert results["dask"] == results["local"]
    assert results["mpi"] == results["local"]


def test_listed_by_curator_stages():
    r = run_cli("stages")
    line = next(x for x in r.stdout.splitlines() if "bloom_dedup" in x)
    assert "curator.dedup.bloom_dedup:BloomDedup" in line
