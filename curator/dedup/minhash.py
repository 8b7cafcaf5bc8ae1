"""Vectorised MinHash signatures: no Python call per shingle.

A batch of documents is normalised, concatenated into one array of code points (character
shingles) or of word hashes (word shingles), and every n-gram of the batch is hashed at once
with a polynomial hash over the array (``n`` vector passes) finished by murmur3's ``fmix64``.
The 32-bit shingle hashes then go through the same permutations as datasketch's MinHash, with
``a, b`` drawn from ``numpy.random.RandomState(seed)`` in the same order:

* ``affine32`` (default, datasketch >= 2 default): ``a * fmix32(h) + b`` in uint32 arithmetic;
  no modulo, so about 3x faster;
* ``legacy`` (datasketch < 2, NeMo Curator, datatrove): ``((a*h + b) mod (2**61-1)) & (2**32-1)``;
* ``datatrove`` (word shingles only): datatrove's ``MinhashDedupSignature`` bit for bit: each
  word n-gram's UTF-8 text (words joined by one space) hashed with XXH64 (vectorised, see
  :mod:`curator.dedup.xxh64`), ``(a*h + b) mod (2**61-1)`` kept at 64 bits, ``a, b`` drawn as
  datatrove draws them; signatures are uint64.

The per-document minimum is a single ``np.minimum.reduceat``. Everything is integer arithmetic
on fixed-width numpy types, so the same text gives the same signature on every process and
machine.

With numba installed (the ``dedup`` extra) the same integers come from compiled kernels
(``minhash_kernels.py``: one pass per document, SIMD over the permutations), 10-20x faster;
they are loaded for calls of 4M characters or more (or once loaded), so small jobs skip
numba's start-up. This numpy path is the fallback; tests check both give identical signatures.

A document shorter than one shingle is padded with NULs so that it still has exactly one
shingle (two short documents are then compared as whole strings); :meth:`MinHasher.signatures`
also says which documents had a real shingle (the ``fineweb`` preset, like datatrove, gives the
others no signature).

Normalisation (``do_normalize``) is a preset of :mod:`curator.dedup.normalize`: ``none``,
``basic`` (``True``) or ``fineweb``; with ``fineweb`` word shingles are spaCy's words, as in
datatrove. The compiled kernels do ``basic`` themselves; other presets normalise in Python first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from curator.dedup.normalize import basic as normalize
from curator.dedup.normalize import fineweb_batch, fineweb_words, resolve

MERSENNE = np.uint64((1 << 61) - 1)
MAX_HASH = np.uint64((1 << 32) - 1)
#: Multiplier of the polynomial n-gram hash (the 64-bit FNV prime).
POLY = np.uint64(0x100000001B3)
_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xC2B2AE3D27D4EB4F)
#: Upper bound on the temporary (perms x shingles) matrix, in elements.
_BLOCK = 1 << 22
#: Characters per batch of the compiled path (measured: 64K-128K beat 2M by ~10%).
_JIT_BATCH = 1 << 17
#: Characters in one call from which the automatic choice loads the compiled kernels.
_JIT_MIN = 1 << 22

ShingleKind = Literal["char", "word"]
Scheme = Literal["affine32", "legacy", "datatrove"]


__all__ = ["MinHasher", "band_digests", "normalize", "shingle_hashes"]


def fmix64(h: np.ndarray) -> np.ndarray:
    """murmur3's 64-bit finaliser (avalanches every input bit); wraps like C."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def fmix32(h: np.ndarray) -> np.ndarray:
    """murmur3's 32-bit finaliser, as datasketch pre-mixes inputs of its affine schemes."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def permutations(num_perm: int, seed: int, scheme: Scheme = "affine32"
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The ``(a, b)`` of each permutation, drawn exactly as datasketch's MinHash does."""
    gen = np.random.RandomState(seed)
    if scheme == "datatrove":  # MinhashDedupSignature.parameters
        a = gen.randint(1, MERSENNE, dtype=np.uint64, size=(1, num_perm))
        return a[0].copy(), gen.randint(0, MERSENNE, dtype=np.uint64, size=(1, num_perm))[0]
    if scheme == "affine32":
        a32 = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
        return a32, gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    ab = np.array([(gen.randint(1, MERSENNE, dtype=np.uint64),
                    gen.randint(0, MERSENNE, dtype=np.uint64)) for _ in range(num_perm)],
                  dtype=np.uint64)
    return ab[:, 0].copy(), ab[:, 1].copy()


_KERNELS: object = None


def kernels() -> object | None:
    """The compiled kernels module, or None without numba (imported on first use only, so
    that importing this module stays cheap)."""
    global _KERNELS
    if _KERNELS is None:
        try:
            from curator.dedup import minhash_kernels
            _KERNELS = minhash_kernels
        except ImportError:
            _KERNELS = False
    return _KERNELS or None


def _pick(compiled: bool | None, nchars: int) -> object | None:
    """The kernels module to use, or None for the numpy path.

    ``compiled=None`` (auto) takes the kernels once this process has loaded them, or for a call
    of at least ``_JIT_MIN`` characters: loading numba and the cached machine code costs about
    a CPU second, the numpy path's time for ~8 MB, so small jobs (and tests) do not pay it.
    """
    if compiled is None:
        if _KERNELS is None and nchars < _JIT_MIN:
            return None
        return kernels()
    if not compiled:
        return None
    k = kernels()
    if k is None:
        raise ImportError("compiled MinHash kernels need numba (pip install numba)")
    return k


def warm_up() -> bool:
    """Compile (or load from numba's cache) every kernel specialisation; False without numba.
    ``scripts/setup.sh`` calls it so the first dedup run does not pay the compilation."""
    if kernels() is None:
        return False
    for text in ("ascii text here", "ünïcode text"):
        for kind, scheme in (("char", "affine32"), ("word", "legacy")):
            MinHasher(4, 1, 2, kind, scheme=scheme, compiled=True)([text])  # type: ignore[arg-type]
    return True


def _batch_codepoints(texts: Sequence[str], lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """A batch's code points in one array (uint8 when all ASCII, else uint32) and each
    document's start (``len(texts) + 1`` entries).

    Lower-cased document by document: ``str.lower`` may lengthen a string (``İ``) and its
    final-sigma rule looks at the neighbouring characters, so one call on the joined batch
    could differ from ``normalize``.
    """
    docs = [t.lower() for t in texts] if lower else texts
    big = "".join(docs)
    starts = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, docs), dtype=np.int64, count=len(docs)), out=starts[1:])
    if big.isascii():
        return np.frombuffer(big.encode("ascii"), dtype=np.uint8), starts
    return np.frombuffer(big.encode("utf-32-le", "surrogatepass"), dtype=np.uint32), starts


def _codepoints(s: str) -> np.ndarray:
    return np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(
        np.uint64)


def _window_hashes(tokens: np.ndarray, lengths: np.ndarray, n: int) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """32-bit hashes of every n-gram that lies inside one document.

    ``tokens`` is the concatenation of the documents' tokens, ``lengths`` their counts (each
    >= n). Returns the hashes (documents in order) and each document's first index in them.
    """
    total = tokens.shape[0]
    span = total - n + 1
    h = np.zeros(span, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):
            h *= POLY
            h += tokens[j:j + span]
        h = fmix64(h) >> np.uint64(32)
    counts = lengths - n + 1
    starts = np.cumsum(lengths) - lengths
    out_off = np.cumsum(counts) - counts
    idx = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(starts - out_off, counts)
    return h[idx], out_off


def _normalized(texts: Sequence[str], preset: str, kind: ShingleKind, lang: str) -> list[str]:
    if preset == "fineweb":
        return fineweb_words(texts, lang) if kind == "word" else fineweb_batch(texts)
    if preset == "basic":
        return [normalize(t) for t in texts]
    return list(texts)


def _full(norm: Sequence[str], ngram: int, kind: ShingleKind) -> list[bool]:
    if kind == "char":
        return [len(t) >= ngram for t in norm]
    return [len(t.split()) >= ngram for t in norm]


def shingle_hashes(texts: Sequence[str], *, ngram: int = 24, kind: ShingleKind = "char",
                   do_normalize: bool | str = True, lang: str = "en",
                   full: list[bool] | None = None, compiled: bool | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The 32-bit shingle hashes of a batch (uint32) and each document's offset in them.

    A shingle repeated within a document is hashed repeatedly; that does not change a MinHash.
    ``full``, when given, receives for each document whether it had at least one whole
    shingle before padding. ``compiled``: the numba kernel (True), the numpy path (False) or
    automatic (None: see ``_pick``); all give the same hashes.
    """
    preset = resolve(do_normalize)
    k = _pick(compiled, sum(map(len, texts)))
    # the kernel does the basic preset (lower case, folded whitespace) itself; the others are
    # applied here first
    in_kernel = k is not None and preset == "basic"
    norm = list(texts) if in_kernel and full is None else _normalized(texts, preset, kind, lang)
    if full is not None:
        full.extend(_full(norm, ngram, kind))
    if k is not None:
        cp, starts = _batch_codepoints(texts if in_kernel else norm, in_kernel)
        return k.shingle_kernel(cp, starts, ngram, kind == "word",  # type: ignore[attr-defined]
                                in_kernel)
    hv, off = _numpy_shingle_hashes(norm, ngram, kind)
    return hv.astype(np.uint32), off


def _numpy_shingle_hashes(norm: Sequence[str], ngram: int, kind: ShingleKind
                          ) -> tuple[np.ndarray, np.ndarray]:
    if kind == "char":
        padded = [t if len(t) >= ngram else t + "\0" * (ngram - len(t)) for t in norm]
        lengths = np.fromiter((len(t) for t in padded), dtype=np.int64, count=len(padded))
        return _window_hashes(_codepoints("".join(padded)), lengths, ngram)
    # word shingles: hash each word (position-salted sum over its characters), then n-grams
    words = [t.split() for t in norm]
    padded_w = [w if len(w) >= ngram else w + ["\0"] * (ngram - len(w)) for w in words]
    nwords = np.fromiter((len(w) for w in padded_w), dtype=np.int64, count=len(padded_w))
    flat = " ".join(" ".join(w) for w in padded_w)
    c = _codepoints(flat)
    is_sp = c == 32
    word_starts = np.concatenate(([0], np.flatnonzero(is_sp) + 1)).astype(np.int64)
    seg = np.diff(np.append(word_starts, c.shape[0]))
    pos = np.arange(c.shape[0], dtype=np.int64) - np.repeat(word_starts, seg)
    with np.errstate(over="ignore"):
        v = fmix64(c * _K1 + pos.astype(np.uint64) * _K2 + np.uint64(1))
    v[is_sp] = 0
    with np.errstate(over="ignore"):
        wh = np.add.reduceat(v, word_starts)
    return _window_hashes(wh, nwords, ngram)


def datatrove_shingles(norm: Sequence[str], ngram: int, full: list[bool] | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """XXH64 of each word n-gram's text (words joined by one space), as datatrove hashes them.
    A document with fewer than ``ngram`` words gets one placeholder shingle (``full`` False)."""
    toks = [" ".join(t.split()) for t in norm]
    buf = np.frombuffer("\n".join(toks).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    ndocs = len(toks)
    sep = (buf == 32) | (buf == 10)
    prev = np.r_[True, sep[:-1]]
    nxt = np.r_[sep[1:], True]
    starts = np.flatnonzero(~sep & prev)
    ends = np.flatnonzero(~sep & nxt) + 1
    doc_of = np.cumsum(buf == 10)[starts] if starts.shape[0] else starts
    ntok = np.bincount(doc_of, minlength=ndocs)
    if full is not None:
        full.extend((ntok >= ngram).tolist())
    nwin = np.maximum(ntok - ngram + 1, 0)
    eff = np.maximum(nwin, 1)
    off = np.cumsum(eff) - eff
    out = np.zeros(int(eff.sum()), dtype=np.uint64)
    if starts.shape[0] >= ngram:
        i = np.arange(starts.shape[0] - ngram + 1)
        ok = doc_of[i] == doc_of[i + ngram - 1]
        i = i[ok]
        from curator.dedup.xxh64 import xxh64_ranges

        h = xxh64_ranges(buf, starts[i], ends[i + ngram - 1] - starts[i])
        tok_first = np.cumsum(ntok) - ntok  # first token of each document
        d = doc_of[i]
        out[off[d] + (i - tok_first[d])] = h
    return out, off


def signatures_from_hashes(hv: np.ndarray, offsets: np.ndarray, a: np.ndarray,
                           b: np.ndarray, compiled: bool | None = None, wide: bool = False
                           ) -> np.ndarray:
    """MinHash signatures ``(docs, perms)`` from a batch's shingle hashes; the scheme follows
    the dtype of ``a`` (uint32: affine32, uint64: legacy) and ``wide`` (datatrove: uint64
    values, not cut to 32 bits; numpy path only). ``compiled`` as in :func:`shingle_hashes`."""
    k = None if wide else _pick(compiled, hv.shape[0])
    if k is not None:
        return k.minhash_kernel(hv, offsets, a, b)  # type: ignore[attr-defined]
    hv = hv.astype(np.uint64)
    num_perm, ndocs = a.shape[0], offsets.shape[0]
    out = np.empty((ndocs, num_perm), dtype=np.uint64 if wide else np.uint32)
    if ndocs == 0:
        return out
    step = max(1, min(num_perm, _BLOCK // max(1, hv.shape[0])))
    if a.dtype == np.uint32:
        h32 = fmix32(hv.astype(np.uint32))
        for p in range(0, num_perm, step):
            m = np.multiply(a[p:p + step, None], h32[None, :])
            m += b[p:p + step, None]
            out[:, p:p + step] = np.minimum.reduceat(m, offsets, axis=1).T
        return out
    with np.errstate(over="ignore"):
        for p in range(0, num_perm, step):
            m = np.multiply(a[p:p + step, None], hv[None, :])  # in place: ~2x fewer passes
            m += b[p:p + step, None]
            np.remainder(m, MERSENNE, out=m)
            if not wide:
                m &= MAX_HASH
            out[:, p:p + step] = np.minimum.reduceat(m, offsets, axis=1).T
    return out


class MinHasher:
    """Signature function for one configuration (shingles, permutations, seed)."""

    def __init__(self, num_perm: int = 128, seed: int = 42, ngram: int = 24,
                 kind: ShingleKind = "char", do_normalize: bool | str = True,
                 batch_chars: int = 1 << 21, scheme: Scheme = "affine32",
                 lang: str = "en", compiled: bool | None = None) -> None:
        self.num_perm, self.seed, self.ngram, self.kind = num_perm, seed, ngram, kind
        self.do_normalize, self.lang = resolve(do_normalize), lang
        if compiled:
            _pick(True, 0)  # numba missing: fail here, not on the first batch
        self.compiled = compiled
        self.batch_chars = batch_chars
        self.a, self.b = permutations(num_perm, seed, scheme)
        self.wide = scheme == "datatrove"
        if self.wide and kind != "word":
            from curator.base.errors import ConfigError

            raise ConfigError("scheme: datatrove hashes word n-grams; set shingle: word")

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """Signatures ``(len(texts), num_perm)`` (uint32; uint64 for the datatrove scheme),
        computed in bounded-memory batches."""
        return self.signatures(texts)[0]

    def signatures(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Signatures and, per document, whether it had a whole shingle (``bool``).

        That is only worked out for the ``fineweb`` preset and the ``datatrove`` scheme, which
        (like datatrove) give such documents no signature; elsewhere it is all True, and the
        compiled path does not pay for normalising every text a second time."""
        out = np.empty((len(texts), self.num_perm),
                       dtype=np.uint64 if self.wide else np.uint32)
        want_full = self.wide or self.do_normalize == "fineweb"
        full: list[bool] | None = [] if want_full else None
        use = not self.wide and _pick(self.compiled, sum(map(len, texts))) is not None
        # the compiled path needs no (perms x shingles) matrix: smaller batches stay in cache
        limit = min(self.batch_chars, _JIT_BATCH) if use else self.batch_chars
        i = 0
        while i < len(texts):
            j, size = i, 0
            while j < len(texts) and (j == i or size + len(texts[j]) <= limit):
                size += len(texts[j])
                j += 1
            if self.wide:
                norm = _normalized(texts[i:j], self.do_normalize, "word", self.lang)
                hv, off = datatrove_shingles(norm, self.ngram, full)
            else:
                hv, off = shingle_hashes(texts[i:j], ngram=self.ngram, kind=self.kind,
                                         do_normalize=self.do_normalize, lang=self.lang,
                                         full=full, compiled=use)
            out[i:j] = signatures_from_hashes(hv, off, self.a, self.b, use, self.wide)
            i = j
        if full is None:
            return out, np.ones(len(texts), dtype=bool)
        return out, np.asarray(full, dtype=bool)


def band_digests(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """64-bit digest of each band of each signature: ``(docs, bands)`` uint64.

    Salted by the band index, so equal rows in different bands never share a bucket.
    """
    n = sig.shape[0]
    out = np.empty((n, bands), dtype=np.uint64)
    s = sig.astype(np.uint64)
    with np.errstate(over="ignore"):
        for band in range(bands):
            h = np.full(n, fmix64(np.array([band + 1], dtype=np.uint64))[0], dtype=np.uint64)
            for j in range(band * rows, (band + 1) * rows):
                h = h * POLY + s[:, j]
            out[:, band] = fmix64(h)
    return out
