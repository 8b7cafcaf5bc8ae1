"""Repairs of the HTML source before any parser reads it: the constructs on which libxml2 and
resiliparse's HTML5 parser lose the rest of the page (an ``<iframe>`` left open in a
``<noscript>``, a ``<title>`` without its end tag), and the characters lxml refuses."""

from __future__ import annotations

import re

_NOSCRIPT_END = re.compile(r"</noscript\s*>", re.IGNORECASE)


_NOSCRIPT_START = re.compile(r"<noscript\b", re.IGNORECASE)


_IFRAME_OPEN = re.compile(r"<iframe\b", re.IGNORECASE)


_IFRAME_CLOSE = re.compile(r"</iframe\s*>", re.IGNORECASE)


def close_noscript_iframes(html: str) -> str:
    """Close the ``<iframe>`` left open inside a ``<noscript>`` (tag managers' snippets often
    write ``<iframe src=...>`` or ``<iframe .../>`` with no end tag). A browser runs scripts,
    so it reads a ``<noscript>``'s content as inert text; the parsers here do not: an iframe's
    content is raw text up to ``</iframe>``, so without one the rest of the page became the
    iframe's text (libxml2 for an unclosed tag: trafilatura then returned the page's raw
    markup as its text; resiliparse's HTML5 parser also for ``<iframe/>``: it kept no words).
    Each missing ``</iframe>`` is added before the ``</noscript>``; other pages are returned
    as they are (the same object).

    Linear in the page: each ``<noscript>`` is closed by the first ``</noscript>`` after it
    (one search), and once none is left no later one is looked for. A regex with a lazy
    ``(.*?)</noscript>`` took the same steps but rescanned the rest of the page from every
    unclosed ``<noscript>``: 50,000 of them (1.3 MB) took ten minutes."""
    m = _NOSCRIPT_START.search(html)
    if m is None:
        return html
    parts: list[str] = []
    pos = 0
    while m is not None:
        gt = html.find(">", m.end())
        if gt < 0:
            break
        close = _NOSCRIPT_END.search(html, gt + 1)
        if close is None:
            break
        inner = html[gt + 1:close.start()]
        missing = len(_IFRAME_OPEN.findall(inner)) - len(_IFRAME_CLOSE.findall(inner))
        if missing > 0:
            parts += [html[pos:close.start()], "</iframe>" * missing]
            pos = close.start()
        m = _NOSCRIPT_START.search(html, close.end())
    if not parts:
        return html
    parts.append(html[pos:])
    return "".join(parts)


_TITLE_START = re.compile(r"<title\b[^<>]*>", re.IGNORECASE)


_TITLE_END = re.compile(r"</title", re.IGNORECASE)


def close_open_title(html: str) -> str:
    """End a ``<title>`` that has no ``</title>`` at the first ``<`` after it.

    A title's content is raw text up to ``</title>``: without one, both parsers here (and a
    browser) make the rest of the page the title, and the page has no text. Seen on 8 of the
    621 Google News pages of page-signal (L3S-GN1; their text was cut out of the title) and on
    7 of 7,079 real web pages; titles hold no markup, so the first tag after the start tag
    ends it. Linear: on a page with a ``</title>`` (nearly every page, near its top) two
    searches that stop there."""
    m = _TITLE_START.search(html)
    if m is None or _TITLE_END.search(html, m.end()) is not None:
        return html
    lt = html.find("<", m.end())
    return html if lt < 0 else f"{html[:lt]}</title>{html[lt:]}"


XML_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
