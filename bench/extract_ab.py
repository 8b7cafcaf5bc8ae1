"""CPU of ``extract_text`` before and after one of its exact changes, alternating page by
page (order flipped each page) so a shared machine's load falls on both; also counts pages
whose texts differ (must be 0). Changes: ``link-density`` (trafilatura's link-density loop
vs the fast path's, curator/extract/fastpath/htmlprocessing.py), ``strip-spans``
(``strip_tags`` alone vs ``_strip_spans`` on large code blocks, curator/extract/tree_edits.py),
``cleaning-present-tags`` (trafilatura's ``tree_cleaning`` vs the fast path's, whose deletion
loop walks only for the tags the tree has), ``body-rerun-from-stash`` (the ``<body>``/thin
reruns parsed afresh vs started from the fast pass's pruned raw tree,
curator/extract/fastpath/core.py), ``cleaning+body-rerun`` (both). The "before" side puts
trafilatura's function in the fast path's module for the block (trafilatura is not touched).

    PYTHONPATH=. python bench/extract_ab.py WARC --change strip-spans [--every 20]
        [--host-has .docs.] [--rounds 3]

WARC: a .warc.gz of response records (bench/warc_full.py --source real builds one from real
pages, bench/real_pages.py says how the Debian documentation pages are fetched), or a
``.pkl`` pickle of a list of HTML strings or of (url, HTML) pairs (``--every`` and
``--host-has`` apply to it too).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from fastwarc.warc import ArchiveIterator, WarcRecordType

from bench.common import bench_main
from curator.extract import tree_edits
from curator.extract.charset import decode_html
from curator.extract.extract_html import extract_text, prepare


@contextmanager
def _strip_tags_alone() -> Iterator[None]:
    few = tree_edits._FEW_CHILDREN
    tree_edits._FEW_CHILDREN = 10**9
    try:
        yield
    finally:
        tree_edits._FEW_CHILDREN = few


@contextmanager
def _swapped(pairs: list[tuple[object, str, object]]) -> Iterator[None]:
    """Each ``(module, name, value)``: ``module.name = value`` inside the block."""
    saved = [(m, n, getattr(m, n)) for m, n, _ in pairs]
    for m, n, v in pairs:
        setattr(m, n, v)
    try:
        yield
    finally:
        for m, n, v in saved:
            setattr(m, n, v)


def _trafilatura_link_density() -> AbstractContextManager[None]:
    import trafilatura.htmlprocessing as h

    from curator.extract.fastpath import main_extractor

    return _swapped([(main_extractor, "delete_by_link_density", h.delete_by_link_density)])


def _trafilatura_cleaning() -> AbstractContextManager[None]:
    import trafilatura.htmlprocessing as h

    from curator.extract.fastpath import core, external

    return _swapped([(core, "tree_cleaning", h.tree_cleaning),
                     (external, "tree_cleaning", h.tree_cleaning)])


def _fresh_body_reruns() -> AbstractContextManager[None]:
    from curator.extract.fastpath.core import Stash

    return _swapped([(Stash, "restartable", lambda self, key: False)])


@contextmanager
def _cpu34a() -> Iterator[None]:
    with _trafilatura_cleaning(), _fresh_body_reruns():
        yield


#: change -> what puts the code as it was back inside a block
BEFORE: dict[str, Callable[[], AbstractContextManager[None]]] = {
    "link-density": _trafilatura_link_density,
    "cleaning-present-tags": _trafilatura_cleaning,
    "body-rerun-from-stash": _fresh_body_reruns,
    "cleaning+body-rerun": _cpu34a,
    "strip-spans": _strip_tags_alone,
}


def pages(path: str, every: int, host_has: str) -> list[str]:
    if path.endswith(".pkl"):
        with open(path, "rb") as f:
            items = pickle.load(f)
        pairs = [it if isinstance(it, tuple) else ("", it) for it in items]
        return [html for i, (url, html) in enumerate(pairs)
                if i % every == 0 and host_has in url]
    out = []
    with open(path, "rb") as f:
        for i, rec in enumerate(ArchiveIterator(f, record_types=WarcRecordType.response)):
            if i % every or host_has not in (rec.headers.get("WARC-Target-URI") or ""):
                continue
            try:
                out.append(decode_html(rec.reader.read())[0])
            except ValueError:
                continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("warc")
    ap.add_argument("--every", type=int, default=20, help="take every Nth response record")
    ap.add_argument("--host-has", default="", help="only URLs holding this string")
    ap.add_argument("--change", choices=sorted(BEFORE), default="link-density")
    ap.add_argument("--rounds", type=int, default=1, help="passes over the pages, each printed")
    args = ap.parse_args()
    prepare("trafilatura")
    prepare("resiliparse")
    htmls = pages(args.warc, args.every, args.host_has)
    for r in range(args.rounds):
        _round(htmls, args.change, r)


def _round(htmls: list[str], change: str, r: int) -> None:
    cpu = {"before": 0.0, "after": 0.0}
    differ = 0
    for i, html in enumerate(htmls):
        texts = {}
        for which in (("before", "after") if (i + r) % 2 else ("after", "before")):
            t = time.process_time()
            try:
                if which == "after":
                    texts[which] = extract_text(html)
                else:
                    with BEFORE[change]():
                        texts[which] = extract_text(html)
            except Exception as e:  # a failure must fail the same way
                texts[which] = repr(e)
            cpu[which] += time.process_time() - t
        differ += texts["before"] != texts["after"]
    print(f"{change}, round {r}, {len(htmls)} pages: before {cpu['before']:.2f} s, after "
          f"{cpu['after']:.2f} s ({cpu['after'] / cpu['before']:.3f}x), {differ} texts differ")


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
