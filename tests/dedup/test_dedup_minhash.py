"""MinHash signatures, LSH parameters and connected components against independent
implementations (datasketch, a pure-Python hash, a Python union-find)."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from datasketch import MinHash
from datasketch.lsh import _optimal_param
from helpers_dedup import REPO

from curator.core.errors import ConfigError
from curator.dedup.components import choose_keepers, connected_components
from curator.dedup.lsh import optimal_param, resolve_bands
from curator.dedup.minhash import MinHasher, band_digests, normalize

M64 = (1 << 64) - 1


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


def _poly(values: list[int]) -> int:
    h = 0
    for x in values:
        h = (h * 0x100000001B3 + x) & M64
    return h


def ref_char_shingles(text: str, n: int) -> list[int]:
    t = normalize(text)
    t = t + "\0" * max(0, n - len(t))
    return [_fmix(_poly([ord(c) for c in t[i:i + n]])) >> 32 for i in range(len(t) - n + 1)]


def ref_word_shingles(text: str, n: int) -> list[int]:
    words = normalize(text).split()
    words = words + ["\0"] * max(0, n - len(words))
    wh = [sum(_fmix((ord(c) * 0x9E3779B97F4A7C15 + p * 0xC2B2AE3D27D4EB4F + 1) & M64)
              for p, c in enumerate(w)) & M64 for w in words]
    return [_fmix(_poly(wh[i:i + n])) >> 32 for i in range(len(wh) - n + 1)]


TEXTS = [
    "The quick brown fox jumps over the lazy dog, again and again and again.",
    "short",
    "",
    "Ünïcode — with dashes, 𝄞 music and\ttabs\n\nnewlines " * 4,
    " ".join(f"w{i % 37}" for i in range(300)),
]


@pytest.mark.parametrize("scheme", ["affine32", "legacy"])
@pytest.mark.parametrize("kind,n,ref", [("char", 24, ref_char_shingles),
                                        ("char", 5, ref_char_shingles),
                                        ("word", 3, ref_word_shingles)])
def test_signatures_equal_datasketch(kind, n, ref, scheme):
    hasher = MinHasher(num_perm=96, seed=11, ngram=n, kind=kind, scheme=scheme)
    sigs = hasher(TEXTS)
    for text, sig in zip(TEXTS, sigs):
        m = MinHash(num_perm=96, seed=11, hashfunc=lambda x: x, scheme=scheme)
        m.update_batch(ref(text, n))
        assert np.array_equal(m.hashvalues.astype(np.uint32), sig), text[:30]


def test_batches_do_not_change_signatures():
    texts = TEXTS * 7
    whole = MinHasher(num_perm=32, ngram=5)(texts)
    small = MinHasher(num_perm=32, ngram=5, batch_chars=50)(texts)
    assert np.array_equal(whole, small)
    assert not np.array_equal(whole[0], whole[1])


def test_signatures_identical_in_another_process():
    code = ("import sys,numpy as np; from curator.dedup.minhash import MinHasher;"
            "t=[l for l in sys.stdin.read().split('\\x1e')];"
            "sys.stdout.write(MinHasher(num_perm=64, seed=3, ngram=7)(t).tobytes().hex())")
    out = subprocess.run([sys.executable, "-c", code], input="\x1e".join(TEXTS), text=True,
                         capture_output=True, check=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "PYTHONHASHSEED": "123"}).stdout
    here = MinHasher(num_perm=64, seed=3, ngram=7)(TEXTS)
    assert bytes.fromhex(out) == here.tobytes()


def test_band_digests_equal_iff_band_equal():
    rng = np.random.default_rng(0)
    sig = rng.integers(0, 2**32, size=(50, 12), dtype=np.uint64).astype(np.uint32)
    sig[1, :4] = sig[0, :4]  # band 0 equal, other bands differ
    d = band_digests(sig, bands=3, rows=4)
    assert d[0, 0] == d[1, 0]
    assert d[0, 1] != d[1, 1] and d[0, 2] != d[1, 2]
    assert len(np.unique(d)) == d.size - 1
    same_rows = sig.copy()
    same_rows[:, 4:8] = same_rows[:, 0:4]  # equal rows in two bands still give other digests
    d2 = band_digests(same_rows, bands=3, rows=4)
    assert not np.any(d2[:, 0] == d2[:, 1])


@pytest.mark.parametrize("threshold,num_perm", [(0.8, 128), (0.5, 64), (0.7, 128),
                                                (0.9, 256)])
def test_optimal_param_matches_datasketch(threshold, num_perm):
    assert optimal_param(threshold, num_perm) == _optimal_param(threshold, num_perm, 0.5, 0.5)


def test_resolve_bands_rules():
    assert resolve_bands(128, 0.8, 16, 8) == (16, 8)
    with pytest.raises(ConfigError, match="both"):
        resolve_bands(128, 0.8, 16, None)
    with pytest.raises(ConfigError, match="at most"):
        resolve_bands(128, 0.8, 20, 8)
    with pytest.raises(ConfigError, match="threshold"):
        resolve_bands(128, 1.5, None, None)


def _py_components(edges: list[tuple[int, int]]) -> dict[int, int]:
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for x in list(parent):
        groups.setdefault(find(x), []).append(x)
    return {x: min(g) for g in groups.values() for x in g}


def test_components_match_python_union_find():
    rng = random.Random(5)
    edges = [(rng.randrange(2000), rng.randrange(2000)) for _ in range(1500)]
    edges += [(i, i + 1) for i in range(3000, 3400)]  # a long chain (many propagation rounds)
    u = np.array([a for a, _ in edges], dtype=np.int64)
    v = np.array([b for _, b in edges], dtype=np.int64)
    nodes, labels = connected_components(u, v)
    want = _py_components(edges)
    assert dict(zip(nodes.tolist(), labels.tolist())) == want


def test_choose_keepers_by_priority():
    labels = np.array([0, 0, 0, 5, 5])
    length = np.array([10, 30, 30, 1, 2])
    keep = choose_keepers(labels, -length, np.arange(5))
    assert keep.tolist() == [1, 1, 1, 4, 4]
