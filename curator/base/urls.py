"""The public name of an input: what curator writes where it derives a value from a URL.

A URL may carry credentials: user info (``https://user:pass@host/``) and query values
(pre-signed ``?X-Amz-Signature=...&X-Amz-Credential=...``, ``?token=...``, ``?sig=...``).
Every value curator *derives* from an input's location (a default or rewritten document id, a
quarantined record's ``file``, a file's name relative to its siblings) is made from
:func:`public_url`: scheme, host, port and path only. The rule drops every query value, not
only those with secret-looking names: a signing scheme's parameter names are the signer's
choice, and a name list would miss one. No curator imports: any layer may use it.
"""

from __future__ import annotations

import hashlib
import posixpath
from urllib.parse import urlsplit, urlunsplit


def public_url(path: str) -> str:
    """``path`` without user info, query or fragment when it is a URL (``scheme://``); a
    local path is returned as is."""
    if "://" not in path or path.startswith("file://"):
        return path
    try:
        parts = urlsplit(path)
    except ValueError:  # not a URL after all (a bad port, a stray bracket)
        return path.split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1]
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def public_basename(path: str) -> str:
    """The last path component of :func:`public_url` (``in.jsonl`` for
    ``https://h/in.jsonl?token=...``)."""
    return posixpath.basename(public_url(path).rstrip("/")) if "://" in path else \
        path.rstrip("/").rsplit("/", 1)[-1]


def distinct(names: list[str], originals: list[str]) -> list[str]:
    """``names`` (public names of ``originals``) made distinct where two inputs differ only in
    what :func:`public_url` dropped: such a name gets ``#`` and 8 hex digits of a one-way hash
    of its full location (nothing of the query can be read back from it)."""
    seen: dict[str, int] = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    return [n if seen[n] == 1 else
            f"{n}#{hashlib.sha256(o.encode()).hexdigest()[:8]}"
            for n, o in zip(names, originals, strict=True)]
