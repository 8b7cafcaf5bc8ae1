"""UTF-16/32 (by BOM) and XML-declared encodings in every reader, and the run's last lines when a
source yields nothing from input that is not empty."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import pytest

from curator.acquire.arxiv import _decode
from curator.classifiers.quality import iter_jsonl_texts
from curator.filters.decontaminate import read_eval_texts
from curator.storage.encoding import sniff
from tests.acquire.helpers_acquire import read_output, read_side, run_pipeline, wiki_xml
from tests.helpers import run_cli

TEXTS = ["Здравей, свят — първи ред.", "Ünïcödé 2nd line 🙂 with an emoji", "日本語のテキスト"]
RECS = [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)]
BOMMED = ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
PAGES = [{"title": "Пловдив", "id": 1, "text": "'''Пловдив''' е [[град]] в [[България]]."},
         {"title": "София", "id": 2, "text": "'''София''' е столицата на България."}]


def _encode(text: str, enc: str) -> bytes:
    """``enc`` with its BOM: Python's utf-16/utf-32 write one, the -le/-be forms do not."""
    bom = {"utf-16-le": "\ufeff", "utf-16-be": "\ufeff", "utf-32-le": "\ufeff",
           "utf-32-be": "\ufeff"}.get(enc, "")
    return (bom + text).encode(enc)


def _jsonl(recs: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)


@pytest.mark.parametrize("enc", BOMMED)
@pytest.mark.parametrize("comp", ["", ".gz"])
def test_read_jsonl_decodes_every_bom(tmp_path: Path, enc: str, comp: str) -> None:
    data = _encode(_jsonl(RECS), enc)
    assert sniff(data[:4])[0].startswith(enc.split("-sig")[0][:6])
    p = tmp_path / f"a.jsonl{comp}"
    p.write_bytes(gzip.compress(data) if comp else data)
    s = run_pipeline(str(tmp_path / "w"), [{"read_jsonl": {"paths": str(p)}, "id": "r"}])
    assert [(d.id, d.text) for d in read_output(s, "r")] == [(r["id"], r["text"]) for r in RECS]
    assert not read_side(str(tmp_path / "w"), "quarantine", "r")


def test_large_utf16_jsonl_is_not_cut_into_byte_ranges(tmp_path: Path) -> None:
    recs = [{"id": str(i), "text": f"{TEXTS[i % 3]} #{i}"} for i in range(3000)]
    p = tmp_path / "big.jsonl"
    p.write_bytes(_encode(_jsonl(recs), "utf-16-le"))
    assert p.stat().st_size > 200_000
    s = run_pipeline(str(tmp_path / "w"), [{"read_jsonl": {"paths": str(p),
                                                            "shard_size_mb": 0.05},
                                            "id": "r"}])
    assert [d.text for d in read_output(s, "r")] == [r["text"] for r in recs]


def test_broken_utf16_is_quarantined_not_replaced(tmp_path: Path) -> None:
    good = _encode(_jsonl(RECS[:1]), "utf-16-le")
    p = tmp_path / "bad.jsonl"
    p.write_bytes(good + b"\x00\xdc" + _jsonl(RECS[1:]).encode("utf-16-le"))  # lone surrogate
    s = run_pipeline(str(tmp_path / "w"), [{"read_jsonl": {"paths": str(p)}, "id": "r"}])
    assert [d.id for d in read_output(s, "r")] == ["d0"]
    q = read_side(str(tmp_path / "w"), "quarantine", "r")
    assert [r["reason"] for r in q] == ["text not valid utf-16-le"]


@pytest.mark.parametrize("form", ["utf-16", "utf-16-be", "utf-32", "utf-16-nobom",
                                  "utf-16be-nobom", "iso-8859-5", "utf-8-sig"])
@pytest.mark.parametrize("comp", ["", ".bz2"])
def test_wikipedia_dump_in_any_encoding(tmp_path: Path, form: str, comp: str) -> None:
    xml = wiki_xml(PAGES).decode()
    if form == "iso-8859-5":  # an 8-bit Cyrillic code page, named by the declaration
        xml = xml.replace("Catégorie", "Category")
        data = f'<?xml version="1.0" encoding="ISO-8859-5"?>\n{xml}'.encode("iso-8859-5")
    elif form.endswith("nobom"):  # only the first characters say UTF-16 (XML appendix F)
        codec = "utf-16-le" if form == "utf-16-nobom" else "utf-16-be"
        data = f'<?xml version="1.0" encoding="UTF-16"?>\n{xml}'.encode(codec)
    else:
        data = f'<?xml version="1.0" encoding="{form.upper()}"?>\n{xml}'.encode(form)
        if form == "utf-16-be":
            data = b"\xfe\xff" + data
    p = tmp_path / f"bgwiki-20240101-pages-articles.xml{comp}"
    p.write_bytes(bz2.compress(data) if comp else data)
    s = run_pipeline(str(tmp_path / "w"), [{"wikipedia": {"paths": str(p)}, "id": "wiki"}])
    docs = read_output(s, "wiki")
    assert [d.meta["title"] for d in docs] == ["Пловдив", "София"]
    assert docs[0].text.startswith("Пловдив е град в България")


def test_other_readers_decode_boms(tmp_path: Path) -> None:
    tex = "\\documentclass{article}\\begin{document}Ünïcödé\\end{document}"
    for enc in BOMMED:
        assert _decode(_encode(tex, enc)) == tex
    assert _decode("Ünï".encode("latin-1")) == "Ünï"  # old TeX files: Latin-1 still
    p = tmp_path / "eval.txt"
    p.write_bytes(_encode("first question\nsecond question\n", "utf-16"))
    assert list(read_eval_texts([str(p)], None, "t")) == ["first question", "second question"]
    j = tmp_path / "pos.jsonl"
    j.write_bytes(_encode(_jsonl(RECS), "utf-32"))
    assert [t for _, t in iter_jsonl_texts([str(j)], "text")] == TEXTS


def test_a_source_that_yields_nothing_says_why_in_the_last_lines(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": 1, "body": "x"}\nnot json\n{"id": 2}\n')
    (tmp_path / "dump.xml").write_bytes(b"<mediawiki>no pages here, just bytes</mediawiki>")
    (tmp_path / "good.jsonl").write_text(_jsonl(RECS))
    (tmp_path / "p.yaml").write_text(
        "name: e\nwork_dir: work\nstages:\n"
        "  - {id: crawl, read_jsonl: {paths: a.jsonl}}\n"
        "  - {id: wiki, wikipedia: {paths: dump.xml}}\n"
        "  - {id: good, read_jsonl: {paths: good.jsonl}}\n")
    p = run_cli("run", "p.yaml", cwd=tmp_path)
    size = (tmp_path / "a.jsonl").stat().st_size
    last = p.stderr.strip().splitlines()[-2:]
    assert last[0].endswith(
        f"warning: source 'crawl' produced no documents from {size} bytes in 1 file: "
        "field 'text' is missing or not a string: 2; invalid JSON: 1 (quarantined records: "
        f"{tmp_path / 'work' / 'quarantine' / 'crawl'})")
    assert last[1].endswith("warning: source 'wiki' produced no documents from 48 bytes in 1 "
                            "file: no record found in it (is it the format and encoding this "
                            "stage reads?)")
    assert "source 'good'" not in p.stderr
