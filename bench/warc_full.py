"""A full-size WARC (~1 GB gz, ~40k response records, like one Common Crawl file) through the
whole Common Crawl path, timed per core with peak RSS:

    read_warc (trafilatura) -> language_id -> gopher_repetition -> gopher_quality
        -> c4_quality -> fineweb_quality -> write_jsonl

(the same steps as datatrove's pipeline in bench/bench_ccpath.py; ``--fix-unicode`` adds
``fix_unicode`` after ``read_warc``, as the 2026-11-23 figures in docs/scale.md had it)

    python bench/warc_full.py                                   # 40,000 records, local, 1 core
    python bench/warc_full.py --records 4000 --files 2 --executor mpi --workers 2 --peer
    python bench/warc_full.py --source real --records 100000 --files 2 --executor mpi \
        --workers 2 --peer --dir /var/tmp/cc-real/warc          # every unique real page once

``--source real`` (bench/real_pages.py): every unique real HTML page we have offline, each
exactly once, no paragraph added: 7,079 web pages of public extraction benchmarks (their git
mirrors) and 57,784 pages of 17 Debian documentation packages (Javadoc, rustdoc, Doxygen,
Sphinx, DocBook, Haddock, QDoc, ...), deduplicated by bytes and by normalised text; 64,863
pages, 2.6 GB of HTML. Those packages are not in scripts/setup.sh (CI does not need them):
bench/real_pages.py's docstring has the ``apt-get download`` + ``dpkg-deb -x`` command (no
root), and the script stops with a one-line error naming the missing ones. ``--records N``
caps at N: every web page first, the rest docs pages round-robin over the packages, the whole
shuffled (seeded); the header line says whether the cap cut anything. ``--part web|docs``
builds one part only. The WARC folder's manifest.json lists, per source, the files seen,
pages kept, duplicates and pages too small or too large, and what was written.

Input of the default ``--source pydocs``: the HTML pages that Debian's ``python3.11-doc``
installs (``/usr/share/doc/python3.11/html``, installed by ``scripts/setup.sh``; 530 unique
pages, ~96 KB each). Record ``r`` is page ``perm[r % pages]`` (a seeded permutation per pass),
so every page appears about ``records / pages`` times; to make each record's content distinct,
a paragraph of 2-3 sentences drawn from the docs' own words by ``random.Random(seed, r)`` is
inserted right after ``<body>`` (before the page's navigation), and every record has a unique
URL (``https://docs<r % 97>.example.org/<page>?r=<r>``). Layout as in Common Crawl: per URL a
``request``, a ``response`` (with ``WARC-Identified-Payload-Type``) and a ``metadata`` record,
each gzip member on its own. The build is deterministic (byte for byte) and goes into a
temporary folder (``--dir`` to keep and reuse it).

Timing: a fresh ``curator run`` process (or ``mpiexec -n W``, or a Dask LocalCluster of W
workers) in a wrapper that prints ``ru_maxrss`` (the largest single descendant: memory per
worker, not the sum) and the user+system CPU seconds of all descendants; a thread samples
the run's processes every 30 s into ``<logs>/<run>.samples`` (CPU s, RSS, high-water mark,
bytes of the .warc.gz read so far), which shows memory along the file and gives the rate of a
run stopped before its end. ``--peer`` also runs
bench/bench_ccpath.py's datatrove pipeline (WarcReader -> Trafilatura -> LanguageFilter ->
Gopher -> C4 -> FineWeb -> JsonlWriter) on the same files with the same worker count. The
machine is shared: CPU seconds are the steadier figure.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib
from io import BytesIO
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]

DOCS = "/usr/share/doc/python3.11/html"
_BODY = re.compile(rb"<body[^>]*>", re.I)
_WORD = re.compile(rb"[A-Za-z]{3,12}")
_TAG = re.compile(rb"<[^>]+>")

PIPELINE = """\
name: warc-full
work_dir: {work}
executor: {{type: {executor}, workers: {workers}{dash}}}
progress: log
stages:
  - id: web
    read_warc: {{paths: "{warc}/*.warc.gz", extractor: trafilatura{guess}}}
{fix}  - language_id: {{languages: [en], min_score: 0.65}}
  - gopher_repetition: {{}}
  - gopher_quality: {{}}
  - c4_quality: {{filter_no_terminal_punct: false}}
  - fineweb_quality: {{}}
  - write_jsonl: {{path: {out}}}
"""

WRAPPER = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]).returncode; "
           "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
           "print('RUSAGE', u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); "
           "sys.exit(r)")


def pages(root: str = DOCS) -> list[tuple[str, bytes]]:
    """Unique HTML pages under ``root`` (sorted by path; identical files once)."""
    out, seen = [], set()
    for p in sorted(Path(root).rglob("*.html")):
        if p.is_symlink():
            continue
        data = p.read_bytes()
        h = hashlib.sha1(data).digest()
        if h in seen or len(data) < 512:
            continue
        seen.add(h)
        out.append((str(p.relative_to(root)), data))
    return out


def _words(src: list[tuple[str, bytes]]) -> list[str]:
    """The docs' own vocabulary (deterministic: sorted), for the per-record paragraph."""
    ws: set[bytes] = set()
    for _, d in src[:60]:
        ws.update(w.lower() for w in _WORD.findall(_TAG.sub(b" ", d)))
    return sorted(w.decode() for w in ws)


def _paragraph(rng: random.Random, words: list[str]) -> bytes:
    sents = []
    for _ in range(rng.randint(2, 3)):
        s = " ".join(rng.choice(words) for _ in range(rng.randint(10, 18)))
        sents.append(s[0].upper() + s[1:] + ".")
    return ("<p>" + " ".join(sents) + "</p>\n").encode()


def build(out: Path, records: int, files: int = 1, seed: int = 0) -> dict:
    """Write ``records`` captures over ``files`` .warc.gz files; returns a manifest."""
    src = pages()
    if not src:
        raise SystemExit(f"no HTML pages under {DOCS}: install python3.11-doc "
                         "(bash scripts/setup.sh)")
    words = _words(src)
    order: list[int] = []
    rng = random.Random(seed)
    while len(order) < records:
        perm = list(range(len(src)))
        rng.shuffle(perm)
        order += perm

    def captures() -> Any:
        for r in range(records):
            rel, data = src[order[r]]
            m = _BODY.search(data)
            at = m.end() if m else 0
            body = data[:at] + _paragraph(random.Random(seed * 1_000_003 + r), words) + data[at:]
            yield (f"docs{r % 97}.example.org", f"/{rel}?r={r}", body,
                   "text/html; charset=utf-8", b"fetchTimeMs: 12\ncharset-detected: UTF-8\n")

    html_bytes, gz = _write(out, records, files, captures())
    return {"source": "pydocs", "records": records, "files": files, "seed": seed,
            "unique_pages": len(src), "html_mb": round(html_bytes / 1e6, 1),
            "gz_mb": round(gz / 1e6, 1)}


def select(pages_: list[Any], records: int, seed: int) -> list[Any]:
    """The pages a ``--records`` cap keeps, in the order they go into the WARC: every web page
    (a seeded sample of them when the cap is smaller), the rest docs pages drawn round-robin
    over the packages (each package's pages in a seeded order, so a small package is used
    whole before a big one dominates); then the whole selection shuffled (seeded). All
    pages, shuffled, when ``records`` is at least their number."""
    rng = random.Random(seed)
    if records >= len(pages_):
        chosen = list(pages_)
    else:
        web = [p for p in pages_ if p.part == "web"]
        rng.shuffle(web)
        chosen = web[:records]
        by_pkg: dict[str, list[Any]] = {}
        for p in pages_:
            if p.part != "web":
                by_pkg.setdefault(p.source, []).append(p)
        queues = []
        for name in sorted(by_pkg):
            q = by_pkg[name]
            random.Random(f"{seed}:{name}").shuffle(q)
            queues.append(q)
        k = 0
        while len(chosen) < records and queues:
            q = queues[k % len(queues)]
            chosen.append(q.pop())
            if not q:
                queues.remove(q)
            else:
                k += 1
    rng.shuffle(chosen)
    return chosen


def _host(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


def build_real(out: Path, records: int, files: int = 1, seed: int = 0,
               collected: Any = None, part: str = "all") -> dict:
    """``--source real``: every unique real page once (bench/real_pages.py), capped at
    ``records``; no paragraph is added (each page is already unique); Content-Type without a
    charset (the bytes are as shipped, in their own encodings: each tool detects it).
    ``part`` ``web`` or ``docs`` keeps only that part (to see where each tool's CPU goes)."""
    from bench import real_pages
    if collected is None:
        # web pages are offered first (dedup keeps the first copy), so --part web needs no
        # docs package and gets the very same pages as the web part of a full collection
        gone = [] if part == "web" else real_pages.missing_packages()
        if gone:
            raise SystemExit(
                f"warc_full: error: --source real needs the Debian packages {' '.join(gone)} "
                f"extracted under {real_pages.DEBS} (or installed): see bench/real_pages.py")
        collected = real_pages.collect(docs=[] if part == "web" else None)
    pool = [p for p in collected.pages if part in ("all", p.part)]
    chosen = select(pool, records, seed)

    def captures() -> Any:
        for p in chosen:
            host = f"{_host(p.source)}.{p.part}.example.org"
            yield (host, "/" + quote(p.path, safe="/"), p.data, "text/html",
                   b"fetchTimeMs: 12\n")

    html_bytes, gz = _write(out, len(chosen), files, captures())
    per_source: dict[str, int] = {}
    for p in chosen:
        per_source[f"{p.part}/{p.source}"] = per_source.get(f"{p.part}/{p.source}", 0) + 1
    return {"source": "real", "part": part, "records": records, "written": len(chosen),
            "files": files, "seed": seed, "unique_pages": len(pool),
            "web_pages": sum(1 for p in chosen if p.part == "web"),
            "html_mb": round(html_bytes / 1e6, 1), "gz_mb": round(gz / 1e6, 1),
            "per_source": dict(sorted(per_source.items())),
            "collected": collected.counts, "missing": collected.missing}


def _write(out: Path, records: int, files: int, captures: Any) -> tuple[int, int]:
    """Common Crawl's layout: per capture a request, a response and a metadata record, each
    its own gzip member (level 6; warcio uses 9); ``captures`` yields (host, path, body,
    content type, metadata payload). Returns (HTML bytes, .warc.gz bytes)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out.mkdir(parents=True, exist_ok=True)
    ns = uuid.UUID(int=0)
    html_bytes = 0
    paths = [out / f"CC-FULL-{k:05d}.warc.gz" for k in range(files)]
    per = -(-records // files)
    buf = BytesIO()
    w = WARCWriter(buf, gzip=False)

    def flush(fh: Any) -> None:
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        fh.write(z.compress(buf.getvalue()) + z.flush())
        buf.seek(0)
        buf.truncate()

    it = iter(captures)
    for k, path in enumerate(paths):
        with open(path, "wb") as fh:
            for _ in range(k * per, min(records, (k + 1) * per)):
                host, target, body, ctype, meta_payload = next(it)
                html_bytes += len(body)
                url = f"https://{host}{target}"
                req = w.create_warc_record(url, "request", payload=BytesIO(b""), http_headers=(
                    StatusAndHeaders(f"GET {target} HTTP/1.1", [("Host", host)],
                                     is_http_request=True)),
                    warc_headers_dict={"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(ns, 'q' + url)}>",
                                       "WARC-Date": "2026-01-01T00:00:00Z"})
                w.write_record(req)
                flush(fh)
                resp = w.create_warc_record(
                    url, "response", payload=BytesIO(body),
                    http_headers=StatusAndHeaders("200 OK", [
                        ("Content-Type", ctype),
                        ("Content-Length", str(len(body)))], protocol="HTTP/1.1"),
                    warc_headers_dict={"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(ns, url)}>",
                                       "WARC-Date": "2026-01-01T00:00:00Z",
                                       "WARC-Identified-Payload-Type": "text/html"})
                w.write_record(resp)
                flush(fh)
                meta = w.create_warc_record(url, "metadata", payload=BytesIO(meta_payload),
                    warc_content_type="application/warc-fields",
                    warc_headers_dict={"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(ns, 'm' + url)}>",
                                       "WARC-Date": "2026-01-01T00:00:00Z"})
                w.write_record(meta)
                flush(fh)
    return html_bytes, sum(p.stat().st_size for p in paths)


def ensure(d: Path, records: int, files: int, seed: int, source: str = "pydocs",
           part: str = "all") -> dict:
    """Build into ``d`` unless a build with the same parameters is already there (the real
    source's manifest also lists, per source, what was collected and written)."""
    man = d / "manifest.json"
    want = {"source": source, "records": records, "files": files, "seed": seed}
    if source == "real":
        want["part"] = part
    if man.exists():
        got = json.loads(man.read_text())
        if all(got.get(k, "pydocs" if k == "source" else None) == v for k, v in want.items()):
            return got
    for p in d.glob("*.warc.gz"):
        p.unlink()
    t = time.perf_counter()
    m = (build_real(d, records, files, seed, part=part) if source == "real"
         else build(d, records, files, seed))
    m["build_s"] = round(time.perf_counter() - t, 1)
    man.write_text(json.dumps(m))
    return m


def _count(folder: Path) -> int:
    n = 0
    for f in glob.glob(str(folder / "**" / "*.jsonl*"), recursive=True):
        with (gzip.open if f.endswith(".gz") else open)(f, "rb") as fh:
            n += sum(1 for _ in fh)
    return n


def _digest(folder: Path) -> str:
    """SHA-1 of the output's lines, sorted (the same documents whatever the file split)."""
    lines: list[bytes] = []
    for f in glob.glob(str(folder / "**" / "*.jsonl*"), recursive=True):
        with (gzip.open if f.endswith(".gz") else open)(f, "rb") as fh:
            lines.extend(fh)
    return hashlib.sha1(b"".join(sorted(lines))).hexdigest()


def _mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6, 1)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        kids = []
        # every thread's children: Dask starts its worker processes from another thread
        for task in glob.glob(f"/proc/{q}/task/*/children"):
            try:
                kids += Path(task).read_text().split()
            except OSError:
                continue
        out += [int(k) for k in kids]
        todo += [int(k) for k in kids]
    return out


def _sample(root: int, out: Any, stop: threading.Event, every_s: float = 30.0,
            peak: list[float] | None = None) -> None:
    """Every ``every_s``: seconds since start, CPU s, largest RSS and high-water mark (MB) of
    the run's processes, and the bytes of .warc.gz their readers have reached (``fdinfo``):
    memory along the file, and the rate of a run too long to wait for."""
    tick, t0 = os.sysconf("SC_CLK_TCK"), time.monotonic()
    out.write("# s cpu_s rss_mb hwm_mb warc_bytes_read loadavg\n")
    while not stop.wait(every_s):
        cpu = rss = hwm = 0.0
        pos: dict[str, int] = {}  # per file: a forked helper shares its parent's descriptor
        for pid in _descendants(root):
            try:
                st = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                cpu += (int(st[11]) + int(st[12])) / tick
                status = Path(f"/proc/{pid}/status").read_text()
                for line in status.splitlines():
                    if line.startswith("VmRSS:"):
                        rss = max(rss, int(line.split()[1]) / 1024)
                    elif line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]) / 1024)
                for fd in Path(f"/proc/{pid}/fd").iterdir():
                    target = os.readlink(fd)
                    if target.endswith(".warc.gz"):
                        info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
                        pos[target] = max(pos.get(target, 0), int(info.split()[1]))
            except (OSError, ValueError, IndexError):
                continue
        if peak is not None:
            peak[0] = max(peak[0], hwm)
        out.write(f"{time.monotonic() - t0:.0f} {cpu:.1f} {rss:.1f} {hwm:.1f} {sum(pos.values())} "
                  f"{os.getloadavg()[0]:.1f}\n")
        out.flush()


def _timed(cmd: list[str], cwd: Path, log: Path) -> tuple[float, float, float]:
    """Wall s, CPU s of all descendants, largest single process's peak RSS in MB; the
    command's output goes to ``log`` (progress lines of a long run can be followed there)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    print(f"# running {' '.join(cmd[-4:])}; log: {log}", flush=True)
    t = time.perf_counter()
    with open(log, "w") as fh, open(log.with_suffix(".samples"), "w") as samples:
        p = subprocess.Popen([sys.executable, "-c", WRAPPER, *cmd], cwd=cwd, env=env,
                             stdout=fh, stderr=subprocess.STDOUT)
        stop = threading.Event()
        peak = [0.0]
        th = threading.Thread(target=_sample, args=(p.pid, samples, stop, 30.0, peak),
                              daemon=True)
        th.start()
        p.wait()
        stop.set()
        th.join()
    wall = time.perf_counter() - t
    tail = log.read_text(errors="replace").strip().splitlines()
    if p.returncode:
        raise SystemExit(f"{cmd[:3]} failed ({p.returncode}):\n" + "\n".join(tail[-40:]))
    _, rss_kib, cpu = next(x for x in reversed(tail) if x.startswith("RUSAGE")).split()
    # ru_maxrss does not always see through mpiexec's proxies (they need not wait for their
    # ranks); the sampler's VmHWM does, but only every 30 s: take the larger.
    return wall, float(cpu), max(int(rss_kib) / 1024, peak[0])


def run_curator(warc: Path, tmp: Path, executor: str, workers: int, logs: Path,
                fix_unicode: bool = False, guess: bool = False) -> dict:
    tag = f"curator-{executor}{workers}{'-guess' if guess else ''}"
    work, out = tmp / f"{tag}-work", tmp / f"{tag}-out"
    yml = tmp / f"{tag}.yaml"
    yml.write_text(PIPELINE.format(
        work=work, out=out, warc=warc, executor=executor, workers=workers,
        fix="  - fix_unicode: {}\n" if fix_unicode else "",
        guess=", languages: [en]" if guess else "",
        dash=", dashboard_address: null" if executor == "dask" else ""))
    cmd = [sys.executable, "-m", "curator", "run", str(yml)]
    if executor == "mpi":
        mpiexec = Path(sys.executable).parent / "mpiexec"
        cmd = [str(mpiexec) if mpiexec.exists() else "mpiexec", "-n", str(workers), *cmd]
    wall, cpu, rss = _timed(cmd, tmp, logs / f"{tag}.log")
    rep = json.loads((work / "report.json").read_text())
    stages = {s["id"]: round(s["seconds"], 1) for s in rep["stages"]}
    return {"tool": "curator" + (" (language guess)" if guess else ""), "executor": executor,
            "workers": workers, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss,
            "docs_out": _count(out), "out_sha1": _digest(out), "stage_s": stages,
            "out_mb": _mb(out), "work_dir_mb": _mb(work)}


def run_peer(warc: Path, tmp: Path, workers: int, files: int, logs: Path) -> dict:
    from bench.bench_ccpath import DATATROVE_PY

    out = tmp / "datatrove-out"
    script = tmp / "datatrove_run.py"
    script.write_text(DATATROVE_PY.format(repo=str(REPO), warc=str(warc), out=str(out),
                                          tasks=files, workers=workers,
                                          logs=str(tmp / "datatrove-logs")))
    wall, cpu, rss = _timed([sys.executable, str(script)], tmp, logs / "datatrove.log")
    return {"tool": "datatrove", "executor": "local", "workers": workers, "wall_s": wall,
            "cpu_s": cpu, "peak_rss_mb": rss, "docs_out": _count(out), "stage_s": {}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=40_000,
                    help="pydocs: this many records; real: at most this many (all unique "
                    "pages when larger)")
    ap.add_argument("--source", choices=["pydocs", "real"], default="pydocs",
                    help="pydocs: python3.11-doc's 530 pages, repeated with a paragraph each; "
                    "real: every unique real page once (bench/real_pages.py)")
    ap.add_argument("--part", choices=["all", "web", "docs"], default="all",
                    help="--source real: only the web pages or only the docs pages")
    ap.add_argument("--debs", help="--source real: folder of the extracted docs packages "
                    "(default $CURATOR_BENCH_DEBS or /var/tmp/cc-debs)")
    ap.add_argument("--mirrors", help="--source real: folder of the git mirrors "
                    "(default $CURATOR_BENCH_MIRRORS or /work/.mirror)")
    ap.add_argument("--files", type=int, default=1, help="split the records over N files")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--executor", choices=["local", "mpi", "dask"], action="append",
                    help="repeatable; default local")
    ap.add_argument("--workers", type=int, default=2, help="MPI ranks / Dask workers")
    ap.add_argument("--peer", action="store_true", help="also run datatrove on the same files")
    ap.add_argument("--dir", help="keep the WARC here (reused when built with the same "
                    "parameters); default a temporary folder, removed at the end")
    ap.add_argument("--fix-unicode", action="store_true",
                    help="also run fix_unicode after read_warc (datatrove's pipeline has no "
                    "such step, so the default compares the same steps)")
    ap.add_argument("--language-guess", choices=["off", "on", "both"], default="off",
                    help="curator's read_warc with languages: [en] (skips extracting pages "
                    "language_id drops; the output is the same); both: one run each, and "
                    "their outputs compared")
    ap.add_argument("--build-only", action="store_true",
                    help="build (or check) the WARC in --dir and stop")
    ap.add_argument("--json", help="append each result row to this JSON-lines file")
    ap.add_argument("--logs", help="folder for the runs' output (default: the temp folder)")
    args = ap.parse_args(argv)
    if args.debs or args.mirrors:
        from bench import real_pages
        real_pages.DEBS = Path(args.debs) if args.debs else real_pages.DEBS
        real_pages.MIRRORS = Path(args.mirrors) if args.mirrors else real_pages.MIRRORS
    tmp = Path(tempfile.mkdtemp(prefix="warc-full-"))
    warc = Path(args.dir) if args.dir else tmp / "warc"
    logs = Path(args.logs) if args.logs else tmp
    logs.mkdir(parents=True, exist_ok=True)
    try:
        man = ensure(warc, args.records, args.files, args.seed, args.source, args.part)
        if man.get("source") == "real":
            capped = ("capped at --records" if man["written"] < man["unique_pages"] else
                      f"all of them (--records {man['records']:,} is larger)")
            print(f"# input: {man['written']:,} response records, each a unique real page once "
                  f"({man['web_pages']:,} web pages, {man['written'] - man['web_pages']:,} "
                  f"Debian docs pages; {man['unique_pages']:,} unique "
                  f"{'' if man['part'] == 'all' else man['part'] + ' '}pages collected, "
                  f"{capped}), {man['html_mb']:,} MB of HTML, {man['gz_mb']:,} MB .warc.gz in "
                  f"{man['files']} file(s); manifest {warc / 'manifest.json'}; build "
                  f"{man.get('build_s', 'cached')} s", flush=True)
            if man["missing"]:
                print(f"# warning: not found, left out: {', '.join(man['missing'])} "
                      "(fetch the mirrors, or --mirrors DIR)", flush=True)
            man["records"] = man["written"]
        else:
            print(f"# input: {man['records']:,} response records ({man['unique_pages']} unique "
                  f"python3.11-doc pages, each ~{man['records'] / man['unique_pages']:.0f} "
                  f"times, one seeded paragraph per record), {man['html_mb']:,} MB of HTML, "
                  f"{man['gz_mb']:,} MB .warc.gz in {man['files']} file(s); build "
                  f"{man.get('build_s', 'cached')} s", flush=True)
        if args.build_only:
            return 0
        print(f"# machine: {os.cpu_count()} cores, shared; load average at start "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        runs = []
        for ex in args.executor or ["local"]:
            w = 1 if ex == "local" else args.workers
            for guess in {"off": [False], "on": [True], "both": [False, True]}[
                    args.language_guess]:
                runs.append(run_curator(warc, tmp, ex, w, logs, args.fix_unicode, guess))
                print(json.dumps(runs[-1]), flush=True)
        if args.language_guess == "both":
            same = len({r["out_sha1"] for r in runs}) == 1
            print(f"# language guess: output {'identical' if same else 'DIFFERENT'} "
                  f"(sha1 of the sorted lines: {', '.join(r['out_sha1'][:12] for r in runs)})",
                  flush=True)
        if args.peer:
            runs.append(run_peer(warc, tmp, min(args.workers, args.files), args.files,
                                 logs))
            print(json.dumps(runs[-1]), flush=True)
        print("\n| tool | executor x workers | docs out | wall s | CPU s | records/s/core (CPU) "
              "| MB HTML/s/core (CPU) | peak RSS MB/process |")
        print("|---|---|---|---|---|---|---|---|")
        for r in runs:
            print(f"| {r['tool']} | {r['executor']} x {r['workers']} | {r['docs_out']:,} | "
                  f"{r['wall_s']:.0f} | {r['cpu_s']:.0f} | {man['records'] / r['cpu_s']:.1f} | "
                  f"{man['html_mb'] / r['cpu_s']:.2f} | {r['peak_rss_mb']:.0f} |")
            r.update(manifest=man, loadavg=os.getloadavg())
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")
        peer = [r for r in runs if r["tool"] == "datatrove"]
        if peer:
            for r in runs:
                if r["tool"].startswith("curator"):
                    print(f"ratio {r['tool']} ({r['executor']} x {r['workers']}) / datatrove: "
                          f"wall {peer[0]['wall_s'] / r['wall_s']:.2f}x, "
                          f"CPU {peer[0]['cpu_s'] / r['cpu_s']:.2f}x")
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
