"""url_blocklist and extract_html stages, and the example pipeline on the bundled sample
through the real ``curator`` command."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET

from tests.acquire.helpers_acquire import (
    PROSE,
    page,
    read_output,
    read_side,
    run_pipeline,
    stage_stats,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "data", "sample")


def _jsonl(path: str, recs: list[dict]) -> str:
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
    return path


def test_url_blocklist(tmp_path) -> None:
    recs = [{"id": str(i), "text": "t", "url": u} for i, u in enumerate([
        "https://spam.example/a", "http://a.b.spam.example:8080/x", "https://notspam.example/",
        "https://ok.example/casino-bonus", "https://ok.example/fine", "https://BAD.ORG./y"])]
    recs.append({"id": "nourl", "text": "t"})
    src = _jsonl(str(tmp_path / "in.jsonl"), recs)
    dom = tmp_path / "domains.txt"
    dom.write_text("# blocklist\nbad.org\n\n")
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [
        {"read_jsonl": {"paths": src}},
        {"url_blocklist": {"domains": ["spam.example"], "domain_files": [str(dom)],
                           "patterns": ["casino"]}, "id": "urls"}])
    assert [d.id for d in read_output(summary, "urls")] == ["2", "4", "nourl"]
    rej = {r["id"]: r["rejected"]["reason"] for r in read_side(work, "rejected", "urls")}
    assert rej == {"0": "url_blocked_domain", "1": "url_blocked_domain",
                   "3": "url_blocked_pattern", "5": "url_blocked_domain"}
    assert stage_stats(summary, "urls")["counters"]["url_missing"] == 1


def test_extract_html_stage(tmp_path) -> None:
    src = _jsonl(str(tmp_path / "in.jsonl"), [
        # justext keeps long, stop-word-rich paragraphs (> 200 chars)
        {"id": "a", "text": page("A", [PROSE[0] + " " + PROSE[1], PROSE[2] + " " + PROSE[0]]),
         "url": "https://a.example"},
        {"id": "b", "text": "<html><body><nav>Home | About</nav></body></html>"},
    ])
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [{"read_jsonl": {"paths": src}},
                                  {"extract_html": {"extractor": "justext"}, "id": "x"}])
    docs = read_output(summary, "x")
    assert [d.id for d in docs] == ["a"] and docs[0].meta["extractor"] == "justext"
    assert PROSE[0] in docs[0].text and "Menu item" not in docs[0].text
    assert [r["id"] for r in read_side(work, "rejected", "x")] == ["b"]


def _sample_html_responses() -> int:
    """Non-empty HTML responses in the sample WARCs, counted with warcio directly."""
    from warcio.archiveiterator import ArchiveIterator

    base = os.path.join(SAMPLE, "commoncrawl")
    with gzip.open(os.path.join(base, "crawl-data/CC-MAIN-2024-10/warc.paths.gz"), "rt") as f:
        paths = f.read().split()
    n = 0
    for p in paths:
        with open(os.path.join(base, p), "rb") as f:
            for rec in ArchiveIterator(f):
                ctype = rec.http_headers.get_header("Content-Type") if rec.http_headers else ""
                if rec.rec_type == "response" and ctype.startswith("text/html") and \
                        rec.content_stream().read():
                    n += 1
    return n


def _sample_arxiv_members() -> tuple[set[str], int]:
    ids, pdfs = set(), 0
    src = os.path.join(SAMPLE, "arxiv", "src")
    for name in os.listdir(src):
        if name.endswith(".tar"):
            with tarfile.open(os.path.join(src, name)) as tf:
                for m in tf.getmembers():
                    stem = os.path.basename(m.name)
                    if stem.endswith(".pdf"):
                        pdfs += 1
                    else:
                        ids.add(stem.removesuffix(".gz"))
    return ids, pdfs


def test_example_pipeline_on_bundled_sample(tmp_path) -> None:
    work = str(tmp_path / "work")
    cmd = [sys.executable, "-m", "curator", "run",
           os.path.join(REPO, "pipelines", "acquire-example.yaml"), "--work-dir", work,
           "--set", "stages.wiki.limit_per_file=4"]
    env = dict(os.environ, PYTHONPATH=REPO)
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(work, "report.json")) as f:
        report = {s["id"]: s for s in json.load(f)["stages"]}
    # Every non-empty HTML response becomes a document (the sample has no bad HTML pages).
    # genindex-B.html, an index of links, has no main text for trafilatura; the default's
    # resiliparse fallback gives its link text (it used to be rejected `extract_empty`).
    assert report["cc"]["docs_out"] == _sample_html_responses()
    assert not report["cc"].get("rejected")
    assert report["cc"]["quarantined"] == {"empty page": 1}
    assert read_side(work, "rejected", "cc") == []
    assert report["wiki"]["docs_out"] == 4
    ids, pdfs = _sample_arxiv_members()
    assert report["arxiv"]["counters"]["arxiv_pdf_only"] == pdfs
    out = {}
    for name in os.listdir(os.path.join(work, "acquired")):
        with gzip.open(os.path.join(work, "acquired", name), "rt") as f:
            for line in f:
                rec = json.loads(line)
                out[rec["id"]] = rec
    arx = [r for r in out.values() if r["source"] == "arxiv"]
    assert arx and {r["id"] for r in arx} <= ids and all(r["text"].startswith("\\section")
                                                         for r in arx)
    wiki = [r for r in out.values() if r["source"] == "wikipedia"]
    assert all(r["url"] == "https://en.wikipedia.org/wiki/" + r["title"].replace(" ", "_")
               for r in wiki)
    assert len(out) == report["write_jsonl"]["docs_out"]
    genindex = [r for r in out.values() if (r.get("url") or "").endswith("/genindex-B.html")]
    assert len(genindex) == 1 and "b16decode() (in module base64)" in genindex[0]["text"]
    # Rerunning resumes: nothing is redone.
    r2 = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r2.returncode == 0 and r2.stderr.count("done earlier, skipped") == 5


def test_wikipedia_on_sample_matches_independent_parse(tmp_path) -> None:
    """Our streaming reader keeps exactly the main-namespace, non-redirect pages, in order,
    as a plain ElementTree parse of the whole bundled dump says."""
    import bz2

    d = os.path.join(SAMPLE, "wikimedia/enwiki/20160501")
    name = next(n for n in os.listdir(d) if n.endswith(".bz2"))
    with bz2.open(os.path.join(d, name)) as f:
        root = ET.parse(io.BytesIO(f.read())).getroot()
    ns = {"m": root.tag.split("}")[0].strip("{")}
    want = [(p.findtext("m:id", namespaces=ns), p.findtext("m:title", namespaces=ns))
            for p in root.findall("m:page", ns)
            if p.findtext("m:ns", namespaces=ns) == "0" and p.find("m:redirect", ns) is None]
    summary = run_pipeline(str(tmp_path / "w"), [{"wikipedia": {
        "dump_date": "latest", "base_url": os.path.join(SAMPLE, "wikimedia"),
        "limit_per_file": 3}, "id": "wiki"}])
    got = [(d.meta["page_id"], d.meta["title"]) for d in read_output(summary, "wiki")]
    assert got == want[:3]


def test_custom_source_api(tmp_path, mirror) -> None:
    for i, body in [(1, "header\n*** START OF BOOK ONE ***\nIt was a dark night."),
                    (2, "no start marker here"),
                    (3, "x\n*** START OF BOOK THREE ***\nThe end."),
                    (4, "*** START OF A HUGE BOOK ***\n" + "word " * 300_000)]:
        with open(os.path.join(mirror.root, f"{i}.txt.gz"), "wb") as f:
            f.write(gzip.compress(body.encode()))
    mirror.faults["3.txt.gz"] = ["500"]
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [{"tests.acquire.helpers_acquire:GzBooks": {
        "base_url": mirror.url, "count": 4}, "id": "books"}], max_doc_mb=1)
    docs = read_output(summary, "books")
    assert [d.id for d in docs] == ["gutenberg:1", "gutenberg:3"]
    assert docs[0].text == "*** START OF BOOK ONE ***\nIt was a dark night."
    assert docs[0].meta["source"] == "books"
    q = read_side(work, "quarantine", "books")
    assert sorted(r["reason"].split(":")[0] for r in q) == ["extract failed", "too_large"]
    assert any(r["reason"].startswith("extract failed: ValueError") for r in q)
    assert stage_stats(summary, "books")["counters"]["download_retries"] == 1


def test_file_url_base_reads_the_sample_in_place(tmp_path) -> None:
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [{"common_crawl": {
        "snapshot": "CC-MAIN-2024-10", "base_url": "file://" + os.path.join(SAMPLE, "commoncrawl"),
        "files": "1", "extractor": "resiliparse"}, "id": "cc"}])
    docs = read_output(summary, "cc")
    assert docs and all(d.meta["url"].startswith("https://") for d in docs)
    assert stage_stats(summary, "cc")["counters"]["files_local"] == 1
    assert not os.path.exists(os.path.join(work, "downloads", "cc", "crawl-data",
                                           "CC-MAIN-2024-10", "segments"))  # not copied
