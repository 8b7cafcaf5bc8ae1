"""``pii_redact``: replace e-mail addresses, IP addresses, phone numbers, payment card numbers
and IBANs with tokens (``<EMAIL>``...), counting each kind.

Every kind is found by a regular expression and then *validated*, because on web text and code
the expressions alone match far too much (version numbers, slices, hashes, dates, ids):

* ``email``: local part ``@`` host with a plausible top-level domain (a country code or a
  common generic one), so ``x@self.weights`` in code is not an address.
* ``ipv4`` / ``ipv6``: parsed with :mod:`ipaddress`; with ``public_ips_only`` (default) private,
  loopback, link-local, documentation and reserved addresses are kept (they identify nobody:
  ``127.0.0.1``, ``192.168.0.1``, ``::1``, slices such as ``a[1::2]``). A dotted quad preceded
  by "version", "v", "release", "python"... is a version number, as is one that is part of a
  longer dotted run (``1.3.6.1.4.1``).
* ``phone``: an international number (``+``), a bracketed area code, a North American
  ``555-123-4567`` or a trunk-prefixed national number (``030 1234 5678``), 7-15 digits, never
  a date (``01.02.2024``, ``2024-02-20``); optionally validated by the ``phonenumbers``
  package (Google's libphonenumber data, shipped in the wheel).
* ``credit_card``: 13-19 digits in one run or in groups of one separator kind, a known issuer
  prefix and a valid Luhn check digit (so a random 16-digit id passes with probability < 10%).
* ``iban``: a country code with its registered length and a valid ISO 7064 mod-97 checksum.

Each document is scanned once per kind, and only for the kinds whose cheap marker is present
(``@`` for e-mail, ``:`` for IPv6, a digit for the rest).

An optional ``backend: presidio`` uses Microsoft Presidio's pattern recognizers instead
(``pip install presidio-analyzer``; no spaCy model is needed because only the pattern
recognizers run; the public-suffix list of ``tldextract`` is read from the copy in its wheel,
never fetched).
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Literal

from curator.core.context import ShardContext
from curator.core.document import Document
from curator.core.errors import ConfigError
from curator.core.stage import ShardStage

Kind = Literal["email", "ipv4", "ipv6", "phone", "credit_card", "iban"]
KINDS: tuple[str, ...] = ("email", "iban", "credit_card", "ipv6", "ipv4", "phone")
DEFAULT_TOKENS: dict[str, str] = {
    "email": "<EMAIL>", "ipv4": "<IP_ADDRESS>", "ipv6": "<IP_ADDRESS>", "phone": "<PHONE>",
    "credit_card": "<CREDIT_CARD>", "iban": "<IBAN>",
}

# -- e-mail --------------------------------------------------------------------------------

#: Generic top-level domains accepted besides the two-letter country codes.
GENERIC_TLDS = frozenset("""
com org net edu gov mil int info biz name pro aero coop museum mobi asia tel travel jobs cat
xxx post app dev io ai co me tv cc ly fm gg sh to ws online site website store shop tech blog
news email club space live life world today cloud digital agency media solutions services
network systems company group global center academy xyz top win vip link click page art design
studio social works tools team zone expert guru ninja software host""".split())

_EMAIL_HOST = re.compile(r"@((?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+"
                         r"([A-Za-z]{2,24}))(?![\w\-@])")
_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
_LOCAL_EDGE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def email_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, top-level domain) of each address: found from its ``@`` (a fast ``find``)
    outwards, not by trying an expression at every character."""
    find, host = text.find, _EMAIL_HOST.match
    i = find("@")
    while i != -1:
        m = host(text, i)
        if m is not None:
            a = i
            while a > 0 and i - a < 64 and text[a - 1] in _LOCAL_CHARS:
                a -= 1
            if not (a > 0 and text[a - 1] in _LOCAL_CHARS):  # not longer than 64
                while a < i and text[a] not in _LOCAL_EDGE:
                    a += 1  # a local part starts with a letter or digit
                if a < i and (a == 0 or not text[a - 1].isalnum()):
                    yield a, m.end(), m.group(2)
                    i = find("@", m.end())
                    continue
        i = find("@", i + 1)


# -- IP addresses --------------------------------------------------------------------------

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
# (each expression starts with a character class and checks what precedes it afterwards:
# that lets the regex engine skip ahead to candidate characters, 4-6x faster than a leading
# look-behind)
_IPV4 = re.compile(r"[0-9](?<![\w.\-][0-9])\d{0,2}(?:\.\d{1,3}){3}(?![\w\-]|\.\w)"
                   r"(/\d{1,2})?")
_VERSION_BEFORE = re.compile(
    r"(?:\bv|\bversion|\bver\.?|\brelease|\brev\.?|\bpython|\bbuild|\bupdate|\bpatch|\bkernel"
    r"|\bfirmware|\bios|\bchrome|\bfirefox|\bopenssl|\bnode|\bupgrade|\bbump"
    r"|=|==|>=|<=|~=|\d:|\d\s+(?:to|->))\s*[:=]?\s*$",
    re.IGNORECASE)
_VERSION_AFTER = re.compile(r"^(?:(?:-|\+|~)?(?:rc|alpha|beta|dev|post|final|a\d|b\d)"
                            r"|\s*(?:to|->|→)\s*\d)",
                            re.IGNORECASE)
_IPV6 = re.compile(r"[0-9A-Fa-f:](?<![\w:.][0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,3})"
                   r"(?::[0-9A-Fa-f]{0,4}){2,7}"
                   r"(?:(?<=:)" + _OCTET + r"(?:\." + _OCTET + r"){3})?(?![\w:])(/\d{1,3})?")

# -- payment cards -------------------------------------------------------------------------

_CARD = re.compile(r"[0-9](?<![\w.\-+/][0-9])\d{3}(?:([ \-]?)\d{2,6}(?:\1\d{1,6}){0,3})"
                   r"(?![\w\-]|\.\d)")
#: Issuer identification prefixes (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay,
#: Maestro) with their lengths.
_CARD_PREFIX = re.compile(
    r"^(?:4\d{12}(?:\d{3}){0,2}"  # Visa 13/16/19
    r"|(?:5[1-5]\d{2}|222[1-9]|22[3-9]\d|2[3-6]\d{2}|27[01]\d|2720)\d{12}"  # Mastercard
    r"|3[47]\d{13}"  # Amex
    r"|(?:6011|65\d{2}|64[4-9]\d)\d{12,15}"  # Discover
    r"|35(?:2[89]|[3-8]\d)\d{12,15}"  # JCB
    r"|3(?:0[0-5]|[68]\d)\d{11,16}"  # Diners
    r"|62\d{14,17}"  # UnionPay
    r"|(?:50|5[6-9]|6[0-9])\d{10,17})$")  # Maestro


def luhn_ok(digits: str) -> bool:
    """True if ``digits`` has a valid Luhn (mod 10) check digit."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i & 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


# -- IBAN ----------------------------------------------------------------------------------

#: IBAN length per country (SWIFT IBAN registry).
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32,
    "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
    "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
    "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
    "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}
_IBAN = re.compile(r"[A-Z](?<![\w\-][A-Z])([A-Z])(\d{2})"
                   r"((?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?)(?![\w\-])")


def iban_ok(compact: str) -> bool:
    """True if ``compact`` (no spaces) has its country's length and a valid mod-97 checksum."""
    if IBAN_LENGTHS.get(compact[:2]) != len(compact):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# -- phone numbers -------------------------------------------------------------------------

_PHONE = re.compile(
    r"[+(0-9](?<![\w+.\-/=#(~][+(0-9])(?:"  # the first character, then by what it was:
    r"(?<=\+)\d{1,3}(?:[ .\-]?\(\d{1,4}\))?(?:[ .\-]?\d{1,5}){1,6}"  # +49 30 1234567
    r"|(?<=\()\d{2,5}\)[ .\-]?\d{2,4}(?:[ .\-]?\d{2,4}){1,3}"  # (415) 555-2671, (030) 12 34
    r"|(?<=\d)\d{2}[.\-]\d{3}[.\-]\d{4}"  # 415-555-2671
    r"|(?<=0)\d{1,4}[ /.\-]\d{2,4}(?:[ .\-]\d{2,4}){1,3}"  # 030 1234 5678, 020 7946 0958
    r")(?![\w\-+]|[.,]\d)")
_DATE = re.compile(r"^(?:\d{4}[./\-]\d{1,2}[./\-]\d{1,2}|\d{1,2}[./\-]\d{1,2}[./\-]\d{2,4})$")
_PHONE_BEFORE = re.compile(r"(?:isbn|issn|doi|id|no\.|#|pmid|arxiv|version|v)\s*[:=]?\s*$",
                           re.IGNORECASE)
_NON_DIGIT = re.compile(r"\D")
_ZERO_LIST = re.compile(r"^0\d+[ .\-/]0")
_DECIMAL = re.compile(r"^[+\-]?\d+[.,]\d+$")  # +3.140000: a signed decimal
_IP_CUE = re.compile(r"(?:\bip|address|addr|host|server|dns|gateway|from|ping|proxy|client)"
                     r"\W{0,3}$", re.IGNORECASE)


def _regex_spans(rx: re.Pattern[str], valid: Callable[[re.Match[str]], bool]
                 ) -> Callable[[str], Iterator[tuple[int, int]]]:
    def spans(text: str) -> Iterator[tuple[int, int]]:
        for m in rx.finditer(text):
            if valid(m):
                yield m.start(), m.end()
    return spans


def _replace(text: str, spans: list[tuple[int, int]], token: str) -> str:
    out, pos = [], 0
    for a, b in spans:
        out += [text[pos:a], token]
        pos = b
    out.append(text[pos:])
    return "".join(out)


def _has_digit(text: str) -> bool:
    return any(c in text for c in "0123456789")


class PiiRedactor:
    """The detection and replacement logic of ``pii_redact``, usable on its own::

        r = PiiRedactor()
        text, counts = r.redact("write to jane@example.org")  # '<EMAIL>', {'email': 1}
    """

    def __init__(self, kinds: list[str] | None = None, tokens: dict[str, str] | None = None,
                 public_ips_only: bool = True, phone_validation: str = "regex",
                 phone_regions: list[str] | None = None) -> None:
        kinds = list(kinds) if kinds else list(KINDS)
        bad = sorted(set(kinds) - set(KINDS))
        if bad:
            raise ConfigError(f"pii_redact.kinds: unknown kind(s) {bad}; kinds are "
                              f"{', '.join(KINDS)}")
        bad = sorted(set(tokens or {}) - set(KINDS))
        if bad:
            raise ConfigError(f"pii_redact.tokens: unknown kind(s) {bad}")
        self.tokens = {**DEFAULT_TOKENS, **(tokens or {})}
        self.public_ips_only = public_ips_only
        self.phone_regions = [r.upper() for r in (phone_regions or ["US"])]
        self._pn: Any = None
        if phone_validation == "phonenumbers":
            try:
                import phonenumbers
            except ImportError:
                raise ConfigError("pii_redact.phone_validation: 'phonenumbers' needs the "
                                  "phonenumbers package (pip install phonenumbers)") from None
            self._pn = phonenumbers
        finders: dict[str, tuple[Callable[[str], Iterator[tuple[int, int]]],
                                 Callable[[str], bool]]] = {
            "email": (self._emails, lambda t: "@" in t),
            "ipv4": (_regex_spans(_IPV4, self._ipv4_ok), _has_digit),
            "ipv6": (_regex_spans(_IPV6, self._ipv6_ok), lambda t: "::" in t or t.count(":") >= 7),
            "phone": (_regex_spans(_PHONE, self._phone_ok), _has_digit),
            "credit_card": (_regex_spans(_CARD, self._card_ok), _has_digit),
            "iban": (_regex_spans(_IBAN, self._iban_ok), _has_digit),
        }
        # fixed order: e-mails first (their digits are not phones), cards before phones
        self.scanners = [(k, self.tokens[k], *finders[k]) for k in KINDS if k in kinds]

    def find(self, text: str) -> dict[str, list[tuple[int, int]]]:
        """Spans of each kind in ``text`` as it is (kinds may overlap; ``redact`` resolves
        that by replacing kind after kind)."""
        return {k: list(spans(text)) for k, _, spans, marker in self.scanners if marker(text)}

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """``text`` with every found item replaced by its kind's token, and counts per kind."""
        counts: dict[str, int] = {}
        for kind, token, spans, marker in self.scanners:
            if marker(text):
                found = list(spans(text))
                if found:
                    text = _replace(text, found, token)
                    counts[kind] = len(found)
        return text, counts

    # -- validators (a match of an expression is only a candidate) ---------------------------
    @staticmethod
    def _emails(text: str) -> Iterator[tuple[int, int]]:
        for a, b, tld in email_spans(text):
            if len(tld) == 2 or tld.lower() in GENERIC_TLDS:
                yield a, b

    def _ip_public(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return ip.is_global and not ip.is_multicast if self.public_ips_only else True

    def _ipv4_ok(self, m: re.Match[str]) -> bool:
        s = m.string
        text = m.group(0).split("/")[0]
        try:
            ip = ipaddress.IPv4Address(text)
        except ValueError:
            return False
        if m.group(1) and int(m.group(1)[1:]) < 32:
            return False  # a network (CIDR prefix), not one host
        before = s[max(0, m.start() - 24):m.start()]
        if _VERSION_BEFORE.search(before) or _VERSION_AFTER.match(s[m.end():m.end() + 8]):
            return False
        if max(ip.packed[:3]) < 32 and not _IP_CUE.search(before):
            return False  # 2.7.2.2, 13.2.5.33: section or version numbers, unless called IPs
        return self._ip_public(ip)

    def _ipv6_ok(self, m: re.Match[str]) -> bool:
        text = m.group(0).split("/")[0]
        if len(text) < 6 or sum(c.isdigit() for c in text) < 2:
            return False
        if m.group(1) and int(m.group(1)[1:]) < 64:
            return False  # a network prefix
        try:
            ip = ipaddress.IPv6Address(text)
        except ValueError:
            return False
        return self._ip_public(ip)

    def _phone_ok(self, m: re.Match[str]) -> bool:
        text = m.group(0)
        digits = _NON_DIGIT.sub("", text)
        if not 7 <= len(digits) <= 15 or _DATE.match(text) or _DECIMAL.match(text):
            return False
        if max(map(digits.count, set(digits))) > 0.6 * len(digits):
            return False  # 000-000-0000, +000000120
        if _ZERO_LIST.match(text):
            return False  # 012 013 023 123: zero-padded numbers in a row
        s = m.string
        if _PHONE_BEFORE.search(s[max(0, m.start() - 12):m.start()]):
            return False
        return self._pn_valid(text) if self._pn is not None else True

    def _pn_valid(self, text: str) -> bool:
        pn = self._pn
        regions = [None] if text.startswith("+") else self.phone_regions
        for region in regions:
            try:
                num = pn.parse(text, region)
            except pn.NumberParseException:
                continue
            if pn.is_valid_number(num):
                return True
        return False

    @staticmethod
    def _card_ok(m: re.Match[str]) -> bool:
        digits = _NON_DIGIT.sub("", m.group(0))
        return 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) is not None \
            and luhn_ok(digits)

    @staticmethod
    def _iban_ok(m: re.Match[str]) -> bool:
        return iban_ok(m.group(0).replace(" ", ""))


class PresidioRedactor:
    """The same interface over Microsoft Presidio's pattern recognizers (no NLP model)."""

    ENTITIES = {"email": "EMAIL_ADDRESS", "ipv4": "IP_ADDRESS", "ipv6": "IP_ADDRESS",
                "phone": "PHONE_NUMBER", "credit_card": "CREDIT_CARD", "iban": "IBAN_CODE"}

    def __init__(self, kinds: list[str] | None = None, tokens: dict[str, str] | None = None,
                 min_score: float = 0.5) -> None:
        try:
            import tldextract
            from presidio_analyzer.predefined_recognizers import (
                CreditCardRecognizer,
                EmailRecognizer,
                IbanRecognizer,
                IpRecognizer,
                PhoneRecognizer,
            )
        except ImportError:
            raise ConfigError("pii_redact.backend: 'presidio' needs presidio-analyzer "
                              "(pip install presidio-analyzer)") from None
        import presidio_analyzer.predefined_recognizers.generic.email_recognizer as em

        # tldextract would fetch the public suffix list from the internet on first use; use
        # the snapshot in its wheel instead
        class _Offline:
            extract = staticmethod(tldextract.TLDExtract(suffix_list_urls=(),
                                                         cache_dir=None))

        em.tldextract = _Offline  # type: ignore[assignment]
        self.kinds = list(kinds) if kinds else list(KINDS)
        self.tokens = {**DEFAULT_TOKENS, **(tokens or {})}
        self.min_score = min_score
        wanted = {self.ENTITIES[k] for k in self.kinds}
        self.recognizers = [r() for r, e in (
            (EmailRecognizer, "EMAIL_ADDRESS"), (IpRecognizer, "IP_ADDRESS"),
            (PhoneRecognizer, "PHONE_NUMBER"), (CreditCardRecognizer, "CREDIT_CARD"),
            (IbanRecognizer, "IBAN_CODE")) if e in wanted]

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        spans: list[tuple[int, int, str]] = []
        for r in self.recognizers:
            for res in r.analyze(text, r.supported_entities, None):
                if res.score < self.min_score:
                    continue
                kind = _presidio_kind(res.entity_type, text[res.start:res.end])
                if kind in self.kinds:
                    spans.append((res.start, res.end, kind))
        spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        out, counts, pos = [], Counter(), 0
        for a, b, kind in spans:
            if a < pos:
                continue  # overlaps an earlier, longer span
            out += [text[pos:a], self.tokens[kind]]
            counts[kind] += 1
            pos = b
        out.append(text[pos:])
        return "".join(out), dict(counts)


def _presidio_kind(entity: str, value: str) -> str:
    if entity == "IP_ADDRESS":
        return "ipv6" if ":" in value else "ipv4"
    return {v: k for k, v in PresidioRedactor.ENTITIES.items() if k != "ipv6"}[entity]


class PiiRedact(ShardStage):
    """Replace e-mails, IPs, phone numbers, card numbers (Luhn) and IBANs (mod 97) with
    tokens; counts per kind in the report."""

    name = "pii_redact"

    def __init__(self, kinds: list[Kind] = list(KINDS),  # noqa: B006
                 tokens: dict[str, str] = {},  # noqa: B006
                 public_ips_only: bool = True,
                 phone_validation: Literal["regex", "phonenumbers"] = "regex",
                 phone_regions: list[str] = ["US"],  # noqa: B006
                 backend: Literal["regex", "presidio"] = "regex",
                 min_score: float = 0.5,
                 meta_field: str | None = "pii") -> None:
        self.kinds, self.tokens = list(kinds), dict(tokens)
        self.public_ips_only = public_ips_only
        self.phone_validation, self.phone_regions = phone_validation, list(phone_regions)
        self.backend, self.min_score, self.meta_field = backend, min_score, meta_field
        self._cache_redactor = self._make()  # validates the parameters now, before any run

    def _make(self) -> PiiRedactor | PresidioRedactor:
        if self.backend == "presidio":
            return PresidioRedactor(self.kinds, self.tokens, self.min_score)
        return PiiRedactor(self.kinds, self.tokens, self.public_ips_only,
                           self.phone_validation, self.phone_regions)

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        red = getattr(self, "_cache_redactor", None) or self._make()
        self._cache_redactor = red
        redact, field = red.redact, self.meta_field
        for doc in docs:
            text, counts = redact(doc.text)
            if counts:
                doc.text = text
                ctx.count("pii:documents")
                for k, n in counts.items():
                    ctx.count(f"pii:{k}", n)
                if field:
                    doc.meta[field] = counts
            yield doc
