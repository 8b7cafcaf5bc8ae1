"""A learned line filter after extraction: measured, not kept (docs/extract.md#learned-line-filter).

    python bench/line_filter.py            # ~3 min on 2 cores: extract, label, train, score

Question: can a small model, trained only on pages outside the gold set,
drop the lines of curator's default text that are page furniture (menus, "Beiträge: 6",
"Re: <thread title>", spec blocks) and so lift token F1 where choosing among extractors
cannot (the per-page oracle over every trafilatura mode and resiliparse is 0.902 on tuning)?

Training pages: WCXB (Murrough-Foley/web-content-extraction-benchmark, CC-BY-4.0, mirrored
with ``fetch github:Murrough-Foley/web-content-extraction-benchmark``), dev and test, every
page type, without the 185 pages in ``bench/gold`` and without every page whose host is the
host of *any* gold page (so no site of a held-out page is learned from); gold >= 20 words,
HTML <= 1.5 M characters. dragnet_data is not used: its data is AGPLv3 (bench/gold/SOURCES.md).

Each line of ``extract_text(html)`` (the default) is labelled main text when >= 50% of its
word trigrams (the whole line for lines under 3 words) occur in the page's gold. Features are
the line's text and its place in the text (no DOM: a second parse would cost the CPU budget):
see :data:`FEATURES`. Models: logistic regression (unweighted, weighted by words, by
sqrt(words)) and, as a ceiling for the features, gradient-boosted trees of depth 4. Each is
applied to the default's text of the 379 *tuning* pages, dropping lines whose probability of
main text is under a threshold (0.1 to 0.5), and scored with bench/extraction_quality.py's
token F1. Two bounds are printed as well: the line oracle (drop exactly the lines labelled
furniture) and the same models cross-validated on the tuning pages' own lines (5 folds by
page), i.e. with labels of the gold set's own conventions. The held-out split is not read.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from multiprocessing import Pool
from urllib.parse import urlparse

import numpy as np

from bench.common import bench_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.gold_set import load_gold, prf  # noqa: E402

WCXB = "/work/.mirror/Murrough-Foley+web-content-extraction-benchmark/repo"  # as build_gold.py

_SENT_END = re.compile(r"[.!?\u3002\uff01\uff1f:;\u2026][\"'\u201d\u2019)\]]*$")
_DATE = re.compile(r"\b\d{1,4}[./-]\d{1,2}[./-]\d{2,4}\b|\b\d{1,2}:\d{2}\b")
_CURRENCY = re.compile(r"[$\u20ac\u00a3\u00a5\u20b9]|\b(?:USD|EUR|GBP)\b")
_URLISH = re.compile(r"https?://|www\.|@\w|\.com\b")
_WORDS = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
_ANCHOR = re.compile(r"<a\b[^>]*>(.*?)</a\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|\w+);", re.IGNORECASE)

FEATURES = (
    "log_words", "log_chars", "sent_end", "digits", "upper", "symbols", "list_item", "table_row",
    "title_case", "repeated", "pos", "head", "tail", "log_share", "log_page_words",
    "log_prev", "log_next", "urlish", "date", "currency", "mean_word_len", "pipe_or_bullet",
    "is_link", "link_words", "longest_share", "log_pattern_repeats", "win_log_words",
    "win_short", "win_link", "page_short",
)


def _norm(s: str) -> str:
    return " ".join(_WORDS.findall(s.lower()))


def anchor_texts(html: str) -> set[str]:
    """Normalised texts of the page's ``<a>`` elements (a regex pass: no second parse)."""
    out = set()
    for m in _ANCHOR.finditer(html):
        t = _norm(_ENTITY.sub(" ", _TAG.sub(" ", m.group(1))))
        if t:
            out.add(t)
    return out


def features(lines: list[str], anchors: set[str]) -> np.ndarray:
    """One row of :data:`FEATURES` per line of a page's text."""
    n = len(lines)
    counts: dict[str, int] = {}
    for ln in lines:
        counts[ln] = counts.get(ln, 0) + 1
    nwords = [len(ln.split()) for ln in lines]
    total = max(1, sum(nwords))
    longest = max(nwords) if nwords else 1
    anchor_words: set[str] = set()
    for a in anchors:
        anchor_words.update(a.split())
    pats = [_DIGITS.sub("0", ln.strip()) for ln in lines]
    pat_counts: dict[str, int] = {}
    for pt in pats:
        pat_counts[pt] = pat_counts.get(pt, 0) + 1
    logw = np.log1p(np.array(nwords, float))
    short = (np.array(nwords) < 4).astype(float)
    rows = np.zeros((n, len(FEATURES)))
    for i, ln in enumerate(lines):
        w = nwords[i]
        chars = max(1, len(ln))
        letters = sum(c.isalpha() for c in ln) or 1
        toks = ln.split()
        norm = _norm(ln)
        ntoks = norm.split()
        rows[i] = (
            math.log1p(w), math.log1p(len(ln)),
            1.0 if _SENT_END.search(ln) else 0.0,
            sum(c.isdigit() for c in ln) / chars,
            sum(c.isupper() for c in ln) / letters,
            sum(not c.isalnum() and not c.isspace() for c in ln) / chars,
            1.0 if ln.startswith("- ") else 0.0,
            1.0 if "\t" in ln else 0.0,
            sum(t[:1].isupper() for t in toks) / max(1, len(toks)),
            1.0 if counts[ln] > 1 else 0.0,
            i / max(1, n - 1),
            1.0 if i < 0.1 * n else 0.0,
            1.0 if i >= 0.9 * n else 0.0,
            math.log(w / total + 1e-4),
            math.log1p(total),
            math.log1p(nwords[i - 1]) if i else 0.0,
            math.log1p(nwords[i + 1]) if i + 1 < n else 0.0,
            1.0 if _URLISH.search(ln) else 0.0,
            1.0 if _DATE.search(ln) else 0.0,
            1.0 if _CURRENCY.search(ln) else 0.0,
            len(ln.replace(" ", "")) / max(1, len(toks)) / 10.0,
            1.0 if ("|" in ln or "\u2022" in ln or "\u00bb" in ln) else 0.0,
            1.0 if norm and (norm in anchors or norm.removeprefix("- ") in anchors) else 0.0,
            sum(t in anchor_words for t in ntoks) / max(1, len(ntoks)),
            w / max(1, longest),
            math.log(pat_counts[pats[i]]),
            0.0, 0.0, 0.0, float(short.mean()) if n else 0.0,
        )
    if n:
        k = np.ones(7)

        def win(v: np.ndarray) -> np.ndarray:
            return np.convolve(v, k, "full")[3:3 + n]

        cnt = win(np.ones(n))
        link = rows[:, FEATURES.index("is_link")]
        rows[:, FEATURES.index("win_log_words")] = win(logw) / cnt
        rows[:, FEATURES.index("win_short")] = win(short) / cnt
        rows[:, FEATURES.index("win_link")] = win(link) / cnt
    return rows


# -- DOM features (the second feature set) ---------------------------------------------------

_CLASS_TOKENS = (
    "nav", "menu", "footer", "header", "sidebar", "side", "related", "comment", "meta",
    "breadcrumb", "share", "social", "widget", "post", "content", "article", "entry", "message",
    "text", "body", "main", "title", "user", "author", "date", "tag", "cat", "button", "btn",
    "price", "product", "review", "rating", "cart", "form", "search", "login", "signature",
    "thread", "reply", "quote", "copyright", "cookie", "banner", "ad", "promo", "list", "item",
    "card", "link", "desc", "spec", "detail",
)
_TAGS = ("nav", "header", "footer", "aside", "form", "main", "article", "table", "ul", "ol", "a",
         "h", "p", "li", "td", "button", "label", "select")
_SPLIT = re.compile(r"[^a-z]+")


def dom_features(lines: list[str], html: str) -> np.ndarray:
    """Features of the smallest element whose text is the line (or starts with its first six
    words): unmatched, link density, depth, class/id tokens of it and its ancestors, enclosing
    tags, siblings of its tag, children, inline tag. A second lxml parse and a text per element:
    ~100 ms a page here, far over the CPU budget; measured to see whether DOM features would be
    worth making fast."""
    import lxml.html

    out = np.zeros((len(lines), 3 + len(_CLASS_TOKENS) + len(_TAGS) + 3))
    try:
        tree = lxml.html.fromstring(html.encode("utf-8"))
    except (ValueError, lxml.etree.ParserError):
        out[:, 0] = 1
        return out
    for el in tree.xpath("//script|//style|//noscript|//template"):
        el.drop_tree()
    exact, prefix = {}, {}
    for el in tree.iter():
        if not isinstance(el.tag, str):
            continue
        t = _norm(el.text_content())
        if t and len(t) <= 3000:
            exact[t] = el  # document order: a descendant with the same text wins
            w = t.split()
            if len(w) >= 6:
                prefix[" ".join(w[:6])] = el
    for i, ln in enumerate(lines):
        t = _norm(ln)
        el = exact.get(t)
        if el is None and len(t.split()) >= 6:
            el = prefix.get(" ".join(t.split()[:6]))
        if el is None:
            out[i, 0] = 1
            continue
        anc = list(el.iterancestors())
        link = sum(len(a.text_content()) for a in el.iter("a")) / max(1, len(el.text_content()))
        if el.tag == "a" or any(a.tag == "a" for a in anc[:3]):
            link = 1.0
        out[i, 1], out[i, 2] = min(1.0, link), math.log1p(len(anc))
        toks: set[str] = set()
        for a in [el, *anc]:
            toks.update(_SPLIT.split(f"{a.get('class') or ''} {a.get('id') or ''}".lower()))
        for j, tk in enumerate(_CLASS_TOKENS):
            out[i, 3 + j] = tk in toks
        tags = {"h" if re.fullmatch(r"h\d", x) else x
                for x in (el.tag, *(a.tag for a in anc)) if isinstance(x, str)}
        for j, tg in enumerate(_TAGS):
            out[i, 3 + len(_CLASS_TOKENS) + j] = tg in tags
        par = el.getparent()
        sib = sum(1 for s in par if s.tag == el.tag) if par is not None else 1
        out[i, -3], out[i, -2] = math.log1p(sib), math.log1p(len(el))
        out[i, -1] = el.tag in ("a", "button", "span", "label")
    return out


# -- data -------------------------------------------------------------------------------------

_LWORD = re.compile(r"\w+")


def label(lines: list[str], gold: str) -> np.ndarray:
    """Share of each line's word trigrams found in the gold (for lines of 1-2 words: 1.0 when
    the line's words occur in the gold in that order)."""
    g = _LWORD.findall(gold.lower())
    joined = " " + " ".join(g) + " "
    tri = set(zip(g, g[1:], g[2:], strict=False))
    out = []
    for ln in lines:
        t = _LWORD.findall(ln.lower())
        if not t:
            out.append(0.0)
        elif len(t) < 3:
            out.append(1.0 if " " + " ".join(t) + " " in joined else 0.0)
        else:
            grams = list(zip(t, t[1:], t[2:], strict=False))
            out.append(sum(x in tri for x in grams) / len(grams))
    return np.array(out)


def _git(path: str) -> bytes:
    return subprocess.run(["git", "--git-dir", WCXB, "show", f"HEAD:{path}"],
                          capture_output=True, check=True).stdout


def _host(url: str) -> str:
    h = urlparse(url).netloc.lower()
    return h.removeprefix("www.")


def _wcxb_page(args: tuple[str, dict, set[str], bool]) -> dict | None:
    from curator.extract.charset import decode_html
    from curator.extract.extract_html import extract_text

    fid, m, gold_hosts, extract = args
    gt = json.loads(_git(f"{m['split']}/ground-truth/{fid}.json"))
    if _host(gt.get("url", "")) in gold_hosts:
        return None
    gold = (gt.get("ground_truth") or {}).get("main_content") or ""
    if len(gold.split()) < 20:
        return None
    html = decode_html(gzip.decompress(_git(f"{m['split']}/html/{fid}.html.gz")))[0]
    if len(html) > 1_500_000:
        return None
    return {"id": f"wcxb/{fid}", "type": m["page_type"], "lang": "en", "html": html,
            "gold": gold, "text": extract_text(html) if extract else None}


def _gold_page(g: object) -> dict:
    from curator.extract.extract_html import extract_text

    return {"id": g.id, "type": g.type, "lang": g.lang, "html": g.html,  # type: ignore[attr-defined]
            "gold": g.gold, "text": extract_text(g.html)}  # type: ignore[attr-defined]


def training_pages(jobs: int, extract: bool = True) -> list[dict]:
    """WCXB pages that are not gold pages and not from any gold page's host (with the default's
    text under ``text``, or None when ``extract`` is off)."""
    gold = load_gold("all")
    gold_ids = {g.id.split("/", 1)[1] for g in gold if g.source == "wcxb"}
    import zstandard

    with open(os.path.join(REPO, "bench", "gold", "pages.jsonl.zst"), "rb") as f:
        raw = zstandard.ZstdDecompressor().stream_reader(f).read()
    gold_hosts = {_host(json.loads(line)["url"]) for line in raw.split(b"\n") if line} - {""}
    meta = json.loads(_git("metadata.json"))["files"]
    todo = [(fid, m, gold_hosts, extract) for fid, m in sorted(meta.items())
            if fid not in gold_ids and _host("http://" + m.get("domain", "")) not in gold_hosts]
    with Pool(jobs) as pool:
        return [p for p in pool.map(_wcxb_page, todo, chunksize=8) if p]


def _page_rows(args: tuple[dict, bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    p, dom = args
    lines = p["text"].split("\n")
    if len(lines) < 2:
        return None
    x = features(lines, anchor_texts(p["html"]))
    if dom:
        x = np.hstack([x, dom_features(lines, p["html"])])
    return x, label(lines, p["gold"]), np.array([len(ln.split()) for ln in lines], float)


def matrix(pages: list[dict], jobs: int, dom: bool = False
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels, word counts and page index of every line of the pages' texts."""
    with Pool(jobs) as pool:
        rows = pool.map(_page_rows, [(p, dom) for p in pages], chunksize=8)
    xs, ys, ws, pg = [], [], [], []
    for k, r in enumerate(rows):
        if r is not None:
            xs.append(r[0])
            ys.append(r[1])
            ws.append(r[2])
            pg += [k] * len(r[1])
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws), np.array(pg)


# -- scoring ----------------------------------------------------------------------------------

def score(pages: list[dict], pg: np.ndarray, prob: np.ndarray, th: float, name: str) -> str:
    """One line: mean F1 of the tuning pages with the lines under ``th`` dropped."""
    base = [prf(p["text"], p["gold"])[2] for p in pages]
    f = list(base)
    for k in np.unique(pg):
        keep = prob[pg == k] >= th
        if keep.all() or not keep.any():
            continue
        lines = pages[k]["text"].split("\n")
        f[k] = prf("\n".join(ln for ln, q in zip(lines, keep, strict=True) if q),
                   pages[k]["gold"])[2]
    d = np.array(f) - np.array(base)
    by: dict[str, list[float]] = defaultdict(list)
    for k, p in enumerate(pages):
        by[p["type"]].append(d[k])
        by[p["lang"]].append(d[k])
    cols = " ".join(f"{t} {np.mean(by[t]):+.4f}" for t in
                    ("forum", "listing", "product", "collection", "article", "docs", "en", "de"))
    return (f"{name:28s} th={th:.1f}  F1 {np.mean(base):.4f} -> {np.mean(f):.4f} "
            f"({d.mean():+.4f})  up {(d > 0.001).sum():3d} down {(d < -0.001).sum():3d}  {cols}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    t0 = time.time()
    train = training_pages(args.jobs)
    with Pool(args.jobs) as pool:
        tuning = pool.map(_gold_page, load_gold("tuning"), chunksize=8)
    ths = (0.1, 0.2, 0.3, 0.4, 0.5)
    for dom in (False, True):
        fs = "text+DOM" if dom else "text"
        xtr, ytr, wtr, _ = matrix(train, args.jobs, dom)
        xtu, ytu, wtu, pgu = matrix(tuning, args.jobs, dom)
        ltr, ltu = (ytr >= 0.5).astype(int), (ytu >= 0.5).astype(int)
        print(f"{fs} features: training {len(train)} WCXB pages, {len(ltr)} lines "
              f"({ltr.mean():.0%} main); tuning {len(tuning)} pages, {len(ltu)} lines "
              f"({ltu.mean():.0%} main); {time.time() - t0:.0f} s")
        if not dom:
            print(score(tuning, pgu, ltu.astype(float), 0.5, "line oracle"))
        mu, sd = xtr.mean(0), xtr.std(0) + 1e-9
        for wname, sw in (("none", None), ("words", np.maximum(wtr, 1)),
                          ("sqrt words", np.sqrt(np.maximum(wtr, 1)))):
            if dom and wname != "none":
                continue
            lr = LogisticRegression(max_iter=3000).fit((xtr - mu) / sd, ltr, sample_weight=sw)
            prob = lr.predict_proba((xtu - mu) / sd)[:, 1]
            print(f"{fs} logistic, weights {wname}: line AUC {roc_auc_score(ltu, prob):.3f}")
            for th in ths:
                print(score(tuning, pgu, prob, th, f"{fs} logistic ({wname})"))
            for th in (0.3, 0.5):  # only lines of <= 6 words may go
                print(score(tuning, pgu, np.where(wtu <= 6, prob, 1.0), th,
                            f"{fs} logistic ({wname}) <=6w"))
        hgb = HistGradientBoostingClassifier(max_depth=4, max_iter=200, random_state=0)
        prob = hgb.fit(xtr, ltr).predict_proba(xtu)[:, 1]
        print(f"{fs} trees: line AUC {roc_auc_score(ltu, prob):.3f}")
        for th in ths:
            print(score(tuning, pgu, prob, th, f"{fs} trees"))
        for th in (0.3, 0.5):
            print(score(tuning, pgu, np.where(wtu <= 6, prob, 1.0), th, f"{fs} trees <=6w"))
        # the gold set's own conventions: trained on tuning lines, 5 folds by page
        prob = np.zeros(len(ltu))
        for a, b in GroupKFold(5).split(xtu, ltu, pgu):
            model = HistGradientBoostingClassifier(max_depth=4, max_iter=150, random_state=0)
            prob[b] = model.fit(xtu[a], ltu[a]).predict_proba(xtu[b])[:, 1]
        print(f"{fs} tuning-CV trees: line AUC {roc_auc_score(ltu, prob):.3f}")
        for th in (0.2, 0.3, 0.4):
            print(score(tuning, pgu, prob, th, f"{fs} tuning-CV trees"))
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
