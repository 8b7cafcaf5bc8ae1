"""Build ``bench/gold/heldout4.jsonl.zst``: a fourth evaluation set, held out as a whole.

    python -m bench.gold.build_heldout4   # needs the adbar/trafilatura mirror (SOURCES.md)

Pages of trafilatura's own evaluation set that none of the three earlier sets holds, with the
snippets trafilatura's authors chose for them:

* ``trafilatura-eval``: every entry of ``tests/evaldata.json`` (its page is
  ``tests/eval/<file>``, else ``tests/cache/<file>``) with at least one must-appear (``with``)
  snippet; ``without`` gives the must-not snippets;
* ``trafilatura-realworld``: the pages of ``tests/cache/`` that ``evaldata.json`` does not
  name, with the snippets that ``test_extract`` of ``tests/realworld_tests.py`` asserts on
  them (``"..." in result`` -> must, ``"..." not in result`` -> must-not). Only the asserts
  that hold for the test's default call (``xmloutput=False, formatting=False``: txt output,
  trafilatura's default options) are taken: the branch of each ``if`` that this call takes;
  a page under a condition this builder cannot evaluate is left out. ``extract`` calls with
  other options (``test_extract_links_formatting``) and metadata tests are not read.

Left out: pages whose file name (the earlier sets' ids keep the first 80 characters), URL
or HTML (SHA-1 of the decoded text) is a page of ``pages.jsonl.zst``, ``unseen.jsonl.zst`` or
``heldout3.jsonl.zst``; a page with the same URL or HTML as one taken before; and pages with
a must-appear snippet that is not in the page's text outside ``<script>/<style>/<template>``
(matched as the bench matches snippets: case and whitespace ignored), which no extractor
working on the HTML could reach.

**Family, by a rule on the page's own markup** (not on its text, not on any score):
``news`` where the page declares itself an article, that is (a) a JSON-LD block
(``<script type="application/ld+json">``) holds an object, at its top level, in its
``@graph`` or as the ``mainEntity`` of one of those, whose ``@type`` (a name, a list of
names, or a ``schema.org`` URL) is one of ``NEWS_TYPES``, or (b) the page has ``<meta
property="og:type" content="article">`` (attribute ``property`` or ``name``, value compared
case-insensitively after trimming); else ``mixed``. Type ``article`` for news, ``web`` else.

Language: fastText lid.176 on the must-appear snippets, as ``build_unseen.py`` does for
snippet-only rows (its helpers are imported). **Every row is ``split: heldout``**.
"""

from __future__ import annotations

import ast
import json
import os
from collections import Counter

from bench.gold.build_gold import page_text, trafilatura_page
from bench.gold.build_unseen import (
    TRAFILATURA,
    Seen,
    decode,
    git_show,
    head_commit,
    write_rows,
)
from curator.extract.article_markup import declares_article

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "heldout4.jsonl.zst")
LICENCES = {"trafilatura-eval": "Apache-2.0", "trafilatura-realworld": "Apache-2.0"}

def trafilatura_eval() -> list[dict]:
    """Every page of ``tests/evaldata.json`` with must-appear snippets (module docstring)."""
    data = json.loads(git_show(TRAFILATURA, "tests/evaldata.json"))
    rows = []
    for url, item in sorted(data.items(), key=lambda kv: kv[1]["file"]):
        name = item["file"]
        if not item.get("with"):
            continue
        raw = trafilatura_page(name)
        if raw is None:
            continue
        rows.append(
            {
                "id": f"trafilatura-eval/{name.removesuffix('.html')[:80]}",
                "source": "trafilatura-eval",
                "file": name,
                "url": url,
                "gold": "",
                "must": list(item["with"]),
                "must_not": list(item.get("without") or []),
                "html": decode(raw),
            }
        )
    return rows


# The test's default call: load_mock_page(url) with xml_flag=False, formatting=False.
_DEFAULT_CALL = {"xmloutput": False, "formatting": False}


def _condition(test: ast.expr) -> bool | None:
    """The value of an ``if`` test of ``test_extract`` under the default call, or None where
    it is not one of the forms ``name``, ``not name``, ``name is/== constant``."""
    if isinstance(test, ast.Name) and test.id in _DEFAULT_CALL:
        return bool(_DEFAULT_CALL[test.id])
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _condition(test.operand)
        return None if inner is None else not inner
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id in _DEFAULT_CALL
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.Eq))
        and isinstance(test.comparators[0], ast.Constant)
    ):
        return _DEFAULT_CALL[test.left.id] is test.comparators[0].value
    return None


def realworld_snippets() -> tuple[dict[str, str], dict[str, tuple[list[str], list[str]]]]:
    """``MOCK_PAGES`` (URL -> cache file) of ``tests/realworld_tests.py`` and, per URL, the
    must / must-not snippets that ``test_extract`` asserts under its default call; a URL
    with an assert or condition of another form maps to None (left out)."""
    src = git_show(TRAFILATURA, "tests/realworld_tests.py").decode("utf-8")
    tree = ast.parse(src)
    mock: dict[str, str] = {}
    func = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MOCK_PAGES":
            mock = ast.literal_eval(node.value)
        if isinstance(node, ast.FunctionDef) and node.name == "test_extract":
            func = node
    assert func is not None and mock
    snippets: dict[str, tuple[list[str], list[str]] | None] = {}
    url = None

    def walk(body: list[ast.stmt]) -> None:
        nonlocal url
        for st in body:
            if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call):
                call = st.value
                if getattr(call.func, "id", "") == "do_load_page":
                    url = call.args[0].value if isinstance(call.args[0], ast.Constant) else None
                    if url is not None and url not in snippets:
                        snippets[url] = ([], [])
                continue
            if url is None or snippets.get(url) is None:
                continue
            if isinstance(st, ast.If):
                cond = _condition(st.test)
                if cond is None:
                    snippets[url] = None
                else:
                    walk(st.body if cond else st.orelse)
            elif isinstance(st, ast.Assert):
                t = st.test
                if (
                    isinstance(t, ast.Compare)
                    and isinstance(t.left, ast.Constant)
                    and isinstance(t.left.value, str)
                    and len(t.ops) == 1
                    and isinstance(t.ops[0], (ast.In, ast.NotIn))
                    and getattr(t.comparators[0], "id", "") == "result"
                ):
                    snippets[url][isinstance(t.ops[0], ast.NotIn)].append(t.left.value)
                elif not (isinstance(t, ast.Constant)):  # `assert "..."` alone tests nothing
                    snippets[url] = None
            elif not isinstance(st, ast.Expr):  # comments, prints
                snippets[url] = None

    walk(func.body)
    return mock, {u: s for u, s in snippets.items() if s is not None}


def trafilatura_realworld(evaldata_files: set[str]) -> list[dict]:
    """Cache pages that ``evaldata.json`` does not name, with ``test_extract``'s snippets."""
    mock, snippets = realworld_snippets()
    rows = []
    for url, name in sorted(mock.items(), key=lambda kv: kv[1]):
        if name in evaldata_files or url not in snippets or not snippets[url][0]:
            continue
        must, must_not = snippets[url]
        rows.append(
            {
                "id": f"trafilatura-realworld/{name.removesuffix('.html')}",
                "source": "trafilatura-realworld",
                "file": name,
                "url": url,
                "gold": "",
                "must": must,
                "must_not": must_not,
                "html": decode(git_show(TRAFILATURA, f"tests/cache/{name}")),
            }
        )
    return rows


def main() -> int:

    from bench.family_quality import HELDOUT3, _norm, load_unseen
    from bench.gold_set import load_gold
    from curator.filters.language_id import predict_languages

    earlier = load_gold("all") + load_unseen("all") + load_unseen("all", HELDOUT3)
    old = Seen(earlier)
    old_names = {
        p.id.split("/", 1)[1]
        for p in earlier
        if p.id.startswith(("trafilatura-eval/", "trafilatura-hand/"))
    }
    evaldata = json.loads(git_show(TRAFILATURA, "tests/evaldata.json"))
    rows = trafilatura_eval() + trafilatura_realworld({v["file"] for v in evaldata.values()})
    kept, dropped = [], Counter()
    taken = Seen()
    for r in rows:
        if r["file"].removesuffix(".html")[:80] in old_names or old.holds(r["url"], r["html"]):
            dropped["page already in an earlier set"] += 1
            continue
        if taken.holds(r["url"], r["html"]):
            dropped["same URL or HTML as a page taken before"] += 1
            continue
        text = _norm(page_text(r["html"]))
        if not all(_norm(s) in text for s in r["must"]):
            dropped["a must-appear snippet not in the page's text"] += 1
            continue
        taken.add(r["url"], r["html"])
        kept.append(r)
    assert len({r["id"] for r in kept}) == len(kept)
    langs, _ = predict_languages([" ".join(r["must"])[:2000] for r in kept])
    for r, lang in zip(kept, langs):
        news = declares_article(r["html"])
        r["family"] = "news" if news else "mixed"
        r["type"] = "article" if news else "web"
        r["lang"] = lang
        r["split"] = "heldout"
        r["licence"] = LICENCES[r["source"]]
    size = write_rows(kept, OUT)
    print(f"{len(kept)} pages, {size / 1e6:.1f} MB -> {OUT}; dropped {dict(dropped)}")
    print(f"  adbar/trafilatura: commit {head_commit(TRAFILATURA)}")
    for fld in ("source", "family", "lang", "split"):
        print(fld, dict(Counter(r[fld] for r in kept).most_common()))
    for fam in ("news", "mixed"):
        print(
            f"{fam} lang",
            dict(Counter(r["lang"] for r in kept if r["family"] == fam).most_common()),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
