"""blend.json's split never hangs megatron-core: its ``BlendedMegatronDatasetBuilder`` splits
every prefix by the split string and loops forever (``GPTDataset._get_num_epochs``) when a
split it is asked to fill holds no token of some prefix. Checked with megatron-core's own
builder, in a subprocess under a timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from curator.tokenize.blend import empty_splits, split_matrix
from curator.tokenize.megatron import read_index
from tests.helpers import cli_env
from tests.tokenize.helpers_tokenize import write_corpus

#: megatron-core's builder over blend.json: train, valid and test all asked for
BUILD = textwrap.dedent('''
    import json, sys
    import torch.distributed as dist
    from megatron.core.datasets.blended_megatron_dataset_builder import (
        BlendedMegatronDatasetBuilder)
    from megatron.core.datasets.blended_megatron_dataset_config import (
        convert_split_vector_to_split_matrix, parse_and_normalize_split)
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig

    class Tok:
        vocab_size, eod, unique_identifiers = 400, 0, {"class": "test"}

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    blend = json.load(open(sys.argv[1]))
    dp = blend["data_prefix"]
    cfg = GPTDatasetConfig(random_seed=1, sequence_length=16, blend=(dp[1::2], dp[0::2]),
                           split=blend["split"], path_to_cache=sys.argv[2], tokenizer=Tok(),
                           reset_position_ids=False, reset_attention_mask=False,
                           eod_mask_loss=False)
    sets = BlendedMegatronDatasetBuilder(GPTDataset, [200, 40, 8], lambda: True, cfg).build()
    matrices = {s: convert_split_vector_to_split_matrix(parse_and_normalize_split(s))
                for s in [blend["split"], *SPLITS]}
    print(json.dumps({"sizes": [None if d is None else len(d) for d in sets],
                      "matrices": matrices}))
''')


#: split strings whose matrix is compared with megatron-core's
SPLITS = ["949,50,1", "98,2,0", "1,0,0", "90,10", "7", "0.5,0.3,0.2", "333,333,334"]


def _megatron_builds(blend: str, cache: str, timeout: float = 120) -> dict:
    code = f"SPLITS = {SPLITS!r}\n{BUILD}"
    try:
        p = subprocess.run([sys.executable, "-c", code, blend, cache], capture_output=True,
                           text=True, timeout=timeout, env=cli_env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"megatron-core's dataset builder did not finish in {timeout:g} s on "
                    f"{blend} (an empty split: it loops forever)")
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _pipeline(tmp_path, split: str | None) -> str:
    write_corpus(str(tmp_path / "web.jsonl"), "web", 3000, seed=1)
    write_corpus(str(tmp_path / "latex.jsonl"), "latex", 40, seed=2)
    blend = {"weights": {"web": 0.6, "latex": 0.4}}
    if split is not None:
        blend["split"] = split
    (tmp_path / "p.yaml").write_text(json.dumps({
        "name": "b", "work_dir": "work", "stages": [
            {"id": "web", "read_jsonl": {"paths": "web.jsonl", "source": "web"}},
            {"id": "latex", "read_jsonl": {"paths": "latex.jsonl", "source": "latex"}},
            {"id": "tok", "inputs": ["web", "latex"],
             "train_tokenizer": {"type": "bpe", "vocab_size": 400,
                                 "special_tokens": ["<|endoftext|>"]}},
            {"id": "mega", "megatron_shards": {"output_dir": "megatron", "append_eod": True}},
            {"id": "blend", "blend": blend}]}))
    return str(tmp_path / "p.yaml")


def test_default_split_fills_every_split_of_every_source_and_megatron_builds(tmp_path):
    """A 40-document source beside a 3,000-document one: 949,50,1 gives it no test sequence,
    so the blend writes a split that does (and says why), megatron-core's builder finishes
    with train, valid and test; the source given 0.4 of the tokens is warned about its
    epochs. On f8f1ca4 blend.json said 949,50,1 and the builder never returned."""
    p = subprocess.run([sys.executable, "-m", "curator", "run", _pipeline(tmp_path, None)],
                       cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    blend_path = tmp_path / "work" / "stages" / "blend.json"
    if not blend_path.exists():
        blend_path = next((tmp_path / "work").rglob("blend.json"))
    blend = json.loads(blend_path.read_text())
    prefixes = blend["data_prefix"][1::2]
    idx = {q: read_index(q + ".idx") for q in prefixes}
    assert empty_splits(idx, "949,50,1"), "the corpus must exercise the empty split"
    assert blend["split"] != "949,50,1" and empty_splits(idx, blend["split"]) == []
    assert all(be is not None for be in split_matrix(blend["split"]))
    assert f"[blend] split {blend['split']}: 949,50,1 would leave the test split of source " \
           "'latex' empty" in p.stderr
    warn = [ln for ln in p.stderr.splitlines() if "warning: source 'latex' is given" in ln]
    assert len(warn) == 1 and "epochs" in warn[0], p.stderr
    got = _megatron_builds(str(blend_path), str(tmp_path / "cache"))
    sizes = got["sizes"]
    assert all(n and n >= want for n, want in zip(sizes, [200, 40, 8], strict=True)), sizes
    # the bookends curator checks are megatron-core's own, float for float
    for split, matrix in got["matrices"].items():
        assert split_matrix(split) == [tuple(be) if be else None for be in matrix], split


def test_a_split_that_leaves_a_source_empty_is_refused_in_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "curator", "run",
                        _pipeline(tmp_path, "949,50,1")],
                       cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode != 0
    err = [ln for ln in p.stderr.splitlines() if "blend.split" in ln]
    assert len(err) == 1, p.stderr
    assert "blend.split '949,50,1' leaves the test split of source 'latex' empty" in err[0]
    assert not list((tmp_path / "work").rglob("blend.json"))
