"""No code from data: what curator reads back from a work_dir or a checkpoint cannot run code.

A global stage's phase results are sealed with an HMAC under a per-work_dir key (mode 0600);
a planted, copied or damaged phase file is recomputed with a line saying so, and never
unpickled. Checkpoints load with ``torch.load(weights_only=True)``."""

from __future__ import annotations

import os
import pickle
import stat

from tests.core.helpers_core import make_corpus
from tests.helpers import run_cli

PIPE = """\
name: phases
work_dir: {wd}
progress: off
stages:
  - read_jsonl: {{paths: "{data}/*.jsonl", shard_size_mb: 0.004}}
  - tests.core.helpers_core:AboveMedian: {{}}
  - write_jsonl: {{path: out}}
"""


class _Canary:
    """Unpickling this creates ``path``: the proof that a planted pickle ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def _setup(tmp_path, name="w"):
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    make_corpus(str(data / "a.jsonl"), 120, seed=5)
    wd = tmp_path / name
    pipe = tmp_path / f"{name}.yaml"
    pipe.write_text(PIPE.format(wd=wd, data=data))
    return wd, pipe


def _forget_stage(wd):
    """As if the run was killed inside the global stage: its phase files stay."""
    sdir = wd / "stages" / "above_median"
    (sdir / "_SUCCESS.json").unlink()
    for p in (sdir / "_done").glob("*.json"):
        p.unlink()
    return sdir / "_phases" / "lengths"


def _outputs(wd):
    return {p.name: p.read_bytes() for p in sorted((wd / "out").glob("*"))}


def test_planted_phase_pickle_is_not_run_and_is_recomputed(tmp_path):
    wd, pipe = _setup(tmp_path)
    run_cli("run", str(pipe))
    before = _outputs(wd)
    phases = sorted(_forget_stage(wd).glob("*.pkl"))
    assert len(phases) >= 2
    canary = tmp_path / "PWNED"
    phases[0].write_bytes(pickle.dumps(("anything", _Canary(str(canary)))))
    p = run_cli("run", str(pipe))
    assert not canary.exists(), "a planted phase file was unpickled"
    assert f"{phases[0]}: not used (not a sealed curator file); recomputing" in p.stderr
    assert _outputs(wd) == before
    # rewritten sealed: the next run uses it without a word
    _forget_stage(wd)
    p = run_cli("run", str(pipe))
    assert "recomputing" not in p.stderr and _outputs(wd) == before


def test_damaged_or_foreign_phase_file_is_recomputed_with_a_line(tmp_path):
    wd, pipe = _setup(tmp_path)
    other, other_pipe = _setup(tmp_path, "other")
    run_cli("run", str(pipe))
    run_cli("run", str(other_pipe))
    before = _outputs(wd)
    phases = sorted(_forget_stage(wd).glob("*.pkl"))
    theirs = sorted((other / "stages" / "above_median" / "_phases" / "lengths").glob("*.pkl"))
    # a truncated file, and a valid sealed file from another work_dir (another key)
    phases[0].write_bytes(phases[0].read_bytes()[:-10])
    phases[1].write_bytes(theirs[1].read_bytes())
    p = run_cli("run", str(pipe))
    assert f"{phases[0]}: not used (its HMAC does not verify" in p.stderr
    assert f"{phases[1]}: not used (its HMAC does not verify" in p.stderr
    assert "Traceback" not in p.stderr
    assert _outputs(wd) == before


def test_work_dir_key_is_private_and_an_unsafe_one_is_replaced(tmp_path):
    wd, pipe = _setup(tmp_path)
    run_cli("run", str(pipe))
    key = wd / ".curator-key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    # a key others could have read (or written) is not trusted: replaced, phases recomputed
    key.chmod(0o644)
    old = key.read_bytes()
    phases = sorted(_forget_stage(wd).glob("*.pkl"))
    p = run_cli("run", str(pipe))
    assert key.read_bytes() != old and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert sum(f"{ph}: not used" in p.stderr for ph in phases) == len(phases)


def _plant_checkpoint(save, canary):
    """A checkpoint folder in Megatron's layout whose file runs code when fully unpickled."""
    import torch

    f = save / "iter_0000001" / "mp_rank_00" / "model_optim_rng.pt"
    f.parent.mkdir(parents=True)
    torch.save({"model": {"w": torch.zeros(2)}, "model_config": {"vocab_size": 2},
                "config": {}, "iteration": 1, "hook": _Canary(str(canary))}, f)
    (save / "latest_checkpointed_iteration.txt").write_text("1")
    return f


def test_checkpoint_that_holds_code_is_refused_by_export_and_resume(tmp_path):
    from curator.base.errors import InputError
    from curator.train.trainer import load_checkpoint, load_model_state

    canary = tmp_path / "PWNED"
    f = _plant_checkpoint(tmp_path / "ck", canary)
    for load in (lambda: load_model_state(str(tmp_path / "ck")), lambda: load_checkpoint(str(f))):
        try:
            load()
        except InputError as e:
            assert str(e).startswith(f"{f}: not loaded: it holds more than tensors")
            assert "\n" not in str(e)
        else:
            raise AssertionError("a checkpoint holding a callable was loaded")
    assert not canary.exists()
    # through the command a user runs: one line, exit non-zero, nothing ran
    p = run_cli("export-triton", "--checkpoint", str(tmp_path / "ck"), "--output",
                str(tmp_path / "m"), check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert f"{f}: not loaded" in p.stderr and not canary.exists()


def test_planted_file_in_megatrons_dataset_cache_is_removed_not_unpickled(tmp_path):
    """Megatron loads its dataset index cache with numpy.load(allow_pickle=True): a pickle
    planted there (under a name it looks for, or any other .npy) is removed before training,
    and the run's losses equal a clean run's."""
    from curator.train.config import TrainConfig
    from curator.train.demo import write_demo_blend
    from curator.train.trainer import train, unsafe_cache_files

    blend = write_demo_blend(str(tmp_path / "c"), {"tiny": 60}, vocab_size=320)
    cfg = dict(blend=blend, train_iters=3, num_threads=1, log_interval=1, seq_length=32,
               global_batch_size=2, micro_batch_size=1)
    clean = train(TrainConfig(**cfg, save=str(tmp_path / "clean")), log=None)
    cache = tmp_path / "clean" / "dataset_cache"
    names = sorted(p.name for p in cache.glob("*.npy"))
    assert names and not unsafe_cache_files(str(cache))
    # the same cache, with every index replaced by a planted pickle, in a new save folder
    planted = tmp_path / "planted" / "dataset_cache"
    planted.mkdir(parents=True)
    canary = tmp_path / "PWNED"
    for f in cache.iterdir():  # the descriptions too, so that megatron takes it as a cache hit
        (planted / f.name).write_bytes(pickle.dumps(_Canary(str(canary))) if f.suffix == ".npy"
                                       else f.read_bytes())
    lines: list[str] = []
    again = train(TrainConfig(**cfg, save=str(tmp_path / "planted")), log=lines.append)
    assert not canary.exists()
    assert sum("not a plain numpy array" in ln for ln in lines) == len(names)
    assert again["losses"] == clean["losses"]
