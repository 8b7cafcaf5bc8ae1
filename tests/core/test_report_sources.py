"""report.html for a run of four sources, as a person sees it in Chromium at 1400 px: the funnel
shows a stage that passes on only part of its input (``train_quality_classifier``) as passing
documents on, not removing them; the token-length axes' labels neither overlap nor run off the
plot; the per-source token charts are named by source; the header adds up every run of the
work_dir, not only the last resumed one."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers

from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner
from tests.core.helpers_chromium import chromium

SOURCES = ("web", "wiki", "arxiv", "books")
WIDTH = 1400

# The layout Chromium computed, written into the DOM for --dump-dom
LAYOUT_JS = """<script>
const out = {overlaps: [], clipped: [], legends: [], funnel: {}, header: ""};
for (const svg of document.querySelectorAll("svg.plot")) {
  const box = svg.getBoundingClientRect();
  const labels = [...svg.querySelectorAll("text.xlabel")].map(t => t.getBoundingClientRect());
  for (let i = 1; i < labels.length; i++)
    if (labels[i].left < labels[i - 1].right) out.overlaps.push(svg.getAttribute("aria-label"));
  for (const r of labels)
    if (r.right > box.right + 0.5 || r.left < box.left - 0.5)
      out.clipped.push(svg.getAttribute("aria-label"));
  if (svg.classList.contains("plot-extra"))
    for (const t of svg.querySelectorAll("text.legend")) out.legends.push(t.lastChild.textContent);
}
const funnel = document.querySelector("svg.plot-funnel");
for (const t of funnel.querySelectorAll("text[text-anchor=end]")) out.funnel[t.textContent] = [];
for (const r of funnel.querySelectorAll("rect.removed, rect.not-passed-on")) {
  const y = r.getAttribute("y");
  const label = [...funnel.querySelectorAll("text[text-anchor=end]")].find(
    t => Math.abs(t.getAttribute("y") - y - 12) < 1);
  out.funnel[label.textContent].push(r.getAttribute("class"));
}
out.header = document.querySelector("p").textContent;
const pre = document.createElement("pre");
pre.id = "layout"; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def _tokenizer(folder: Path, size: int = 4000) -> None:
    vocab = {"[UNK]": 0, "<|endoftext|>": 1}
    for i in range(size - len(vocab)):
        vocab[f"w{i}"] = len(vocab)
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder.mkdir()
    t.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))


def _corpus(tmp: Path) -> str:
    """Four sources with their own vocabularies (the classifier can tell wiki from web) and
    lengths up to 12,000 words (token bins up to 8192-16383: wide axis labels)."""
    rng = random.Random(7)
    stages = ""
    for k, name in enumerate(SOURCES):
        with open(tmp / f"{name}.jsonl", "w") as f:
            for i in range(60 if name in ("web", "wiki") else 20):
                n = int(2 ** rng.uniform(3, 13.5))
                words = " ".join(f"w{1000 * k + rng.randrange(900)}" for _ in range(n))
                f.write(json.dumps({"id": f"{name}{i}", "text": f"{words}."}) + "\n")
        stages += (f"  - {{id: {name}, read_jsonl: {{paths: '{tmp}/{name}.jsonl', "
                   f"source: {name}}}}}\n")
    return stages


def test_report_of_four_sources_reads_right_in_chromium(tmp_path):
    _tokenizer(tmp_path / "tok")
    text = (f"name: four\nwork_dir: {tmp_path / 'w'}\nprogress: log\nstages:\n"
            + _corpus(tmp_path)
            + "  - {id: quality_model, inputs: [web, wiki], train_quality_classifier: "
              "{positive_sources: [wiki], min_auc: 0}}\n"
              "  - {id: dedup, inputs: [quality_model, wiki, arxiv, books], exact_dedup: {}}\n"
              f"  - {{id: megatron, megatron_shards: {{tokenizer: '{tmp_path / 'tok'}', "
              "sentence_stats: 0}}\n")
    Runner(pl.loads(text), LocalExecutor()).run()
    rep = Runner(pl.loads(text), LocalExecutor()).run()  # resumed: every stage reused
    assert rep["all_runs"]["runs"] == 2
    html = (tmp_path / "w" / "report.html").read_text()
    page = tmp_path / "page.html"
    page.write_text(html.replace("</body>", LAYOUT_JS + "</body>"))
    dom = chromium(["--dump-dom", f"--window-size={WIDTH},3000", page.as_uri()], tmp_path).stdout
    got = json.loads(re.search(r'<pre id="layout">(.*?)</pre>', dom, re.S).group(1)
                     .replace("&quot;", '"').replace("&amp;", "&"))
    assert not got["overlaps"] and not got["clipped"], got
    # the per-source token-length charts are named by source, never by the stage
    assert set(got["legends"]) >= {*SOURCES, "all sources"} and "megatron" not in got["legends"]
    # quality_model passes on only the crawl: the rest is not drawn as removed
    assert got["funnel"]["quality_model"] == ["not-passed-on"], got["funnel"]
    assert "not passed on, not removed" in html
    assert re.search(r"over all 2 runs", got["header"]), got["header"]
    shot = tmp_path / "report.png"  # for a person to look at: pytest --basetemp=... keeps it
    chromium([f"--screenshot={shot}", f"--window-size={WIDTH},2600", html_uri(tmp_path)],
             tmp_path)
    assert shot.stat().st_size > 50_000


def html_uri(tmp: Path) -> str:
    return (tmp / "w" / "report.html").as_uri()
