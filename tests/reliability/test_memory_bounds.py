"""Hostile input must not take unbounded memory: each case runs ``curator run`` in a
subprocess and bounds its peak RSS (``ru_maxrss`` of the process tree, read by a small wrapper
process so earlier tests' children do not count). The bounds are generous (a few times a
normal run's ~150 MB) and each fails on the code before the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import cli_env

#: Runs argv[1:], then prints the largest peak RSS (KiB) of the processes it waited for.
_WRAP = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
         "sys.exit(r.returncode)")


def run_measured(tmp: Path, yaml_text: str, timeout: float = 300
                 ) -> tuple[subprocess.CompletedProcess, float]:
    """``curator run p.yaml`` in ``tmp``; its result and peak RSS in MB."""
    (tmp / "p.yaml").write_text(yaml_text)
    p = subprocess.run([sys.executable, "-c", _WRAP, sys.executable, "-m", "curator", "run",
                        "p.yaml"], cwd=tmp, env=cli_env(), capture_output=True, text=True,
                       timeout=timeout)
    lines = p.stderr.strip().splitlines()
    peak_kib = int(lines[-1])
    p.stderr = "\n".join(lines[:-1])
    return p, peak_kib / 1024


def _rejected(work: Path, stage: str) -> list[dict]:
    import zstandard

    out = []
    for f in sorted((work / "rejected" / stage).glob("*.jsonl.zst")):
        with zstandard.open(f, "rt") as fh:
            out += [json.loads(x) for x in fh]
    return out


def test_url_blocklist_host_of_50000_labels_is_rejected_in_bounded_memory(tmp_path):
    """A 100 KB host of 50,000 labels used to build every parent domain (quadratic: 2.4 GB,
    12 s; 200,000 labels were killed by the OS). A host over 253 characters is no host: the
    document is rejected as ``url_invalid_host``; the others are checked as before."""
    host = "a." * 50_000 + "example.com"
    recs = [{"id": "hostile", "text": "t", "url": f"http://{host}/x"},
            {"id": "blocked", "text": "t", "url": "https://www.spam.example/a"},
            {"id": "fine", "text": "t", "url": "https://ok.example/"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    p, peak = run_measured(tmp_path, (
        "name: hostile-url\nwork_dir: w\nstages:\n"
        "  - read_jsonl: {paths: in.jsonl}\n"
        "  - url_blocklist: {domains: [spam.example]}\n"
        "    id: urls\n"
        "  - write_jsonl: {path: out, compression: none}\n"))
    assert p.returncode == 0, p.stderr[-2000:]
    assert peak < 600, f"peak RSS {peak:.0f} MB"
    print(f"peak RSS {peak:.0f} MB")
    kept = [json.loads(x)["id"] for f in sorted((tmp_path / "w" / "out").glob("*.jsonl"))
            for x in f.read_text().splitlines()]
    assert kept == ["fine"]
    rej = {r["id"]: r["rejected"]["reason"] for r in _rejected(tmp_path / "w", "urls")}
    assert rej == {"hostile": "url_invalid_host", "blocked": "url_blocked_domain"}


def test_select_with_a_100000_item_list_stays_small_and_quotes_it_briefly(tmp_path):
    """A 100,000-item list literal was rebuilt for every document and the whole expression
    (700 KB) copied into every rejection reason (1.77 GB). Constants are built once, and a
    long expression is quoted by its start and a digest."""
    items = ",".join(str(i) for i in range(100_000))  # 590 KB (pipeline files stop at 1 MB)
    n = 3000
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"id": str(i), "text": "t", "n": i * 7}) + "\n" for i in range(n)))
    p, peak = run_measured(tmp_path, (
        "name: big-list\nwork_dir: w\nstages:\n"
        "  - read_jsonl: {paths: in.jsonl}\n"
        f"  - select: {{expr: \"meta.n not in [{items}]\"}}\n"
        "    id: sel\n"), timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    print(f"peak RSS {peak:.0f} MB")
    assert peak < 600, f"peak RSS {peak:.0f} MB"
    rej = _rejected(tmp_path / "w", "sel")
    # n = 0, 7, ..., 20993: all in the list, all rejected
    assert len(rej) == n
    [reason] = {r["rejected"]["reason"] for r in rej}
    assert reason.startswith("select:meta.n not in [0,1,2,3,") and len(reason) < 160


def test_line_dedup_batches_by_bytes_not_documents(tmp_path):
    """The hash phase normalised 512 documents at a time: on long pages that is the whole
    shard (a 187 MB shard took 3.35 GB). It now normalises about ``batch_mb`` (4) of text at a
    time; the result (every line seen twice or more removed) is unchanged."""
    import random
    from collections import Counter

    rnd = random.Random(23)
    words = ("the of and to in is was for on that with as by at from his her it an be this "
             "are which or cookie share menu home about contact news login").split()
    def tag(i: int) -> str:  # distinct lines without digits (fineweb makes every number 0)
        return "".join(chr(97 + (i // 26 ** k) % 26) for k in range(4))

    pool = [" ".join(rnd.choices(words, k=rnd.randint(4, 9))) + " " + tag(i)
            for i in range(300_000)]
    n_docs, n_lines = 600, 4000  # ~100 KB pages, a 62 MB shard
    seen: Counter[int] = Counter()
    with open(tmp_path / "in.jsonl", "w") as f:
        for d in range(n_docs):
            picks = rnd.choices(range(len(pool)), k=n_lines)
            seen.update(picks)
            f.write(json.dumps({"id": str(d), "text": "\n".join(pool[j] for j in picks)}) + "\n")
    p, peak = run_measured(tmp_path, (
        "name: long-pages\nwork_dir: w\nstages:\n"
        "  - read_jsonl: {paths: in.jsonl, shard_size_mb: 256}\n"
        "  - line_dedup: {}\n    id: ld\n"), timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    print(f"peak RSS {peak:.0f} MB")
    assert peak < 700, f"peak RSS {peak:.0f} MB"
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    [st] = [s for s in rep["stages"] if s["id"] == "ld"]
    assert st["counters"]["lines_hashed"] == n_docs * n_lines
    assert st["counters"]["lines_duplicate"] == sum(c for c in seen.values() if c > 1)
