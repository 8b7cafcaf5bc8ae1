"""Files written by native libraries (fastText, SentencePiece, Hugging Face tokenizers) with the
same guarantees as :func:`~curator.storage.atomic.atomic_open`: published complete or not at all,
and a full disk, a missing permission or a read-only filesystem raised as an ``OSError`` that names
the file, which the runner and the CLI turn into one line.

fastText ignores failed writes (a model cut short by a full disk is saved "successfully" and
even loads), so :func:`save_checked` compares the file with the size the model must have; the
Rust tokenizers report ``"... (os error 28)"`` as a plain ``Exception``, which
:func:`as_os_error` turns back into the ``OSError`` it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Callable
from typing import Any

from curator.storage import nofollow
from curator.storage.atomic import temp_path

_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def as_os_error(err: BaseException, path: str) -> BaseException:
    """``err`` as an ``OSError`` naming ``path`` when a native library reported an OS error
    only in its message (Rust's ``"No space left on device (os error 28)"``); else ``err``."""
    if isinstance(err, OSError):
        if err.filename is None and err.errno is not None:
            err.filename = path
        return err
    m = _OS_ERROR.search(str(err))
    if not m:
        return err
    code = int(m.group(1))
    return OSError(code, os.strerror(code), path)


def save_checked(save: Callable[[str], None], path: str, expected_size: int | None) -> None:
    """Run ``save(tmp)`` (a native writer that takes a file name), check that the file has
    ``expected_size`` bytes, then publish it as ``path``. A short file (a write the library did
    not check) or a failure to open raises the ``OSError`` a write in that folder gets now (disk
    full, no permission, read-only), else ``EIO``; the temporary is removed either way."""
    folder = os.path.dirname(path) or "."
    nofollow.makedirs(folder)  # the library opens tmp by name: no symlinked folder on the way
    tmp = temp_path(path)
    try:
        try:
            save(tmp)
        except (ValueError, RuntimeError) as e:  # fastText: "... cannot be opened for saving"
            probe_write(folder, path)
            raise OSError(errno.EIO, f"could not be written ({e})", path) from None
        size = os.path.getsize(tmp)
        if expected_size is not None and size != expected_size:
            probe_write(folder, path)
            raise OSError(errno.EIO, f"only {size} of {expected_size} bytes were written", path)
        nofollow.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def fasttext_model_size(model: Any) -> int | None:
    """Bytes of fastText's ``save_model`` file for a non-quantized model (file format 12:
    header, arguments, dictionary, input and output matrices); None when unknown."""
    try:
        entries = model.get_words() + model.get_labels()
    except UnicodeDecodeError:  # entries that are not UTF-8: their byte length is unknown here
        return None
    dictionary = 28 + sum(len(w.encode()) + 10 for w in entries)  # + NUL, int64, int8 each
    inp = memoryview(model.f.getInputMatrix()).nbytes  # (no copy of the matrices)
    out = memoryview(model.f.getOutputMatrix()).nbytes
    return 8 + 56 + dictionary + 1 + 16 + inp + 1 + 16 + out


def probe_write(folder: str, path: str | None = None) -> None:
    """Raise the ``OSError`` a write in ``folder`` gets now, naming ``path`` (the file a native
    writer failed to write without saying why: disk full, no permission, read-only)."""
    probe = os.path.join(folder, f".curator-probe-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, b"\0" * 65536)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        raise OSError(e.errno, e.strerror, path or folder) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)
