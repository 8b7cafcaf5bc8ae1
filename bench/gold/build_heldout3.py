"""Build ``bench/gold/heldout3.jsonl.zst``: a third evaluation set, held out as a whole.

    python -m bench.gold.build_heldout3   # needs the mirrors listed in bench/gold/SOURCES.md

News pages with full gold from two public test suites, none of them in ``pages.jsonl.zst``
or ``unseen.jsonl.zst``:

* flairNLP/fundus: the test pages of its per-site parsers that its Git history (old commits
  and pull-request refs) holds but commit 18da6e5 (the one ``unseen.jsonl.zst`` took) does
  not: pages replaced by newer ones, and pages of pull requests. Each is paired with the
  ``<Publisher>.json`` and ``meta.info`` of the commit it was last seen in;
* codelucas/newspaper: ``tests/data/html/<name>.html`` and the expected full text
  ``tests/data/text/<name>.txt`` of its full-text test (the URL of ``<domain><n>`` is the
  *n*-th URL of that domain in ``tests/data/fulltext_url_list.txt``, as the test names them).

Same row format, filters and language detection as ``build_unseen.py`` (its helpers are
imported), except that "50 words" is counted as the bench counts tokens. **Every row is
``split: heldout``**: no option may be chosen on these pages.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
from collections import Counter
from urllib.parse import urlparse

from bench.gold.build_unseen import (
    FUNDUS,
    MIRRORS,
    Seen,
    decode,
    fundus_gold,
    head_commit,
    write_rows,
)

NEWSPAPER = f"{MIRRORS}/codelucas+newspaper/repo"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "heldout3.jsonl.zst")
# The fundus commit unseen.jsonl.zst took: pages in its tree are already in that set.
FUNDUS_SEEN = "18da6e53592f99cf0ac5770dc63d6ba99ba63ae8"
FUNDUS_DATA = "tests/resources/parser/test_data"

LICENCES = {"fundus-history": "MIT", "newspaper": "MIT"}

# newspaper's test pages that the first set already took from newspaper4k (its fork, same
# files): left out by name as well as by URL.
NEWSPAPER_TAKEN = {"arabic", "chinese", "cnn", "spanish", "thai", "cleveland.com1"}


def git(repo: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", repo, *args], capture_output=True, check=True).stdout


def git_at(repo: str, rev: str, path: str) -> bytes | None:
    """The file at ``rev``, or None where it is absent."""
    try:
        return git(repo, "show", f"{rev}:{path}")
    except subprocess.CalledProcessError:
        return None


def _version_key(v: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", v)]


def fundus_history() -> list[dict]:
    """Test pages of fundus's parsers found in its history (any ref) but not at
    ``FUNDUS_SEEN``, each with the article body its parser version returns, taken from the
    publisher's JSON at the last commit that holds the page (the parent of the commit that
    deleted it, else the last commit that added or changed it). The page of parser version
    *k* is the *k*-th of that publisher's files in ``meta.info`` by crawl date."""
    seen = set(
        git(FUNDUS, "ls-tree", "-r", "--name-only", "-z", FUNDUS_SEEN, FUNDUS_DATA + "/")
        .decode()
        .split("\0")
    )
    names = git(FUNDUS, "log", "--all", "--format=", "--name-only", "--", FUNDUS_DATA).decode()
    paths = sorted(
        {
            p
            for p in names.split("\n")
            if re.fullmatch(re.escape(FUNDUS_DATA) + r"/[^/]+/[^/]+_\d{4}_\d{2}_\d{2}\.html\.gz", p)
        }
        - seen
    )
    rows = []
    for path in paths:
        deleted = git(FUNDUS, "log", "--all", "-1", "--diff-filter=D", "--format=%H", "--", path)
        if deleted.strip():
            rev = deleted.decode().strip() + "^"
        else:
            rev = (
                git(FUNDUS, "log", "--all", "-1", "--diff-filter=AM", "--format=%H", "--", path)
                .decode()
                .strip()
            )
        folder, fname = path.rsplit("/", 1)
        publisher = fname.rsplit("_", 3)[0]
        raw = git_at(FUNDUS, rev, path)
        meta_raw = git_at(FUNDUS, rev, f"{folder}/meta.info")
        expected_raw = git_at(FUNDUS, rev, f"{folder}/{publisher}.json")
        if raw is None or meta_raw is None or expected_raw is None:
            continue
        meta = json.loads(meta_raw)
        expected = json.loads(expected_raw)
        if fname not in meta or not all(isinstance(v, dict) for v in expected.values()):
            continue
        files = sorted(
            (f for f in meta if f.rsplit("_", 3)[0] == publisher),
            key=lambda f: meta[f].get("crawl_date", ""),
        )
        versions = sorted(expected, key=_version_key)
        k = files.index(fname)
        if k >= len(versions):
            continue
        rows.append(
            {
                "id": f"fundus-history/{folder.rsplit('/', 1)[-1]}/{fname[:-8]}",
                "source": "fundus-history",
                "url": meta[fname].get("url", ""),
                "family": "news",
                "type": "article",
                "gold": fundus_gold(expected[versions[k]]),
                "html": decode(gzip.decompress(raw)),
                "commit": git(FUNDUS, "rev-parse", rev).decode().strip(),
            }
        )
    return rows


def _base_domain(url: str) -> str:
    """newspaper's ``get_base_domain`` (tests/unit_tests.py): uk.reuters.com -> reuters.com."""
    domain = urlparse(url).netloc
    chunks = domain.split(".")
    return ".".join(
        chunks[-3:] if ".".join(chunks[-2:]) in ("co.uk", "com.au", "au.com") else chunks[-2:]
    )


def newspaper() -> list[dict]:
    """newspaper's full-text test pages: the HTML and the expected text committed beside it."""
    urls: dict[str, str] = {}
    counts: Counter = Counter()
    for url in git(NEWSPAPER, "show", "HEAD:tests/data/fulltext_url_list.txt").decode().split():
        dom = _base_domain(url)
        counts[dom] += 1
        urls[f"{dom}{counts[dom]}"] = url
    rows = []
    for path in (
        git(NEWSPAPER, "ls-tree", "--name-only", "-z", "HEAD", "tests/data/text/")
        .decode()
        .split("\0")
    ):
        if not path.endswith(".txt"):
            continue
        name = path.rsplit("/", 1)[-1][:-4]
        if name in NEWSPAPER_TAKEN:
            continue
        raw = git_at(NEWSPAPER, "HEAD", f"tests/data/html/{name}.html")
        if raw is None:
            raw = git_at(NEWSPAPER, "HEAD", f"tests/data/html/{name}_article.html")
        if raw is None:
            continue
        rows.append(
            {
                "id": f"newspaper/{name}",
                "source": "newspaper",
                "url": urls.get(name, ""),
                "family": "news",
                "type": "article",
                "gold": git(NEWSPAPER, "show", f"HEAD:{path}").decode("utf-8").strip(),
                "html": decode(raw),
            }
        )
    return rows


def main() -> int:

    from bench.family_quality import load_unseen
    from bench.gold.build_gold import gold_in_page
    from bench.gold_set import load_gold, tokens
    from curator.filters.language_id import predict_languages

    old = Seen(load_gold("all") + load_unseen("all"))
    rows = fundus_history() + newspaper()
    kept, dropped = [], Counter()
    urls: set[str] = set()
    for r in rows:
        r["must"], r["must_not"] = [], []
        url = r["url"].rstrip("/")
        if old.holds(url, r["html"]):
            dropped["page already in pages.jsonl.zst or unseen.jsonl.zst"] += 1
            continue
        if url and url in urls:
            dropped["same URL as a page taken before"] += 1
            continue
        # 50 words as the bench counts them (CJK, Thai, Burmese, Hangul per character):
        # build_unseen.py's "under 50 words and 150 characters" would let through golds of
        # 24-49 words (teasers, paywall stubs, newspaper's notices).
        if sum(tokens(r["gold"]).values()) < 50:
            dropped["gold under 50 words"] += 1
            continue
        if gold_in_page(r["html"], r["gold"]) < 0.8:  # a failure note, a page rendered by
            dropped["gold not in the page's text"] += 1  # scripts, or a mismatched pair
            continue
        urls.add(url)
        kept.append(r)
    langs, _ = predict_languages([r["gold"][:2000] for r in kept])
    for r, lang in zip(kept, langs):
        r["lang"] = lang
        r["split"] = "heldout"
        r["licence"] = LICENCES[r["source"]]
    size = write_rows(kept, OUT)
    print(f"{len(kept)} pages, {size / 1e6:.1f} MB -> {OUT}; dropped {dict(dropped)}")
    print(f"  fundus-history: mirror at {head_commit(FUNDUS)}; each page's commit:")
    for r in kept:
        if "commit" in r:
            print(f"    {r['id']} {r['commit'][:10]}")
    print(f"  newspaper: commit {head_commit(NEWSPAPER)}")
    for fld in ("source", "family", "lang", "split"):
        print(fld, dict(Counter(r[fld] for r in kept).most_common()))
    print(
        "news lang", dict(Counter(r["lang"] for r in kept if r["family"] == "news").most_common())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
