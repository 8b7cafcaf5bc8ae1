"""Stages and data used by the core tests. Pipelines name them as
``tests.core.helpers_core:<stage>``; Dask workers and MPI ranks import them because the tests
put the repository root on PYTHONPATH (``tests.helpers.cli_env``)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from curator import Document, FilePath, Filter, GlobalStage, Shard, filter, modifier
from curator.core.context import GlobalContext, ShardContext
from curator.storage.shards import read_shard

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent

WORDS = (
    "data curation turns raw web crawls into clean training text for language models and every "
    "stage records why a document was removed so nothing is lost along the way the pipeline "
    "runs on one laptop or a cluster with the same output bytes"
).split()


def make_corpus(path: str, n: int, seed: int = 0, bad_lines: int = 0) -> list[dict]:
    """Write ``n`` JSONL documents (and ``bad_lines`` malformed lines); return the records."""
    rnd = random.Random(seed)
    every = n // bad_lines if bad_lines else 0
    recs = []
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            k = rnd.choice([3, 8, 15, 30, 60, 120, 250])
            rec = {"id": f"doc-{seed}-{i}", "text": " ".join(rnd.choice(WORDS) for _ in range(k)),
                   "url": f"https://example.org/{seed}/{i}"}
            recs.append(rec)
            f.write(json.dumps(rec) + "\n")
            if every and i % every == every - 1:
                f.write('{"id": "broken", "text": \n')
    return recs


@filter
def min_words(doc: Document, n: int = 10) -> bool:
    """Keep documents with at least ``n`` words."""
    return len(doc.text.split()) >= n


@filter
def not_listed(doc: Document, words: FilePath = "") -> bool:
    """Drop documents holding a word listed (one per line) in the file ``words``: a custom
    stage whose parameter names a file (its content is part of the stage's key)."""
    listed = set(Path(words).read_text().split()) if words else set()
    return not (set(doc.text.split()) & listed)


@modifier
def upper_first(doc: Document) -> Document:
    doc.text = doc.text[:1].upper() + doc.text[1:]
    return doc


@filter
def crash_once(doc: Document, shard_suffix: str = "", marker: str = "") -> bool:
    """Kill the whole process (SIGKILL) the first time a document of a shard whose name ends
    with ``shard_suffix`` is seen; the marker file makes the rerun go through."""
    if marker and not os.path.exists(marker) and doc.meta.get("_shard", "").endswith(shard_suffix):
        with open(marker, "w") as f:
            f.write("crashed")
        os.kill(os.getpid(), signal.SIGKILL)
    return True


@filter
def crash_on_id(doc: Document, id: str = "", marker: str = "") -> bool:
    """Kill the whole process (SIGKILL) when the document ``id`` is seen and ``marker`` does not
    exist yet (it is created first, so the rerun goes through)."""
    if marker and doc.id == id and not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write("crashed")
        os.kill(os.getpid(), signal.SIGKILL)
    return True


_SEEN = 0


@filter
def crash_on_host(doc: Document, host: str = "", after: int = 5, marker: str = "") -> bool:
    """Kill the whole process (SIGKILL) at the ``after``-th document it sees, if it runs on
    the host named ``host`` and ``marker`` does not exist yet (created first)."""
    global _SEEN
    _SEEN += 1
    if marker and after <= _SEEN and socket.gethostname() == host and \
            not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(host)
        os.kill(os.getpid(), signal.SIGKILL)
    return True


class LeakyReason(Filter):
    """Test helper (tests/security): rejects short documents with a reason that quotes the
    value of the environment variable ``env``, as a client library's error message might, and
    takes a secret-named parameter ``api_password`` it never uses."""

    name = "leaky_reason"

    def __init__(self, env: str = "CURATOR_TEST_API_TOKEN", api_password: str = "",
                 min_words: int = 10, fail_on: str = "") -> None:
        self.env, self.min_words, self.fail_on = env, min_words, fail_on

    def check(self, doc: Document) -> str | None:
        if self.fail_on and doc.id == self.fail_on:  # a client library's error, secret and all
            raise RuntimeError(f"https://alice:{os.environ.get('CURATOR_TEST_URL_PW', '')}@"
                               f"api.example/ refused token {os.environ.get(self.env, '')}")
        if len(doc.text.split()) < self.min_words:
            return f"service refused token {os.environ.get(self.env, '')}"
        return None


def _leak(_item: int) -> None:
    raise RuntimeError(f"https://alice:{os.environ.get('CURATOR_TEST_URL_PW', '')}@api.example/"
                       f" refused token {os.environ.get('CURATOR_TEST_API_TOKEN', '')}")


class LeakyPhase(GlobalStage):
    """Test helper (tests/security): a phase whose task fails with a client library's error
    that quotes a URL password and an environment secret (not a curator error)."""

    name = "leaky_phase"

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        ctx.map(_leak, [0], phase="leak")
        return ctx.passthrough(shards)


class TagShard(GlobalStage):
    """Test helper: records each document's shard name in meta (used by crash_once)."""

    name = "tag_shard"

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        def tag(docs: Iterator[Document], sctx: ShardContext) -> Iterator[Document]:
            for d in docs:
                d.meta["_shard"] = sctx.shard
                yield d

        return ctx.write_shards(tag, shards)


def _lengths(path: str) -> list[int]:
    return [len(d.text) for d in read_shard(path)]


class AboveMedian(GlobalStage):
    """Test helper global stage: keep documents at least as long as the corpus median.

    Phase 1 maps over shards (resumable), the driver computes the median, phase 2 writes."""

    name = "above_median"

    def __init__(self, publish: str = "median") -> None:
        self.publish = publish

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        per_shard = ctx.map(_lengths, [s.path for s in shards], phase="lengths",
                            keys=[s.name for s in shards])
        lengths = sorted(x for part in per_shard for x in part)
        median = lengths[len(lengths) // 2] if lengths else 0
        ctx.artifacts[self.publish] = median
        ctx.count("documents_seen", len(lengths))

        def keep(docs: Iterator[Document], sctx: ShardContext) -> Iterator[Document]:
            for d in docs:
                if len(d.text) >= median:
                    yield d
                else:
                    sctx.reject(d, "below_median", median=median)

        return ctx.write_shards(keep, shards)


@filter
def burn(doc: Document, ms: float = 20.0) -> bool:
    """Spend ``ms`` of CPU time on each document (the report's CPU seconds must show it)."""
    import time

    end = time.process_time() + ms / 1000
    while time.process_time() < end:
        pass
    return True


_HOGGED = False


@filter
def hog(doc: Document, mb: int = 0) -> bool:
    """Write ``mb`` MB of memory once per process, then free it (the report's peak RSS of
    this stage must show it, and the next stage's must not)."""
    global _HOGGED
    if not _HOGGED:
        _HOGGED = True
        block = b"\x01" * (mb << 20)
        del block
    return True


@filter
def explode(doc: Document, doc_id: str = "") -> bool:
    """Raise on one document: a stage bug, which must fail the run with a message."""
    if doc.id == doc_id:
        raise RuntimeError(f"boom on {doc.id}")
    return True


def tree_digest(d: Path) -> dict[str, str]:
    """sha256 of every file under ``d``, by relative path (to compare outputs byte for byte)."""
    return {p.relative_to(d).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


_GATE_PASSED = False


@filter
def gate(doc: Document, fifo: str = "") -> bool:
    """Block on the first document until something is written to the named pipe ``fifo``
    (a test holds a run in the middle this way, without sleeps)."""
    global _GATE_PASSED
    if fifo and not _GATE_PASSED:
        with open(fifo) as f:
            f.read()
        _GATE_PASSED = True
    return True


def quickstart_outputs(wd: Path) -> dict[str, str]:
    """sha256 of a quickstart's user-facing outputs (curated JSONL, Megatron files) and of its
    blend.json with the work_dir path neutralised, to compare runs in different work_dirs."""
    out = {}
    for p in sorted([*wd.glob("curated/*"), *wd.glob("megatron/*")]):
        out[p.relative_to(wd).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    blend = (wd / "blend.json").read_text().replace(str(wd), "<WD>")
    out["blend.json"] = hashlib.sha256(blend.encode()).hexdigest()
    return out


@filter
def hold(doc: Document, folder: str = "") -> bool:
    """On the first document this process sees for ``folder``: write
    ``<folder>/held-<host>-<pid>``, then wait until ``<folder>/release`` exists (a test cuts a
    host's network while every process of a run is known to be in the middle of it)."""
    if folder and folder not in _HELD:
        import socket
        import time

        d = Path(folder)
        (d / f"held-{socket.gethostname()}-{os.getpid()}").touch()
        while not (d / "release").exists():
            time.sleep(0.05)
        _HELD.add(folder)
    return True


_HELD: set[str] = set()
