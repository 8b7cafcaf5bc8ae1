"""An output folder keeps only documents of the current inputs, whatever its writer is called:
a writer renamed (``out1`` reading a.jsonl and b.jsonl becomes ``out2`` reading a.jsonl only)
used to leave b's documents in the folder through reruns and ``curator prune --yes``
(docs/running.md promises an output folder never keeps documents of inputs that are gone).
Files curator did not write, or that were changed since, are never removed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.helpers import run_cli

PIPE = """name: t
work_dir: {wd}
progress: off
stages:
  - read_jsonl: {{paths: [{paths}]}}
  - id: {writer}
    write_jsonl: {{path: {out}}}
"""


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    for name in "ab":
        (tmp_path / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": f"{name}{i}", "text": f"document {name} {i} with words"}) + "\n"
            for i in range(3)))
    out = tmp_path / "out"
    for n, (writer, files) in enumerate((("out1", "a.jsonl, b.jsonl"), ("out2", "a.jsonl"))):
        paths = ", ".join(f"'{tmp_path / f.strip()}'" for f in files.split(","))
        (tmp_path / f"p{n + 1}.yaml").write_text(PIPE.format(
            wd=tmp_path / "w", paths=paths, writer=writer, out=out))
    return tmp_path / "p1.yaml", tmp_path / "p2.yaml"


def _ids(out: Path) -> set[str]:
    return {json.loads(x)["id"] for f in out.glob("*.jsonl.gz")
            for x in gzip.decompress(f.read_bytes()).decode().splitlines()}


A = {"a0", "a1", "a2"}


def test_a_renamed_writer_keeps_no_documents_of_inputs_that_are_gone(tmp_path):
    p1, p2 = _setup(tmp_path)
    out = tmp_path / "out"
    run_cli("run", str(p1))
    assert _ids(out) == A | {"b0", "b1", "b2"}
    mine = out / "notes.txt"  # the user's own file in the folder: never curator's to remove
    mine.write_text("mine\n")
    run_cli("run", str(p2))
    assert _ids(out) == A
    run_cli("prune", str(p2), "--yes")
    run_cli("run", str(p2))
    assert _ids(out) == A
    assert mine.read_text() == "mine\n"


def test_prune_first_then_the_renamed_writer(tmp_path):
    p1, p2 = _setup(tmp_path)
    out = tmp_path / "out"
    run_cli("run", str(p1))
    pruned = run_cli("prune", str(p2), "--yes").stdout
    assert "stages/out1" in pruned
    run_cli("run", str(p2))
    assert _ids(out) == A
    assert run_cli("run", str(p2)).returncode == 0 and _ids(out) == A


def test_a_file_changed_since_curator_wrote_it_is_kept(tmp_path):
    """b's output file edited by the user after the run is no longer the file curator wrote:
    it stays (with a line for nothing: it is the user's now)."""
    p1, p2 = _setup(tmp_path)
    out = tmp_path / "out"
    run_cli("run", str(p1))
    b_file = next(f for f in out.glob("*.jsonl.gz") if "b0" in gzip.decompress(
        f.read_bytes()).decode())
    b_file.write_bytes(gzip.compress(b'{"id": "edited", "text": "the user wrote this"}\n'))
    run_cli("run", str(p2))
    run_cli("prune", str(p2), "--yes")
    assert b_file.exists() and "edited" in _ids(out)
