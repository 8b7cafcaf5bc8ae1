"""From ``curator run`` to a Filter's keep/reject decision in five calls, the path that
docs/architecture.md draws: this test takes the call stack inside a real filter's ``check``
during ``curator run`` and compares it with the drawing, so neither can drift."""

from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path
from types import FrameType

from curator import Document, Filter
from curator.cli import main
from tests.core.helpers_core import make_corpus

#: The functions between ``cmd_run`` and ``Filter.process`` (docs/architecture.md).
PATH = ["cmd_run", "Runner.run", "Runner._run_group", "LocalExecutor.map", "run_shard",
        "Filter.process"]


class StackProbe(Filter):
    """Keeps documents of at least 5 words, and writes the call stack of its first check to
    the file ``out`` (the module the runner imports by name may not be the test's own)."""

    name = "stack_probe"

    def __init__(self, out: str = "") -> None:
        self.out = out

    def check(self, doc: Document) -> str | None:
        if self.out and not os.path.exists(self.out):
            Path(self.out).write_text(json.dumps(_calls(sys._getframe(1))))
        return None if len(doc.text.split()) >= 5 else "short"


def _calls(frame: FrameType | None) -> list[str]:
    """The plain function calls from ``cmd_run`` to here, outermost first: the generators
    that stream documents from one stage into the next (counting and timing them) run inside
    these calls and are plumbing, not a step a reader follows; ``Filter.process`` itself is a
    generator and is kept."""
    out = []
    while frame is not None:
        code = frame.f_code
        name = code.co_qualname
        if name == "Filter.process" or not code.co_flags & inspect.CO_GENERATOR:
            out.append(name)
        if name == "cmd_run":
            break
        frame = frame.f_back
    return out[::-1]


def test_curator_run_reaches_a_filter_decision_in_five_calls(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    make_corpus(str(data / "a.jsonl"), 20, seed=1)
    yaml = tmp_path / "p.yaml"
    yaml.write_text(f"name: hops\nwork_dir: {tmp_path / 'wd'}\nprogress: off\nstages:\n"
                    f"  - read_jsonl: {{paths: \"{data}/*.jsonl\"}}\n"
                    "  - tests.core.test_call_path:StackProbe:"
                    f" {{out: \"{tmp_path / 'stack.json'}\"}}\n")
    assert main(["run", str(yaml)]) == 0
    assert json.loads((tmp_path / "stack.json").read_text()) == PATH
    assert len(PATH) - 1 == 5  # hops: cmd_run -> ... -> Filter.process, which decides
    doc = (Path(__file__).parents[2] / "docs" / "architecture.md").read_text()
    assert all(f"`{name}`" in doc for name in PATH)
