"""A Bloom filter over 64-bit item hashes, for ``bloom_dedup``: sizing from a memory budget,
its false-positive arithmetic, and the insert-and-test pass.

An item's ``k`` bit positions come from its hash ``h`` by double hashing (Kirsch and
Mitzenmacher): ``(h + i * h2) mod m`` for ``i < k``, with ``h2 = fmix64(h ^ SALT) | 1``
(uint64 arithmetic, wrapping). An item is *seen* when all its bits were set by the items
before it; every item then sets its bits. So the result depends only on the items and their
order, and two implementations give the same flags:

* a compiled loop (numba, the ``dedup`` extra): one item after the other;
* a numpy pass over a batch (no numba): item ``j`` of a batch is seen iff each of its
  positions was set before the batch or is a position of an earlier item of the batch (the
  first item of the batch holding each position is found with one sort). Setting the bits of
  a seen item changes nothing, so this equals the sequential loop exactly.
"""

from __future__ import annotations

import math

import numpy as np

#: Most hash functions used (more gains nothing measurable and costs a memory access each).
K_MAX = 30
_SALT = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_ONE = np.uint64(1)
_SIX = np.uint64(6)
_LOW6 = np.uint64(63)
#: Positions per numpy batch (``2^22 / k`` items): the workspace stays near 200 MB.
_BATCH_POSITIONS = 1 << 22


def optimal_k(m_bits: int, n: int) -> int:
    """The number of hashes that minimises the false-positive rate of ``n`` items in
    ``m_bits`` bits: ``round(m/n * ln 2)``, at least 1, at most :data:`K_MAX`."""
    if n <= 0:
        return 1
    return max(1, min(K_MAX, round(m_bits / n * math.log(2))))


def fp_rate(m_bits: int, n: int, k: int) -> float:
    """Probability that an item not yet inserted is seen after ``n`` distinct items:
    ``(1 - exp(-k n / m))^k``."""
    if m_bits <= 0:
        return 1.0
    return (1.0 - math.exp(-k * n / m_bits)) ** k


def expected_false_positives(m_bits: int, n: int, k: int) -> float:
    """Expected number of new items seen while ``n`` distinct items are inserted one after the
    other: the sum of :func:`fp_rate` after 0, 1, ..., n-1 items (summed exactly up to 65,536
    items, by the trapezoid rule over 65,536 steps beyond)."""
    if n <= 0 or m_bits <= 0:
        return 0.0
    steps = min(n, 1 << 16)
    i = np.linspace(0.0, n - 1, steps) if steps < n else np.arange(n, dtype=np.float64)
    f = (1.0 - np.exp(-k * i / m_bits)) ** k
    if steps == n:
        return float(f.sum())
    return float(np.trapezoid(f, i) + (f[0] + f[-1]) / 2)


def filter_words(memory_bytes: int, partitions: int) -> int:
    """64-bit words of one partition's filter: ``memory_bytes`` split evenly, whole words."""
    return max(1, memory_bytes // partitions // 8)


def partition_of(h: np.ndarray, partitions: int) -> np.ndarray:
    """The partition of each hash: its top 32 bits scaled to ``0..partitions-1``."""
    return ((h >> np.uint64(32)) * np.uint64(partitions) >> np.uint64(32)).astype(np.int64)


def _fmix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _S33)
    h = h * _M1
    h = h ^ (h >> _S33)
    h = h * _M2
    return h ^ (h >> _S33)


def positions(h: np.ndarray, k: int, m_bits: int) -> np.ndarray:
    """``(len(h), k)`` bit positions of the hashes (see the module docstring)."""
    with np.errstate(over="ignore"):
        h2 = _fmix64(h ^ _SALT) | _ONE
        steps = np.arange(k, dtype=np.uint64)
        return (h[:, None] + steps[None, :] * h2[:, None]) % np.uint64(m_bits)


def insert_test_numpy(words: np.ndarray, k: int, h: np.ndarray) -> np.ndarray:
    """Insert ``h`` in order into the filter ``words`` (uint64, updated in place); True for
    each item that was seen. Vectorised per batch (module docstring)."""
    m_bits = words.shape[0] * 64
    seen = np.empty(h.shape[0], dtype=bool)
    batch = max(1, _BATCH_POSITIONS // k)
    for a in range(0, h.shape[0], batch):
        pos = positions(h[a : a + batch], k, m_bits)
        b = pos.shape[0]
        word, bit = pos >> _SIX, _ONE << (pos & _LOW6)
        before = (words[word] & bit) != 0
        flat = pos.ravel()
        order = np.argsort(flat, kind="stable")  # item order within each position
        fs = flat[order]
        first_sorted = np.r_[True, fs[1:] != fs[:-1]]
        owner = (order // k)[first_sorted][np.cumsum(first_sorted) - 1]
        first_item = np.empty_like(owner)
        first_item[order] = owner
        earlier = first_item.reshape(b, k) < np.arange(b)[:, None]
        seen[a : a + b] = (before | earlier).all(axis=1)
        ws = fs >> _SIX
        starts = np.flatnonzero(np.r_[True, ws[1:] != ws[:-1]])
        words[ws[starts]] |= np.bitwise_or.reduceat(_ONE << (fs & _LOW6), starts)
    return seen


try:
    from numba import njit
except ImportError:  # pragma: no cover - the dedup extra brings numba
    njit = None

if njit is not None:

    @njit(cache=True)
    def _insert_test_numba(words, k, h, seen):  # pragma: no cover - compiled
        m = np.uint64(words.shape[0] * 64)
        for j in range(h.shape[0]):
            x = h[j]
            y = x ^ _SALT
            y ^= y >> _S33
            y *= _M1
            y ^= y >> _S33
            y *= _M2
            y ^= y >> _S33
            h2 = y | _ONE
            hit = True
            for i in range(k):
                p = (x + np.uint64(i) * h2) % m
                w = p >> _SIX
                b = _ONE << (p & _LOW6)
                if words[w] & b == 0:
                    hit = False
                    words[w] |= b
            seen[j] = hit


def insert_test(words: np.ndarray, k: int, h: np.ndarray, *, compiled: bool = True) -> np.ndarray:
    """Insert ``h`` in order into ``words`` (updated in place); True for each item seen before.
    Compiled with numba when it is installed and ``compiled``; both give the same flags."""
    h = np.ascontiguousarray(h, dtype=np.uint64)
    if compiled and njit is not None:
        seen = np.empty(h.shape[0], dtype=np.bool_)
        _insert_test_numba(words, k, h, seen)
        return seen
    return insert_test_numpy(words, k, h)


def bits_set(words: np.ndarray) -> int:
    """Number of bits set in the filter."""
    total = 0
    for a in range(0, words.shape[0], 1 << 22):
        total += int(np.bitwise_count(words[a : a + (1 << 22)]).sum())
    return total
