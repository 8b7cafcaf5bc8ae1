"""The dedup key of a URL (``exact_dedup: {key: url}``): two URLs get the same key when they
name the same page as crawlers usually see it, and a key never holds credentials.

The rule, in order:

1. Surrounding whitespace is trimmed. A string without ``scheme://host`` is its own key.
2. Scheme: lower case; ``https`` counts as ``http`` (the same page served both ways).
3. User name and password are dropped (never part of a page's identity, and never kept).
4. Host: lower case, one trailing dot dropped.
5. Port: dropped when it is its scheme's default (80 for http, 443 for https); kept otherwise.
6. Path: empty becomes ``/``; the hex digits of ``%xx`` escapes upper case. Nothing is decoded.
7. Query: parameters named ``utm_*`` or in :data:`TRACKING_PARAMS` (case-insensitive names) are
   dropped; the others keep their order and spelling; an empty query is dropped.
8. Fragment (``#...``): dropped.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

#: Click and campaign identifiers added by ad and analytics tools (besides ``utm_*``).
TRACKING_PARAMS: frozenset[str] = frozenset(
    {
        "fbclid",
        "gclid",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "yclid",
        "twclid",
        "ttclid",
        "igshid",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "li_fat_id",
    }
)
_DEFAULT_PORT = {"http": 80, "https": 443}
_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")


def _tracking(param: str) -> bool:
    name = param.split("=", 1)[0].lower()
    return name.startswith("utm_") or name in TRACKING_PARAMS


def url_key(url: str) -> str:
    """``url`` normalised by the rule of this module's docstring."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a malformed netloc or port: compared as written
        return url
    host = parts.hostname
    if not parts.scheme or not host:
        return url
    scheme = parts.scheme.lower()
    host = host.removesuffix(".")
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORT.get(scheme) else f"{host}:{port}"
    path = _ESCAPE.sub(lambda m: m.group().upper(), parts.path or "/")
    query = "&".join(p for p in parts.query.split("&") if p and not _tracking(p))
    scheme = "http" if scheme == "https" else scheme
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")
