"""Wikipedia dumps and arXiv bundles from mirror trees (HTTP and local), and the LaTeX and
wikitext converters."""

from __future__ import annotations

import bz2
import gzip
import os

import pytest

from curator.acquire.arxiv import arxiv_id, parse_months
from curator.acquire.download import DownloadError
from curator.base.errors import ConfigError, InputError
from curator.extract.latex import expand_macros, latex_body, strip_comments
from curator.extract.wikitext import wikitext_to_text
from tests.acquire.helpers_acquire import (
    Mirror,
    arxiv_bundle,
    read_output,
    read_side,
    run_pipeline,
    stage_stats,
    tar_bytes,
    wiki_mirror_tree,
    wiki_xml,
)

ARTICLE = (
    "{{Infobox river|name=Example|length=12 km}}\n"
    "The '''Example River''' is a [[river]] in [[Northland|the north]] of the country."
    "<ref>{{cite web|url=http://x.example|title=Source}}</ref> It is 12 km long.\n"
    "== History ==\n"
    "Mills were built along its banks in the [[18th century]].<!-- hidden note -->\n"
    "[[Fichier:River.jpg|thumb|A view of the river]]\n"
    "{| class=\"wikitable\"\n|-\n| cell one || cell two\n|}\n"
    "* First item of a list\n"
    "[[Catégorie:Rivers]]\n"
)
PAGES = [
    {"title": "Example River", "id": 7, "text": ARTICLE},
    {"title": "Example Creek", "id": 8, "text": "#REDIRECT [[Example River]]",
     "redirect": "Example River"},
    {"title": "Talk:Example River", "id": 9, "ns": 1, "text": "Talk page text."},
    {"title": "Stub", "id": 10, "text": "{{stub}}"},
    {"title": "Second Article", "id": 11,
     "text": "The second article is about [[mountain]]s and ''valleys''."},
]


def test_wikitext_to_text() -> None:
    text = wikitext_to_text(ARTICLE, frozenset({"fichier", "catégorie"}))
    assert text.startswith("The Example River is a river in the north of the country.")
    assert "History" in text.split("\n") and "It is 12 km long." in text
    assert "Mills were built along its banks in the 18th century." in text
    assert "First item of a list" in text
    for gone in ("Infobox", "cite", "hidden note", "River.jpg", "A view", "cell one", "Rivers",
                 "'''", "[[", "{{"):
        assert gone not in text


def test_wikipedia_latest_over_http(tmp_path, mirror: Mirror) -> None:
    wiki_mirror_tree(mirror.root, "xx", "20240101", wiki_xml(PAGES))
    # A newer dump that is still running must be passed over.
    wiki_mirror_tree(mirror.root, "xx", "20240201", wiki_xml(PAGES[:1]), status="in-progress")
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [{"wikipedia": {"language": "xx", "base_url": mirror.url,
                                                 "backoff_s": 0.01}, "id": "wiki"}])
    docs = read_output(summary, "wiki")
    assert [d.id for d in docs] == ["xxwiki:7", "xxwiki:11"]
    d = docs[0]
    assert d.meta["title"] == "Example River" and d.meta["page_id"] == "7"
    assert d.meta["url"] == "https://xx.wikipedia.org/wiki/Example_River"
    assert d.meta["source"] == "wikipedia" and d.meta["revision_id"] == "700"
    assert "A view" not in d.text and "Rivers" not in d.text  # localized File/Category
    c = stage_stats(summary, "wiki")["counters"]
    assert c["wiki_redirects"] == 1 and c["wiki_other_namespace"] == 1
    assert [r["id"] for r in read_side(work, "rejected", "wiki")] == ["xxwiki:10"]
    assert os.path.exists(os.path.join(work, "downloads", "wiki", "xxwiki", "20240101"))


def test_wikipedia_checksum_and_truncation(tmp_path, mirror: Mirror) -> None:
    rel = wiki_mirror_tree(mirror.root, "xx", "20240101", wiki_xml(PAGES), sha1="ab" * 20)
    with pytest.raises(DownloadError, match="sha1 mismatch"):
        run_pipeline(str(tmp_path / "a"), [{"wikipedia": {
            "language": "xx", "dump_date": "20240101", "base_url": mirror.url, "retries": 1,
            "backoff_s": 0.01}}])
    # A truncated local dump: the articles before the cut are kept, the cut is quarantined.
    local = str(tmp_path / "local")
    # > 1 bz2 block (900 kB): talk pages as filler (skipped without conversion: fast)
    filler = [{"title": f"Talk:{i}", "id": 100 + i, "ns": 1, "text": f"Talk {i}. " * 300}
              for i in range(500)]
    rel = wiki_mirror_tree(local, "xx", "20240101", wiki_xml(PAGES[:1] + filler + PAGES[4:]))
    path = os.path.join(local, rel)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    work = str(tmp_path / "b")
    summary = run_pipeline(work, [{"wikipedia": {"language": "xx", "dump_date": "20240101",
                                                 "base_url": local}, "id": "wiki"}])
    assert [d.id for d in read_output(summary, "wiki")] == ["xxwiki:7"]  # the last is cut off
    q = read_side(work, "quarantine", "wiki")
    assert len(q) == 1 and "truncated or corrupt dump" in q[0]["reason"]


def test_wikipedia_missing_dump_is_one_clear_error(tmp_path, mirror: Mirror) -> None:
    with pytest.raises(InputError, match="no finished pages-articles dump"):
        run_pipeline(str(tmp_path), [{"wikipedia": {"language": "zz", "dump_date": "20240101",
                                                    "base_url": mirror.url, "retries": 0}}])
    with pytest.raises(ConfigError, match="YYYYMMDD"):
        run_pipeline(str(tmp_path), [{"wikipedia": {"dump_date": "2024"}}])


# -- arXiv -------------------------------------------------------------------------------------

PAPER = r"""\documentclass{article}
\usepackage{amsmath}
\newcommand{\R}{\mathbb{R}}
\def\eps{\varepsilon}
\newcommand{\pair}[2]{(#1,#2)}
\begin{document}
\title{On Things}
\maketitle
\begin{abstract}Abstract text.\end{abstract}
\section{Introduction}
We study maps $f:\R\to\R$ with error $\eps$. % a private remark
The discount is 50\% today.
%\section{Commented out}
\input{sections/method}
\bibliography{refs}
\end{document}
"""
METHOD = r"""\section{Method}
Our method uses \pair{a}{b} pairs over \Re parts and $\R^n$.
"""


def test_latex_cleaning() -> None:
    assert strip_comments("a % c\n% whole line\nb \\% kept") == "a\nb \\% kept"
    assert expand_macros(r"\newcommand{\R}{\mathbb{R}} $\R \Re$") .strip() == \
        r"$\mathbb{R} \Re$"
    body = latex_body(PAPER.replace(r"\input{sections/method}", METHOD))
    assert body.startswith(r"\section{Introduction}")
    assert r"$f:\mathbb{R}\to\mathbb{R}$ with error $\varepsilon$." in body
    assert "private remark" not in body and "Commented out" not in body
    assert r"50\% today" in body and r"\pair{a}{b}" in body and r"\Re parts" in body
    assert "bibliography" not in body and "Abstract text" not in body


def test_parse_months_and_ids() -> None:
    assert parse_months("2311-2402,2405") == ["2311", "2312", "2401", "2402", "2405"]
    assert parse_months("9912-0001") == ["9912", "0001"]
    for bad in ("2313", "2402-2311", "24-01"):
        with pytest.raises(ConfigError):
            parse_months(bad)
    assert arxiv_id("2301/2301.00001.gz") == "2301.00001"
    assert arxiv_id("9901/hep-th9901001.gz") == "hep-th/9901001"


def _bundles(root: str) -> None:
    multi = tar_bytes({"ms.tex": PAPER.encode(), "sections/method.tex": METHOD.encode(),
                       "fig.eps": b"%!PS"})
    arxiv_bundle(root, "2312", {
        "2312/2312.00001.gz": gzip.compress(PAPER.replace(r"\input{sections/method}",
                                                          METHOD).encode()),
        "2312/2312.00002.gz": gzip.compress(multi),
        "2312/2312.00003.pdf": b"%PDF-1.4",
        "2312/2312.00004.gz": b"\x1f\x8b\x08not really gzip",
        "2312/2312.00005.gz": gzip.compress(b"\\documentclass{article}\\begin{document}"
                                            b"No sections here.\\end{document}"),
    })
    arxiv_bundle(root, "2401", {"2401/2401.00001.gz": gzip.compress(PAPER.encode())})
    arxiv_bundle(root, "2402", {"2402/2402.00001.gz": gzip.compress(PAPER.encode())})


def test_arxiv_over_http_listing(tmp_path, mirror: Mirror) -> None:
    _bundles(mirror.root)
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [{"arxiv": {"months": "2312-2401", "base_url": mirror.url,
                                             "min_chars": 10, "backoff_s": 0.01},
                                   "id": "arxiv"}])
    docs = {d.id: d for d in read_output(summary, "arxiv")}
    assert sorted(docs) == ["2312.00001", "2312.00002", "2401.00001"]
    assert docs["2312.00002"].meta["main_file"] == "ms.tex"
    assert docs["2312.00001"].text == docs["2312.00002"].text  # \input inlined
    assert r"\section{Method}" in docs["2312.00002"].text
    assert docs["2312.00001"].meta["arxiv_id"] == "2312.00001"
    assert docs["2312.00001"].meta["source"] == "arxiv"
    assert not mirror.requests_for("src/arXiv_src_2402_001.tar")  # month not asked for
    c = stage_stats(summary, "arxiv")["counters"]
    assert c["arxiv_pdf_only"] == 1 and c["arxiv_bad_sources"] == 1 and c["arxiv_no_latex"] == 1
    reasons = sorted(r["reason"].split(":")[0] for r in read_side(work, "quarantine", "arxiv"))
    assert reasons == ["bad gzip", "no usable LaTeX"]


def test_arxiv_manifest_checksums_and_truncated_bundle(tmp_path) -> None:
    import hashlib

    root = str(tmp_path / "mirror")
    _bundles(root)
    rel = "src/arXiv_src_2401_001.tar"
    with open(os.path.join(root, rel), "rb") as f:
        data = f.read()
    with open(os.path.join(root, "src", "arXiv_src_manifest.xml"), "w") as f:
        f.write(f"<arXivSRC><file><filename>{rel}</filename>"
                f"<md5sum>{hashlib.md5(data).hexdigest()}</md5sum><yymm>2401</yymm></file>"
                "</arXivSRC>")
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [{"arxiv": {"months": "2312-2402", "base_url": root,
                                             "min_chars": 10}, "id": "arxiv"}])
    # Only what the manifest lists is read.
    assert [d.id for d in read_output(summary, "arxiv")] == ["2401.00001"]
    # A bundle cut short on a local mirror: read as far as it goes, then one quarantine record.
    with open(os.path.join(root, rel), "wb") as f:
        f.write(data[:700])
    work2 = str(tmp_path / "w2")
    run_pipeline(work2, [{"arxiv": {"months": "2401", "base_url": root, "min_chars": 10},
                          "id": "arxiv"}])
    q = read_side(work2, "quarantine", "arxiv")
    assert any("truncated or corrupt bundle" in r["reason"] for r in q)


def test_bz2_multistream_dump_reads_all_streams(tmp_path) -> None:
    """Wikimedia's multistream files are concatenated bz2 streams."""
    from curator.acquire.wikipedia import iter_pages
    from curator.core.context import ShardContext

    xml = wiki_xml(PAGES).decode()
    head, rest = xml.split("<page>", 1)
    p = tmp_path / "d.xml.bz2"
    p.write_bytes(bz2.compress(head.encode()) + bz2.compress(("<page>" + rest).encode()))
    ctx = ShardContext(shard="s", stage_id="t", work_dir=str(tmp_path), artifacts={})
    pages = [x for x in iter_pages(str(p), ctx) if "siteinfo" not in x]
    assert [x["id"] for x in pages] == ["7", "8", "9", "10", "11"]
