"""Every file under a folder, the way a program that loads the folder sees it.

A model folder's ``1_Pooling`` or ``onnx/`` is often a symlink into a cache (the Hugging Face
hub lays snapshots out that way): a walk that does not follow links leaves out what the model
loads, and a digest of the folder misses a swapped subfolder. :func:`files_under` follows
symlinked folders and visits each real folder once, so a link back up is not a loop. No
curator imports: any layer may use it.
"""

from __future__ import annotations

import os


def files_under(folder: str | os.PathLike[str]) -> list[str]:
    """Paths of every file under ``folder`` (through symlinked subfolders), sorted by folder
    then name, each named through the folder given (``folder/1_Pooling/config.json``)."""
    out: list[str] = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(os.fspath(folder), followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames.sort()
        out += [os.path.join(dirpath, f) for f in sorted(filenames)]
    return out
