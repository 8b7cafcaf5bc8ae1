"""The fast path's HTML repair without a regex pass over pages that need none
(curator/extract/fastpath/utils.py): the same string as trafilatura's ``repair_faulty_html``
on real pages and on every illegal character, doctype and ``<html/>`` case, and the same tree
out of ``load_html``."""

from __future__ import annotations

import pytest
from lxml.etree import tostring

from curator.extract import html_repair
from curator.extract.fastpath import utils
from tests.extract.helpers_extract import gold_and_doc_pages

ILLEGAL = [chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20))] + [
    "\ufffe", "\uffff"]
#: Characters that are not illegal, including the bytes of multi-byte UTF-8 sequences.
LEGAL = ["\t", "\n", "\r", " ", "\x7f", "\x80", "\x9f", "é", "\u2019", "\ufffd", "\ufeff",
         "\U0001f600", "\ud800"]  # a lone surrogate too (surrogatepass)


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return gold_and_doc_pages(3, html_repair.close_noscript_iframes)


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


def test_illegal_characters_are_found_as_trafilatura_finds_them() -> None:
    import trafilatura.utils as u

    for s in _near_misses():
        assert utils.has_illegal_chars(s) == (u.INVALID_XML_CHARS.search(s) is not None), s


def test_same_string_as_trafilatura(pages: list[str]) -> None:
    from trafilatura.utils import repair_faulty_html

    cases = pages + _near_misses()
    changed = 0
    for html in cases:
        beginning = html[:50].lower()
        want = repair_faulty_html(html, beginning)
        assert utils.repair_faulty_html(html, beginning) == want, html[:200]
        changed += want != html
    assert changed > 100  # repairs of every kind happened, not only pass-throughs


def test_same_tree_as_trafilatura(pages: list[str]) -> None:
    """``load_html`` of pages as they come and with illegal characters put in: the tree
    trafilatura's ``load_html`` parses, element classes included (curator's parser chooses
    them with a C-level table)."""
    from trafilatura.utils import load_html

    dirty = [p[:5000] + "\x0b\x1f\ufffe" + p[5000:] for p in pages[:6]]
    for html in pages[::4] + dirty + ["", "x", "<p>a</p>", "<!doctype html>\n<p>a</p>"]:
        want, got = load_html(html), utils.load_html(html)
        assert (want is None) == (got is None), html[:200]
        if want is not None:
            assert tostring(got) == tostring(want)
            assert [type(e) for e in got.iter()] == [type(e) for e in want.iter()]


def test_clean_pages_skip_the_regex(pages: list[str], monkeypatch) -> None:
    """The point of the change: the ``sub`` runs only on a page that holds an illegal
    character (trafilatura runs it on every page)."""
    pattern = utils.INVALID_XML_CHARS
    calls: list[int] = []

    class Counted:
        def sub(self, repl: str, s: str) -> str:
            calls.append(len(s))
            return pattern.sub(repl, s)

    monkeypatch.setattr(utils, "INVALID_XML_CHARS", Counted())
    clean = [p for p in pages[:40] if pattern.search(p) is None]
    for html in clean:
        utils.load_html(html)
    assert clean and calls == []
    utils.load_html(clean[0] + "\x02")
    assert len(calls) == 1
