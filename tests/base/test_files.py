"""``files_under`` as a model loader sees a folder: through symlinked subfolders, each real
folder once."""

from __future__ import annotations

import os
from pathlib import Path

from curator.base.files import files_under


def test_a_symlinked_subfolder_is_walked_and_named_through_the_folder(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "pooling"
    cache.mkdir(parents=True)
    (cache / "config.json").write_text("{}")
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"w")
    os.symlink(cache, model / "1_Pooling")
    assert files_under(model) == [
        str(model / "weights.bin"),
        str(model / "1_Pooling" / "config.json"),
    ]


def test_a_link_back_up_is_not_a_loop(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_text("x")
    os.symlink(tmp_path, tmp_path / "a" / "up")
    assert files_under(tmp_path / "a") == [str(tmp_path / "a" / "x.txt")]
