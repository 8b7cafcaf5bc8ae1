"""Build ``bench/gold/pages.jsonl.zst``: real web pages with their gold main text.

    python bench/gold/build_gold.py     # needs the mirrors and files listed in SOURCES.md

Run once by a maintainer; the result is committed, so the benchmark needs no network. Every
source is public and licensed for redistribution (bench/gold/SOURCES.md). Each row:
``id, source, url, lang, type, split, html, gold``. ``split`` is fixed by a digest of the id:
``heldout`` (40%) is never used to choose options, ``tuning`` is.
"""

from __future__ import annotations

import glob
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

MIRRORS = "/work/.mirror"
SCRAPINGHUB = f"{MIRRORS}/scrapinghub+article-extraction-benchmark/repo"
READABILITY = f"{MIRRORS}/mozilla+readability/repo"
HARVEST = f"{MIRRORS}/fhgr+harvest/repo"
TRAFILATURA = f"{MIRRORS}/adbar+trafilatura/repo"
NEWSPAPER = os.path.expanduser("~/.cache/curator-bench/newspaper4k-0.9.6.tar.gz")
PYDOCS = "/usr/share/doc/python3.11-doc/html"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pages.jsonl.zst")

_TOKEN = re.compile(r"\w+")

# Readability's test pages that are real pages (the rest are small synthetic cases of one HTML
# feature), with a page type where it is not a news/blog article.
READABILITY_SKIP = {"data-url-image", "dev418"}
READABILITY_TYPES = {
    "wikipedia": "wikipedia", "wikipedia-2": "wikipedia", "wikipedia-3": "wikipedia",
    "wikipedia-4": "wikipedia", "wikia": "article",
    "mercurial": "docs", "ietf-1": "docs", "google-sre-book-1": "docs", "mathjax": "docs",
    "mozilla-1": "product", "mozilla-2": "product",
    "archive-of-our-own": "fiction", "royal-road": "fiction", "hukumusume": "fiction",
    "ehow-1": "howto", "ehow-2": "howto", "keep-tabular-data": "article",
    "lifehacker-post-comment-load": "article", "table-style-attributes": "essay",
}


def git_show(repo: str, path: str) -> bytes:
    return subprocess.run(["git", "--git-dir", repo, "show", f"HEAD:{path}"],
                          capture_output=True, check=True).stdout


def git_ls(repo: str, path: str) -> list[str]:
    out = subprocess.run(["git", "--git-dir", repo, "ls-tree", "--name-only", f"HEAD:{path}"],
                         capture_output=True, check=True, text=True).stdout
    return out.split()


def ntok(text: str) -> int:
    return len(_TOKEN.findall(text))


def block_text(html: str) -> str:
    """Text of an HTML fragment with a line break after each block element (gold files given
    as HTML: Readability's expected output)."""
    import lxml.html

    root = lxml.html.fromstring(html)
    blocks = {"p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote",
              "tr", "dt", "dd", "figcaption", "table", "ul", "ol", "section", "article", "br"}
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag in blocks:
            el.tail = "\n" + (el.tail or "")
    text = root.text_content()
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def split_of(pid: str) -> str:
    return "heldout" if int(hashlib.sha1(pid.encode()).hexdigest(), 16) % 10 < 4 else "tuning"


def scrapinghub() -> list[dict]:
    gt = json.loads(git_show(SCRAPINGHUB, "ground-truth.json"))
    import gzip

    from curator.extract.extract_html import decode_html

    rows = []
    for key, item in sorted(gt.items()):
        raw = gzip.decompress(git_show(SCRAPINGHUB, f"html/{key}.html.gz"))
        rows.append({"id": f"scrapinghub/{key[:16]}", "source": "scrapinghub", "url": item["url"],
                     "type": "article", "html": decode_html(raw)[0],
                     "gold": item["articleBody"]})
    return rows


def readability() -> list[dict]:
    from curator.extract.extract_html import decode_html

    rows = []
    base = "test/test-pages"
    for name in git_ls(READABILITY, base):
        if name in READABILITY_SKIP:
            continue
        raw = git_show(READABILITY, f"{base}/{name}/source.html")
        if len(raw) < 10_000:  # a synthetic case of one HTML feature, not a page
            continue
        gold = block_text(git_show(READABILITY, f"{base}/{name}/expected.html").decode("utf-8"))
        meta = json.loads(git_show(READABILITY, f"{base}/{name}/expected-metadata.json"))
        rows.append({"id": f"readability/{name}", "source": "readability", "url": "",
                     "type": READABILITY_TYPES.get(name, "article"),
                     "lang_hint": (meta.get("lang") or "").split("-")[0].lower(),
                     "html": decode_html(raw)[0], "gold": gold})
    return rows


def newspaper() -> list[dict]:
    from curator.extract.extract_html import decode_html

    html: dict[str, bytes] = {}
    txt: dict[str, str] = {}
    with tarfile.open(NEWSPAPER) as tf:
        for m in tf.getmembers():
            mm = re.search(r"/tests/data/(html|txt)/([^/]+)\.(html|txt)$", m.name)
            if not mm or not m.isfile():
                continue
            data = tf.extractfile(m).read()  # type: ignore[union-attr]
            if mm.group(1) == "html":
                html[mm.group(2)] = data
            else:
                txt[mm.group(2)] = data.decode("utf-8")
    return [{"id": f"newspaper4k/{n}", "source": "newspaper4k", "url": "", "type": "article",
             "html": decode_html(html[n])[0], "gold": txt[n]}
            for n in sorted(set(html) & set(txt))]


def pydocs(limit: int = 40) -> list[dict]:
    sys.path.insert(0, os.path.join(REPO, "bench"))
    from extraction_quality import sphinx_gold

    from curator.extract.extract_html import decode_html

    files = sorted(f for f in glob.glob(f"{PYDOCS}/**/*.html", recursive=True)
                   if os.path.getsize(f) > 8000 and "/whatsnew/" not in f)
    step = len(files) / (limit * 3)
    picked = [files[int(i * step)] for i in range(limit * 3)]
    rows = []
    for f in picked:
        with open(f, "rb") as fh:
            html = decode_html(fh.read())[0]
        gold = sphinx_gold(html)
        if gold and 100 <= ntok(gold) <= 6000:
            rel = os.path.relpath(f, PYDOCS)
            rows.append({"id": f"pydocs/{rel}", "source": "python-docs",
                         "url": f"https://docs.python.org/3.11/{rel}", "type": "docs",
                         "html": html, "gold": gold})
        if len(rows) >= limit:
            break
    return rows


def harvest() -> list[dict]:
    """Forum threads of fhgr/harvest's gold corpus: the page as its authors downloaded it and
    the text of each post, marked by hand (``post_text.surface_form``, one post per line)."""
    from curator.extract.extract_html import decode_html

    rows = []
    base = "corpus/goldDocuments"
    for name in git_ls(HARVEST, base):
        if not name.endswith(".json"):
            continue
        doc = json.loads(git_show(HARVEST, f"{base}/{name}"))
        posts = [a["post_text"]["surface_form"] for a in doc["gold_standard_annotation"]]
        html = doc["html"]
        if isinstance(html, bytes):
            html = decode_html(html)[0]
        rows.append({"id": f"harvest/{name[:-5][:80]}", "source": "harvest", "url": doc["url"],
                     "type": "forum", "html": html, "gold": "\n".join(posts)})
    return rows


def hand_rules() -> list[dict]:
    """Listing, product and service pages of trafilatura's evaluation set with gold made by
    an explicit per-page rule (bench/gold/hand_rules.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from hand_rules import RULES, rule_gold

    from curator.extract.extract_html import decode_html

    urls = {v["file"]: u for u, v in json.loads(git_show(TRAFILATURA, "tests/evaldata.json")).items()}
    rows = []
    for name, rule in sorted(RULES.items()):
        raw = None
        for folder in ("tests/eval", "tests/cache"):
            try:
                raw = git_show(TRAFILATURA, f"{folder}/{name}")
                break
            except subprocess.CalledProcessError:
                continue
        if raw is None:
            raise SystemExit(f"build_gold: {name} not in {TRAFILATURA}")
        html = decode_html(raw)[0]
        rows.append({"id": f"trafilatura-hand/{name[:-5]}", "source": "trafilatura-hand",
                     "url": urls.get(name, ""), "type": rule["type"], "html": html,
                     "gold": rule_gold(html, rule)})
    return rows


def main() -> int:
    import zstandard

    from curator.filters.language_id import predict_languages

    rows = scrapinghub() + readability() + newspaper() + pydocs() + harvest() + hand_rules()
    rows = [r for r in rows if ntok(r["gold"]) >= 50]  # headline-only gold says nothing
    langs, _ = predict_languages([r["gold"][:2000] for r in rows])
    for r, lang in zip(rows, langs):
        hint = r.pop("lang_hint", "")
        r["lang"] = hint if hint else lang
        r["split"] = split_of(r["id"])
    buf = io.BytesIO()
    with zstandard.ZstdCompressor(level=19).stream_writer(buf, closefd=False) as w:
        for r in rows:
            keys = ("id", "source", "url", "lang", "type", "split", "gold", "html")
            w.write((json.dumps({k: r[k] for k in keys}, ensure_ascii=False) + "\n").encode())
    with open(OUT, "wb") as fh:
        fh.write(buf.getvalue())
    from collections import Counter

    print(f"{len(rows)} pages, {len(buf.getvalue()) / 1e6:.1f} MB -> {OUT}")
    for field in ("source", "lang", "type", "split"):
        print(field, dict(Counter(r[field] for r in rows).most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
