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
import tarfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MIRRORS = "/work/.mirror"
SCRAPINGHUB = f"{MIRRORS}/scrapinghub+article-extraction-benchmark/repo"
READABILITY = f"{MIRRORS}/mozilla+readability/repo"
HARVEST = f"{MIRRORS}/fhgr+harvest/repo"
TRAFILATURA = f"{MIRRORS}/adbar+trafilatura/repo"
WCXB = f"{MIRRORS}/Murrough-Foley+web-content-extraction-benchmark/repo"
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

    from curator.extract.charset import decode_html

    rows = []
    for key, item in sorted(gt.items()):
        raw = gzip.decompress(git_show(SCRAPINGHUB, f"html/{key}.html.gz"))
        rows.append({"id": f"scrapinghub/{key[:16]}", "source": "scrapinghub", "url": item["url"],
                     "type": "article", "html": decode_html(raw)[0],
                     "gold": item["articleBody"]})
    return rows


def readability() -> list[dict]:
    from curator.extract.charset import decode_html

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
    from curator.extract.charset import decode_html

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
    from bench.gold_set import sphinx_gold
    from curator.extract.charset import decode_html

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
    from curator.extract.charset import decode_html

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


# WCXB page types taken, and how many of each (the first by sha1 of the file id, among pages
# whose type its authors marked "verified", gzip HTML <= WCXB_MAX_GZ, gold >= 50 tokens).
WCXB_TYPES = {"product": 45, "collection": 40, "listing": 40, "service": 30, "forum": 30}
WCXB_MAX_GZ = 120_000


def wcxb() -> list[dict]:
    """Forum, product, collection, listing and service pages of WCXB (Foley 2026, CC-BY-4.0):
    gold ``main_content`` drafted by an LLM, then reviewed by people in four passes (its
    README). Articles and docs are left out: the set has enough of them."""
    import gzip

    from curator.extract.charset import decode_html

    meta = json.loads(git_show(WCXB, "metadata.json"))["files"]
    sizes = {}
    out = subprocess.run(["git", "--git-dir", WCXB, "ls-tree", "-r", "-l", "HEAD"],
                         capture_output=True, check=True, text=True).stdout
    for line in out.splitlines():
        info, path = line.split("\t", 1)
        sizes[path] = int(info.split()[3])
    by_type: dict[str, list[dict]] = {t: [] for t in WCXB_TYPES}
    for fid in sorted(meta, key=lambda f: hashlib.sha1(f.encode()).hexdigest()):
        ptype, split = meta[fid]["page_type"], meta[fid]["split"]
        if ptype not in WCXB_TYPES:
            continue
        path = f"{split}/html/{fid}.html.gz"
        if sizes.get(path, WCXB_MAX_GZ + 1) > WCXB_MAX_GZ:
            continue
        gt = json.loads(git_show(WCXB, f"{split}/ground-truth/{fid}.json"))
        conf = gt.get("_internal", {}).get("page_type", {}).get("confidence")
        gold = (gt.get("ground_truth") or {}).get("main_content") or ""
        if conf != "verified" or ntok(gold) < 50:
            continue
        by_type[ptype].append({"id": f"wcxb/{fid}", "source": "wcxb", "url": gt.get("url", ""),
                               "type": ptype, "path": path, "gold": gold})
    rows = []
    for ptype, cands in by_type.items():
        taken = 0
        for r in cands:
            if taken == WCXB_TYPES[ptype]:
                break
            html = decode_html(gzip.decompress(git_show(WCXB, r.pop("path"))))[0]
            if gold_in_page(html, r["gold"]) < 0.8:  # gold not in the HTML's text: the page
                continue                             # was rendered by scripts (JSON, JS apps)
            r["html"] = html
            rows.append(r)
            taken += 1
    return rows


def page_text(html: str) -> str:
    """The page's text outside ``<script>/<style>/<template>``, the bytes parsed as the UTF-8
    they are: left to itself, lxml decodes them by the page's ``<meta charset>`` (GBK,
    ISO-8859-1...), which breaks every non-ASCII letter."""
    import lxml.html

    parser = lxml.html.HTMLParser(encoding="utf-8")
    tree = lxml.html.document_fromstring(html.encode("utf-8"), parser=parser)
    for el in tree.xpath("//script|//style|//template"):
        el.drop_tree()
    return tree.text_content()


def gold_in_page(html: str, gold: str) -> float:
    """Share of the gold's tokens found in the page's text outside <script>/<style>: what
    any extractor working on the HTML could reach."""
    from bench.gold_set import prf

    return prf(page_text(html), gold)[1]


def trafilatura_page(name: str) -> bytes | None:
    """A page of trafilatura's evaluation set: ``tests/eval/<name>``, else
    ``tests/cache/<name>`` (where ``evaldata.json`` points for some), else None."""
    for folder in ("tests/eval", "tests/cache"):
        try:
            return git_show(TRAFILATURA, f"{folder}/{name}")
        except subprocess.CalledProcessError:
            continue
    return None


def hand_rules() -> list[dict]:
    """Listing, product and service pages of trafilatura's evaluation set with gold made by
    an explicit per-page rule (bench/gold/hand_rules.py)."""
    from bench.gold.hand_rules import RULES, rule_gold
    from curator.extract.charset import decode_html

    evaldata = json.loads(git_show(TRAFILATURA, "tests/evaldata.json"))
    urls = {v["file"]: u for u, v in evaldata.items()}
    rows = []
    for name, rule in sorted(RULES.items()):
        raw = trafilatura_page(name)
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

    rows = (scrapinghub() + readability() + newspaper() + pydocs() + harvest() + wcxb()
            + hand_rules())
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
