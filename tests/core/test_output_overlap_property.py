"""Property: ``curator validate`` accepts a pipeline exactly when no two of its output folders
are equal or nested and none lies inside curator's own folders of the work_dir."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.base.errors import ConfigError
from curator.core.pipeline import loads

#: Nothing is created: validation only resolves paths.
BASE = PurePosixPath("/nonexistent-curator-property")
WORK = BASE / "w"
OWN = {"stages", "rejected", "quarantine", "report.json", "report.html", "_outputs.json"}
SEGMENTS = ["a", "b", "stages", "rejected", "quarantine", "out", "."]

segments = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3)
# relative to the work_dir, absolute inside it, or absolute outside it
paths = st.tuples(st.sampled_from(["rel", "abs-in", "abs-out"]), segments)


def spelled(kind: str, segs: list[str]) -> str:
    rel = "/".join(segs)
    return rel if kind == "rel" else str((WORK if kind == "abs-in" else BASE / "x") / rel)


def resolved(kind: str, segs: list[str]) -> PurePosixPath:
    """The oracle's own resolution: PurePosixPath parts, '.' dropped."""
    root = BASE / "x" if kind == "abs-out" else WORK
    return root.joinpath(*[s for s in segs if s != "."])


def overlap_free(outs: list[PurePosixPath]) -> bool:
    # an output that *is* the work_dir is refused by `curator run` before any stage runs,
    # by name, with the other protected folders (the current folder, home): not by validate
    outs = [a for a in outs if a != WORK]
    for i, a in enumerate(outs):
        if a.is_relative_to(WORK) and a != WORK and a.relative_to(WORK).parts[0] in OWN:
            return False
        for b in outs[:i]:
            if a.is_relative_to(b) or b.is_relative_to(a):
                return False
    return True


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(paths, st.sampled_from(["write_jsonl", "write_parquet"])),
                min_size=1, max_size=4))
def test_validate_accepts_exactly_the_pipelines_without_overlapping_outputs(writers):
    lines = ["name: prop", f"work_dir: {WORK}", "stages:", "  - read_jsonl: {paths: d.jsonl}"]
    for i, ((kind, segs), stage) in enumerate(writers):
        lines += [f"  - id: w{i}", f"    {stage}: {{path: '{spelled(kind, segs)}'}}",
                  "    inputs: [read_jsonl]"]
    outs = [resolved(kind, segs) for (kind, segs), _ in writers]
    expect = overlap_free(outs)
    try:
        loads("\n".join(lines) + "\n", source="p.yaml")
        accepted, why = True, ""
    except ConfigError as e:
        accepted, why = False, str(e)
    assert accepted == expect, (writers, why)
    if not accepted:
        assert why.startswith("p.yaml:") and "output folder" in why


@pytest.mark.parametrize("url", ["s3://bucket/out", "s3://bucket/out/"])
def test_remote_outputs_are_compared_as_urls(url):
    text = ("name: r\nwork_dir: /nonexistent-curator-property/w\nstages:\n"
            "  - read_jsonl: {paths: d.jsonl}\n"
            f"  - id: a\n    write_jsonl: {{path: '{url}'}}\n    inputs: [read_jsonl]\n"
            "  - id: b\n    write_parquet: {path: 's3://bucket/out/x'}\n    inputs: [read_jsonl]\n")
    with pytest.raises(ConfigError, match="inside the output folder of stage 'a'"):
        loads(text, source="p.yaml")
