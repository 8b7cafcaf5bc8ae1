"""Charsets of real pages (Shift_JIS, EUC-JP, GB18030, windows-1251: tests/acquire/data/peers/
charsets, and the Common Crawl and ClueWeb pages of the peers' WARCs) from the HTTP header, a
meta tag and a byte order mark, decoded as browsers decode them (WHATWG labels)."""

from __future__ import annotations

import os
import re

import pytest

from curator.acquire.warc import iter_warc
from curator.core.context import ShardContext
from curator.extract.charset import DecodeError, decode_html

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "data", "peers")

#: page file -> (the label servers send, the codec it means to a browser, a phrase of the page)
PAGES = {
    "shift_jis": ("Shift_JIS", "cp932", "衆院議院運営委員会"),
    "euc-jp": ("EUC-JP", "euc_jp", "桃太郎"),
    "gb18030": ("GB18030", "gb18030", "中国制造的领军者"),
    "windows-1251": ("windows-1251", "cp1251", "МОСКВА, 9 янв - РИА Новости"),
}


def _page(name: str) -> bytes:
    with open(os.path.join(PEERS, "charsets", f"{name}.html"), "rb") as f:
        return f.read()


def _with_meta(body: bytes, meta: bytes) -> bytes:
    return re.sub(rb"<head>", b"<head>" + meta, body, count=1, flags=re.I)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_charset_from_the_http_header_wins_over_meta(name: str) -> None:
    label, codec, phrase = PAGES[name]
    body = _with_meta(_page(name), b'<meta charset="utf-8">')  # a wrong meta tag
    text, cs = decode_html(body, f"text/html; charset={label}")
    assert (text, cs) == (body.decode(codec), codec) and phrase in text


@pytest.mark.parametrize("name", sorted(PAGES))
@pytest.mark.parametrize("form", ["charset", "http-equiv"])
def test_charset_from_a_meta_tag(name: str, form: str) -> None:
    label, codec, phrase = PAGES[name]
    meta = (f'<meta charset="{label}">' if form == "charset" else
            f'<meta http-equiv="Content-Type" content="text/html; charset={label}">')
    body = _with_meta(_page(name), meta.encode())
    text, cs = decode_html(body, "text/html")
    assert (text, cs) == (body.decode(codec), codec) and phrase in text


@pytest.mark.parametrize("name", sorted(PAGES))
@pytest.mark.parametrize("bom, codec", [(b"\xef\xbb\xbf", "utf-8"),
                                        (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")])
def test_a_byte_order_mark_wins_over_every_label(name: str, bom: bytes, codec: str) -> None:
    """As in browsers: a page saved as UTF-8/UTF-16 with a BOM, served under its old label
    (header and meta), is read by its BOM, and the BOM is not part of the text."""
    label, old, phrase = PAGES[name]
    source = _page(name).decode(old)
    body = bom + source.encode(codec)
    text, cs = decode_html(body, f"text/html; charset={label}")
    assert (text, cs) == (source, codec) and phrase in text


@pytest.mark.parametrize("label, name", [("x-sjis", "shift_jis"), ("windows-31j", "shift_jis"),
                                         ("GB2312", "gb18030"), ("x-gbk", "gb18030"),
                                         ("x-euc-jp", "euc-jp"), ("x-cp1251", "windows-1251")])
def test_labels_mean_what_they_mean_to_browsers(label: str, name: str) -> None:
    _, codec, phrase = PAGES[name]
    body = _page(name)
    text, cs = decode_html(body, f"text/html; charset={label}")
    assert (text, cs) == (body.decode(codec), codec) and phrase in text


def test_windows_31j_characters_under_a_shift_jis_label() -> None:
    """Servers label windows-31j pages (NEC circled digits, IBM kanji) Shift_JIS: strict
    Shift_JIS rejects those bytes, browsers read them."""
    body = _page("shift_jis").replace("衆院".encode("cp932"), "①髙".encode("cp932"), 1)
    text, cs = decode_html(body, "text/html; charset=Shift_JIS")
    assert cs == "cp932" and "①髙議院運営委員会" in text


@pytest.mark.parametrize("name", sorted(PAGES))
def test_undeclared_pages_are_guessed(name: str) -> None:
    phrase = PAGES[name][2]
    text, _ = decode_html(_page(name))
    assert phrase in text


def test_the_common_crawl_pages_of_fastwarcs_archive_decode_cleanly(tmp_path) -> None:
    """warcfile.warc.gz: windows-1251 (header), GB2312/GBK (meta only), UTF-8 with a BOM."""
    ctx = ShardContext(shard="s", stage_id="t", work_dir=str(tmp_path), artifacts={})
    recs = list(iter_warc(os.path.join(PEERS, "fastwarc", "warcfile.warc.gz"), ctx))
    decoded = [decode_html(r.body, r.content_type) for r in recs]
    assert len(decoded) == 16
    assert all("\ufffd" not in t and not t.startswith("\ufeff") for t, _ in decoded)
    charsets = {cs for _, cs in decoded}
    assert {"cp1251", "gb18030", "utf-8"} <= charsets
    assert any("Стратегия пожарной безопасности" in t for t, cs in decoded if cs == "cp1251")


def test_an_unlabelled_latin1_page_with_a_stray_byte_reads_as_windows_1252() -> None:
    """CleanEval's pages: latin-1, no label, and bytes windows-1252 leaves unassigned (0x81):
    browsers show them (the WHATWG index maps those bytes to C1 controls); they used to be
    quarantined as undecodable."""
    source = "<html><body><p>Café société, naïve façade — déjà vu.</p></body></html>"
    body = source.encode("cp1252").replace(b"vu.", b"vu.\x81")
    text, cs = decode_html(body)
    assert (text, cs) == (source.replace("vu.", "vu.\x81"), "cp1252+c1")


def test_a_utf8_page_with_a_few_broken_bytes_keeps_its_utf8_text() -> None:
    """A UTF-8 page with a latin-1 'ü' in one alt text (seen on real German pages): the rest
    stays UTF-8, the one bad byte becomes U+FFFD, as in a browser."""
    body = ("<p>Mitgefühl wählen, Grüße aus Köln</p>".encode()
            + '<img alt="Küchenblogs">'.encode("latin-1"))
    text, cs = decode_html(body)
    assert cs == "utf-8+replace"
    assert text == '<p>Mitgefühl wählen, Grüße aus Köln</p><img alt="K\ufffdchenblogs">'


def test_binary_content_is_still_undecodable() -> None:
    with pytest.raises(DecodeError, match="NUL bytes"):
        decode_html(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8\xff\x81\x9d")
