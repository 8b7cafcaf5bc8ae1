"""``pii_redact``: replace e-mail addresses, IP addresses, phone numbers, payment card numbers
and IBANs with tokens (``<EMAIL>``...), counting each kind.

Every kind is found by a regular expression and then *validated*, because on web text and code
the expressions alone match far too much (version numbers, slices, hashes, dates, ids):

* ``email``: local part ``@`` host with a plausible top-level domain (a country code or a
  common generic one), so ``x@self.weights`` in code is not an address. Words glued on by a
  missing space are cut off (``jane@example.com.Thanks``, ``jane@example.com.It's``: a
  capitalised label after a lower-case host is the next sentence); ``git@github.com:org/x``
  is an SSH host, not a mailbox.
* ``ipv4`` / ``ipv6``: parsed with :mod:`ipaddress`; with ``public_ips_only`` (default) private,
  loopback, link-local, documentation and reserved addresses are kept (they identify nobody:
  ``127.0.0.1``, ``192.168.0.1``, ``::1``, slices such as ``a[1::2]``). A dotted quad preceded
  by "version", "v", "release", "python"... is a version number, as is one that is part of a
  longer dotted run (``1.3.6.1.4.1``).
* ``phone``: an international number (``+``), a bracketed area code, a North American
  ``555-123-4567`` or a trunk-prefixed national number (``030 1234 5678``, ``0151 23456789``),
  7-15 digits, never a date (``01.02.2024``, ``2024-02-20``), a citation (``vol 12 (2020)
  123-456``: a bracketed year, or "vol", "pp.", "et al." before it), a Cisco MAC
  (``0011.2233.4455``) or a slice of a longer run of numbers; optionally validated by the
  ``phonenumbers`` package (Google's libphonenumber data, shipped in the wheel).
* ``credit_card``: 13-19 digits in one run or in groups of one separator kind, a known issuer
  prefix and a valid Luhn check digit (``stdnum.luhn``; a random 16-digit id passes with
  probability < 10%).
* ``iban``: valid by ``stdnum.iban`` (python-stdnum, the ``pii`` extra): the country's
  registered length and BBAN format and the ISO 7064 mod-97 checksum.

Full-width forms (``０３-１２３４-５６７８``, ``＋８１``) and the digits of other scripts are
read as ASCII while searching (one character for one, so the spans are those of the text).
An IPv6 candidate shaped like a MAC address (six or eight 2-digit groups) is not an address.
Quality on the labelled set ``tests/filters/data/pii_labelled.txt`` (253 snippets, 165 items
in 155 snippets, 98 snippets of look-alikes) is in docs/filters.md.

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

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.core.context import ShardContext
from curator.core.params import Ratio, StageParams
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


def _tld_ok(tld: str) -> bool:
    return len(tld) == 2 or tld.lower() in GENERIC_TLDS


def _host_end(text: str, m: re.Match[str]) -> tuple[int, str] | None:
    """End and top-level domain of the address host matched by ``m``, after dropping labels
    glued on by a missing space: ``jane@example.com.Thanks`` (no TLD "Thanks"),
    ``jane@example.com.It's`` ("It" is Italy's code, but a capitalised word after a lower-case
    host is the next sentence). ``None`` when no ending is a plausible host."""
    end, tld = m.end(), m.group(2)
    if text.startswith(":", end) and "/" in text[end:end + 80].split(" ", 1)[0]:
        return None  # git@github.com:org/repo.git: an SSH user and host, not a mailbox
    if not (tld[0].isupper() and not tld.isupper()) and _tld_ok(tld):
        return end, tld  # the common case: a lower-case (or all upper-case) known TLD
    labels = m.group(1).split(".")
    while len(labels) >= 2:
        tld = labels[-1]
        glued = len(labels) >= 3 and tld[:1].isupper() and not tld.isupper() \
            and not any(c.isupper() for c in labels[-2]) and _tld_ok(labels[-2])
        if _tld_ok(tld) and not glued:
            return end, tld
        end -= len(tld) + 1
        labels.pop()
    return None


def email_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, top-level domain) of each address: found from its ``@`` (a fast ``find``)
    outwards, not by trying an expression at every character."""
    find, host = text.find, _EMAIL_HOST.match
    i = find("@")
    while i != -1:
        m = host(text, i)
        found = _host_end(text, m) if m is not None else None
        if m is not None and found is not None:
            a = i
            while a > 0 and i - a < 64 and text[a - 1] in _LOCAL_CHARS:
                a -= 1
            if not (a > 0 and text[a - 1] in _LOCAL_CHARS):  # not longer than 64
                while a < i and text[a] not in _LOCAL_EDGE:
                    a += 1  # a local part starts with a letter or digit
                if a < i and (a == 0 or not text[a - 1].isalnum()):
                    yield a, found[0], found[1]
                    i = find("@", found[0])
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


def _stdnum() -> Any:
    """python-stdnum (the ``pii`` extra): the registry formats of IBANs and the Luhn check,
    maintained upstream instead of by hand here."""
    try:
        import stdnum.iban
        import stdnum.luhn
    except ImportError:
        raise ConfigError("pii_redact: card and IBAN checks need python-stdnum: "
                          "pip install 'curator-pipeline[pii]'") from None
    return stdnum


def luhn_ok(digits: str) -> bool:
    """True if ``digits`` has a valid Luhn (mod 10) check digit (``stdnum.luhn``)."""
    return bool(_stdnum().luhn.is_valid(digits))


# -- IBAN ----------------------------------------------------------------------------------

_IBAN = re.compile(r"[A-Z](?<![\w\-][A-Z])([A-Z])(\d{2})"
                   r"((?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?)(?![\w\-])")


def iban_ok(compact: str) -> bool:
    """True if ``compact`` (no spaces) is a valid IBAN: its country's registered length and
    BBAN format, and the ISO 7064 mod-97 checksum (``stdnum.iban``)."""
    return bool(_stdnum().iban.is_valid(compact))


# -- phone numbers -------------------------------------------------------------------------

_PHONE = re.compile(
    r"[+(0-9](?<![\w+.\-/=#(~][+(0-9])(?:"  # the first character, then by what it was:
    r"(?<=\+)\d{1,3}(?:[ .\-]?\(\d{1,4}\))?(?:[ .\-]?\d{1,5}){1,6}"  # +49 30 1234567
    r"|(?<=\()\d{2,5}\)[ .\-]?\d{2,4}(?:[ .\-]?\d{2,4}){1,3}"  # (415) 555-2671, (030) 12 34
    r"|(?<=\d)\d{2}[.\-]\d{3}[.\-]\d{4}"  # 415-555-2671
    r"|(?<=0)\d{1,4}[ /.\-]\d{2,4}(?:[ .\-]\d{2,4}){1,3}"  # 030 1234 5678, 020 7946 0958
    r"|(?<=0)\d{2,4}[ /\-]\d{6,8}"  # 0151 23456789, 07700 900461: area or mobile prefix
    r")(?![\w\-+]|[.,]\d)")
_DATE = re.compile(r"^(?:\d{4}[./\-]\d{1,2}[./\-]\d{1,2}|\d{1,2}[./\-]\d{1,2}[./\-]\d{2,4})$")
_PHONE_BEFORE = re.compile(r"(?:\b(?:isbn|issn|doi|id|no\.|pmid|arxiv|version|v|vol\.?|pp?\.?"
                           r"|et al\.?|volume|issue|pages)|#)\s*[:=]?\s*$", re.IGNORECASE)
#: A bracketed year: ``(2020) 123-456`` is a citation (year, pages), not an area code.
_YEAR_BRACKET = re.compile(r"^\((?:1[89]|20)\d\d\)")
#: Dotted 4-hex groups: a Cisco-style MAC address (``0011.2233.4455``).
_MAC_DOTS = re.compile(r"^[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}$")
#: More digit groups right before or after: a longer run of numbers (lottery draws,
#: tables), of which the candidate is only a slice.
_MORE_BEFORE = re.compile(r"\d[ .\-]$")
_MORE_AFTER = re.compile(r"^[ .\-]\d")
_NON_DIGIT = re.compile(r"\D")
_ZERO_LIST = re.compile(r"^0\d+[ .\-/]0")
_DECIMAL = re.compile(r"^[+\-]?\d+[.,]\d+$")  # +3.140000: a signed decimal
_IP_CUE = re.compile(r"(?:\bip|address|addr|host|server|dns|gateway|from|ping|proxy|client)"
                     r"(?:\s+(?:to|at|is|of|on|via|as))?\W{0,3}$", re.IGNORECASE)
_IP_CUE_AFTER = re.compile(r"^\W{0,3}(?:is|as)?\W{0,3}(?:\w+'s\s+)?(?:ip|dns|resolver|server|"
                           r"gateway|host|address)\b", re.IGNORECASE)


def _regex_spans(rx: re.Pattern[str], valid: Callable[[re.Match[str]], bool]
                 ) -> Callable[[str], Iterator[tuple[int, int]]]:
    def spans(text: str) -> Iterator[tuple[int, int]]:
        for m in rx.finditer(text):
            if valid(m):
                yield m.start(), m.end()
    return spans


#: Characters read as their ASCII forms while searching (one character for one, so offsets
#: stay): full-width forms (``０３-１２３４``, ``＋８１``, ``＠``), the ideographic space, and the
#: decimal digits of other scripts (Arabic-Indic, Persian, Devanagari, Bengali, Thai).
_FOLD = {**{0xFF01 + i: 0x21 + i for i in range(0x5E)}, 0x3000: 0x20,
         **{base + i: 0x30 + i for base in (0x660, 0x6F0, 0x966, 0x9E6, 0xE50) for i in range(10)}}


_FOLDABLE = re.compile("[\uff01-\uff5e\u3000\u0660-\u0669\u06f0-\u06f9\u0966-\u096f"
                       "\u09e6-\u09ef\u0e50-\u0e59]+")  # the keys of _FOLD, as ranges


def fold(text: str) -> str:
    """``text`` with :data:`_FOLD` applied (same length); text without such characters (ASCII,
    most of any language) is returned as is, found by one C-level search."""
    if text.isascii() or _FOLDABLE.search(text) is None:
        return text
    return _FOLDABLE.sub(lambda m: m.group().translate(_FOLD), text)  # only the runs


#: Stands in for an item already found while later kinds are searched: not a word, digit or
#: separator character, so nothing is found across it (as with the token it becomes).
_MASK = "\x00"


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
        if {"iban", "credit_card"} & set(kinds):
            _stdnum()  # fails now, with the fix, if the extra is missing
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
        """Spans of each kind in ``text`` as it is (kinds may overlap; :meth:`spans` resolves
        that kind after kind)."""
        t = fold(text)
        return {k: list(spans(t)) for k, _, spans, marker in self.scanners if marker(t)}

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, kind)`` of every item, sorted, none overlapping: kind after kind in
        the fixed order, each searched with the items found before masked out."""
        t = fold(text)
        found: list[tuple[int, int, str]] = []
        for kind, _, spans, marker in self.scanners:
            if marker(t):
                new = [(a, b, kind) for a, b in spans(t)]
                if new:
                    found += new
                    parts, pos = [], 0
                    for a, b, _ in new:
                        parts += [t[pos:a], _MASK * (b - a)]
                        pos = b
                    parts.append(t[pos:])
                    t = "".join(parts)
        return sorted(found)

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """``text`` with every found item replaced by its kind's token, and counts per kind."""
        found = self.spans(text)
        if not found:
            return text, {}
        out, pos, counts = [], 0, Counter()
        for a, b, kind in found:
            out += [text[pos:a], self.tokens[kind]]
            counts[kind] += 1
            pos = b
        out.append(text[pos:])
        return "".join(out), dict(counts)

    # -- validators (a match of an expression is only a candidate) ---------------------------
    @staticmethod
    def _emails(text: str) -> Iterator[tuple[int, int]]:
        for a, b, _ in email_spans(text):
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
        cue = _IP_CUE.search(before) is not None or \
            _IP_CUE_AFTER.match(s[m.end():m.end() + 40]) is not None
        if _VERSION_AFTER.match(s[m.end():m.end() + 8]) or (
                _VERSION_BEFORE.search(before) and not _IP_CUE.search(before)):
            return False
        if max(ip.packed[:3]) < 32 and not cue:
            return False  # 2.7.2.2, 13.2.5.33: section or version numbers, unless called IPs
        return self._ip_public(ip)

    def _ipv6_ok(self, m: re.Match[str]) -> bool:
        text = m.group(0).split("/")[0]
        if len(text) < 6 or sum(c.isdigit() for c in text) < 2:
            return False
        if m.group(1) and int(m.group(1)[1:]) < 64:
            return False  # a network prefix
        groups = text.split(":")
        if "" not in groups and len(groups) in (6, 8) and all(len(g) == 2 for g in groups):
            return False  # 00:1a:2b:3c:4d:5e:6f:70: a MAC (EUI-48/64), not an address
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
        if _YEAR_BRACKET.match(text) or _MAC_DOTS.match(text):
            return False
        if not text.startswith("+") and (_MORE_BEFORE.search(s[max(0, m.start() - 2):m.start()])
                                         or _MORE_AFTER.match(s[m.end():m.end() + 2])):
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

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, kind)`` of every item, sorted; of overlapping ones the longer."""
        spans: list[tuple[int, int, str]] = []
        for r in self.recognizers:
            for res in r.analyze(text, r.supported_entities, None):
                if res.score < self.min_score:
                    continue
                kind = _presidio_kind(res.entity_type, text[res.start:res.end])
                if kind in self.kinds:
                    spans.append((res.start, res.end, kind))
        spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        out, pos = [], 0
        for a, b, kind in spans:
            if a >= pos:  # else it overlaps an earlier, longer span
                out.append((a, b, kind))
                pos = b
        return out

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        out, counts, pos = [], Counter(), 0
        for a, b, kind in self.spans(text):
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

    class Params(StageParams):
        kinds: list[Kind] = list(KINDS)
        """Which kinds to redact (default: all six)."""
        tokens: dict[str, str] = {}
        """Replacement per kind, for those you change (``{email: "[email]"}``)."""
        public_ips_only: bool = True
        """Keep private, loopback, link-local, documentation and reserved addresses."""
        phone_validation: Literal["regex", "phonenumbers"] = "regex"
        """`phonenumbers`: keep only numbers libphonenumber calls valid (needs the `pii` extra)."""
        phone_regions: list[str] = ["US"]
        """Regions tried for numbers without `+` when validating with `phonenumbers`."""
        backend: Literal["regex", "presidio"] = "regex"
        """`presidio`: Microsoft Presidio's pattern recognizers instead (see below)."""
        min_score: Ratio = 0.5
        """Presidio only: lowest recognizer score kept."""
        meta_field: str | None = "pii"
        """Meta key of the per-document counts per kind; null: none written."""

    def setup(self) -> None:
        self.kinds, self.tokens = list(self.kinds), dict(self.tokens)
        self.phone_regions = list(self.phone_regions)
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
