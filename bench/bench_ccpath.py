"""The Common Crawl path end to end, curator against datatrove, same WARC input, same run:

    WARC -> HTML main text -> language ID -> Gopher repetition -> Gopher quality -> C4
         -> FineWeb quality -> JSONL

    python bench/bench_ccpath.py                 # every unique HTML page under /usr/share/doc
    python bench/bench_ccpath.py --small         # 200 pages, quicker
    python bench/bench_ccpath.py --html-root DIR --workers 2 --files 4

Input: real HTML pages that Debian packages install (``/usr/share/doc``: the Python
documentation of ``python3.x-doc``, nodejs, libxslt, valgrind... whatever is installed), each
file once (identical files dropped), written at run time into a temporary folder as gzipped
WARC files laid out like Common Crawl's: per page a ``request``, a ``response`` (with
``WARC-Identified-Payload-Type``) and a ``metadata`` record, each URL unique; the CSS, JS and
images of those folders go in as non-HTML responses. Nothing is committed.

Both tools run as a fresh command with ``--workers`` processes (curator: ``mpiexec -n 2
curator run --executor mpi``, or ``--executor dask`` for a Dask LocalCluster, whose scheduler,
nannies and event loops cost several CPU seconds more on a short run; datatrove:
``LocalPipelineExecutor`` with one task per WARC file, fork start), timed by wall clock; the
CPU time of the command and its children is shown too (on a shared machine it is the steadier
figure).

Settings (printed with the results):

* curator: ``read_warc`` with its default extractor settings; the filters' defaults;
  ``c4_quality: {filter_no_terminal_punct: false}`` as FineWeb does; final ``write_jsonl``
  (gzip, like datatrove's JsonlWriter).
* datatrove: ``WarcReader -> Trafilatura(favour_precision=True) -> LanguageFilter(en, 0.65) ->
  GopherRepetitionFilter -> GopherQualityFilter -> C4QualityFilter(filter_no_terminal_punct=
  False) -> FineWebQualityFilter -> JsonlWriter``. Its Trafilatura runs with
  ``deduplicate=False`` (its per-process paragraph cache off, as curator's is: with it on,
  output depends on what a worker saw before) and a 10 s per-page time limit like
  curator's ``timeout_s`` (its default of 1 s of wall time drops most large pages on a
  loaded machine: that is less work, not faster work). Offline
  patches, as in bench_filters.py: its LanguageFilter loads curator's bundled
  ``lid.176.ftz`` instead of downloading ``lid.176.bin``, and its word/sentence splitters are
  curator's (NLTK's data cannot be downloaded here).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import mimetypes
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

from bench.common import bench_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HTML_EXT = (".html", ".htm", ".xhtml")
OTHER_EXT = (".css", ".js", ".png", ".svg", ".txt", ".gif", ".jpg")


def collect(roots: list[str], limit: int | None) -> tuple[list[tuple[str, bytes]],
                                                           list[tuple[str, bytes]]]:
    """Unique HTML pages (by content) and some non-HTML files under ``roots``."""
    html: list[tuple[str, bytes]] = []
    other: list[tuple[str, bytes]] = []
    seen: set[bytes] = set()
    for root in roots:
        for dirpath, _dirs, files in sorted(os.walk(root)):
            for fn in sorted(files):
                path = os.path.join(dirpath, fn)
                low = fn.lower()
                if not low.endswith(HTML_EXT + OTHER_EXT) or os.path.islink(path):
                    continue
                try:
                    with open(path, "rb") as f:
                        data = f.read(4 << 20)
                except OSError:
                    continue
                h = hashlib.sha1(data).digest()
                if h in seen or len(data) < 512:
                    continue
                seen.add(h)
                rel = os.path.relpath(path, root)
                (html if low.endswith(HTML_EXT) else other).append((rel, data))
    if limit and len(html) > limit:  # an even spread, not the first folder
        step = len(html) / limit
        html = [html[int(i * step)] for i in range(limit)]
        other = other[: max(1, limit // 4)]
    return html, other


def write_warcs(html: list[tuple[str, bytes]], other: list[tuple[str, bytes]], out: str,
                n_files: int) -> list[str]:
    """Gzipped WARC files in Common Crawl's layout (request, response, metadata per URL)."""
    from warcio.warcwriter import WARCWriter

    os.makedirs(out, exist_ok=True)
    paths = [os.path.join(out, f"CC-BENCH-{i:05d}.warc.gz") for i in range(n_files)]
    items = [(r, d, True) for r, d in html] + [(r, d, False) for r, d in other]
    items.sort(key=lambda x: hashlib.sha1(x[0].encode()).hexdigest())  # mix kinds and sites
    ns = uuid.UUID(int=0)
    for k, path in enumerate(paths):
        with open(path, "wb") as fh:
            w = WARCWriter(fh, gzip=True)
            for rel, data, is_html in items[k::n_files]:
                _write_capture(w, rel, data, is_html, ns)
    return paths


def _write_capture(w: Any, rel: str, data: bytes, is_html: bool, ns: uuid.UUID) -> None:
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders

    url = f"https://docs.example.org/{rel}"
    ctype = "text/html" if is_html else (mimetypes.guess_type(rel)[0] or "text/plain")
    rid = str(uuid.uuid5(ns, url))
    req = w.create_warc_record(url, "request", payload=BytesIO(b""), http_headers=(
        StatusAndHeaders(f"GET /{rel} HTTP/1.1", [("Host", "docs.example.org")],
                         is_http_request=True)))
    w.write_record(req)
    resp = w.create_warc_record(
        url, "response", payload=BytesIO(data),
        http_headers=StatusAndHeaders("200 OK", [("Content-Type", ctype),
                                                 ("Content-Length", str(len(data)))],
                                      protocol="HTTP/1.1"),
        warc_headers_dict={"WARC-Record-ID": f"<urn:uuid:{rid}>",
                           "WARC-Identified-Payload-Type": ctype})
    w.write_record(resp)
    meta = w.create_warc_record(url, "metadata", payload=BytesIO(
        b"fetchTimeMs: 12\ncharset-detected: UTF-8\n"),
        warc_content_type="application/warc-fields")
    w.write_record(meta)


CURATOR_YAML = """\
name: ccpath-bench
work_dir: {work}
executor: {{type: {executor}, workers: {workers}, dashboard_address: null}}
progress: off
report: false
stages:
  - id: web
    read_warc: {{paths: "{warc}/*.warc.gz"{extra}}}
  - language_id: {{languages: [en], min_score: 0.65}}
  - gopher_repetition: {{}}
  - gopher_quality: {{}}
  - c4_quality: {{filter_no_terminal_punct: false}}
  - fineweb_quality: {{}}
  - write_jsonl: {{path: {out}}}
"""

DATATROVE_PY = """\
from loguru import logger
logger.remove()
import datatrove.pipeline.base as dt_base
import datatrove.utils.lid as dt_lid
from datatrove.pipeline.filters import c4_filters as dt_c4
from datatrove.pipeline.filters import fineweb_quality_filter as dt_fw
from datatrove.pipeline.filters import gopher_quality_filter as dt_gq
from datatrove.pipeline.filters import gopher_repetition_filter as dt_gr
from curator.filters.language_id import DEFAULT_MODEL
from curator.text import split_sentences, split_words

# Offline: curator's bundled lid.176.ftz and word/sentence splitters (see bench_ccpath.py).
dt_base.check_required_dependencies = lambda *a, **k: None
def _model(self):
    if self._model is None:
        from fasttext.FastText import _FastText
        self._model = _FastText(model_path=DEFAULT_MODEL)
    return self._model
dt_lid.FastTextLID.model = property(_model)
for mod in (dt_gq, dt_gr, dt_fw):
    mod.split_into_words = lambda text, language=None: split_words(text)
dt_c4.split_into_sentences = lambda text, language=None: split_sentences(text)

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.extractors import Trafilatura
from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter,
    GopherQualityFilter, GopherRepetitionFilter, LanguageFilter)
from datatrove.pipeline.readers import WarcReader
from datatrove.pipeline.writers import JsonlWriter

if __name__ == "__main__":
    ex = LocalPipelineExecutor(pipeline=[
        WarcReader({warc!r}, glob_pattern="*.warc.gz", compression="gzip"),
        Trafilatura(favour_precision=True, timeout=10, deduplicate=False),
        LanguageFilter(languages=["en"], language_threshold=0.65),
        GopherRepetitionFilter(),
        GopherQualityFilter(),
        C4QualityFilter(filter_no_terminal_punct=False),
        FineWebQualityFilter(),
        JsonlWriter({out!r}),
    ], tasks={tasks}, workers={workers}, logging_dir={logs!r}, start_method="fork")
    ex.run()
"""


def _run(cmd: list[str], cwd: str | None = None, repo: str = REPO) -> tuple[float, float]:
    """Wall and CPU seconds (with children) of a command; exits on failure."""
    env = dict(os.environ, PYTHONPATH=repo)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode:
        sys.exit(f"{cmd[0]} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return wall, (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)


def _count_jsonl(folder: str) -> int:
    import gzip

    n = 0
    for f in glob.glob(os.path.join(folder, "**", "*.jsonl*"), recursive=True):
        op = gzip.open if f.endswith(".gz") else open
        with op(f, "rb") as fh:
            n += sum(1 for _ in fh)
    return n


def run_curator(warc: str, tmp: str, workers: int, extractor: str | None,
                tag: str = "curator", executor: str = "mpi",
                repo: str = REPO) -> tuple[float, float, int]:
    """Wall, CPU seconds and documents out of ``curator run`` on the bench pipeline
    (``mpiexec -n workers`` for the MPI executor, a Dask LocalCluster of ``workers``
    processes for the Dask one)."""
    os.makedirs(tmp, exist_ok=True)
    work = os.path.join(tmp, f"{tag}-work")
    out = os.path.join(tmp, f"{tag}-out")
    extra = f", extractor: {extractor}" if extractor else ""
    yml = os.path.join(tmp, f"{tag}.yaml")
    with open(yml, "w") as f:
        f.write(CURATOR_YAML.format(work=work, workers=workers, warc=warc, out=out, extra=extra,
                                    executor=executor))
    cmd = [sys.executable, "-m", "curator", "run", yml]
    if executor == "mpi":
        mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        cmd = [mpiexec if os.path.exists(mpiexec) else "mpiexec", "-n", str(workers), *cmd]
    wall, cpu = _run(cmd, cwd=tmp, repo=repo)
    return wall, cpu, _count_jsonl(out)


def run_datatrove(warc: str, tmp: str, workers: int, tasks: int) -> tuple[float, float, int]:
    """Wall, CPU seconds and documents out of datatrove's equivalent pipeline."""
    os.makedirs(tmp, exist_ok=True)
    out = os.path.join(tmp, "datatrove-out")
    script = os.path.join(tmp, "datatrove_run.py")
    with open(script, "w") as f:
        f.write(DATATROVE_PY.format(warc=warc, out=out, tasks=tasks,
                                    workers=workers, logs=os.path.join(tmp, "datatrove-logs")))
    wall, cpu = _run([sys.executable, script], cwd=tmp)
    return wall, cpu, _count_jsonl(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--html-root", action="append", help="folder of HTML pages (repeatable; "
                    "default /usr/share/doc)")
    ap.add_argument("--small", action="store_true", help="200 pages instead of all")
    ap.add_argument("--pages", type=int, default=None, help="number of HTML pages (spread)")
    ap.add_argument("--files", type=int, default=4, help="WARC files (= datatrove tasks)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executor", choices=["mpi", "dask"], default="mpi",
                    help="curator executor (mpi: mpiexec -n WORKERS; dask: a LocalCluster)")
    ap.add_argument("--extractor", default=None, help="curator extractor (default: its default)")
    ap.add_argument("--also", action="append", default=[], metavar="EXTRACTOR",
                    help="also run curator with this extractor (e.g. resiliparse)")
    ap.add_argument("--no-quality", action="store_true", help="skip the extraction F1 check")
    ap.add_argument("--rounds", type=int, default=1, help="alternate the tools N times, "
                    "report the best wall and CPU time of each")
    ap.add_argument("--baseline", metavar="REV", default=None,
                    help="also run curator as of this git revision (git archive of it) in "
                    "every round, right after this checkout's: before/after under the same load")
    args = ap.parse_args(argv)
    roots = args.html_root or ["/usr/share/doc"]
    limit = args.pages or (200 if args.small else None)
    tmp = tempfile.mkdtemp(prefix="bench-ccpath-")
    try:
        html, other = collect(roots, limit)
        if not html:
            print(f"no HTML pages under {roots}")
            return 1
        warc = os.path.join(tmp, "warc")
        files = write_warcs(html, other, warc, args.files)
        mb_html = sum(len(d) for _, d in html) / 1e6
        mb = sum(os.path.getsize(f) for f in files) / 1e6
        print(f"input: {len(html)} unique HTML pages ({mb_html:.1f} MB) + {len(other)} non-HTML "
              f"responses from {', '.join(roots)}, in {len(files)} WARC files ({mb:.1f} MB gz, "
              "request/response/metadata per URL)")
        print(f"workers: {args.workers} per tool (curator executor: {args.executor}); machine: "
              f"{os.cpu_count()} cores (shared: other load counts in wall time, less in CPU)\n")
        from curator.extract.extract_html import DEFAULT_EXTRACTOR

        main_ex = args.extractor or DEFAULT_EXTRACTOR
        best: dict[str, tuple[float, float, int]] = {}
        every: dict[str, list[float]] = {}  # CPU seconds of each round, per tool

        def keep(key: str, r: tuple[float, float, int]) -> None:
            old = best.get(key)
            best[key] = r if old is None else (min(old[0], r[0]), min(old[1], r[1]), r[2])
            every.setdefault(key, []).append(r[1])

        exs = [main_ex, *args.also]
        base = None
        if args.baseline:
            base = os.path.join(tmp, "baseline")
            os.makedirs(base)
            arch = subprocess.run(["git", "-C", REPO, "archive", args.baseline],
                                  capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", base], input=arch, check=True)
        for rnd in range(args.rounds):  # alternate the tools so that load changes hit both
            keep("datatrove", run_datatrove(warc, os.path.join(tmp, f"r{rnd}"), args.workers,
                                            len(files)))
            for k, ex in enumerate(exs):
                keep(f"curator{k}", run_curator(warc, os.path.join(tmp, f"r{rnd}"),
                                                args.workers, ex, f"curator{k}", args.executor))
            if base:
                keep("baseline", run_curator(warc, os.path.join(tmp, f"r{rnd}"), args.workers,
                                             main_ex, "baseline", args.executor, repo=base))
        if base:
            for rnd, (d, c, b) in enumerate(zip(every["datatrove"], every["curator0"],
                                                every["baseline"])):
                print(f"round {rnd + 1}: cpu s datatrove {d:.2f}, curator {c:.2f} ({d / c:.2f}x),"
                      f" baseline {args.baseline} {b:.2f} ({d / b:.2f}x); curator/baseline "
                      f"cpu {c / b:.3f}")
        if args.rounds > 1:
            # each round's pair ran back to back, so the machine's load hit both alike: the
            # spread of the per-round CPU ratio is the noise of the figure
            ratios = [d / c for d, c in zip(every["datatrove"], every["curator0"])]
            for rnd, (d, c) in enumerate(zip(every["datatrove"], every["curator0"])):
                print(f"round {rnd + 1}: cpu s datatrove {d:.2f}, curator {c:.2f}, "
                      f"ratio {d / c:.2f}x")
            print(f"cpu ratio per round: min {min(ratios):.2f}x, median "
                  f"{sorted(ratios)[len(ratios) // 2]:.2f}x, max {max(ratios):.2f}x")
            print(f"best of {args.rounds} alternating rounds (wall and CPU each)")
        runs = [("datatrove", "trafilatura (datatrove)", best["datatrove"])]
        runs += [("curator", ex, best[f"curator{k}"]) for k, ex in enumerate(exs)]
        print(f"{'tool':10s} {'extractor':24s} {'docs out':>8s} {'wall s':>8s} {'cpu s':>8s} "
              f"{'pages/s':>8s} {'ratio':>6s} {'cpu ratio':>9s}")
        dt = runs[0][2]
        for tool, ex, (wall, cpu, n) in runs:
            print(f"{tool:10s} {ex:24s} {n:8d} {wall:8.2f} {cpu:8.2f} {len(html) / wall:8.1f} "
                  f"{dt[0] / wall:5.2f}x {dt[1] / cpu:8.2f}x")
        print(f"\nratio curator/datatrove (wall-clock throughput, {main_ex}): "
              f"{dt[0] / runs[1][2][0]:.2f}x  (CPU: {dt[1] / runs[1][2][1]:.2f}x)")
        if not args.no_quality:
            from bench.extraction_quality import MAIN, configs, report, run_config
            from bench.gold_set import load_gold

            pages = load_gold("heldout")
            cfgs = configs()
            print("\nextraction token F1 against gold (bench/extraction_quality.py, held-out):")
            report([run_config(n, cfgs[n], pages) for n in MAIN], [])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
