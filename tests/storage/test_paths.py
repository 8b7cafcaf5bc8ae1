"""Paths a stage reads: globs expanded once per file, bad entries named by their YAML key."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from curator.base.errors import InputError
from curator.storage.paths import expand_paths


def test_a_file_matched_by_several_entries_is_listed_once(tmp_path: Path) -> None:
    for n in ("a", "b"):
        (tmp_path / f"{n}.jsonl").write_text("{}\n")
    os.symlink(tmp_path / "a.jsonl", tmp_path / "link.jsonl")
    (tmp_path / "sub").mkdir()
    got = expand_paths(
        [
            str(tmp_path / "*.jsonl"),
            str(tmp_path / "a.jsonl"),
            str(tmp_path / "sub" / ".." / "b.jsonl"),
        ]
    )
    assert got == [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]


def test_no_match_and_a_folder_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^inputs\.paths: '.*nothing\*' matches no file$"):
        expand_paths(str(tmp_path / "nothing*"), what="inputs.paths")
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match=r"is a folder, not a file"):
        expand_paths(str(tmp_path / "d"))


def test_a_refused_connection_says_so_without_the_password() -> None:
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InputError) as e:
        expand_paths(f"http://user:hunter2@127.0.0.1:{port}/a.jsonl")
    assert "refused" in str(e.value).lower() and "hunter2" not in str(e.value)
