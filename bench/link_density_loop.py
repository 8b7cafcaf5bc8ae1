"""CPU of ``extract_text`` with trafilatura's link-density loop and with curator's twin
(curator/extract/link_density.py), alternating page by page (order flipped each page) so a
shared machine's load falls on both; also counts pages whose texts differ (must be 0).

    PYTHONPATH=. python bench/link_density_loop.py WARC [--every 20] [--host-has .docs.]

WARC: a .warc.gz of response records (bench/warc_full.py --source real builds one from real
pages, bench/real_pages.py says how the Debian documentation pages are fetched).
"""

from __future__ import annotations

import argparse
import time

from fastwarc.warc import ArchiveIterator, WarcRecordType

from curator.extract import link_density
from curator.extract.extract_html import decode_html, extract_text, prepare


def pages(path: str, every: int, host_has: str) -> list[str]:
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
    args = ap.parse_args()
    prepare("trafilatura")
    prepare("resiliparse")
    htmls = pages(args.warc, args.every, args.host_has)
    cpu = {"trafilatura": 0.0, "twin": 0.0}
    differ = 0
    for i, html in enumerate(htmls):
        texts = {}
        for which in (("trafilatura", "twin") if i % 2 else ("twin", "trafilatura")):
            t = time.process_time()
            try:
                if which == "twin":
                    texts[which] = extract_text(html)
                else:
                    with link_density.stock():
                        texts[which] = extract_text(html)
            except Exception as e:  # a failure must fail the same way
                texts[which] = repr(e)
            cpu[which] += time.process_time() - t
        differ += texts["trafilatura"] != texts["twin"]
    print(f"{len(htmls)} pages: trafilatura's loop {cpu['trafilatura']:.2f} s, twin "
          f"{cpu['twin']:.2f} s ({cpu['twin'] / cpu['trafilatura']:.3f}x), {differ} texts differ")


if __name__ == "__main__":
    main()
