"""Paths a stage reads: globs expanded (local or remote, through fsspec); none matching is one
line naming the YAML key."""

from __future__ import annotations

from typing import Any

import fsspec

from curator.core.errors import InputError


def expand_paths(paths: str | list[str], storage_options: dict[str, Any] | None = None,
                 what: str = "paths") -> list[str]:
    """Expand globs (local or remote) into a sorted list of full paths; error if none match."""
    out: list[str] = []
    for p in [paths] if isinstance(paths, str) else paths:
        fs, root = fsspec.core.url_to_fs(p, **(storage_options or {}))
        if any(ch in p for ch in "*?["):
            found = sorted(fs.glob(root))
        else:
            found = [root] if fs.exists(root) else []
        if not found:
            raise InputError(f"{what}: '{p}' matches no file")
        local = "file" in (fs.protocol if isinstance(fs.protocol, tuple | list) else [fs.protocol])
        out.extend(f if local else fs.unstrip_protocol(f) for f in found)
    return out
