"""``curator inspect WORK_DIR STAGE`` and the report's examples per rejection reason (
item 6)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from curator.storage.shards import read_records
from tests.helpers import run_cli

DOCS = ([{"id": f"long{i}", "text": f"Document {i} has enough words to pass the filter here.\n"
          f"Second line of {i}.\nThird line.\nFourth.\nFifth.\nSixth line."} for i in range(40)]
        + [{"id": f"short{i}", "text": f"tiny {i}"} for i in range(12)]
        + [{"id": f"caps{i}", "text": "WORDS IN CAPITALS ONLY, NOTHING ELSE FOR THIS ONE " * 2}
           for i in range(7)])


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("inspect")
    (tmp / "in.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    (tmp / "p.yaml").write_text(
        "name: i\nwork_dir: work\nstages:\n"
        "  - {id: src, read_jsonl: {paths: in.jsonl, source: web}}\n"
        "  - {id: words, word_count_filter: {min_words: 5}, checkpoint: true}\n"
        "  - {id: upper, inputs: [words], stop_words_filter: {min_count: 1}}\n")
    run_cli("run", "p.yaml", cwd=tmp)
    return tmp / "work"


def _ids(out: str) -> list[str]:
    return re.findall(r"^--- \d+/\d+  id: (\S+)", out, re.M)


def test_kept_sample_is_seeded_and_from_the_output(work: Path) -> None:
    p = run_cli("inspect", str(work), "words", "-n", "3", "--seed", "1")
    lines = p.stdout.splitlines()
    assert lines[0] == ("stage 'words' (word_count_filter): 47 kept, 12 rejected "
                        "(word_count_filter 12)")
    assert lines[1] == "3 of 47 documents kept, seed 1:"
    ids = _ids(p.stdout)
    kept = {r["id"] for f in (work / "stages" / "words" / "data").glob("*.jsonl.zst")
            for r in read_records(str(f))}
    assert len(ids) == 3 and set(ids) <= kept
    assert "source: web  shard: src-00000" in p.stdout
    # first lines of the text, then how much more there was
    assert re.search(r"^  Second line of \d+\.$", p.stdout, re.M)
    assert "[... 1 more line, " in p.stdout
    assert _ids(run_cli("inspect", str(work), "words", "-n", "3", "--seed", "1").stdout) == ids
    others = {tuple(_ids(run_cli("inspect", str(work), "words", "-n", "3", "--seed",
                                 str(s)).stdout)) for s in (2, 3, 4)}
    assert others - {tuple(ids)}


def test_rejected_by_reason(work: Path) -> None:
    p = run_cli("inspect", str(work), "words", "--rejected", "-n", "20")
    assert "12 of 12 documents rejected, seed 0:" in p.stdout
    assert sorted(_ids(p.stdout)) == sorted(f"short{i}" for i in range(12))
    assert p.stdout.count("reason: word_count_filter\n") == 12
    p = run_cli("inspect", str(work), "upper", "--rejected", "stop_words", "-n", "2")  # prefix
    assert all(i.startswith("caps") for i in _ids(p.stdout)) and len(_ids(p.stdout)) == 2
    assert "2 of 7 documents rejected for 'stop_words', seed 0:" in p.stdout


@pytest.mark.parametrize("args,message", [
    (["words", "--rejected", "nope"], "stage 'words' rejected no document for 'nope' (its "
                                      "reasons: word_count_filter)"),
    (["nosuch"], "no stage 'nosuch' (stages: src, upper, words)"),
    (["words", "-n", "0"], "inspect: -n must be at least 1"),
])
def test_errors_are_one_line(work: Path, args: list[str], message: str) -> None:
    p = run_cli("inspect", str(work), *args, check=False)
    assert p.returncode != 0 and p.stderr.strip().endswith(message), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_report_links_examples_per_reason(work: Path) -> None:
    html = (work / "report.html").read_text()
    for stage, reason, prefix in (("words", "word_count_filter", "short"),
                                  ("upper", "stop_words_filter", "caps")):
        anchor = "ex-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{stage}-{reason}")
        assert f'<a href="#{anchor}">3 examples</a>' in html
        section = html.split(f'<h3 id="{anchor}">', 1)[1].split("</ul>", 1)[0]
        ids = re.findall(r"<li><code>([^<]+)</code>", section)
        assert len(ids) == 3 and all(i.startswith(prefix) for i in ids)
        assert f"curator inspect {work} {stage} --rejected {reason}" in html


def test_a_source_stage_rejections_count_under_its_name(tmp_path: Path) -> None:
    """A source may reject a record before it sets meta.source (a WARC record with no text):
    the report counts it under the source's name, not under "-"."""
    (tmp_path / "my_src.py").write_text(
        "from curator.base.document import Document\n"
        "from curator.core.stage import ShardSpec, Source\n\n"
        "class Rej(Source):\n"
        "    name = 'rej'\n\n"
        "    def shards(self, ctx):\n"
        "        return [ShardSpec(ctx.shard_name(0), {})]\n\n"
        "    def read(self, shard, ctx):\n"
        "        for i in range(6):\n"
        "            d = Document(f'd{i}', f'text number {i}', {})\n"
        "            if i % 2:\n"
        "                ctx.reject(d, 'odd')\n"
        "                continue\n"
        "            d.meta['source'] = 'pages'\n"
        "            yield d\n")
    (tmp_path / "p.yaml").write_text("name: s\nwork_dir: w\nstages:\n"
                                     "  - {id: crawl, my_src:Rej: {}}\n")
    run_cli("run", "p.yaml", cwd=tmp_path)
    rep = json.loads((tmp_path / "w" / "report.json").read_text())
    assert rep["stages"][0]["rejected_by_source"] == {"crawl\todd": 3}
    html = (tmp_path / "w" / "report.html").read_text()
    body = html.split('class="stage-source"', 1)[1].split("</table>", 1)[0]
    assert "<th>crawl</th>" in body and "<th>-</th>" not in body
