"""Odd and hostile input to the acquire sources: verbatim LaTeX, wikitext leftovers,
Wikipedia dump files read directly, bounded arXiv members and Wikipedia pages."""

from __future__ import annotations

import bz2
import gzip
import io
import os
import shutil
from pathlib import Path

import pytest

from curator.extract.latex import latex_body, strip_comments, submission_text
from curator.extract.wikitext import wikitext_to_text
from tests.acquire.helpers_acquire import (
    Mirror,
    arxiv_bundle,
    read_output,
    read_side,
    run_pipeline,
    stage_stats,
    tar_bytes,
    wiki_xml,
)

REPO = Path(__file__).resolve().parents[2]
WIKI_SAMPLE = REPO / "data/sample/wikimedia/enwiki/20160501/" \
    "enwiki-20160501-pages-articles1.xml-p10p30302.bz2"
LTNEWS20 = Path(__file__).parent / "data" / "ltnews20.tex"

# -- LaTeX: verbatim is opaque -----------------------------------------------------------------

DOC = r"""\documentclass{article}
\newcommand{\R}{\mathbb{R}}
\begin{document}
\section{Intro}
Use \verb|\bibliography{refs}| to print the references, or \verb+\end{document}+ and
\verb*!\appendix! as you like; $\R$ is expanded.
\begin{verbatim}
\section{Not a section}
50% of \R here % is not a comment
\bibliography{x}
\end{verbatim}
\begin{lstlisting}
\printbibliography % code
\end{lstlisting}
Still in the body.
% \verb|a comment hides this| \bibliography{not}
Last line of the body.
\bibliography{refs}
After the bibliography.
\end{document}
"""


def test_verbatim_is_opaque_to_every_latex_rule() -> None:
    _, body = submission_text({"p.tex": DOC})
    assert body.startswith(r"\section{Intro}")
    assert r"\verb|\bibliography{refs}|" in body and r"\verb+\end{document}+" in body
    assert r"\verb*!\appendix!" in body and r"$\mathbb{R}$ is expanded" in body
    # inside verbatim: no comment stripping, no macro expansion, no section/end rule
    assert "50% of \\R here % is not a comment\n\\bibliography{x}\n\\end{verbatim}" in body
    assert "\\printbibliography % code" in body
    assert "Still in the body." in body and body.endswith("Last line of the body.")
    assert "a comment hides this" not in body and "After the bibliography" not in body
    assert "\ue000" not in body
    # the building blocks on their own keep verbatim material too
    assert strip_comments("\\verb|%x| y % z") == "\\verb|%x| y"
    assert "\\verb|\\appendix|" in latex_body("\\section{A}\nx \\verb|\\appendix| y\n")


def test_verbatim_in_an_input_file_is_protected() -> None:
    main = ("\\documentclass{article}\\begin{document}\n\\section{A}\n\\input{b}\n"
            "End of A.\n\\end{document}\n")
    sub = "From b: \\verb|\\end{document}| and\n\\begin{verbatim}\n%kept\n\\end{verbatim}\n"
    _, body = submission_text({"main.tex": main, "b.tex": sub})
    assert "\\verb|\\end{document}|" in body and "%kept" in body and "End of A." in body


def test_real_latex_with_verb_end_document_keeps_its_body(tmp_path) -> None:
    """LaTeX News 20 (texlive-latex-base-doc, LPPL) writes \\verb=\\end{document}= on its line
    110: the old rules ended the body there and lost 73 of its 128 lines."""
    tex = LTNEWS20.read_text(encoding="utf-8")
    root = str(tmp_path / "mirror")
    arxiv_bundle(root, "2403", {"2403/2403.00001.gz": gzip.compress(tex.encode())})
    summary = run_pipeline(str(tmp_path / "w"), [{"arxiv": {"months": "2403",
                                                            "base_url": root}, "id": "ax"}])
    [doc] = read_output(summary, "ax")
    body = doc.text
    assert "Inside the definition of \\verb=\\end{document}= the \\texttt{.aux} file" in body
    # text from the last section (after the \verb) is there, the closing line is not
    last_section = tex[tex.rindex("\\section"):tex.rindex("\\end{document}")].strip()
    assert body.endswith(last_section.splitlines()[-1].strip())
    assert body.count("\n") > 120 and "\\end{document}\n" not in body


# -- wikitext: empty brackets and reference sections ------------------------------------------

def _sample_pages() -> dict[str, str]:
    from curator.acquire.wikipedia import iter_pages
    from curator.core.context import ShardContext

    ctx = ShardContext(shard="s", stage_id="t", work_dir="/nonexistent", artifacts={})
    return {p["title"]: p["text"] for p in iter_pages(str(WIKI_SAMPLE), ctx)
            if "title" in p and p["ns"] == 0 and not p["redirect"]}


def test_wikitext_cleanup_on_real_articles() -> None:
    pages = _sample_pages()
    albedo, andorra = wikitext_to_text(pages["Albedo"]), wikitext_to_text(pages["Andorra"])
    assert albedo.startswith("Albedo or reflection coefficient, derived from Latin")
    # {{lang-ca|Principat d'Andorra}} carries words of the sentence: rendered, not dropped
    assert andorra.startswith("Andorra, officially the Principality of Andorra (Principat "
                              "d'Andorra), also called")
    for text in (albedo, andorra):
        lines = text.split("\n")
        assert "References" not in lines and "External links" not in lines
    assert "Official Website of Albedo Project" not in albedo  # an external link label
    assert "Tourism in Andorra" not in andorra  # a "See also" entry
    assert "Single-scattering albedo is used" in albedo  # prose before those sections stays
    # across (the first 40 articles of) the sample: no bracket left holding only separators
    import re

    left = [t for t in list(pages)[:40]
            if re.search(r" [(\[][\s;,.:–-]*[)\]]", wikitext_to_text(pages[t]))]
    assert left == []
    # a code-like "f()" is not a template leftover; sections are configurable
    assert wikitext_to_text("Call f() now.") == "Call f() now."
    kept = wikitext_to_text("Text.\n== See also ==\n* [[Other]]\n", drop_sections=frozenset())
    assert "See also" in kept and "Other" in kept


# -- Wikipedia: dump files given directly ------------------------------------------------------

def test_wikipedia_reads_a_dump_file_directly(tmp_path) -> None:
    local = tmp_path / "dl"
    local.mkdir()
    shutil.copy(WIKI_SAMPLE, local / "enwiki-latest-pages-articles1.xml.bz2")
    (local / "frwiki-x-pages-articles.xml.bz2").write_bytes(bz2.compress(wiki_xml([
        {"title": "Rivière", "id": 3, "text": "La '''rivière''' coule{{refnec}} (voir)."}])))
    summary = run_pipeline(str(tmp_path / "w"), [{"wikipedia": {
        "paths": str(local / "*wiki-*pages-articles*.xml.bz2"), "limit_per_file": 8},
        "id": "wiki"}])
    docs = read_output(summary, "wiki")
    en = [d for d in docs if d.id.startswith("enwiki:")]
    assert len(en) == 8 and {d.meta["language"] for d in en} == {"en"}
    assert en[0].meta["title"] == "Anarchism" and en[0].meta["url"] == \
        "https://en.wikipedia.org/wiki/Anarchism"
    [fr] = [d for d in docs if d.id.startswith("frwiki:")]
    assert fr.id == "frwiki:3" and fr.text == "La rivière coule (voir)."
    assert fr.meta["language"] == "fr"


def test_wikipedia_dump_url_over_http_and_bad_names(tmp_path, mirror: Mirror) -> None:
    from curator.base.errors import ConfigError

    name = "enwiki-20160501-pages-articles1.xml-p10p30302.bz2"
    shutil.copy(WIKI_SAMPLE, os.path.join(mirror.root, name))
    summary = run_pipeline(str(tmp_path / "w"), [{"wikipedia": {
        "paths": f"{mirror.url}/{name}", "backoff_s": 0.01, "limit_per_file": 2},
        "id": "wiki"}])
    assert [d.id for d in read_output(summary, "wiki")] == ["enwiki:12", "enwiki:25"]
    assert mirror.requests_for(name)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ConfigError, match="not a MediaWiki XML dump"):
        run_pipeline(str(tmp_path / "w2"), [{"wikipedia": {"paths": str(tmp_path / "notes.txt")}}])


def test_wikipedia_bad_page_and_oversized_page_cost_only_themselves(tmp_path) -> None:
    xml = wiki_xml([{"title": "Before", "id": 1, "text": "First article text."},
                    {"title": "Big", "id": 2, "text": "word " * 600_000},
                    {"title": "After", "id": 3, "text": "Last article text."}]).decode()
    xml = xml.replace("<title>After</title>", "<title>Broken</title><ns>0</ns><id>9</id>"
                      "<bad></page>\n<page><title>After</title>", 1)
    p = tmp_path / "xxwiki-1-pages-articles.xml.bz2"
    p.write_bytes(bz2.compress(xml.encode()))
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [{"wikipedia": {"paths": str(p), "max_doc_mb": 1},
                                   "id": "wiki"}])
    assert [d.meta["title"] for d in read_output(summary, "wiki")] == ["Before", "After"]
    q = {r["reason"].split(":")[0]: r for r in read_side(work, "quarantine", "wiki")}
    assert sorted(q) == ["bad page XML", "too_large"]
    big = q["too_large"]
    assert big["record"] == {"title": "Big", "page_id": "2"} and big["file"] == str(p)
    assert big["offset"] == xml.encode().index(b"<page><title>Big")  # in the inflated XML
    st = stage_stats(summary, "wiki")
    assert st["counters"]["wiki_too_large"] == 1 and st["quarantined"]["too_large"] == 1
    assert st["docs_in"] == st["docs_out"] + sum(st["quarantined"].values())


# -- arXiv: members stream with a cap ----------------------------------------------------------

PAPER = ("\\documentclass{article}\\begin{document}\n\\section{Intro}\n"
         + "A sentence of the paper body. " * 40 + "\n\\end{document}\n")


def test_arxiv_oversized_members_are_quarantined_and_neighbours_kept(tmp_path) -> None:
    mb = 1 << 20
    figure_bomb = tar_bytes({"ms.tex": PAPER.encode(), "fig.eps": b"\0" * (12 * mb)})
    big_tex = tar_bytes({"ms.tex": PAPER.encode() + b"%" * (3 * mb)})
    root = str(tmp_path / "m")
    arxiv_bundle(root, "2405", {
        "2405/2405.00001.gz": gzip.compress(PAPER.encode()),
        "2405/2405.00002.gz": gzip.compress(b"\0" * (5 * mb), 9),  # one "tex" of 5 MB
        "2405/2405.00003.gz": gzip.compress(big_tex, 9),  # a tar whose .tex is too big
        "2405/2405.00004.gz": gzip.compress(figure_bomb, 9),  # figures inflate past 8x cap
        "2405/2405.00005.gz": gzip.compress(tar_bytes({"a.tex": PAPER.encode(),
                                                       "f.png": b"\x89PNG" * 1000})),
    })
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [{"arxiv": {"months": "2405", "base_url": root,
                                             "max_doc_mb": 1}, "id": "ax"}])
    assert sorted(d.id for d in read_output(summary, "ax")) == ["2405.00001", "2405.00005"]
    q = sorted(read_side(work, "quarantine", "ax"), key=lambda r: r["record"]["member"])
    assert [r["record"]["arxiv_id"] for r in q] == ["2405.00002", "2405.00003", "2405.00004"]
    assert {r["reason"] for r in q} == {"too_large"}
    bundle = os.path.join(root, "src", "arXiv_src_2405_001.tar")
    assert all(r["file"] == bundle and r["offset"] > 0 for r in q)
    st = stage_stats(summary, "ax")
    assert st["counters"]["arxiv_too_large"] == 3
    assert (st["docs_in"], st["docs_out"]) == (5, 2)


def test_split_pages_enforces_the_cap_whether_a_page_spans_reads_or_not() -> None:
    import io as _io

    from curator.acquire.wikipedia import split_pages

    pages = [b"<page><title>A</title>" + b"a" * n + b"</page>\n" for n in (100, 5000, 100)]
    xml = b"<mediawiki><siteinfo/>\n" + b"".join(pages) + b"</mediawiki>"

    class Small(_io.BytesIO):  # reads of 7 bytes: every page spans many reads
        def read1(self, n: int = -1) -> bytes:
            return super().read(min(n, 7))

    for fh in (_io.BytesIO(xml), Small(xml)):  # one read holds the whole file / tiny reads
        got = [(k, off) for k, off, _ in split_pages(fh, 1000)]
        first = xml.index(b"<page>")
        assert got == [("header", 0), ("page", first), ("too_large", first + len(pages[0])),
                       ("page", first + len(pages[0]) + len(pages[1]))]
    cut = _io.BytesIO(xml[: xml.rindex(b"</page>")])
    assert [k for k, _, _ in split_pages(cut, 10_000)][-1] == "truncated"


def test_uncompressed_warc_reads_at_most_the_cap_of_a_huge_record(tmp_path) -> None:
    """An uncompressed .warc has no gzip members to bound; the payload read itself is capped, so
    a 64 MB page is refused as too large while its neighbour is kept."""
    import gzip

    from tests.acquire.helpers_acquire import (
        page,
        read_side,
        run_pipeline,
        stage_stats,
        warc_response,
    )

    body = page("Huge", ["word " * (13 * 1024 * 1024)]).encode()
    members = [warc_response("https://a.example/huge", body),
               warc_response("https://a.example/ok", page("Ok", ["a real page " * 40]).encode())]
    path = tmp_path / "crawl.warc"
    path.write_bytes(b"".join(gzip.decompress(m) for m in members))
    work = str(tmp_path / "w")
    for reader in ("fastwarc", "warcio"):
        summary = run_pipeline(work + reader, [{"read_warc": {
            "paths": str(path), "extractor": "resiliparse", "reader": reader,
            "max_page_mb": 1}}])
        st = stage_stats(summary, "read_warc")
        assert st["docs_out"] == 1, (reader, st)
        reasons = [r["reason"] for r in read_side(work + reader, "quarantine", "read_warc")]
        assert any(r.startswith("page too large") for r in reasons), (reader, reasons)


def test_warc_parsers_read_no_more_than_the_cap(tmp_path) -> None:
    import gzip

    from curator.acquire.warc import _fastwarc_records, _warcio_records
    from tests.acquire.helpers_acquire import page, warc_response

    body = page("Big", ["word " * 200_000]).encode()
    raw = gzip.decompress(warc_response("https://a.example/big", body))
    for parse in (_fastwarc_records, _warcio_records):
        recs = [r for r in parse(io.BytesIO(raw), "x.warc", None, 1000) if not isinstance(r, str)]
        assert [len(r.body) for r in recs] == [1001], parse.__name__


# -- a hostile index on a mirror: only objects under the mirror, http(s) only ---------------------

def _cc_with_listing(mirror: Mirror, entries: list[str]) -> list[str]:
    from tests.acquire.helpers_acquire import PROSE, cc_mirror_tree, page, warc_response

    rels = cc_mirror_tree(mirror.root, "CC-MAIN-2024-10", [
        [warc_response("https://a.example/", page("A", PROSE).encode())]])
    listing = Path(mirror.root) / "crawl-data/CC-MAIN-2024-10/warc.paths.gz"
    listing.write_bytes(gzip.compress(("\n".join([rels[0], *entries]) + "\n").encode()))
    return rels


_URL = "names a URL or scheme, not a path under the mirror"


@pytest.mark.parametrize(("entry", "why"), [
    ("file:///etc/passwd", _URL),
    ("s3://someone-elses-bucket/x.warc.gz", _URL),
    ("http://169.254.169.254/latest/meta-data/x.warc.gz", _URL),
    ("/etc/passwd", "is an absolute or local path"),
    ("../../../../outside.warc.gz", "climbs out of the mirror with '..'"),
    ("crawl-data/x/../../../../../outside.warc.gz", "climbs out of the mirror with '..'"),
])
def test_hostile_listing_entry_is_refused_before_any_fetch(tmp_path, mirror: Mirror, entry: str,
                                                           why: str) -> None:
    from curator.base.errors import InputError

    _cc_with_listing(mirror, [entry])
    work = tmp_path / "work"
    listing_url = f"{mirror.url}/crawl-data/CC-MAIN-2024-10/warc.paths.gz"
    with pytest.raises(InputError) as e:
        run_pipeline(str(work), [{"common_crawl": {
            "snapshot": "CC-MAIN-2024-10", "base_url": mirror.url, "backoff_s": 0.01,
            "download_dir": str(tmp_path / "dl" / "a" / "b")}, "id": "cc"}])
    assert str(e.value) == (f"{listing_url}: refusing entry {entry!r}: it {why}; an index may "
                            f"only name files under {mirror.url}")
    # nothing but the listing was asked for, and nothing written outside the download folder
    assert [r[0] for r in mirror.log] == ["/crawl-data/CC-MAIN-2024-10/warc.paths.gz"]
    assert not list(tmp_path.rglob("outside.warc.gz"))


def test_redirect_to_another_scheme_is_refused_and_http_redirects_followed(
        tmp_path, mirror: Mirror) -> None:
    from curator.acquire.download import DownloadError, fetch

    rels = _cc_with_listing(mirror, [])
    mirror.faults[rels[0]] = [("redirect", "file:///etc/passwd")]
    with pytest.raises(DownloadError) as e:
        fetch(f"{mirror.url}/{rels[0]}", str(tmp_path / "a.warc.gz"), retries=0)
    assert str(e.value) == (f"{mirror.url}/{rels[0]}: redirected to 'file:///etc/passwd', not "
                            "an http(s) URL; refused")
    assert not (tmp_path / "a.warc.gz").exists()
    # an http redirect (a mirror moving a file) is still followed
    mirror.faults["moved.warc.gz"] = [("redirect", f"/{rels[0]}")]
    res = fetch(f"{mirror.url}/moved.warc.gz", str(tmp_path / "b.warc.gz"), retries=0)
    assert (tmp_path / "b.warc.gz").read_bytes() == (Path(mirror.root) / rels[0]).read_bytes()
    assert res.attempts == 1
