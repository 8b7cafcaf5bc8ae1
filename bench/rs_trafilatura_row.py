"""rs-trafilatura (trafilatura's Rust port, a peer) as a scored row of the benches.

rs-trafilatura 0.1.1 ships on PyPI only as a CPython 3.12 wheel (its source needs crates.io,
which this machine cannot reach), and curator runs on Python 3.11. So the benches run it in a
separate Python 3.12 interpreter: this file is both the runner (stdlib only, run by that
interpreter) and the helper the benches import (it is not named ``rs_trafilatura.py``: run as
a script, that name would import itself instead of the package). Set it up once::

    python3.12 -m venv /var/tmp/rsvenv && /var/tmp/rsvenv/bin/pip install rs-trafilatura==0.1.1
    python bench/extraction_quality.py --rs-python /var/tmp/rsvenv/bin/python
    python bench/wcxb_official.py --rs-python /var/tmp/rsvenv/bin/python

Each page is extracted with ``rs_trafilatura.extract(html, url=url)`` (its defaults; the URL is
a hint to its page-type classifier, as its README uses it) and ``main_content`` is the text.
CPU time is that interpreter's process time per page, measured the same way as the other rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time


def run_pages(src: str, dst: str) -> None:
    """Runner side (Python 3.12 with rs-trafilatura): JSONL {id, html, url} -> JSON."""
    import rs_trafilatura

    out: dict[str, str] = {}
    cpu: dict[str, float] = {}
    with open(src, encoding="utf-8") as f:
        for line in f:
            page = json.loads(line)
            t0 = time.process_time()
            try:
                text = rs_trafilatura.extract(page["html"], url=page.get("url") or None
                                              ).main_content or ""
            except Exception as exc:  # scored as an empty output
                print(f"rs-trafilatura {page['id']}: {type(exc).__name__}: {exc}",
                      file=sys.stderr)
                text = ""
            cpu[page["id"]] = time.process_time() - t0
            out[page["id"]] = text
    with open(dst, "w", encoding="utf-8") as f:
        json.dump({"version": rs_trafilatura.__version__, "text": out, "cpu_s": cpu}, f)


def predictions(pages: list[tuple[str, str, str]], python: str
                ) -> tuple[dict[str, str], dict[str, float]]:
    """Bench side: rs-trafilatura's text and CPU seconds per page id, run by ``python``."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "pages.jsonl"), os.path.join(tmp, "out.json")
        with open(src, "w", encoding="utf-8") as f:
            for pid, html, url in pages:
                f.write(json.dumps({"id": pid, "html": html, "url": url}) + "\n")
        subprocess.run([python, os.path.abspath(__file__), src, dst], check=True)
        with open(dst, encoding="utf-8") as f:
            got = json.load(f)
    return got["text"], got["cpu_s"]


if __name__ == "__main__":
    run_pages(sys.argv[1], sys.argv[2])
