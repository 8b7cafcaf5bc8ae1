"""``megatron_shards: {shuffle: true, seed}``: one seeded permutation across every input shard,
the same on every executor, read back with megatron-core's IndexedDataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from megatron.core.datasets.indexed_dataset import IndexedDataset
from tokenizers import Tokenizer, models, pre_tokenizers

from curator.tokenize.shuffle import bucket_of, buckets_for, doc_key
from tests.helpers import run_cli
from tests.tokenize.helpers_tokenize import run_pipeline, stage_artifacts

N_FILES, PER_FILE = 3, 40


def _setup(tmp: Path) -> list[str]:
    vocab = {"[UNK]": 0, "<|endoftext|>": 1} | {f"w{i}": i + 2 for i in range(300)}
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.save(str(tmp / "tokenizer.json"))
    (tmp / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    rng = np.random.default_rng(0)
    paths = []
    for k in range(N_FILES):
        p = tmp / f"in{k}.jsonl"
        with open(p, "w") as f:
            for i in range(PER_FILE):
                n = 0 if i % 13 == 5 else int(rng.integers(1, 20))  # a few empty documents
                words = " ".join(f"w{int(x)}" for x in rng.integers(0, 300, n))
                f.write(json.dumps({"id": f"{k}-{i}", "text": words}) + "\n")
        paths.append(str(p))
    return paths


def _stages(tmp: Path, paths: list[str], **mega: object) -> list[dict]:
    return [
        {"read_jsonl": {"paths": paths, "source": "all"}, "id": "in"},
        {
            "megatron_shards": {
                "tokenizer": str(tmp / "tokenizer.json"),
                "group_by": "none",
                "sentence_stats": 0,
                **mega,
            },
            "id": "mega",
        },
    ]


def _read(prefixes: list[str]) -> tuple[list[str], dict[str, list[int]], bytes]:
    """ids in order, tokens of each id (megatron-core's reader), and all bytes written."""
    ids, toks, raw = [], {}, b""
    for p in prefixes:
        ds = IndexedDataset(p)
        with open(p + ".ids") as f:
            pids = f.read().splitlines()
        di = ds.document_indices
        for d, i in enumerate(pids):
            toks[i] = [t for s in range(di[d], di[d + 1]) for t in ds[s].tolist()]
        ids += pids
        for ext in (".bin", ".idx", ".ids"):
            raw += Path(p + ext).read_bytes()
    return ids, toks, raw


def _run(tmp: Path, name: str, stages: list[dict], executor: dict | None = None) -> tuple:
    summary = run_pipeline(stages, tmp / name, executor)
    return _read(stage_artifacts(summary, "mega")["prefixes"]["all"])


def test_one_seeded_permutation_across_shards_on_every_executor(tmp_path: Path) -> None:
    paths = _setup(tmp_path)
    ids0, toks0, _ = _run(tmp_path, "plain", _stages(tmp_path, paths))
    assert ids0 == [f"{k}-{i}" for k in range(N_FILES) for i in range(PER_FILE)]

    # a budget of about 30 documents per key range: 4 ranges for the 120 documents
    shuffled = _stages(
        tmp_path, paths, shuffle=True, seed=7, shuffle_memory_mb=0.008, prefix_size_mb=0.0002
    )
    assert buckets_for(len(ids0), 0.008) == 4
    ids, toks, raw = _run(tmp_path, "local", shuffled)
    # the same documents, token for token; in the order of their seeded keys
    assert toks == toks0 and sorted(ids) == sorted(ids0)
    assert ids == sorted(ids0, key=lambda i: doc_key(7, i.encode()))
    # across shards, not within each: the first 40 come from every input file
    assert {i.split("-")[0] for i in ids[:PER_FILE]} == {"0", "1", "2"}

    # the same bytes with two local workers and on Dask; MPI below
    assert _run(tmp_path, "workers", shuffled, {"type": "local", "workers": 2})[2] == raw
    assert _run(tmp_path, "dask", shuffled, {"type": "dask", "workers": 2})[2] == raw

    other = _run(
        tmp_path, "seed8", _stages(tmp_path, paths, shuffle=True, seed=8, shuffle_memory_mb=0.008)
    )
    assert other[1] == toks0 and other[0] != ids
    assert other[0] == sorted(ids0, key=lambda i: doc_key(8, i.encode()))


def test_mpi_ranks_write_the_same_permutation(tmp_path: Path) -> None:
    import yaml

    paths = _setup(tmp_path)
    stages = _stages(tmp_path, paths, shuffle=True, seed=7, shuffle_memory_mb=0.008)
    local = _run(tmp_path, "local", stages)
    doc = {
        "name": "t",
        "work_dir": str(tmp_path / "mpi"),
        "progress": "off",
        "executor": {"type": "mpi"},
        "stages": stages,
    }
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    run_cli("run", str(tmp_path / "p.yaml"), mpi=2)
    prefixes = sorted(str(p)[:-4] for p in (tmp_path / "mpi" / "megatron").glob("*.idx"))
    assert _read(prefixes)[0] == local[0] and _read(prefixes)[2] == local[2]


def test_key_ranges_cover_the_key_space_evenly() -> None:
    keys = np.array([doc_key(1, str(i).encode()) for i in range(20_000)], dtype=np.uint64)
    n = buckets_for(1_000_000, 8)
    assert n == 31  # 8 MiB at 256 bytes a document: 32768 documents a range
    counts = np.bincount(bucket_of(keys, n).astype(np.int64), minlength=n)
    assert len(counts) == n and counts.min() > 0.8 * len(keys) / n
    edges = np.array([0, 2**64 - 1], dtype=np.uint64)
    assert bucket_of(edges, n).tolist() == [0, n - 1]


def test_documents_of_several_sequences_move_whole(tmp_path: Path) -> None:
    """Split-sentences parts: each document keeps its sequences (megatron-core's reader)."""
    from curator.tokenize import megatron
    from curator.tokenize.shuffle import shuffle_groups

    class Ctx:
        stage_dir = str(tmp_path / "stage")

        def map(self, fn, items, **_kw):
            return [fn(i) for i in items]

    rng = np.random.default_rng(1)
    parts, want = [], {}
    for p in range(2):
        prefix = str(tmp_path / f"p{p}")
        w = megatron.IndexedWriter(prefix, np.uint16)
        with open(prefix + ".ids", "w") as f:
            for d in range(30):
                seqs = [
                    rng.integers(0, 999, int(rng.integers(1, 6))).tolist()
                    for _ in range(int(rng.integers(0, 4)))
                ]
                want[f"{p}-{d}"] = seqs
                w.add_batch(
                    np.array([t for s in seqs for t in s], dtype=np.int64),
                    np.array([len(s) for s in seqs]),
                    np.array([len(seqs)]),
                )
                f.write(f"{p}-{d}\n")
        w.close()
        parts.append(prefix)
    out = shuffle_groups(
        Ctx(), {"g": parts}, {"g": 60}, names={"g": "g"}, seed=3, memory_mb=0.003, dtype="uint16"
    )["g"]
    assert len(out) > 1  # several key ranges
    got = {}
    for prefix in out:
        ds = IndexedDataset(prefix)
        di = ds.document_indices
        ids = Path(prefix + ".ids").read_text().splitlines()
        for d, i in enumerate(ids):
            got[i] = [ds[s].tolist() for s in range(di[d], di[d + 1])]
    assert got == want
