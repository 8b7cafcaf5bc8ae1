"""Build the real-paragraph fixture of tests/dedup/test_semantic_cuts.py from a run of
bench/semantic_default.py (its ``full-torch`` and ``default`` work folders): the documents of
every full-model pair at cosine >= 0.9, their static (model2vec, distilled from the packaged
all-MiniLM-L6-v2) vectors as the stage cached them (float16), and the pairs.

    python -m bench.semantic_default --corpus python-docs --n 10000 --work /tmp/semdef-py \\
        --configs full-torch,default
    python -m bench.semantic_fixture /tmp/semdef-py tests/dedup/data/semantic_paragraphs

Why a fixture: distilling the static model takes ~90 CPU-s, far over a test's budget; the test
re-encodes some of the pairs with the packaged full model to tie the fixture to it.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import zstandard

from bench.semantic_default import _vectors

THRESHOLD = 0.9


def main(run: str, dest: str) -> None:
    full, ids = _vectors(f"{run}/full-torch/work")
    static, ids2 = _static(f"{run}/default/work")
    assert ids == ids2
    with open(f"{run}/corpus.jsonl", encoding="utf-8") as f:
        texts = {d["id"]: d["text"] for d in map(json.loads, f)}
    x = full / np.linalg.norm(full, axis=1, keepdims=True)
    pairs = []
    for s in range(0, len(x), 2048):
        r, c = np.nonzero(x[s : s + 2048] @ x.T >= THRESHOLD)
        pairs += [(s + a, b) for a, b in zip(r.tolist(), c.tolist()) if s + a < b]
    docs = sorted({d for p in pairs for d in p})
    pos = {d: k for k, d in enumerate(docs)}
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "static.npy", static[docs].astype(np.float16))
    np.save(out / "pairs.npy", np.asarray([(pos[a], pos[b]) for a, b in pairs], dtype=np.int32))
    buf = io.BytesIO()
    for d in docs:
        buf.write(json.dumps({"id": ids[d], "text": texts[ids[d]]}).encode() + b"\n")
    (out / "docs.jsonl.zst").write_bytes(
        zstandard.ZstdCompressor(level=19).compress(buf.getvalue())
    )
    print(f"{len(docs)} documents, {len(pairs)} pairs -> {out}")


def _static(work: str) -> tuple[np.ndarray, list[str]]:
    """The static vectors of a ``prefilter: static`` run (every document) and the ids."""
    sem = Path(work) / "stages" / "sem"
    vecs, ids = [], []
    for ids_file in sorted((sem / "ids").glob("*.json")):
        shard = ids_file.stem.split("-", 1)[1]
        ids += json.loads(ids_file.read_text())
        found = [
            f
            for f in (Path(work) / "cache" / "sem").glob(f"*/{shard}-*.npy")
            if np.load(f, mmap_mode="r").shape[1] == 256
        ]
        (vec,) = found
        vecs.append(np.load(vec))
    return np.concatenate(vecs), ids


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
