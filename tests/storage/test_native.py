"""curator.storage.native: a file a native library writes is published only when it is whole,
and a library's OS error becomes an ``OSError`` naming the file. (Real full disks, fastText and
the Rust tokenizers: tests/reliability/test_disk_errors.py.)"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from curator.storage import native


def test_a_rust_os_error_becomes_an_oserror_naming_the_file():
    got = native.as_os_error(Exception("No space left on device (os error 28)"), "/m/tok.json")
    assert isinstance(got, OSError) and got.errno == errno.ENOSPC
    assert got.filename == "/m/tok.json"
    other = ValueError("bad merges")
    assert native.as_os_error(other, "/m/tok.json") is other
    err = OSError(errno.EACCES, "Permission denied")
    assert native.as_os_error(err, "/m/x").filename == "/m/x"


def test_a_whole_file_is_published(tmp_path):
    path = str(tmp_path / "sub" / "model.bin")
    native.save_checked(lambda p: Path(p).write_bytes(b"x" * 10), path, 10)
    assert Path(path).read_bytes() == b"x" * 10
    assert os.listdir(tmp_path / "sub") == ["model.bin"]


def test_a_short_file_is_an_error_and_leaves_nothing(tmp_path):
    path = str(tmp_path / "model.bin")
    with pytest.raises(OSError) as e:  # a library that did not check its writes
        native.save_checked(lambda p: Path(p).write_bytes(b"x" * 7), path, 10)
    assert e.value.errno == errno.EIO and e.value.filename == path
    assert "only 7 of 10 bytes" in str(e.value)
    assert os.listdir(tmp_path) == []


def test_a_library_that_cannot_open_its_file_is_an_oserror(tmp_path):
    def save(p: str) -> None:
        raise ValueError(f"{p} cannot be opened for saving!")

    path = str(tmp_path / "model.bin")
    with pytest.raises(OSError) as e:
        native.save_checked(save, path, None)
    assert e.value.filename == path and os.listdir(tmp_path) == []
