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

from curator.base.errors import ConfigError
from curator.dedup.components import choose_keepers, connected_components
from curator.dedup.lsh import optimal_param, resolve_bands
from curator.dedup.minhash import (
    MinHasher,
    band_digests,
    normalize,
    permutations,
    shingle_hashes,
    signatures_from_hashes,
)
from tests.dedup.helpers_dedup import REPO

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


@pytest.mark.parametrize("compiled", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("scheme", ["affine32", "legacy"])
@pytest.mark.parametrize("kind,n,ref", [("char", 24, ref_char_shingles),
                                        ("char", 5, ref_char_shingles),
                                        ("word", 3, ref_word_shingles)])
def test_signatures_equal_datasketch(kind, n, ref, scheme, compiled):
    hasher = MinHasher(num_perm=96, seed=11, ngram=n, kind=kind, scheme=scheme,
                       compiled=compiled)
    sigs = hasher(TEXTS)
    for text, sig in zip(TEXTS, sigs):
        m = MinHash(num_perm=96, seed=11, hashfunc=lambda x: x, scheme=scheme)
        m.update_batch(ref(text, n))
        assert np.array_equal(m.hashvalues.astype(np.uint32), sig), text[:30]


# every Unicode whitespace, case changes that lengthen a string (İ) or depend on the
# neighbours (final sigma), a lone surrogate, NULs, non-BMP characters, ASCII-only documents
TRICKY = [
    "".join(chr(c) for c in (9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0x85, 0xA0, 0x1680))
    + "a\u2000b\u200ac\u2028d\u2029e\u202ff\u205fg\u3000h\u200bi",
    "İSTANBUL ΟΔΟΣ ΟΔΟΣ. ΣΑΣ Σ ΑΣ\u0301 x",
    "ΑΣ", "Αa", "bad \udc80 surrogate", "nul\0inside\0\0 words", "𝄞𝄞 music 𝄞" * 3,
    "plain ascii text only, a few words here", "", "  ", "\n\t x \n",
]


def _random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("abcdeΣσςİIı \t\n\u00a0\u3000\u0301.é𝄞\0Kk") + ["\u2028", "ǅ", "ß"]
    return [" ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
                     for _ in range(rng.randint(0, 40))) for _ in range(n)]


@pytest.mark.parametrize("kind,n", [("char", 1), ("char", 7), ("char", 24), ("word", 1),
                                    ("word", 5)])
@pytest.mark.parametrize("norm", [True, False])
def test_compiled_and_numpy_paths_identical(kind, n, norm):
    for texts in (TRICKY, _random_texts(n, 150), TRICKY[7:8] * 3):  # the last batch is ASCII
        hj, oj = shingle_hashes(texts, ngram=n, kind=kind, do_normalize=norm, compiled=True)
        hn, on = shingle_hashes(texts, ngram=n, kind=kind, do_normalize=norm, compiled=False)
        assert hj.dtype == hn.dtype == np.uint32
        assert np.array_equal(oj, on) and np.array_equal(hj, hn)
        for scheme in ("affine32", "legacy"):
            a, b = permutations(64, 5, scheme)
            assert np.array_equal(signatures_from_hashes(hj, oj, a, b, compiled=True),
                                  signatures_from_hashes(hn, on, a, b, compiled=False))


def test_normalize_equals_regex_definition():
    import re

    for t in TRICKY + _random_texts(0, 200):
        assert normalize(t) == re.sub(r"\s+", " ", t).strip().lower()


def test_compiled_whitespace_is_str_isspace():
    """The kernel's whitespace test against Python's on every code point."""
    from numba import njit

    from curator.dedup.minhash_kernels import _is_space

    @njit
    def spaces(cps):
        return np.array([_is_space(c) for c in cps])

    cps = np.arange(0x110000, dtype=np.uint64)
    want = np.array([chr(c).isspace() for c in range(0x110000)])
    assert np.array_equal(spaces(cps), want)


def test_compiled_legacy_exact_at_the_prime_boundary():
    """The fast legacy kernel is exact where ``a*h + b`` lands on or just past multiples of
    2**61 - 1, where a 32-bit value is 2**32 - 1, and where minima are below 9."""
    p61, m64 = (1 << 61) - 1, (1 << 64) - 1
    hv = np.array([1, 2, 3, 0xFFFFFFFF, 12345], dtype=np.uint32)
    # hi * 2**61 + lo with lo + hi >= 2**61 - 1 (the reduction needs its subtraction)
    targets = [(5 << 61) + p61 - 2, (3 << 61) + p61, (6 << 61) + p61 - 1, (7 << 61) + p61,
               (1 << 61) + p61 - 1, m64, p61, 2 * p61, p61 - 1, (1 << 32) - 1,
               (5 << 61) + 0xFFFFFFFF, (1 << 61) + 0xFFFFFFFE, 4, 8, 9, 0]
    a_list, b_list = [], []
    for t in targets:  # a*1 + b == t (mod 2**64) for the first shingle, h = 1
        for a in (1, 3, (1 << 60) + 5):
            a_list.append(a)
            b_list.append((t - a) % (1 << 64))
    a = np.array(a_list, dtype=np.uint64)
    b = np.array(b_list, dtype=np.uint64)
    for cut in (1, 2, 5):  # documents of one, two and all shingles
        off = np.array([0], dtype=np.int64)
        got = signatures_from_hashes(hv[:cut], off, a, b, compiled=True)
        want = signatures_from_hashes(hv[:cut], off, a, b, compiled=False)
        assert np.array_equal(got, want)
    x = np.uint64(p61)  # the first target: a value of exactly 0 that a shortcut would miss
    assert signatures_from_hashes(hv[:1], np.array([0]), np.array([1], np.uint64),
                                  x - np.uint64(1) + np.zeros(1, np.uint64),
                                  compiled=True)[0, 0] == 0


def test_numpy_fallback_without_numba():
    """Without numba the module still imports and gives the same signatures."""
    code = ("import sys; sys.modules['numba'] = None\n"
            "from curator.dedup.minhash import MinHasher, kernels\n"
            "assert kernels() is None\n"
            "t = sys.stdin.read().split('\\x1e')\n"
            "sys.stdout.write(MinHasher(num_perm=32, seed=3, ngram=5, kind='word',"
            " scheme='legacy')(t).tobytes().hex())")
    out = subprocess.run([sys.executable, "-c", code], input="\x1e".join(TEXTS), text=True,
                         capture_output=True, check=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO)}).stdout
    here = MinHasher(num_perm=32, seed=3, ngram=5, kind="word", scheme="legacy",
                     compiled=True)(TEXTS)
    assert bytes.fromhex(out) == here.tobytes()


def test_auto_choice_skips_numba_for_small_calls():
    """Small calls stay on the numpy path (no numba start-up); large ones load the kernels;
    both give the same signatures."""
    code = ("import sys\n"
            "import curator.dedup.minhash as m\n"
            "t = sys.stdin.read().split('\\x1e')\n"
            "small = m.MinHasher(num_perm=32, seed=3, ngram=5)(t)\n"
            "assert 'numba' not in sys.modules\n"
            "m._JIT_MIN = 1\n"
            "big = m.MinHasher(num_perm=32, seed=3, ngram=5)(t)\n"
            "assert 'numba' in sys.modules and (small == big).all()\n")
    subprocess.run([sys.executable, "-c", code], input="\x1e".join(TEXTS), text=True,
                   check=True, cwd=REPO, env={"PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("compiled", [True, False], ids=["numba", "numpy"])
def test_batches_do_not_change_signatures(compiled):
    texts = TEXTS * 7
    whole = MinHasher(num_perm=32, ngram=5, compiled=compiled)(texts)
    small = MinHasher(num_perm=32, ngram=5, batch_chars=50, compiled=compiled)(texts)
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
