"""The Megatron-Core mmap ``IndexedDataset`` format: a vectorised writer, an index reader and
a streaming merge.

A dataset is a pair ``<prefix>.bin`` (token ids, back to back) and ``<prefix>.idx``, which is,
little-endian and unpadded::

    b"MMIDIDX\\x00\\x00"  <Q version=1  <B dtype code  <Q S (sequences)  <Q D (documents + 1)
    int32[S] sequence lengths   int64[S] byte pointers   int64[D] document indices (start at 0)

A document is the run of sequences between two document indices (one sequence per document,
or one per sentence in split-sentences mode). Byte pointers are int64 and computed with numpy
cumulative sums, so offsets past 2**31 bytes stay exact. Nothing here loops over tokens in
Python; merging copies ``.bin`` byte ranges and streams index arrays, so no part is loaded
whole.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from curator.base.errors import InputError
from curator.storage import nofollow
from curator.storage.atomic import atomic_open

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER_SIZE = len(MAGIC) + 8 + 1 + 8 + 8  # = 34
#: Megatron-Core's dtype codes (``DType`` in megatron/core/datasets/indexed_dataset.py).
DTYPE_CODES: dict[type, int] = {
    np.uint8: 1, np.int8: 2, np.int16: 3, np.int32: 4, np.int64: 5, np.float64: 6,
    np.float32: 7, np.uint16: 8,
}
CODE_DTYPES = {v: k for k, v in DTYPE_CODES.items()}


def token_dtype(vocab_size: int) -> type:
    """uint16 when the vocabulary fits (Megatron's rule: size < 65500), int32 otherwise."""
    return np.uint16 if vocab_size < 65500 else np.int32


def sequence_pointers(lengths: np.ndarray, itemsize: int, start: int = 0) -> np.ndarray:
    """Byte offset of each sequence in ``.bin``: an exclusive int64 cumulative sum."""
    n = len(lengths)
    ptr = np.empty(n, dtype=np.int64)
    if n:
        ptr[0] = 0
        np.cumsum(np.asarray(lengths[:-1], dtype=np.int64) * np.int64(itemsize), out=ptr[1:])
        ptr += np.int64(start)
    return ptr


def index_header(dtype: type, sequences: int, doc_index_len: int) -> bytes:
    return (MAGIC + struct.pack("<Q", VERSION) + struct.pack("<B", DTYPE_CODES[dtype])
            + struct.pack("<Q", sequences) + struct.pack("<Q", doc_index_len))


def write_index(path: str, dtype: type, lengths: np.ndarray, doc_indices: np.ndarray) -> None:
    """Write a complete ``.idx`` atomically (``doc_indices`` starts with 0)."""
    lengths = np.asarray(lengths, dtype=np.int32)
    doc_indices = np.asarray(doc_indices, dtype=np.int64)
    itemsize = np.dtype(dtype).itemsize
    with atomic_open(path, "wb") as f:
        f.write(index_header(dtype, len(lengths), len(doc_indices)))
        f.write(lengths.tobytes())
        f.write(sequence_pointers(lengths, itemsize).tobytes())
        f.write(doc_indices.tobytes())


@dataclass
class Index:
    """A memory-mapped ``.idx``: arrays are views on the file, not copies."""

    path: str
    dtype: type
    lengths: np.ndarray
    pointers: np.ndarray
    doc_indices: np.ndarray

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def documents(self) -> int:
        return len(self.doc_indices) - 1

    @property
    def tokens(self) -> int:
        return int(self.lengths.sum(dtype=np.int64))

    def token_offsets(self) -> np.ndarray:
        """Token offset of each sequence boundary (length S + 1)."""
        out = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, dtype=np.int64, out=out[1:])
        return out

    def doc_token_ends(self) -> np.ndarray:
        """Cumulative tokens at the end of each document (length D)."""
        return self.token_offsets()[self.doc_indices[1:]]


def read_index(path: str) -> Index:
    """Map an ``.idx`` file, checking its header and sizes (``InputError`` if unusable)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(HEADER_SIZE)
    if len(head) < HEADER_SIZE or head[:9] != MAGIC:
        raise InputError(f"{path}: not a Megatron mmap index (bad magic)")
    version, code, s, d = struct.unpack("<QBQQ", head[9:])
    if version != VERSION or code not in CODE_DTYPES:
        raise InputError(f"{path}: unsupported index version {version} or dtype code {code}")
    if size < HEADER_SIZE + 12 * s + 8 * d:
        raise InputError(f"{path}: truncated index ({size} bytes for {s} sequences)")

    def view(dt: type, count: int, offset: int) -> np.ndarray:
        if count == 0:
            return np.zeros(0, dtype=dt)
        return np.memmap(path, dtype=dt, mode="r", offset=offset, shape=(count,))

    return Index(path, CODE_DTYPES[code], view(np.int32, s, HEADER_SIZE),
                 view(np.int64, s, HEADER_SIZE + 4 * s), view(np.int64, d, HEADER_SIZE + 12 * s))


def verify(prefix: str) -> Index:
    """Check that ``prefix.bin`` holds exactly the tokens ``prefix.idx`` describes."""
    idx = read_index(prefix + ".idx")
    bin_size = os.path.getsize(prefix + ".bin")
    if bin_size != idx.tokens * idx.itemsize:
        raise InputError(f"{prefix}.bin: {bin_size} bytes but the index describes "
                         f"{idx.tokens * idx.itemsize}")
    if len(idx.doc_indices) == 0 or idx.doc_indices[0] != 0 or (
            len(idx.doc_indices) > 1 and np.any(np.diff(idx.doc_indices) < 0)) or (
            idx.doc_indices[-1] != len(idx.lengths)):
        raise InputError(f"{prefix}.idx: document indices are not a valid partition")
    return idx


class IndexedWriter:
    """Append whole batches of documents to ``<prefix>.bin`` and write ``<prefix>.idx`` at the
    end. Both files appear atomically on :meth:`close`.

    ``add_batch(tokens, seq_lengths, seqs_per_doc)`` takes one flat token array, the length of
    each sequence and the number of sequences of each document (0 for an empty document), so
    a batch costs a handful of numpy calls whatever its size.
    """

    def __init__(self, prefix: str, dtype: type) -> None:
        self.prefix = prefix
        self.dtype = dtype
        self._tmp_bin = f"{prefix}.bin.tmp-{os.getpid()}"
        self._bin = nofollow.open_file(self._tmp_bin, "wb")  # closed in close()/abort()
        self._lengths: list[np.ndarray] = []
        self._doc_seqs: list[np.ndarray] = []
        self.tokens = 0
        self.documents = 0

    def add_batch(self, tokens: np.ndarray, seq_lengths: np.ndarray,
                  seqs_per_doc: np.ndarray) -> None:
        tokens = np.asarray(tokens)
        if tokens.dtype != self.dtype:
            info = np.iinfo(self.dtype)
            if len(tokens) and (int(tokens.max()) > info.max or int(tokens.min()) < info.min):
                raise ValueError(f"token id out of range for {np.dtype(self.dtype).name}")
            tokens = tokens.astype(self.dtype)
        seq_lengths = np.asarray(seq_lengths, dtype=np.int32)
        seqs_per_doc = np.asarray(seqs_per_doc, dtype=np.int64)
        if int(seq_lengths.sum(dtype=np.int64)) != len(tokens) or int(seqs_per_doc.sum()) != len(
                seq_lengths):
            raise ValueError("add_batch: lengths do not add up to the tokens given")
        self._bin.write(tokens.tobytes())
        self._lengths.append(seq_lengths)
        self._doc_seqs.append(seqs_per_doc)
        self.tokens += len(tokens)
        self.documents += len(seqs_per_doc)

    def close(self) -> None:
        self._bin.flush()
        os.fsync(self._bin.fileno())
        self._bin.close()
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int32)
        seqs = np.concatenate(self._doc_seqs) if self._doc_seqs else np.zeros(0, np.int64)
        doc_indices = np.zeros(len(seqs) + 1, dtype=np.int64)
        np.cumsum(seqs, out=doc_indices[1:])
        nofollow.replace(self._tmp_bin, self.prefix + ".bin")
        write_index(self.prefix + ".idx", self.dtype, lengths, doc_indices)

    def abort(self) -> None:
        self._bin.close()
        nofollow.unlink(self._tmp_bin)


# -- merging -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slice:
    """Documents ``[doc_lo, doc_hi)`` of the dataset at ``prefix``."""

    prefix: str
    doc_lo: int
    doc_hi: int


def plan_split(parts: Iterable[tuple[str, np.ndarray]], target_bytes: int, itemsize: int
               ) -> list[list[Slice]]:
    """Cut a sequence of parts into outputs of about ``target_bytes`` at document boundaries.

    ``parts`` gives each part's prefix and its cumulative token count at the end of each
    document. An output closes at the first document that brings it to ``target_bytes`` or
    more (so a single huge document is never split); ``target_bytes <= 0`` means one output.
    Works one part at a time, so only one part's document array is in memory.
    """
    outputs: list[list[Slice]] = [[]]
    size = 0  # bytes in the current output
    for prefix, ends in parts:
        n = len(ends)
        if n == 0:
            continue
        if target_bytes <= 0:
            outputs[-1].append(Slice(prefix, 0, n))
            continue
        ends_b = np.asarray(ends, dtype=np.int64) * np.int64(itemsize)
        lo = 0
        base = 0  # bytes of this part before document `lo`
        while lo < n:
            # first document j >= lo whose end brings the output to the target
            need = base + (target_bytes - size)
            j = int(np.searchsorted(ends_b, need, side="left"))
            if j >= n:
                outputs[-1].append(Slice(prefix, lo, n))
                size += int(ends_b[-1]) - base
                break
            outputs[-1].append(Slice(prefix, lo, j + 1))
            outputs.append([])
            size = 0
            base = int(ends_b[j])
            lo = j + 1
    return [o for o in outputs if o]


def slice_ranges(idx: Index, s: Slice) -> tuple[int, int, int, int]:
    """``(seq_lo, seq_hi, tok_lo, tok_hi)`` covered by documents ``[s.doc_lo, s.doc_hi)``."""
    n_seq, itemsize = len(idx.lengths), idx.itemsize
    seq_lo, seq_hi = int(idx.doc_indices[s.doc_lo]), int(idx.doc_indices[s.doc_hi])
    tok_lo = int(idx.pointers[seq_lo]) // itemsize if seq_lo < n_seq else idx.tokens
    tok_hi = int(idx.pointers[seq_hi]) // itemsize if seq_hi < n_seq else idx.tokens
    return seq_lo, seq_hi, tok_lo, tok_hi


def merged_index(indices: Sequence[Index], slices: Sequence[Slice]) -> Iterator[bytes]:
    """The ``.idx`` of the concatenation of ``slices``, as byte chunks in file order (header,
    lengths, pointers, document indices), one slice at a time. Pointers are rebased with int64
    arithmetic, so they stay exact past 2**31 (and 2**32) bytes."""
    dtype = indices[0].dtype
    itemsize = np.dtype(dtype).itemsize
    ranges = [slice_ranges(idx, s) for idx, s in zip(indices, slices, strict=True)]
    n_seq = sum(r[1] - r[0] for r in ranges)
    n_docs = sum(s.doc_hi - s.doc_lo for s in slices)
    yield index_header(dtype, n_seq, n_docs + 1)
    for idx, (q0, q1, _, _) in zip(indices, ranges, strict=True):
        yield np.ascontiguousarray(idx.lengths[q0:q1], dtype=np.int32).tobytes()
    byte_base = np.int64(0)
    for idx, (q0, q1, t0, t1) in zip(indices, ranges, strict=True):
        ptr = np.asarray(idx.pointers[q0:q1], dtype=np.int64) - np.int64(t0) * itemsize
        yield (ptr + byte_base).tobytes()
        byte_base += np.int64(t1 - t0) * itemsize
    yield np.zeros(1, dtype=np.int64).tobytes()
    seq_base = 0
    for s, idx, (q0, q1, _, _) in zip(slices, indices, ranges, strict=True):
        di = np.asarray(idx.doc_indices[s.doc_lo + 1:s.doc_hi + 1], dtype=np.int64)
        yield (di - np.int64(q0) + np.int64(seq_base)).tobytes()
        seq_base += q1 - q0


def merge(slices: Sequence[Slice], out_prefix: str) -> dict[str, int]:
    """Write the concatenation of ``slices`` as ``out_prefix.bin/.idx`` (atomically), streaming:
    ``.bin`` byte ranges are copied and the index is written slice by slice (see
    :func:`merged_index`). Inputs and the output are verified. Returns documents, sequences
    and tokens written."""
    if not slices:
        raise ValueError("merge: nothing to merge")
    indices = [verify(s.prefix) for s in slices]
    dtype = indices[0].dtype
    for s, idx in zip(slices, indices, strict=True):
        if idx.dtype != dtype:
            raise InputError(f"{s.prefix}: token dtype {np.dtype(idx.dtype).name} differs from "
                             f"{np.dtype(dtype).name}")
    itemsize = np.dtype(dtype).itemsize
    ranges = [slice_ranges(idx, s) for idx, s in zip(indices, slices, strict=True)]
    with atomic_open(out_prefix + ".bin", "wb") as out:
        for s, (_, _, t0, t1) in zip(slices, ranges, strict=True):
            with open(s.prefix + ".bin", "rb") as f:
                f.seek(t0 * itemsize)
                _copy_range(f, out, (t1 - t0) * itemsize)
    with atomic_open(out_prefix + ".idx", "wb") as out:
        for chunk in merged_index(indices, slices):
            out.write(chunk)
    verify(out_prefix)
    return {"documents": sum(s.doc_hi - s.doc_lo for s in slices),
            "sequences": sum(r[1] - r[0] for r in ranges),
            "tokens": sum(r[3] - r[2] for r in ranges)}


def _copy_range(src: object, dst: object, n: int, chunk: int = 16 << 20) -> None:
    left = n
    while left > 0:
        buf = src.read(min(chunk, left))  # type: ignore[attr-defined]
        if not buf:
            raise InputError(f"unexpected end of file after {n - left} of {n} bytes")
        dst.write(buf)  # type: ignore[attr-defined]
        left -= len(buf)


def remove_dataset(prefix: str) -> None:
    for ext in (".bin", ".idx"):
        if os.path.exists(prefix + ext):
            os.unlink(prefix + ext)


__all__ = ["IndexedWriter", "Slice", "merge", "plan_split", "read_index", "sequence_pointers",
           "token_dtype", "verify", "write_index"]
