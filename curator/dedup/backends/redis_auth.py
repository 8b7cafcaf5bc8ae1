"""How to reach a Redis: node addresses, credentials and TLS, and the short retry of its
connections. Picklable and without any secret: only the name of the environment variable
that holds the password travels; it is read where the connection is made."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from curator.base.errors import ConfigError, CuratorError


def retry(attempts: int) -> Any:
    """A short retry for transient errors; redis-py's default spends ~4 s on a dead node."""
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    return Retry(ExponentialBackoff(cap=0.5, base=0.05), attempts)


@dataclass(frozen=True)
class RedisAuth:
    """How to authenticate and encrypt: picklable, and without the secret itself (only the
    name of the environment variable that holds it, read where the connection is made)."""

    username: str | None = None
    password_env: str | None = None
    tls: bool = False
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None

    def password(self) -> str | None:
        if not self.password_env:
            return None
        value = os.environ.get(self.password_env)
        if value is None:
            raise ConfigError(
                f"fuzzy_dedup.redis.password_env: environment variable "
                f"'{self.password_env}' is not set (it must be set wherever the "
                "stage's tasks run)"
            )
        return value

    def connection_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for redis-py's ``Redis`` / ``RedisCluster``."""
        kw: dict[str, Any] = {}
        password = self.password()
        if password is not None:
            kw["password"] = password
        if self.username:
            kw["username"] = self.username
        if self.tls:
            kw.update(
                ssl=True,
                ssl_cert_reqs="required",
                ssl_ca_certs=self.tls_ca_file,
                ssl_certfile=self.tls_cert_file,
                ssl_keyfile=self.tls_key_file,
            )
        return kw


def parse_nodes(nodes: list[str]) -> list[tuple[str, int]]:
    from curator.base.redact import redact_url

    out = []
    for n in nodes:
        if "://" in n or "@" in n:  # a URL would be split into a "host" that never resolves
            raise CuratorError(
                f"redis node '{redact_url(n)}' is not 'host:port': write the address alone, "
                "the password in redis.password_env and TLS in redis.tls"
            )
        host, _, port = n.rpartition(":")
        if not host or not port.isdigit():
            raise CuratorError(f"redis node '{n}' is not 'host:port'")
        out.append((host, int(port)))
    if not out:
        raise CuratorError("backend 'redis' needs at least one node in 'redis.nodes'")
    return out
