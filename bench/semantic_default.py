"""Which ``semantic_dedup`` configuration is the default: documents per second through
``curator run`` on 2 cores, and recall of the full model's duplicate pairs.

    python -m bench.semantic_default --corpus debian --n 10000 --work /tmp/semdef \
        [--threshold 0.9] [--configs a,b,...]

Each run leaves its rows in a result file under bench/results/semantic_default/.

Each configuration runs ``read_jsonl -> semantic_dedup {...}`` through the ``curator``
command in a fresh work_dir (a first run: distilling the static model and exporting an
encoder are included, as a new user pays them), pinned to 2 cores (``taskset -c 0,1`` when
the machine has more), with no ``model`` key: the packaged all-MiniLM-L6-v2. Wall seconds,
documents per second and the child's CPU seconds are reported. The reference is
``prefilter: none, backend: torch`` (the model's exact vectors on every document): its
brute-force pairs at cosine >= threshold (from the vectors it cached) are the truth; a
configuration's *pair recall* is the share of those pairs whose two documents both went through
its full model (its candidates) and whose cosine in its own vectors still reaches the
threshold; *removal recall* is the share of the reference's removed documents it removes too.

Corpora (real text, not in the repository): ``debian`` = the package descriptions of the
machine's Debian lists (``apt-cache dumpavail``; without the ``Translation-en`` lists these are
the one-line summaries, ~47 characters, ~63,000 on bookworm, full of templated near-copies:
``-dev``/``-doc`` packages, language packs), a seeded sample of ``--n``; ``python-docs`` =
paragraphs of 200+ characters of Python's documentation sources (Debian ``python3.11-doc``);
``other-docs`` = paragraphs of other projects' documentation (:func:`other_docs_corpus`); or
any JSONL file with ``id`` and ``text``.

CPU figures need a quiet machine (nothing else running): run it there, not on a shared one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import bench_main

REPO = Path(__file__).resolve().parents[1]

#: name -> semantic_dedup parameters (besides threshold); the first is the reference
CONFIGS: dict[str, dict] = {
    "full-torch": {"prefilter": "none", "backend": "torch"},
    "full-fast-bf16": {"prefilter": "none", "backend": "fast-bf16"},
    "static+torch": {"prefilter": "static", "backend": "torch"},
    "static+fast-bf16": {"prefilter": "static", "backend": "fast-bf16"},
    "static+onnx-int8": {"prefilter": "static", "backend": "onnx-int8"},
    "default": {},
    "default-fast": {"prefilter_cuts": "fast"},
}


def debian_corpus(n: int, seed: int) -> list[dict]:
    """``n`` package descriptions (seeded sample) from ``apt-cache dumpavail``."""
    out = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True,
                         check=True).stdout
    docs, seen = [], set()
    for block in out.split("\n\n"):
        pkg, desc, lines = None, [], block.splitlines()
        for i, ln in enumerate(lines):
            if ln.startswith("Package: "):
                pkg = ln[9:].strip()
            elif ln.startswith("Description: "):
                desc = [ln[13:].strip()]
                for more in lines[i + 1:]:
                    if not more.startswith(" "):
                        break
                    t = more.strip()
                    desc.append("" if t == "." else t)
        if pkg and desc and pkg not in seen:
            seen.add(pkg)
            text = desc[0] + ". " + " ".join(x for x in desc[1:] if x)
            docs.append({"id": pkg, "text": text.strip()})
    random.Random(seed).shuffle(docs)
    return docs[:n]


def python_docs_corpus(n: int, seed: int,
                      root: str = "/usr/share/doc/python3.11/html/_sources") -> list[dict]:
    """``n`` paragraphs of at least 200 characters (seeded sample) of Python's documentation
    sources (Debian's ``python3.11-doc``): prose with the near-copies manuals have (the same
    note on many pages, sibling functions described alike)."""
    docs = []
    for path in sorted(Path(root).rglob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for k, para in enumerate(text.split("\n\n")):
            para = " ".join(para.split())
            if len(para) >= 200:
                docs.append({"id": f"{path.relative_to(root)}#{k}", "text": para})
    random.Random(seed).shuffle(docs)
    return docs[:n]


def other_docs_corpus(n: int, seed: int, mirror: str = "/work/.mirror",
                      curator_rev: str = "6068975") -> list[dict]:
    """``n`` paragraphs of at least 200 characters (seeded sample) of documentation that is
    neither Python's nor Debian's: the ``.md``/``.rst`` files of the git mirrors under
    ``mirror`` (``<owner>+<name>/repo``, at HEAD; Universal Dependencies treebanks skipped),
    the PyPI descriptions (``METADATA``) of the packages installed here, and curator's docs
    at ``curator_rev``.
    The held-out corpus of the first pass's cuts (docs/dedup.md)."""
    import glob
    import sysconfig

    def paras(text: str, src: str) -> list[dict]:
        out = []
        for k, para in enumerate(text.split("\n\n")):
            para = " ".join(para.split())
            if len(para) >= 200 and not para.startswith(("|", "```", "<")):
                out.append({"id": f"{src}#{k}", "text": para})
        return out

    docs: list[dict] = []
    for g in sorted(glob.glob(f"{mirror}/*+*/repo")):
        name = Path(g).parent.name
        if name.startswith("UniversalDependencies+"):
            continue
        files = subprocess.run(["git", "--git-dir", g, "ls-tree", "-r", "--name-only", "HEAD"],
                               capture_output=True, text=True).stdout.split()
        for f in (f for f in files if f.endswith((".md", ".rst"))):
            text = subprocess.run(["git", "--git-dir", g, "show", f"HEAD:{f}"],
                                  capture_output=True, text=True, errors="replace").stdout
            docs += paras(text, f"{name}:{f}")
    random.Random(seed).shuffle(docs)  # the order the held-out run used
    site = sysconfig.get_paths()["purelib"]
    more = []
    git = ["git", "-C", str(REPO)]
    names = subprocess.run([*git, "ls-tree", "--name-only", curator_rev, "docs/"],
                           capture_output=True, text=True, check=True).stdout.split()
    for f in [x for x in sorted(names) if x.endswith(".md")] + ["README.md"]:
        text = subprocess.run([*git, "show", f"{curator_rev}:{f}"], capture_output=True,
                              text=True, check=True).stdout
        more += paras(text, f"curator:{f}")
    for f in sorted(glob.glob(f"{site}/*.dist-info/METADATA")):
        body = Path(f).read_text(encoding="utf-8", errors="replace").split("\n\n", 1)
        more += paras(body[1] if len(body) > 1 else "", f"pypi:{Path(f).parent.name}")
    docs += more
    random.Random(seed).shuffle(docs)
    return docs[:n]


def run_config(name: str, params: dict, corpus: Path, work: Path, threshold: float,
               cores: str | None) -> dict:
    wd = work / name
    shutil.rmtree(wd, ignore_errors=True)
    wd.mkdir(parents=True)
    stage = {"threshold": threshold, **params}
    (wd / "p.yaml").write_text(json.dumps({
        "name": "semdef", "work_dir": str(wd / "work"), "progress": "log",
        "stages": [{"id": "src", "read_jsonl": {"paths": str(corpus)}},
                   {"id": "sem", "semantic_dedup": stage}]}))
    cmd = [sys.executable, "-m", "curator", "run", str(wd / "p.yaml")]
    if cores:
        cmd = ["taskset", "-c", cores, *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                       text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    (wd / "stderr.log").write_text(p.stderr)
    if p.returncode:
        raise SystemExit(f"{name}: curator run failed:\n{p.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"name": name, "params": stage, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "cost_line": next((ln for ln in p.stderr.splitlines() if "expect" in ln), None),
            "work": str(wd / "work")}


def _vectors(work: str) -> tuple[np.ndarray, list[str]]:
    """The full model's vectors a run cached (rows of documents it did not embed: NaN) and
    the document ids, in input order."""
    sem = Path(work) / "stages" / "sem"
    marker = json.loads((sem / "_SUCCESS.json").read_text())
    emb = Path(marker["artifacts"]["semantic_dedup_embeddings"])
    vecs, ids = [], []
    for ids_file in sorted((sem / "ids").glob("*.json")):
        shard = ids_file.stem.split("-", 1)[1]
        ids += json.loads(ids_file.read_text())
        (vec,) = [f for f in emb.glob(f"{shard}-*.npy")]
        vecs.append(np.load(vec).astype(np.float32))
    return np.concatenate(vecs), ids


def _pairs(x: np.ndarray, t: float) -> set[tuple[int, int]]:
    ok = ~np.isnan(x[:, 0])
    idx = np.flatnonzero(ok)
    y = x[ok]
    out = set()
    for s in range(0, len(y), 2048):
        sim = y[s:s + 2048] @ y.T
        for a, b in zip(*np.nonzero(sim >= t)):
            i, j = idx[s + a], idx[b]
            if i < j:
                out.add((int(i), int(j)))
    return out


def _removed(work: str) -> set[str]:
    import zstandard

    out = set()
    for f in (Path(work) / "rejected" / "sem").glob("*.jsonl.zst"):
        with open(f, "rb") as fh:
            data = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
        out |= {json.loads(line)["id"] for line in data.splitlines() if line.strip()}
    return out


def main() -> tuple[dict[str, str], dict[str, object]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="debian")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=47)
    ap.add_argument("--threshold", type=float, default=0.9)
    ap.add_argument("--work", required=True)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--cores", default="0,1", help="taskset list ('' for no pinning)")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.jsonl"
    if args.corpus == "debian":
        docs = debian_corpus(args.n, args.seed)
    elif args.corpus == "python-docs":
        docs = python_docs_corpus(args.n, args.seed)
    elif args.corpus == "other-docs":
        docs = other_docs_corpus(args.n, args.seed)
    else:
        with open(args.corpus) as f:
            docs = [json.loads(ln) for ln in f][: args.n]
    with open(corpus, "w") as f:
        for d in docs:
            f.write(json.dumps({"id": d["id"], "text": d["text"]}) + "\n")
    cores = args.cores if args.cores and (os.cpu_count() or 1) > 2 and shutil.which(
        "taskset") else None
    load = os.getloadavg()
    print(f"# {len(docs)} documents, mean {np.mean([len(d['text']) for d in docs]):.0f} "
          f"characters; threshold {args.threshold}; cores {cores or 'all'} of "
          f"{os.cpu_count()}; load average at start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    names = args.configs.split(",")
    if names[0] != "full-torch":
        names.insert(0, "full-torch")
    rows = []
    truth: set = set()
    ref_removed: set = set()
    for name in names:
        r = run_config(name, CONFIGS[name], corpus, work, args.threshold, cores)
        x, _ids = _vectors(r["work"])
        if name == "full-torch":
            truth = _pairs(x, args.threshold)
            ref_removed = _removed(r["work"])
        mine = _pairs(x, args.threshold)
        cand = ~np.isnan(x[:, 0])
        kept = sum(1 for i, j in truth if cand[i] and cand[j] and (i, j) in mine)
        removed = _removed(r["work"])
        r.update({"docs_per_s": round(len(docs) / r["wall_s"], 1),
                  "docs_per_cpu_s": round(len(docs) / max(r["cpu_s"], 1e-9), 1),
                  "through_full_model": int(cand.sum()), "true_pairs": len(truth),
                  "pair_recall": round(kept / len(truth), 4) if truth else None,
                  "removed": len(removed),
                  "removal_recall": round(len(removed & ref_removed) / len(ref_removed), 4)
                  if ref_removed else None})
        rows.append(r)
        print(f"{name:18s} wall {r['wall_s']:7.1f} s  {r['docs_per_s']:7.1f} docs/s  "
              f"cpu {r['cpu_s']:7.1f} s  full model on {r['through_full_model']:6d}  "
              f"pairs {r['pair_recall']}  removed {r['removed']} "
              f"(recall {r['removal_recall']})", flush=True)
    load = os.getloadavg()
    print(f"# load average at end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    figures = {r["name"]: f"{r['docs_per_s']} docs/s, pair recall {r['pair_recall']}, "
               f"removal recall {r['removal_recall']}" for r in rows}
    return figures, {"documents": len(docs), "corpus": args.corpus,
                     "threshold": args.threshold, "cores": cores, "rows": rows}


if __name__ == "__main__":
    sys.exit(bench_main(__file__, main))
