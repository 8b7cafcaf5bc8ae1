"""Compiled (numba) MinHash kernels: the same integers as the numpy path in ``minhash.py``.

Imported only when numba is installed (the ``dedup`` extra); ``minhash.py`` falls back to its
numpy path otherwise, and tests check both give identical signatures.

Two kernels, each one pass per document with no Python per shingle:

* :func:`shingle_kernel` reads a batch's code points (``uint8`` for ASCII text, ``uint32``
  otherwise; lower-casing is done before, by ``str.lower``), collapses and strips Unicode
  whitespace exactly as ``normalize`` does, and writes every n-gram's 32-bit hash with a
  rolling polynomial hash (equal to the numpy path's ``n``-pass hash modulo 2**64);
* :func:`minhash_kernel` applies the permutations and takes the minimum, several shingles at
  a time so each permutation's ``a``, ``b`` and running minimum are loaded once per group;
  LLVM turns the loop over permutations into SIMD code (AVX-512 where the CPU has it).

Compiled on first use and cached on disk (``cache=True``), so later processes load the
machine code instead of compiling it again.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_U64 = np.uint64
_U32 = np.uint32
_POLY = _U64(0x100000001B3)
_K1 = _U64(0x9E3779B97F4A7C15)
_K2 = _U64(0xC2B2AE3D27D4EB4F)
_M1 = _U64(0xFF51AFD7ED558CCD)
_M2 = _U64(0xC4CEB9FE1A85EC53)
_S33 = _U64(33)
_S32 = _U64(32)
_S61 = _U64(61)
_ONE = _U64(1)
_MERSENNE = _U64((1 << 61) - 1)
_MAX32 = _U64((1 << 32) - 1)
_F1 = _U32(0x85EBCA6B)
_F2 = _U32(0xC2B2AE35)
_S16 = _U32(16)
_S13 = _U32(13)
#: Shingles per group in the min kernel: each permutation's a, b and minimum are loaded once
#: per group instead of once per shingle.
_GROUP = 8


@njit(cache=True, inline="always")
def _fmix64(h):
    h ^= h >> _S33
    h *= _M1
    h ^= h >> _S33
    h *= _M2
    return h ^ (h >> _S33)


@njit(cache=True, inline="always")
def _fmix32(h):
    # numba widens 32-bit integer arithmetic to 64 bits: truncate after each product
    h = _U32(h)
    h = _U32((h ^ (h >> _S16)) * _F1)
    h = _U32((h ^ (h >> _S13)) * _F2)
    return _U32(h ^ (h >> _S16))


@njit(cache=True, inline="always")
def _is_space(c):
    """``str.isspace`` (the set ``re``'s ``\\s`` and ``str.split()`` use), by code point."""
    if c <= 0x20:
        return c == 0x20 or (0x09 <= c <= 0x0D) or (0x1C <= c <= 0x1F)
    if c < 0x85:
        return False
    return (c == 0x85 or c == 0xA0 or c == 0x1680 or (0x2000 <= c <= 0x200A) or c == 0x2028
            or c == 0x2029 or c == 0x202F or c == 0x205F or c == 0x3000)


@njit(cache=True, inline="always")
def _windows(buf, m, n, out, o):
    """Hashes of the ``m - n + 1`` n-grams of ``buf[:m]`` into ``out[o:]``; returns the end."""
    pw = _ONE  # POLY ** (n - 1), wrapping
    for _ in range(n - 1):
        pw *= _POLY
    h = _U64(0)
    for j in range(n):
        h = h * _POLY + buf[j]
    out[o] = _U32(_fmix64(h) >> _S32)
    o += 1
    for i in range(1, m - n + 1):
        h = (h - buf[i - 1] * pw) * _POLY + buf[i + n - 1]
        out[o] = _U32(_fmix64(h) >> _S32)
        o += 1
    return o


@njit(cache=True, nogil=True)
def shingle_kernel(cp, starts, n, word, collapse):
    """32-bit hashes of every shingle of each document ``cp[starts[d]:starts[d + 1]]``.

    ``word``: n-grams of words (split on whitespace), else of characters; ``collapse``: for
    characters, runs of whitespace become one space and the ends are stripped (``normalize``).
    Returns ``(hashes uint32, offsets int64)`` like ``minhash.shingle_hashes``.
    """
    ndocs = starts.shape[0] - 1
    cap = cp.shape[0] + ndocs * n
    out = np.empty(cap, dtype=np.uint32)
    off = np.empty(ndocs, dtype=np.int64)
    longest = 0
    for d in range(ndocs):
        longest = max(longest, starts[d + 1] - starts[d])
    buf = np.empty(longest + n + 1, dtype=np.uint64)
    pad_word = _fmix64(_ONE)  # the hash of the one-character word "\0"
    o = 0
    for d in range(ndocs):
        off[d] = o
        m = 0
        if word:
            h = _U64(0)
            pos = 0
            for i in range(starts[d], starts[d + 1]):
                c = _U64(cp[i])
                if _is_space(c):
                    if pos > 0:
                        buf[m] = h
                        m += 1
                        h = _U64(0)
                        pos = 0
                else:
                    h += _fmix64(c * _K1 + _U64(pos) * _K2 + _ONE)
                    pos += 1
            if pos > 0:
                buf[m] = h
                m += 1
            while m < n:
                buf[m] = pad_word
                m += 1
        elif collapse:
            gap = False
            for i in range(starts[d], starts[d + 1]):
                c = _U64(cp[i])
                if _is_space(c):
                    gap = m > 0
                else:
                    if gap:
                        buf[m] = _U64(32)
                        m += 1
                        gap = False
                    buf[m] = c
                    m += 1
            while m < n:
                buf[m] = _U64(0)
                m += 1
        else:
            for i in range(starts[d], starts[d + 1]):
                buf[m] = _U64(cp[i])
                m += 1
            while m < n:
                buf[m] = _U64(0)
                m += 1
        o = _windows(buf, m, n, out, o)
    return out[:o], off


@njit(cache=True, nogil=True)
def _min_affine32(hv, off, a, b, out):
    ndocs, num_perm = out.shape
    mins = np.empty(num_perm, dtype=np.uint32)
    g = np.empty(_GROUP, dtype=np.uint32)
    for d in range(ndocs):
        s = off[d]
        e = off[d + 1] if d + 1 < ndocs else hv.shape[0]
        mins[:] = _U32(0xFFFFFFFF)
        i = s
        while i + _GROUP <= e:
            for k in range(_GROUP):
                g[k] = _fmix32(hv[i + k])
            h0, h1, h2, h3, h4, h5, h6, h7 = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]
            for p in range(num_perm):
                ap, bp = a[p], b[p]
                v = min(_U32(ap * h0 + bp), _U32(ap * h1 + bp), _U32(ap * h2 + bp),
                        _U32(ap * h3 + bp))
                v = min(v, _U32(ap * h4 + bp), _U32(ap * h5 + bp), _U32(ap * h6 + bp),
                        _U32(ap * h7 + bp))
                mins[p] = min(mins[p], v)
            i += _GROUP
        while i < e:
            h = _fmix32(hv[i])
            for p in range(num_perm):
                mins[p] = min(mins[p], _U32(a[p] * h + b[p]))
            i += 1
        out[d, :] = mins


@njit(cache=True, inline="always")
def _legacy(ap, h, bp):
    """Exact ``((a*h + b) mod 2**64 mod (2**61 - 1)) & (2**32 - 1)``, as datasketch computes."""
    x = ap * h + bp  # wraps modulo 2**64, as numpy's uint64 does in datasketch
    x = (x & _MERSENNE) + (x >> _S61)  # x mod (2**61 - 1), one conditional subtraction left
    if x >= _MERSENNE:
        x -= _MERSENNE
    return x & _MAX32


@njit(cache=True, inline="always")
def _legacy_plus1(ap, h, bp1):
    """The legacy value plus one (mod 2**32) in 3 operations after ``a*h + b``, called with
    ``bp1 = b + 1``: exact unless the result is <= 8 (see ``_min_legacy``)."""
    x = ap * h + bp1
    return (x + (x >> _S61)) & _MAX32


@njit(cache=True, nogil=True)
def _min_legacy(hv, off, a, b, out):
    """Minimum of the legacy permutations, with a shortcut that stays exact.

    Writing ``x = a*h + b (mod 2**64) = hi * 2**61 + lo``, ``x mod (2**61 - 1)`` is ``lo + hi``
    unless that sum reaches ``2**61 - 1``, and its low 32 bits are those of ``x + hi``. So
    ``_legacy_plus1`` (on ``x + 1``) gives ``value + 1`` for every shingle whose value is below
    ``2**32 - 1`` and whose sum does not reach the prime, and something in ``0..8`` for every
    other shingle. A running minimum above 8 therefore comes only from ordinary shingles and is
    the true minimum plus one; a permutation whose minimum is <= 8 (about 2e-5 per permutation
    for a 10 KB document) is recomputed with the exact formula.
    """
    ndocs, num_perm = out.shape
    b1 = b + _ONE
    mins = np.empty(num_perm, dtype=np.uint64)
    g = np.empty(_GROUP, dtype=np.uint64)
    for d in range(ndocs):
        s = off[d]
        e = off[d + 1] if d + 1 < ndocs else hv.shape[0]
        mins[:] = _MAX32
        i = s
        while i + _GROUP <= e:
            for k in range(_GROUP):
                g[k] = _U64(hv[i + k])
            h0, h1, h2, h3, h4, h5, h6, h7 = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]
            for p in range(num_perm):
                ap, bp = a[p], b1[p]
                v = min(_legacy_plus1(ap, h0, bp), _legacy_plus1(ap, h1, bp),
                        _legacy_plus1(ap, h2, bp), _legacy_plus1(ap, h3, bp))
                v = min(v, _legacy_plus1(ap, h4, bp), _legacy_plus1(ap, h5, bp),
                        _legacy_plus1(ap, h6, bp), _legacy_plus1(ap, h7, bp))
                mins[p] = min(mins[p], v)
            i += _GROUP
        while i < e:
            h = _U64(hv[i])
            for p in range(num_perm):
                mins[p] = min(mins[p], _legacy_plus1(a[p], h, b1[p]))
            i += 1
        for p in range(num_perm):
            if mins[p] > _U64(8):
                out[d, p] = _U32(mins[p] - _ONE)
            else:  # rare: an exact pass over this document for this permutation
                m = _MAX32
                for j in range(s, e):
                    m = min(m, _legacy(a[p], _U64(hv[j]), b[p]))
                out[d, p] = _U32(m)


def minhash_kernel(hv: np.ndarray, off: np.ndarray, a: np.ndarray, b: np.ndarray
                   ) -> np.ndarray:
    """Signatures ``(docs, perms)`` uint32; ``a.dtype`` picks the scheme (uint32: affine32)."""
    out = np.empty((off.shape[0], a.shape[0]), dtype=np.uint32)
    if off.shape[0]:
        if a.dtype == np.uint32:
            _min_affine32(hv, off, a, b, out)
        else:
            _min_legacy(hv, off, a, b, out)
    return out
