"""Secrets out of everything curator prints or writes about a run.

Credentials reach curator inside URLs (``https://user:pass@host``, ``redis://:pw@host``,
pre-signed ``?X-Amz-Signature=`` queries) and in environment variables named like secrets
(``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``, ``CURATOR_REDIS_PASSWORD``). Logs, one-line errors,
``report.html/json``, ``curator status`` and the markers under ``stages/`` pass what they show
through :func:`redact`; the markers a run keeps use :func:`redact_value`, which masks URL
credentials and secret-named parameters only (it must give the same answer in every
environment), and fingerprints replace each such secret by a keyed digest
(:func:`keyed_digest`), so two secrets never share a fingerprint. No curator imports: any
layer may use it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import re
from collections.abc import Callable
from typing import Any

MASK = "***"

#: Environment variables whose values are secrets, by name.
SECRET_ENV = re.compile(r"PASSW(OR)?D|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL"
                        r"|AUTH|SESSION", re.IGNORECASE)
#: Parameter names whose values are secrets: ``hf_token``, ``access_token``... but not a
#: tokenizer's special tokens (:data:`NOT_SECRET_PARAM`: ``eod_token: "</s>"``). Narrow: the
#: same names are looked for in reports, whose keys include stage ids (a stage ``bearer``).
SECRET_PARAM = re.compile(r"^(.*[_-])?(passw(or)?d|secret|secret_?key|api_?key|access_?key|"
                          r"private_?key|credentials?)$|^.+[_-]token$", re.IGNORECASE)
#: Names :data:`SECRET_PARAM` takes for secrets that are settings of a tokenizer.
NOT_SECRET_PARAM = re.compile(r"^(eod|eos|bos|pad|unk|sep|cls|mask|eot|start|end|special)"
                              r"_token$", re.IGNORECASE)
#: Keys whose values are secrets inside ``storage_options`` (fsspec: s3fs ``key``/``secret``/
#: ``token``, HTTP ``headers: {Authorization: ...}``), where names are the backend's.
SECRET_OPTION = re.compile(r"key|secret|token|passw|auth|credential|session|cookie",
                           re.IGNORECASE)
#: URL query parameters whose values are secrets (pre-signed S3/GCS/Azure URLs, API keys).
SECRET_QUERY = re.compile(r"^(.*[_-])?(passw(or)?d|secret|token|key|api_?key|access_?key|"
                          r"credentials?|signature|sig|x-amz-signature|x-amz-credential|"
                          r"x-amz-security-token|x-goog-signature|x-goog-credential|"
                          r"auth(orization)?)$", re.IGNORECASE)
#: ``scheme://userinfo@``: the user-info part of a URL (RFC 3986), anywhere in a text.
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)"
                       r"(?P<user>[^/?#@\s:'\"]*)(?P<pw>:[^/?#@\s'\"]*)?@")
#: ``?name=value`` / ``&name=value`` query parameters.
_QUERY = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.-]+)=)(?P<value>[^&;#\s'\"]+)")
#: shortest environment value treated as a secret (shorter ones would mask common words)
MIN_SECRET_LEN = 6


#: What a secret becomes: :data:`MASK` for what is shown, a keyed digest in fingerprints.
Masker = Callable[[str], str]


def _masked(_secret: str) -> str:
    return MASK


def _userinfo(m: re.Match[str], mask: Masker = _masked) -> str:
    if m["pw"] is not None:  # user:password@ -> user:***@ (the user helps to debug)
        return f"{m['scheme']}{m['user']}:{mask(m['pw'][1:])}@"
    return f"{m['scheme']}{mask(m['user'])}@" if m["user"] else m[0]  # token@ -> ***@


def _query(m: re.Match[str], mask: Masker = _masked) -> str:
    return f"{m['head']}{mask(m['value'])}" if SECRET_QUERY.match(m["name"]) else m[0]


@functools.lru_cache(maxsize=1024)
def _secret_name(name: str) -> bool:
    return SECRET_ENV.search(name) is not None


def env_secrets() -> list[str]:
    """Values of this process's environment variables named like secrets, longest first."""
    vals = {v for k, v in os.environ.items() if len(v) >= MIN_SECRET_LEN and _secret_name(k)}
    return sorted(vals, key=len, reverse=True)


@functools.lru_cache(maxsize=1)
def _process_secrets() -> tuple[str, ...]:
    return tuple(env_secrets())


@functools.lru_cache(maxsize=4096)
def redact_fast(text: str) -> str:
    """:func:`redact` for a worker's hot path (a rejected document's reason): the environment
    is read once per process and results are cached, a few hundred ns a call."""
    text = redact_url(text)
    for v in _process_secrets():
        if v in text:
            text = text.replace(v, MASK)
    return text


def redact_url(text: str, mask: Masker | None = None) -> str:
    """``text`` with the credentials of every URL in it masked (the same everywhere), or
    replaced by ``mask(secret)`` (a keyed digest, see :func:`keyed_digest`)."""
    if "://" in text:
        text = _USERINFO.sub(_userinfo if mask is None else functools.partial(
            _userinfo, mask=mask), text)
    if "=" in text:
        text = _QUERY.sub(_query if mask is None else functools.partial(_query, mask=mask),
                          text)
    return text


def keyed_digest(key: bytes) -> Masker:
    """A :data:`Masker` for fingerprints: ``hmac:<16 hex>``, an HMAC-SHA256 of the secret under
    ``key`` (the work_dir's own, see :mod:`curator.core.identity`). Unreadable without the key,
    yet two different secrets never share a value, so changing one reruns what used it."""

    def mask(secret: str) -> str:
        return "hmac:" + hmac.new(key, secret.encode("utf-8", "surrogatepass"),
                                  hashlib.sha256).hexdigest()[:16]

    return mask


def redact(text: str) -> str:
    """``text`` as curator may show or store it: URL credentials and the values of secret-named
    environment variables masked."""
    text = redact_url(text)
    for v in env_secrets():
        if v in text:
            text = text.replace(v, MASK)
    return text


def redact_value(obj: Any, *, env: bool = False, mask: Masker | None = None, names: bool = True,
                 _options: bool = False, _all: bool = False) -> Any:
    """``obj`` (parameters, a report) with every string passed through :func:`redact_url`
    (:func:`redact` with ``env``; dict keys, which may be URLs, always through
    :func:`redact_url`) and the values of secret-named keys masked (under ``storage_options``,
    of any key naming a key, token, secret, password or auth header): strings and numbers
    (YAML reads ``password: 12345678`` as an int), and everything inside a mapping or list
    held by such a key (``token: {refresh: ...}``). ``mask``: what each secret becomes
    instead of :data:`MASK` (fingerprints: :func:`keyed_digest`), except under
    ``storage_options``: credentials that only reach files, not what a stage computes.
    ``names=False``: text only, no key's value masked for its name (counts keyed by stage id,
    where a stage ``my_password`` is no secret)."""
    if _all and isinstance(obj, str | int | float) and not isinstance(obj, bool) and obj != "":
        return MASK if mask is None else mask(f"{type(obj).__name__}:{obj}")
    if isinstance(obj, str):
        return redact(obj) if env else redact_url(obj, mask)
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            name = k if isinstance(k, str) else ""
            secret = _all or (names and bool((SECRET_PARAM.match(name)
                                             and not NOT_SECRET_PARAM.match(name))
                                            or (_options and SECRET_OPTION.search(name))))
            options = name == "storage_options"
            # credentials that only reach the files (whose own identity is keyed apart):
            # masked even in fingerprints, so rotating them reruns nothing
            out[redact_url(k, mask) if isinstance(k, str) else k] = redact_value(
                v, env=env, mask=None if options else mask, names=names,
                _options=_options or options, _all=secret)
        return out
    if isinstance(obj, list | tuple):
        return type(obj)(redact_value(v, env=env, mask=mask, names=names, _options=_options,
                                      _all=_all) for v in obj)
    return obj
