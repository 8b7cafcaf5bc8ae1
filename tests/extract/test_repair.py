"""trafilatura's HTML repair without a regex pass over pages that need none
(curator/extract/repair.py): the same string as trafilatura's own ``repair_faulty_html`` on
real pages and on every illegal character, doctype and ``<html/>`` case, the same texts out of
``extract_text``, and another trafilatura source keeps its own function."""

from __future__ import annotations

from typing import Any

import pytest

from curator.extract import extract_html as eh
from curator.extract import repair
from tests.extract.helpers_extract import assert_swapped, gold_and_doc_pages

ILLEGAL = [chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20))] + [
    "\ufffe", "\uffff"]
#: Characters that are not illegal, including the bytes of multi-byte UTF-8 sequences.
LEGAL = ["\t", "\n", "\r", " ", "\x7f", "\x80", "\x9f", "é", "\u2019", "\ufffd", "\ufeff",
         "\U0001f600", "\ud800"]  # a lone surrogate too (surrogatepass)


@pytest.fixture(scope="module")
def pages() -> list[str]:
    eh.prepare("trafilatura")
    return gold_and_doc_pages(3, eh.close_noscript_iframes)


def _stock() -> Any:
    import trafilatura.utils as u

    with repair.stock():
        return u.repair_faulty_html


def _near_misses() -> list[str]:
    body = "<html><head><title>t</title></head><body><p>text {}</p></body></html>"
    out = []
    for wide in ("", "é", "\u2019", "\U0001f600"):  # 1, 1, 2 and 4 bytes a character
        for c in ILLEGAL + LEGAL:
            out.append(f"<!DOCTYPE html>\n{body.format(wide + c + 'x')}")
            out.append(body.format(c * 3 + wide))
    for doctype in ("<!DOCTYPE html>", "<!doctype html>", "<!DOCTYPE html PUBLIC "
                    "\"-//W3C//DTD XHTML 1.0 Strict//EN\" \"http://www.w3.org/TR/xhtml1/DTD/"
                    "xhtml1-strict.dtd\">", "<!DOCTYPE html/>", "< ! DOCTYPE x/y>",
                    "<!doctype html SYSTEM 'a/b'>", " <!DOCTYPE a/b>", "<!DOCTYPE a/b><p>x</p>",
                    "<!DOCTYPE a/b", "<!-- doctype --><!DOCTYPE a/b>"):
        for sep in ("\n", "\r\n", "\r", ""):  # "": the page has no newline at all
            for html in ("<html>", "<html lang='en' />", "<html/>"):
                out.append(f"{doctype}{sep}{html}<body><p>x</p>\n</body></html>")
                out.append(f"{doctype}{sep}{html}\x01<body><p>y</p></body></html>")
    out += ["", "\n", "<!doctype", "doctype\n", "<html/>\n<p>a</p>", "\n\n\n\n<html />"]
    return out


def test_installed_for_this_trafilatura() -> None:
    eh.prepare("trafilatura")
    import trafilatura.utils as u

    assert_swapped(u, "repair_faulty_html", repair.repair_faulty_html, repair.stock)


def test_illegal_characters_are_found_as_trafilatura_finds_them() -> None:
    import trafilatura.utils as u

    for s in _near_misses():
        assert repair.has_illegal_chars(s) == (u.INVALID_XML_CHARS.search(s) is not None), s


def test_same_string_as_trafilatura(pages: list[str]) -> None:
    stock = _stock()
    cases = pages + _near_misses()
    changed = 0
    for html in cases:
        beginning = html[:50].lower()
        want = stock(html, beginning)
        assert repair.repair_faulty_html(html, beginning) == want, html[:200]
        changed += want != html
    assert changed > 100  # repairs of every kind happened, not only pass-throughs


def test_same_text_as_trafilatura(pages: list[str]) -> None:
    eh.prepare("trafilatura")
    dirty = [p[:5000] + "\x0b\x1f\ufffe" + p[5000:] for p in pages[:6]]
    for html in pages[::4] + dirty:
        with repair.stock():
            want = eh.extract_text(html)
        assert eh.extract_text(html) == want


def test_clean_pages_skip_the_regex(pages: list[str], monkeypatch) -> None:
    """The point of the twin: trafilatura's ``sub`` runs only on a page that holds an illegal
    character (it ran on every page before)."""
    eh.prepare("trafilatura")
    import trafilatura.utils as u

    calls: list[int] = []
    pattern = u.INVALID_XML_CHARS

    class Counted:
        def sub(self, repl: str, s: str) -> str:
            calls.append(len(s))
            return pattern.sub(repl, s)

        def search(self, s: str) -> Any:
            return pattern.search(s)

    monkeypatch.setattr(u, "INVALID_XML_CHARS", Counted())
    clean = [p for p in pages[:40] if pattern.search(p) is None]
    for html in clean:
        u.load_html(html)
    assert clean and calls == []
    u.load_html(clean[0] + "\x02")
    assert len(calls) == 1


def test_another_trafilatura_keeps_its_own_function() -> None:
    eh.prepare("trafilatura")
    import trafilatura.utils as u

    with repair.stock():
        assert repair.install("def repair_faulty_html(htmlstring, beginning): ...") is False
        assert u.repair_faulty_html is not repair.repair_faulty_html
        assert repair.install() is True  # trafilatura's own text: it goes in
    assert u.repair_faulty_html is repair.repair_faulty_html
