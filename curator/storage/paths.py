"""Paths a stage reads: globs expanded (local or remote, through fsspec); none matching is one
line naming the YAML key, and a remote path that cannot be reached says why (connection
refused, no such host, HTTP 401) instead of "matches no file", with its credentials masked."""

from __future__ import annotations

import os
from typing import Any

import fsspec

from curator.base.errors import InputError
from curator.base.redact import redact


def expand_paths(paths: str | list[str], storage_options: dict[str, Any] | None = None,
                 what: str = "paths") -> list[str]:
    """Expand globs (local or remote) into a sorted list of full paths; error if none match.
    A file that several entries match (``[data/*.jsonl, data/a.jsonl]``, ``a/../a.jsonl``, a
    symlink to it) is listed once, where it is first matched: read once per entry, every
    document of it would be repeated in the output."""
    out: list[str] = []
    seen: set[str] = set()
    for p in [paths] if isinstance(paths, str) else paths:
        fs, root = fsspec.core.url_to_fs(p, **(storage_options or {}))
        local = "file" in (fs.protocol if isinstance(fs.protocol, tuple | list) else [fs.protocol])
        try:
            if any(ch in p for ch in "*?["):
                found = sorted(fs.glob(root))
            else:
                found = [root] if (fs.exists(root) if local else _exists(fs, root)) else []
        except Exception as e:  # a server or bucket that cannot be reached
            raise InputError(f"{what}: '{redact(p)}' cannot be read: {cause(e)}") from None
        if not found:
            raise InputError(f"{what}: '{redact(p)}' matches no file")
        if local:
            for f in found:
                _check_local_file(f, what)
        for f in found:
            full = f if local else fs.unstrip_protocol(f)
            key = os.path.realpath(f) if local else full
            if key not in seen:
                seen.add(key)
                out.append(full)
    return out


def _check_local_file(path: str, what: str) -> None:
    """A local path a reader will open must be a file with a UTF-8 name, said in one line here: a
    folder would fail later as a "truncated or corrupt compressed file", and a name with other
    bytes (``latin\\xe9.jsonl``) cannot be hashed into its identity as JSON."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise InputError(f"{what}: file name '{shown}' is not valid UTF-8 (curator keeps file "
                         "names in JSON markers and records); rename it") from None
    if os.path.isdir(path):
        raise InputError(f"{what}: '{path}' is a folder, not a file; give its files "
                         f"(a glob such as '{os.path.join(path, '*')}')")


def _exists(fs: Any, root: str) -> bool:
    """``fs.exists``, except that a failure that is not "no such file" is raised: fsspec's
    HTTP filesystem reports a refused connection as a missing file."""
    try:
        fs.info(root)
        return True
    except FileNotFoundError as e:
        inner = _inner(e)
        if inner is None or getattr(inner, "status", None) in (404, 410):
            return False
        raise inner from None


def _inner(err: BaseException) -> BaseException | None:
    """The first exception under ``err`` that is not a plain "file not found"."""
    seen = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if not isinstance(e, FileNotFoundError):
            return e
        e = e.__cause__ or e.__context__
    return None


def cause(err: BaseException) -> str:
    """A remote failure in a few words, secrets masked: ``127.0.0.1:9: Connection refused``,
    ``HTTP 401 Unauthorized``."""
    status = getattr(err, "status", None)
    if isinstance(status, int):
        return redact(f"HTTP {status} {getattr(err, 'message', '') or ''}".strip())
    os_err = getattr(err, "os_error", None)  # aiohttp's ClientConnectorError
    host = getattr(err, "host", None)
    port = getattr(err, "port", None)
    for e in (os_err, err, err.__cause__, err.__context__):
        if isinstance(e, OSError) and e.errno and not isinstance(e, FileNotFoundError):
            # asyncio words a refusal "Connect call failed (...)"; the errno says what it is
            why = os.strerror(e.errno) if e.errno > 0 else (e.strerror or str(e))
            where = f"{host}:{port}: " if host else ""
            return redact(f"{where}{why}")
    text = " ".join(str(err).split())[:300] or type(err).__name__
    return redact(f"{type(err).__name__}: {text}")
