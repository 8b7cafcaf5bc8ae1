"""A custom stage without a ``Params`` class is set up like any other: its ``setup()`` runs when
it is built, from YAML and from Python (it used to be skipped, so the stage failed on its first
document with an AttributeError)."""

from __future__ import annotations

import json
from pathlib import Path

import curator

MODULE = '''
from curator import Filter


class AtLeastThreeWords(Filter):
    def setup(self):
        self.least = 3

    def check(self, doc):
        return None if len(doc.text.split()) >= self.least else "short"
'''


def test_a_filter_without_params_has_its_setup_called(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "my_stages_setup.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"id": str(i), "text": " ".join(["w"] * i)}) + "\n" for i in range(1, 6)))
    (tmp_path / "p.yaml").write_text(
        f"name: custom\nwork_dir: {tmp_path / 'w'}\nstages:\n"
        f"  - read_jsonl: {{paths: '{tmp_path / 'in.jsonl'}'}}\n"
        "  - my_stages_setup:AtLeastThreeWords: {}\n")
    res = curator.run(str(tmp_path / "p.yaml"))
    st = res.stages[1]
    assert (st["docs_in"], st["docs_out"], st["rejected"]) == (5, 3, {"short": 2})
    from my_stages_setup import AtLeastThreeWords

    assert AtLeastThreeWords().least == 3
