"""Training hand-off: layout checks, megatron-core data + model on CPU, resume, torchrun, sbatch,
and the ``train`` pipeline stage."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from curator.base.errors import ConfigError
from curator.train.config import TrainConfig
from curator.train.layout import validate_layout
from tests.helpers import train_two_cpu_ranks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
torch.set_num_threads(1)

GOOD = dict(world_size=16, tensor_parallel=2, pipeline_parallel=2, micro_batch_size=2,
            global_batch_size=32, num_attention_heads=8, num_layers=4, seq_length=1024,
            max_position_embeddings=2048, gpus_per_node=8)


def test_valid_layout_derives_dp_and_accumulation() -> None:
    lay = validate_layout(**GOOD)
    dp = GOOD["world_size"] // (GOOD["tensor_parallel"] * GOOD["pipeline_parallel"])
    assert lay.data_parallel == dp
    assert lay.num_micro_batches * GOOD["micro_batch_size"] * dp == GOOD["global_batch_size"]


@pytest.mark.parametrize("change, message", [
    ({"world_size": 6}, "world size 6 is not divisible by TP x PP"),
    ({"data_parallel": 3}, "!= DP x TP x PP"),
    ({"global_batch_size": 20}, "not a multiple of micro batch x DP"),
    ({"num_attention_heads": 6, "tensor_parallel": 4, "pipeline_parallel": 1},
     "6 attention heads are not divisible by TP = 4"),
    ({"tensor_parallel": 16, "pipeline_parallel": 1, "num_attention_heads": 16},
     "larger than the 8 GPUs per node"),
    ({"num_layers": 3}, "3 layers cannot be split evenly"),
    ({"seq_length": 4096}, "sequence length 4096 exceeds max_position_embeddings 2048"),
    ({"device": "cpu"}, "CPU path supports data parallelism only"),
])
def test_layout_errors(change: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_layout(**{**GOOD, **change})


def test_cli_rejects_bad_layout_before_launch(blend_path: str, tmp_path, capsys) -> None:
    from curator.cli import main

    rc = main(["train", "--blend", blend_path, "--save", str(tmp_path / "ck"), "--sbatch",
               str(tmp_path / "job.sh"), "--nodes", "2", "--gpus-per-node", "4",
               "--tensor-model-parallel-size", "4", "--num-attention-heads", "6"])
    assert rc == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "curator: error: train: 6 attention heads are not divisible by TP = 4")
    assert not (tmp_path / "job.sh").exists()


def _json(path) -> dict:
    with open(path) as f:
        return json.load(f)


def _cfg(blend: str, save: str, **kw) -> TrainConfig:
    base = dict(blend=blend, save=save, train_iters=30, num_threads=1, log_interval=10)
    return TrainConfig(**{**base, **kw})


def test_empty_split_is_refused_not_looped(tmp_path) -> None:
    from curator.train.demo import write_demo_blend
    from curator.train.trainer import train

    small = write_demo_blend(str(tmp_path / "c"), {"tiny": 20}, split="99,1,0", vocab_size=320)
    # 1% of 20 documents rounds to zero validation documents: megatron would spin forever
    with pytest.raises(ConfigError, match=r"leaves the valid split .* empty"):
        train(_cfg(small, str(tmp_path / "ck"), eval_interval=5))
    with pytest.raises(ConfigError, match="gives the valid split no share"):
        train(_cfg(write_demo_blend(str(tmp_path / "d"), {"t": 50}, split="100,0,0",
                                   vocab_size=320),
                   str(tmp_path / "ck2"), eval_interval=5))


def test_megatron_reads_blend_and_loss_falls(blend_path: str, tmp_path) -> None:
    from curator.train.trainer import train

    s = train(_cfg(blend_path, str(tmp_path / "ck"), eval_interval=10))
    losses = s["losses"]
    assert len(losses) == 30
    # an untrained model is near uniform over the vocabulary: loss ~ ln(V)
    vocab = _json(blend_path)["tokenizer"]["vocab_size"]
    assert abs(losses[0] - np.log(vocab)) < 0.5
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 1.5
    assert s["valid_losses"][-1] < s["valid_losses"][0]
    # megatron-core's GPTDataset built its sample/shuffle indices for our blend
    cache = os.listdir(os.path.join(tmp_path, "ck", "dataset_cache"))
    assert any(f.endswith("document_index.npy") for f in cache)
    assert s["train_samples"] == 30 * 8
    # the checkpoint is in Megatron's layout with the tracker written last
    ck = tmp_path / "ck"
    assert (ck / "latest_checkpointed_iteration.txt").read_text() == "30"
    state = torch.load(ck / "iter_0000030" / "mp_rank_00" / "model_optim_rng.pt",
                       weights_only=True)
    assert state["iteration"] == 30 and state["model_config"]["vocab_size"] == vocab
    print(f"CPU smoke run: {s['tokens_per_second']:.0f} tokens/s")


def test_blend_samples_follow_weights(blend_path: str, tmp_path) -> None:
    """The blended dataset draws from each prefix in proportion to its weight."""
    from curator.train.blend import load_blend, plan_splits
    from curator.train.gpt import build_datasets

    blend = load_blend(blend_path)
    cfg = _cfg(blend_path, str(tmp_path / "ck"))
    bookends, _ = plan_splits(blend, (True, False, False))
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        ds = build_datasets(cfg, blend, bookends, [600, 0, 0], str(tmp_path / "cache"))[0]
    finally:
        dist.destroy_process_group()
    ids = np.array([int(ds[i]["dataset_id"]) for i in range(len(ds))])
    share = np.bincount(ids, minlength=2) / len(ids)
    expect = np.array(blend.weights) / sum(blend.weights)
    assert np.allclose(share, expect, atol=0.01)


def test_resume_continues_exactly(blend_path: str, tmp_path, monkeypatch) -> None:
    from curator.train import trainer

    straight = trainer.train(_cfg(blend_path, str(tmp_path / "a"), train_iters=10,
                                  save_interval=5))
    real_step = trainer._cpu_step
    calls = {"n": 0}

    def crash_at_8(*a, **k):
        calls["n"] += 1
        if calls["n"] == 8:
            raise RuntimeError("injected crash")
        return real_step(*a, **k)

    monkeypatch.setattr(trainer, "_cpu_step", crash_at_8)
    cfg = _cfg(blend_path, str(tmp_path / "b"), train_iters=10, save_interval=5)
    with pytest.raises(RuntimeError, match="injected crash"):
        trainer.train(cfg)
    assert trainer.latest_iteration(cfg.save) == 5
    monkeypatch.setattr(trainer, "_cpu_step", real_step)
    resumed = trainer.train(cfg)
    assert resumed["resumed_from"] == 5 and resumed["steps_run"] == 5
    np.testing.assert_allclose(resumed["losses"], straight["losses"][5:], rtol=1e-5)
    # a checkpoint from a different model is not silently resumed
    with pytest.raises(ConfigError, match="different hidden_size"):
        trainer.train(_cfg(blend_path, cfg.save, train_iters=20, hidden_size=32))


@pytest.mark.parametrize("micro_batches", [1, 2, 4])
def test_gpu_step_logs_the_loss_megatron_backpropagates(micro_batches: int) -> None:
    """megatron-core's own schedule step (``forward_step_calc_loss``, which runs on CPU) divides
    the loss by the micro-batch count in place: the logged value must be the micro batch's mean
    loss all the same (it shared storage with the divided loss: half the loss was logged on an
    H200 with two micro batches), and the backpropagated one that mean / micro batches."""
    from types import SimpleNamespace

    from megatron.core.pipeline_parallel.schedules import forward_step_calc_loss

    from curator.train.trainer import megatron_loss_func

    torch.manual_seed(0)
    per_token = torch.rand(2, 8, requires_grad=True)
    mask = (torch.rand(2, 8) > 0.3).float()
    mean = float((per_token.detach() * mask).sum() / mask.sum())
    store: list = []
    config = SimpleNamespace(calculate_per_token_loss=False, timers=None, num_moe_experts=None)
    out, _ = forward_step_calc_loss(torch.nn.Module(), per_token, megatron_loss_func(mask, None),
                                    config, None, False, micro_batches, store, cp_group_size=1,
                                    is_last_stage=True)
    assert float(store[0]["lm loss"]) == pytest.approx(mean, rel=1e-6)
    assert float(out.detach()) == pytest.approx(mean / micro_batches, rel=1e-6)
    # fp16's scaler scales what is backpropagated, not what is logged
    scaler = SimpleNamespace(scale=lambda t: t * 1024.0)
    store.clear()
    out, _ = forward_step_calc_loss(torch.nn.Module(), per_token, megatron_loss_func(mask, scaler),
                                    config, None, False, micro_batches, store, cp_group_size=1,
                                    is_last_stage=True)
    assert float(store[0]["lm loss"]) == pytest.approx(mean, rel=1e-6)
    assert float(out.detach()) == pytest.approx(1024.0 * mean / micro_batches, rel=1e-6)


def test_torchrun_data_parallel_matches_one_rank(blend_path: str, tmp_path) -> None:
    """Two gloo ranks with one micro batch each compute the same steps as one rank with two."""
    from curator.train.trainer import train

    one = train(_cfg(blend_path, str(tmp_path / "one"), train_iters=4, micro_batch_size=4))
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = train_two_cpu_ranks(blend_path, tmp_path / "two", 4, env)
    assert p.returncode == 0, p.stderr[-3000:]
    two = _json(tmp_path / "two" / "train_summary.json")
    assert two["layout"]["data_parallel"] == 2 and two["layout"]["num_micro_batches"] == 1
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-4)
    # what the stage reads back from the ranks' summary: a typed layout, not a dict
    from curator.train.train import TrainSummary

    summary = TrainSummary.of(two)
    assert summary.layout.data_parallel == 2 and summary.layout.to_dict() == two["layout"]
    assert summary.losses == tuple(two["losses"]) and summary.model_config == two["model_config"]
    assert "tokens/s" in p.stdout or "tokens/s" in p.stderr


def test_sbatch_script(blend_path: str, tmp_path) -> None:
    from curator.cli import main

    job = tmp_path / "job.sh"
    assert main(["train", "--blend", blend_path, "--save", str(tmp_path / "ck"), "--sbatch",
                 str(job), "--nodes", "2", "--gpus-per-node", "8",
                 "--tensor-model-parallel-size", "2", "--global-batch-size", "64",
                 "--precision", "bf16"]) == 0
    text = job.read_text()
    assert subprocess.run(["bash", "-n", str(job)]).returncode == 0
    assert "#SBATCH --nodes=2" in text and "#SBATCH --gpus-per-node=8" in text
    srun = next(line for line in text.splitlines() if line.startswith("srun"))
    assert "torch.distributed.run --nproc-per-node=8 --nnodes=2" in srun
    assert "--rdzv-endpoint=\"$MASTER_ADDR\":29500" in srun
    cfg = TrainConfig.load_json(srun.split()[-1])
    assert cfg.precision == "bf16" and cfg.tensor_model_parallel_size == 2
    assert cfg.blend == blend_path


def test_example_pipeline_trains_and_exports(example_run: dict) -> None:
    from curator.train.trainer import latest_iteration

    train = example_run["markers"]["train"]["artifacts"]
    assert train["checkpoint"] == os.path.join(example_run["work"], "train", "checkpoints")
    assert latest_iteration(train["checkpoint"]) == 20
    assert train["model_config"]["num_layers"] == 2
    table = train["report_tables"][0]
    first, last = table["rows"][0][3], table["rows"][0][4]
    assert last < first - 1.0
    repo = example_run["markers"]["export_triton"]["artifacts"]["triton_repository"]
    assert repo == os.path.join(example_run["work"], "triton_repository")
    for m in ("preprocessing", "gpt", "postprocessing", "curator_gpt"):
        assert os.path.exists(os.path.join(repo, m, "config.pbtxt")), m
    # documents pass through both stages untouched
    assert "7 documents out of 'export_triton'" in example_run["stderr"]


@pytest.mark.parametrize("edit, message", [
    (lambda b, d: b.update(data_prefix=[1.0, d + "/missing_text_document"]), "has no .*bin"),
    (lambda b, d: b.update(data_prefix=[-1.0, b["data_prefix"][1]]), "must be a positive"),
    (lambda b, d: b["tokenizer"].update(type="tiktoken"), "tokenizer type 'tiktoken'"),
    (lambda b, d: b["tokenizer"].pop("eod_id"), "tokenizer has no 'eod_id'"),
])
def test_bad_blend_is_one_clear_error(blend_path: str, tmp_path, edit, message) -> None:
    from curator.base.errors import InputError
    from curator.train.blend import load_blend

    blend = _json(blend_path)
    edit(blend, str(tmp_path))
    path = tmp_path / "blend.json"
    path.write_text(json.dumps(blend))
    with pytest.raises(InputError, match=message):
        load_blend(str(path))


def test_stage_takes_upstream_blend_artifact(blend_path: str, tmp_path) -> None:
    from curator.core.context import GlobalContext
    from curator.train.train import Train

    stage = Train.from_params({"train_iters": 3})
    ctx = GlobalContext(executor=None, fingerprint="f", stage=stage, stage_id="train",
                        work_dir=str(tmp_path), artifacts={"blend": blend_path})
    cfg = stage.config(ctx)
    assert cfg.blend == blend_path and cfg.train_iters == 3
    assert cfg.save == str(tmp_path / "train" / "checkpoints")
    bare = GlobalContext(executor=None, fingerprint="f", stage=stage, stage_id="train",
                         work_dir=str(tmp_path), artifacts={})
    with pytest.raises(ConfigError, match="needs an artifact 'blend'"):
        stage.config(bare)


def test_the_stage_cli_and_ranks_share_one_parameter_model() -> None:
    """The stage's Params is TrainConfig and declares nothing of its own (a field added, or a
    default changed, in one place only would be drift), and every field is a flag of
    ``curator train``: the YAML keys and the flags are the same set."""
    import inspect

    from curator.cli import build_parser
    from curator.train.train import Train

    assert issubclass(Train.Params, TrainConfig)
    assert inspect.get_annotations(Train.Params) == {}
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    flags = {o for a in sub.choices["train"]._actions for o in a.option_strings}
    launch_only = {"-h", "--help", "--sbatch", "--nodes", "--partition", "--time"}
    yaml_keys = set(Train.params_model().model_fields)
    assert flags - launch_only == {"--" + k.replace("_", "-") for k in yaml_keys}


@pytest.mark.parametrize("key, value, message", [
    ("num_layers", 0, "Input should be greater than or equal to 1 (got 0)"),
    ("lr", -0.5, "Input should be greater than 0 (got -0.5)"),
    ("eval_iters", -1, "Input should be greater than or equal to 0 (got -1)"),
    ("nproc_per_node", 0, "Input should be greater than or equal to 1 (got 0)"),
])
def test_a_bad_value_is_refused_by_the_stage_and_the_cli_naming_the_key(
        blend_path: str, tmp_path, capsys, key: str, value, message: str) -> None:
    from curator.cli import main
    from tests.helpers import stage_error

    assert stage_error("train", {key: value}) == f"p.yaml:1: stages[1].train.{key}: {message}"
    flag = "--" + key.replace("_", "-")
    rc = main(["train", "--blend", blend_path, "--save", str(tmp_path / "ck"), flag, str(value)])
    assert rc == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"curator: error: train: {flag}: {message}")
    assert not (tmp_path / "ck").exists()


#: A train_config.json as curator wrote it before TrainConfig was a parameter model (the
#: dataclass's fields, sorted; no nproc_per_node).
OLD_TRAIN_CONFIG = {
    "blend": "/data/blend.json", "clip_grad": 1.0, "device": "auto", "eval_interval": 0,
    "eval_iters": 2, "ffn_hidden_size": None, "global_batch_size": 8, "gpus_per_node": None,
    "hidden_size": 64, "log_interval": 5, "lr": 0.003, "lr_warmup_iters": 0,
    "max_position_embeddings": None, "micro_batch_size": 4, "min_lr": 0.0003,
    "num_attention_heads": 4, "num_layers": 2, "num_threads": 0,
    "pipeline_model_parallel_size": 1, "precision": "fp32", "save": "/ckpt/run1",
    "save_interval": 0, "seed": 1234, "seq_length": 64, "tensor_model_parallel_size": 1,
    "train_iters": 40, "weight_decay": 0.01}


def test_an_older_train_config_json_still_loads_and_a_bad_one_names_its_key(tmp_path) -> None:
    path = tmp_path / "train_config.json"
    path.write_text(json.dumps({**OLD_TRAIN_CONFIG, "precision": "bf16"}, indent=1))
    cfg = TrainConfig.load_json(str(path))
    assert cfg.precision == "bf16" and cfg.nproc_per_node == 1 and cfg.attention == "sdpa"
    assert {k: v for k, v in cfg.to_dict().items() if k in OLD_TRAIN_CONFIG} == {
        **OLD_TRAIN_CONFIG, "precision": "bf16"}
    # written back: the same keys plus the new ones, still sorted
    cfg.save_json(str(path))
    assert list(_json(path)) == sorted([*OLD_TRAIN_CONFIG, "nproc_per_node", "attention"])
    path.write_text(json.dumps({**OLD_TRAIN_CONFIG, "num_layer": 3}))
    with pytest.raises(ConfigError, match=rf"^train: {path}: num_layer: unknown setting$"):
        TrainConfig.load_json(str(path))
    with pytest.raises(ConfigError, match=r"^train: precision: Input should be 'fp32', 'bf16' "):
        TrainConfig.from_dict({**OLD_TRAIN_CONFIG, "precision": "fp8"})


def test_cli_trains_in_process_and_extends_a_run(blend_path: str, tmp_path, capsys) -> None:
    from curator.cli import main

    base = ["train", "--blend", blend_path, "--save", str(tmp_path / "ck"), "--num-threads",
            "1", "--device", "cpu"]
    assert main([*base, "--train-iters", "3"]) == 0
    assert "trained to iteration 3 on cpu" in capsys.readouterr().out
    # asking for more steps continues the same run from its checkpoint
    assert main([*base, "--train-iters", "5"]) == 0
    summary = _json(tmp_path / "ck" / "train_summary.json")
    assert summary["resumed_from"] == 3 and summary["steps_run"] == 2
    with open(tmp_path / "ck" / "metrics.jsonl") as f:
        assert [json.loads(line)["iteration"] for line in f] == [1, 2, 3, 4, 5]
    # nothing left to do: no step runs, the checkpoint stays
    assert main([*base, "--train-iters", "5"]) == 0
    assert "nothing left to train" in capsys.readouterr().out


def test_changed_training_data_with_checkpoints_present_is_an_error(tmp_path) -> None:
    """A changed blend reruns the train stage, which would resume from checkpoints made on the
    old data (at their last iteration: nothing trained, old model published). It stops with
    one line naming the changed file instead, and deletes nothing."""
    import subprocess

    from curator.train.demo import write_demo_blend

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    blend = write_demo_blend(str(tmp_path / "corpus"), {"web": 60}, split="90,10,0",
                             vocab_size=320)
    (tmp_path / "docs.jsonl").write_text('{"id": "a", "text": "x"}\n')
    (tmp_path / "p.yaml").write_text(
        f"name: tr\nwork_dir: {tmp_path / 'w'}\nprogress: off\nstages:\n"
        f"  - read_jsonl: {{paths: '{tmp_path / 'docs.jsonl'}'}}\n"
        f"  - train: {{blend: '{blend}', train_iters: 3, num_threads: 1, eval_interval: 0,"
        " seq_length: 32, global_batch_size: 4}\n")
    env = {**os.environ, "PYTHONPATH": root}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "curator", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    assert cli("run", "p.yaml").returncode == 0
    ckpt = tmp_path / "w" / "train" / "checkpoints"
    before = sorted(p.name for p in ckpt.rglob("*"))
    # the same bytes written again (an upstream stage rerun): the same data, training goes on
    corpus = tmp_path / "corpus"
    was = {p.name: p.read_bytes() for p in corpus.iterdir() if p.is_file()}
    for p in corpus.iterdir():
        if p.is_file():
            p.unlink()
            p.write_bytes(was[p.name])
    again = cli("run", "p.yaml")
    assert again.returncode == 0, again.stderr[-2000:]
    assert sorted(p.name for p in ckpt.rglob("*")) == before
    write_demo_blend(str(tmp_path / "corpus"), {"web": 90}, split="90,10,0",
                     vocab_size=320)  # same paths, other data
    st = cli("status", "p.yaml").stdout
    assert "train" in st and "files it reads changed: " in st and "web_text_document.bin" in st
    res = cli("run", "p.yaml")
    assert res.returncode == 1
    [line] = [ln for ln in res.stderr.splitlines() if ln.startswith("curator:")]
    assert line.startswith(f"curator: error: train: the checkpoints in {ckpt} were trained on "
                           "other data") and "web_text_document.bin" in line
    assert sorted(p.name for p in ckpt.rglob("*")) == before


def test_a_failing_local_rank_stops_the_others_with_one_line(blend_path: str, tmp_path) -> None:
    """Rank 1 dies right after joining the group (failure injection: a ``sitecustomize`` on the
    ranks' PYTHONPATH); rank 0, which would wait for it for ever, is stopped, and the command
    ends with one line naming the rank and its status."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os\nimport torch.distributed as dist\n_init = dist.init_process_group\n\n"
        "def _f(*a, **k):\n    _init(*a, **k)\n    if dist.get_rank() == 1:\n"
        "        os._exit(3)\n\ndist.init_process_group = _f\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, str(hook)])}
    p = train_two_cpu_ranks(blend_path, tmp_path / "ck", 2, env)
    assert p.returncode == 1, p.stderr[-3000:]
    errs = [x for x in p.stderr.splitlines() if x.startswith("curator: error:")]
    assert errs == ["curator: error: train: rank 1 exited with status 3 (see the rank logs "
                    "above); rerun the same command to resume from the last checkpoint"], errs
