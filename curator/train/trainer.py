"""The training loop: one function, :func:`train`, run by every rank.

* CPU (and world size 1 inside a pipeline): a plain PyTorch loop (forward, backward, AdamW) over
  megatron-core's ``GPTModel``; data-parallel ranks average gradients over gloo. Megatron's
  schedules and ``dist_checkpointing`` need CUDA, so they are not used here.
* GPU: megatron-core's ``get_forward_backward_func`` schedules (pipeline parallel when PP > 1)
  over NCCL, with tensor/pipeline groups from ``parallel_state``; bf16/fp16 via autocast (fp16
  with a gradient scaler).

Checkpoints use Megatron's legacy layout (``iter_0000040/mp_rank_00/model_optim_rng.pt`` and
``latest_checkpointed_iteration.txt``), written atomically
(:func:`~curator.storage.atomic.atomic_open`: a full disk leaves no temporary behind, and
temporaries of a killed run are removed when the run restarts), the tracker last. A rerun with
the same ``save`` folder resumes from the tracker: model, optimizer, RNG and data position, so the
resumed run continues exactly where the uninterrupted one would be.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from curator.base.errors import ConfigError, InputError
from curator.storage import nofollow
from curator.storage.atomic import TMP_SUFFIX, atomic_open
from curator.train.blend import load_blend, plan_splits
from curator.train.config import RESUME_KEYS, TrainConfig
from curator.train.gpt import batches, build_datasets, build_model, model_config
from curator.train.layout import ParallelLayout, layout_for

TRACKER = "latest_checkpointed_iteration.txt"


def resolve_device(cfg: TrainConfig) -> str:
    if cfg.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train: device 'cuda' requested but torch sees no GPU "
                          f"(torch {torch.__version__}); use device: cpu or auto")
    return cfg.device


# -- checkpoints ---------------------------------------------------------------------------


def latest_iteration(save: str) -> int | None:
    """The last complete checkpoint's iteration, from Megatron's tracker file."""
    try:
        with open(os.path.join(save, TRACKER)) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def checkpoint_file(save: str, iteration: int, tp_rank: int = 0, pp_rank: int = 0,
                    pp_size: int = 1) -> str:
    mp = f"mp_rank_{tp_rank:02d}" + (f"_{pp_rank:03d}" if pp_size > 1 else "")
    return os.path.join(save, f"iter_{iteration:07d}", mp, "model_optim_rng.pt")


def _save(path: str, state: dict[str, Any]) -> None:
    # through a Python file: torch.save(path) reports a full disk as an opaque RuntimeError
    try:
        with atomic_open(path, "wb") as f:
            torch.save(state, f)
    except RuntimeError as e:  # the OSError of a write, masked by the zip writer's cleanup
        err = e.__context__
        if not isinstance(err, OSError):
            raise
        if err.filename is None and err.errno is not None:
            err.filename = path
        raise err from None


def unsafe_cache_files(cache: str) -> list[str]:
    """Files of megatron's dataset index cache that are not plain numpy arrays. Megatron loads
    them with ``numpy.load(allow_pickle=True)``, which unpickles (runs) any file that is not
    an ``.npy`` array, so only arrays without Python objects may stay."""
    import numpy as np

    bad = []
    for root, _dirs, files in os.walk(cache):
        for name in files:
            if not name.endswith(".npy"):
                continue
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as f:
                    fmt = np.lib.format
                    read = (fmt.read_array_header_1_0 if fmt.read_magic(f) == (1, 0)
                            else fmt.read_array_header_2_0)
                    dtype = read(f)[2]
                ok = not dtype.hasobject
            except (OSError, ValueError):
                ok = False
            if not ok:
                bad.append(path)
    return sorted(bad)


def load_checkpoint(path: str, map_location: Any = "cpu") -> dict[str, Any]:
    """A checkpoint file read without running code: ``torch.load(weights_only=True)`` unpickles
    only tensors and plain containers (what our checkpoints hold: state dicts, the config and
    model_config dicts, the RNG state), so a file from elsewhere cannot run anything. One that
    holds more is refused with one line naming it."""
    import pickle

    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        why = str(e).split("\n")[0].strip().rstrip(".")
        raise InputError(f"{path}: not loaded: it holds more than tensors and plain values "
                         f"(torch.load weights_only: {why[:200]})") from None
    except (RuntimeError, EOFError) as e:  # not a torch file, truncated
        raise InputError(f"{path}: not a readable checkpoint ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:200] if str(e) else 'empty'})") from None
    if not isinstance(state, dict):
        raise InputError(f"{path}: not a curator checkpoint (a {type(state).__name__})")
    return state


def _write_tracker(save: str, iteration: int) -> None:
    with atomic_open(os.path.join(save, TRACKER), "w") as f:
        f.write(str(iteration))


#: Temporaries of checkpoint files: atomic_open's (``<file>.tmp-<host>-<pid>-xxxxxxxx``), and
#: ``<file>.tmp-xxxxxxxx`` and ``<file>.tmp<pid>`` of earlier versions.
_CKPT_TMP = re.compile(r"(model_optim_rng\.pt|" + re.escape(TRACKER) + r"|model_config\.json|"
                       r"train_summary\.json)(?:" + TMP_SUFFIX + r"|\.tmp(-[0-9a-f]{8}|\d+))")


def remove_stale_temporaries(save: str) -> list[str]:
    """Delete checkpoint temporaries a killed run left under ``save`` (called once by rank 0
    before any rank writes, so none of them belongs to a live writer); returns their paths."""
    gone = []
    for root, _dirs, files in os.walk(save):
        if os.path.relpath(root, save).startswith("dataset_cache"):
            continue
        for name in files:
            if _CKPT_TMP.fullmatch(name):
                p = os.path.join(root, name)
                try:
                    os.unlink(p)
                    gone.append(p)
                except FileNotFoundError:
                    pass
    return gone


def load_model_state(checkpoint_dir: str) -> tuple[dict[str, Any], dict[str, Any], int]:
    """(model state dict, model_config, iteration) of the latest TP=PP=1 checkpoint."""
    it = latest_iteration(checkpoint_dir)
    if it is None:
        raise InputError(f"{checkpoint_dir}: no {TRACKER}; not a curator/Megatron checkpoint "
                         "folder (or no checkpoint finished)")
    path = checkpoint_file(checkpoint_dir, it)
    if not os.path.exists(path):
        raise InputError(f"{path}: missing; export needs a TP=1, PP=1 checkpoint")
    state = load_checkpoint(path)
    return state["model"], state["model_config"], it


# -- the loop ------------------------------------------------------------------------------


def _lr_at(cfg: TrainConfig, it: int) -> float:
    """Linear warmup then cosine decay to ``min_lr`` (Megatron's default shape)."""
    if cfg.lr_warmup_iters and it < cfg.lr_warmup_iters:
        return cfg.lr * (it + 1) / cfg.lr_warmup_iters
    span = max(1, cfg.train_iters - cfg.lr_warmup_iters)
    frac = min(1.0, (it - cfg.lr_warmup_iters) / span)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * frac))


def _init_distributed(device: str) -> tuple[bool, int, int]:
    """(we created the group, rank, world size). Under torchrun the env names the group; a
    single in-process run gets a size-1 group on an in-memory store (no port needed)."""
    if dist.is_initialized():
        return False, dist.get_rank(), dist.get_world_size()
    backend = "nccl" if device == "cuda" else "gloo"
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        if device == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend)
    else:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    return True, dist.get_rank(), dist.get_world_size()


def train(cfg: TrainConfig, *, log: Callable[[str], None] | None = print) -> dict[str, Any]:
    """Train (or resume) per ``cfg``; returns a summary (losses, tokens/s, checkpoint path).

    Every rank calls this; only rank 0 logs and writes shared files.
    """
    if not cfg.blend:
        raise ConfigError("train: no blend given (blend.json from the tokenize stages)")
    if not cfg.save:
        raise ConfigError("train: no checkpoint folder given (save)")
    device = resolve_device(cfg)
    if device == "cpu" and cfg.precision != "fp32":
        raise ConfigError(f"train: precision {cfg.precision} needs a GPU; use fp32 on CPU")
    blend = load_blend(cfg.blend)
    if cfg.num_threads and device == "cpu":
        torch.set_num_threads(cfg.num_threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if device == "cuda" and cfg.gpus_per_node is None:
        cfg = TrainConfig.from_dict({**cfg.to_dict(), "gpus_per_node": torch.cuda.device_count()})
    layout = layout_for(cfg, world, device)
    need = (True, cfg.eval_interval > 0, False)
    bookends, _docs = plan_splits(blend, need)

    created, rank, world = _init_distributed(device)
    from megatron.core import parallel_state as ps

    try:
        ps.initialize_model_parallel(layout.tensor_parallel, layout.pipeline_parallel)
        return _train(cfg, blend, bookends, layout, device, rank, log if rank == 0 else None)
    finally:
        ps.destroy_model_parallel()
        if created:
            dist.destroy_process_group()


def _train(cfg: TrainConfig, blend: Any, bookends: list[Any], layout: ParallelLayout,
           device: str, rank: int, log: Callable[[str], None] | None) -> dict[str, Any]:
    from megatron.core import parallel_state as ps

    save = os.path.abspath(cfg.save)
    nofollow.confine(save)  # checkpoints and metrics: no symlink below it is followed
    nofollow.makedirs(save)
    if rank == 0:
        remove_stale_temporaries(save)
    gb = cfg.global_batch_size
    n_evals = cfg.train_iters // cfg.eval_interval + 1 if cfg.eval_interval else 0
    sizes = [cfg.train_iters * gb, n_evals * cfg.eval_iters * gb, 0]
    cache = os.path.join(save, "dataset_cache")
    if rank == 0:
        for path in unsafe_cache_files(cache):
            os.unlink(path)
            if log:
                log(f"train: {path}: not a plain numpy array (megatron would unpickle it); "
                    "removed, the index is rebuilt")
    dist.barrier()
    train_ds, valid_ds, _ = build_datasets(cfg, blend, bookends, sizes, cache)
    if len(train_ds) == 0:
        raise ConfigError(f"train: the blend yields no {cfg.seq_length}-token training samples")

    mc = model_config(cfg, blend.vocab_size, blend.tokenizer)
    torch.manual_seed(cfg.seed)
    if device == "cuda":  # TP-sharded weights draw from megatron's CUDA RNG tracker
        from megatron.core import tensor_parallel

        tensor_parallel.model_parallel_cuda_manual_seed(cfg.seed)
    model = build_model(mc, device=device, attention=cfg.attention,
                        pipeline_parallel=layout.pipeline_parallel,
                        pre_process=ps.is_pipeline_first_stage(),
                        post_process=ps.is_pipeline_last_stage())
    if device == "cuda":
        model = model.cuda()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embedding" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and
                                                                 "embedding" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(0.9, 0.95), eps=1e-8)
    scaler = torch.amp.GradScaler("cuda") if cfg.precision == "fp16" else None

    tp_rank, pp_rank = ps.get_tensor_model_parallel_rank(), ps.get_pipeline_model_parallel_rank()
    ckpt = lambda it: checkpoint_file(save, it, tp_rank, pp_rank, layout.pipeline_parallel)  # noqa: E731
    start = 0
    resumed_from = latest_iteration(save)
    if resumed_from is not None:
        # read onto the CPU: the RNG state must stay a CPU ByteTensor (mapped to CUDA,
        # set_rng_state refused it: resuming on a GPU failed); load_state_dict copies the model's
        # and the optimizer's tensors to the parameters' device
        state = load_checkpoint(ckpt(resumed_from), map_location="cpu")
        old = state["config"]
        diff = [k for k in RESUME_KEYS if old.get(k) != cfg.to_dict()[k]]
        if diff:
            raise ConfigError(
                f"train: checkpoint in {save} was made with different {', '.join(diff)}; "
                "use another save folder to start over")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        if scaler is not None and state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
        torch.set_rng_state(state["rng"]["cpu"])
        start = state["iteration"]
        if log:
            log(f"train: resumed from iteration {start} in {save}")
    if rank == 0:
        with atomic_open(os.path.join(save, "model_config.json"), "w") as f:
            json.dump(mc, f, indent=1)

    dp_rank, dp_size = ps.get_data_parallel_rank(), ps.get_data_parallel_world_size()
    step_fn = _gpu_step if device == "cuda" else _cpu_step
    metrics_path = os.path.join(save, "metrics.jsonl")
    history: list[dict[str, Any]] = []
    tokens_per_step = gb * cfg.seq_length
    t_run = time.perf_counter()
    steps_run = 0
    for it in range(start, cfg.train_iters):
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = _lr_at(cfg, it)
        micro = batches(train_ds, it * gb, gb, cfg.micro_batch_size, dp_rank, dp_size)
        loss = step_fn(model, opt, scaler, micro, cfg, layout, device)
        dt = time.perf_counter() - t0
        steps_run += 1
        rec = {"iteration": it + 1, "loss": loss, "lr": opt.param_groups[0]["lr"],
               "step_seconds": dt, "tokens_per_second": tokens_per_step / dt}
        if cfg.eval_interval and ((it + 1) % cfg.eval_interval == 0 or it + 1 == cfg.train_iters):
            rec["valid_loss"] = _evaluate(model, valid_ds, cfg, (it + 1) // cfg.eval_interval,
                                          dp_rank, dp_size, device)
        history.append(rec)
        if rank == 0:
            with nofollow.open_file(metrics_path, "a") as f:
                f.write(json.dumps(rec) + "\n")
        if log and ((it + 1) % cfg.log_interval == 0 or it == start):
            extra = f" valid {rec['valid_loss']:.4f}" if "valid_loss" in rec else ""
            log(f"iteration {it + 1}/{cfg.train_iters}: loss {loss:.4f}{extra} lr "
                f"{rec['lr']:.2e} {dt * 1000:.1f} ms/step {rec['tokens_per_second']:.0f} tokens/s")
        last = it + 1 == cfg.train_iters
        if last or (cfg.save_interval and (it + 1) % cfg.save_interval == 0):
            _checkpoint(save, it + 1, ckpt(it + 1), model, opt, scaler, cfg, mc, rank, dp_rank)
    elapsed = time.perf_counter() - t_run
    return {
        "checkpoint": save, "iteration": cfg.train_iters, "resumed_from": resumed_from,
        "steps_run": steps_run, "losses": [h["loss"] for h in history],
        "valid_losses": [h["valid_loss"] for h in history if "valid_loss" in h],
        "seconds": elapsed,
        "tokens_per_second": steps_run * tokens_per_step / elapsed if steps_run else 0.0,
        "layout": layout.to_dict(), "device": device, "model_config": mc,
        "train_samples": len(train_ds),
    }


def _checkpoint(save: str, it: int, path: str, model: torch.nn.Module, opt: Any, scaler: Any,
                cfg: TrainConfig, mc: dict[str, Any], rank: int, dp_rank: int) -> None:
    """Model replicas are identical across data-parallel ranks: DP rank 0 of each model shard
    writes; the tracker goes last, after every shard is on disk."""
    if dp_rank == 0:
        _save(path, {"model": model.state_dict(), "optimizer": opt.state_dict(),
                     "scaler": scaler.state_dict() if scaler is not None else None,
                     "iteration": it, "config": cfg.to_dict(), "model_config": mc,
                     "rng": {"cpu": torch.get_rng_state()}})
    dist.barrier()
    if rank == 0:
        _write_tracker(save, it)


def _forward_loss(model: torch.nn.Module, b: dict[str, torch.Tensor]) -> torch.Tensor:
    out = model(b["tokens"], b["position_ids"], b["attention_mask"], labels=b["labels"])
    mask = b["loss_mask"]
    return (out.float() * mask).sum() / mask.sum()


def _cpu_step(model: torch.nn.Module, opt: Any, scaler: Any, micro: Any, cfg: TrainConfig,
              layout: ParallelLayout, device: str) -> float:
    opt.zero_grad(set_to_none=True)
    total = 0.0
    for b in micro:
        loss = _forward_loss(model, b) / layout.num_micro_batches
        loss.backward()
        total += float(loss.detach())
    if layout.data_parallel > 1:  # average gradients and the logged loss over DP ranks
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        flat = torch.cat([g.reshape(-1) for g in grads] + [torch.tensor([total])])
        dist.all_reduce(flat)
        flat /= layout.data_parallel
        off = 0
        for g in grads:
            g.copy_(flat[off:off + g.numel()].view_as(g))
            off += g.numel()
        total = float(flat[-1])
    if cfg.clip_grad:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_grad)
    opt.step()
    return total


def megatron_loss_func(mask: torch.Tensor, scaler: Any) -> Callable[[torch.Tensor], Any]:
    """The ``loss_func`` a megatron-core schedule calls on a micro batch's per-token losses:
    (the loss to backpropagate, what to log). The logged value is a copy taken before fp16's
    scaling: the schedule divides the returned loss by the number of micro batches *in place*,
    and a ``detach()`` shares its storage, so the logged loss came out that many times too small
    (found on an H200: train loss half the valid loss with two micro batches)."""

    def loss_func(output: torch.Tensor) -> Any:
        loss = (output.float() * mask).sum() / mask.sum()
        logged = loss.detach().clone()
        return (scaler.scale(loss) if scaler is not None else loss), {"lm loss": logged}

    return loss_func


def _gpu_step(model: torch.nn.Module, opt: Any, scaler: Any, micro: Any, cfg: TrainConfig,
              layout: ParallelLayout, device: str) -> float:  # pragma: no cover - needs CUDA
    from megatron.core import parallel_state as ps
    from megatron.core.pipeline_parallel import get_forward_backward_func

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(cfg.precision)

    def forward_step(data_iterator: Any, m: torch.nn.Module) -> Any:
        b = {k: v.cuda(non_blocking=True) for k, v in next(data_iterator).items()
             if k != "attention_mask"}
        # no mask: the dataset's is the causal one (reset_attention_mask is off), which
        # megatron's attention builds itself on CUDA and SDPA runs as its causal kernel
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            out = m(b["tokens"], b["position_ids"], None, labels=b["labels"])
        return out, megatron_loss_func(b["loss_mask"], scaler)

    opt.zero_grad(set_to_none=True)
    fb = get_forward_backward_func()
    results = fb(forward_step_func=forward_step, data_iterator=iter(list(micro)), model=[model],
                 num_microbatches=layout.num_micro_batches, seq_length=cfg.seq_length,
                 micro_batch_size=cfg.micro_batch_size, forward_only=False)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if layout.data_parallel > 1 and grads:
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, group=ps.get_data_parallel_group())
        flat /= layout.data_parallel
        off = 0
        for g in grads:
            g.copy_(flat[off:off + g.numel()].view_as(g))
            off += g.numel()
    if scaler is not None:
        scaler.unscale_(opt)
    if cfg.clip_grad:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_grad)
    if scaler is not None:
        scaler.step(opt)
        scaler.update()
    else:
        opt.step()
    loss = torch.zeros(1, device="cuda")
    if ps.is_pipeline_last_stage() and results:
        loss += sum(float(r["lm loss"]) for r in results) / len(results)
    # the last pipeline stage holds the loss: share it so rank 0 can log it
    dist.all_reduce(loss)
    return float(loss) / (layout.data_parallel * layout.tensor_parallel)


@torch.no_grad()
def _evaluate(model: torch.nn.Module, ds: Any, cfg: TrainConfig, round_: int, dp_rank: int,
              dp_size: int, device: str) -> float:
    """Mean validation loss over ``eval_iters`` global batches (a fresh window per round)."""
    model.eval()
    gb = cfg.global_batch_size
    losses = []
    for k in range(cfg.eval_iters):
        start = (round_ * cfg.eval_iters + k) * gb
        for b in batches(ds, start, gb, cfg.micro_batch_size, dp_rank, dp_size):
            if device == "cuda":
                b = {key: v.cuda() for key, v in b.items()}
            losses.append(float(_forward_loss(model, b)))
    model.train()
    t = torch.tensor([sum(losses) / max(1, len(losses))])
    if dp_size > 1:
        dist.all_reduce(t)
        t /= dp_size
    return float(t)
