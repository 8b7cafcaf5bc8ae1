"""XXH64 (seed 0) of many byte ranges of one buffer at once, in numpy.

datatrove's MinHash hashes every word n-gram's UTF-8 text with ``xxhash.xxh64``; a Python call
per shingle is what makes it slow. Here the n-grams are ranges ``[start, start+length)`` of the
word-joined batch text, and the XXH64 rounds run as vector passes over all ranges: ranges are
ordered by their number of 32-byte stripes, so stripe ``k`` is one slice of the arrays. The
result equals ``xxhash.xxh64_intdigest`` bit for bit (tested).
"""

from __future__ import annotations

import numpy as np

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    acc = acc + lane * _P2
    return _rotl(acc, 31) * _P1


def xxh64_ranges(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """``xxh64(buf[start[i]:start[i]+length[i]])`` for every i, as uint64."""
    n = start.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    data = np.zeros(buf.shape[0] + 8, dtype=np.uint8)  # 8 spare bytes: every 8-byte read fits
    data[:buf.shape[0]] = buf
    # unaligned little-endian views at every byte offset (strides of one byte)
    u64 = np.ndarray((buf.shape[0] + 1,), dtype="<u8", buffer=data, strides=(1,))
    u32 = np.ndarray((buf.shape[0] + 1,), dtype="<u4", buffer=data, strides=(1,))
    start = start.astype(np.int64)
    length = length.astype(np.int64)
    stripes = length // 32
    h = np.empty(n, dtype=np.uint64)
    pos = start.copy()
    with np.errstate(over="ignore"):
        big = np.flatnonzero(stripes)
        if big.shape[0]:
            order = big[np.argsort(-stripes[big], kind="stable")]
            s_sorted = stripes[order]
            p = start[order]
            v1 = np.full(order.shape[0], _P1 + _P2, dtype=np.uint64)
            v2 = np.full(order.shape[0], _P2, dtype=np.uint64)
            v3 = np.zeros(order.shape[0], dtype=np.uint64)
            v4 = np.full(order.shape[0], np.uint64(0) - _P1, dtype=np.uint64)
            # number of ranges with more than k stripes, for each k (a prefix: sorted desc)
            counts = np.searchsorted(-s_sorted, -np.arange(1, int(s_sorted[0]) + 1), "right")
            for k, m in enumerate(counts.tolist()):
                q = p[:m] + 32 * k
                v1[:m] = _round(v1[:m], u64[q])
                v2[:m] = _round(v2[:m], u64[q + 8])
                v3[:m] = _round(v3[:m], u64[q + 16])
                v4[:m] = _round(v4[:m], u64[q + 24])
            acc = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
            for v in (v1, v2, v3, v4):
                acc = (acc ^ _round(np.zeros_like(v), v)) * _P1 + _P4
            h[order] = acc
            pos[order] = p + 32 * s_sorted
        small = stripes == 0
        h[small] = _P5
        h += length.astype(np.uint64)
        rem = start + length - pos
        for j in range(3):  # up to three 8-byte lanes
            m = rem >= 8 * (j + 1)
            if not m.any():
                break
            k1 = _round(np.zeros(int(m.sum()), dtype=np.uint64), u64[pos[m]])
            hm = h[m] ^ k1
            h[m] = _rotl(hm, 27) * _P1 + _P4
            pos[m] += 8
        rem = start + length - pos
        m = rem >= 4
        if m.any():
            hm = h[m] ^ (u32[pos[m]].astype(np.uint64) * _P1)
            h[m] = _rotl(hm, 23) * _P2 + _P3
            pos[m] += 4
        for _ in range(3):  # up to three single bytes
            m = pos < start + length
            if not m.any():
                break
            hm = h[m] ^ (data[pos[m]].astype(np.uint64) * _P5)
            h[m] = _rotl(hm, 11) * _P1
            pos[m] += 1
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return h
