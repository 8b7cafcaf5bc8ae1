"""Crash at step 8 of 10 on CUDA, resume from the checkpoint at 5: losses vs an uninterrupted run
(the CPU test tests/train/test_train.py::test_resume_continues_exactly, on the GPU path)."""
import json
import sys

import numpy as np

from curator.train import trainer
from curator.train.config import TrainConfig

blend, root, prec = sys.argv[1], sys.argv[2], sys.argv[3]


def cfg(save: str) -> TrainConfig:
    return TrainConfig(blend=blend, save=save, train_iters=10, save_interval=5, log_interval=5,
                       device="cuda", precision=prec)


straight = trainer.train(cfg(f"{root}/a"), log=None)
real = trainer._gpu_step
n = {"k": 0}


def crash(*a, **k):
    n["k"] += 1
    if n["k"] == 8:
        raise RuntimeError("injected crash")
    return real(*a, **k)


trainer._gpu_step = crash
try:
    trainer.train(cfg(f"{root}/b"), log=None)
except RuntimeError as e:
    print("crashed:", e, "latest checkpoint", trainer.latest_iteration(f"{root}/b"))
trainer._gpu_step = real
resumed = trainer.train(cfg(f"{root}/b"), log=None)
d = np.abs(np.array(resumed["losses"]) - np.array(straight["losses"][5:]))
print(json.dumps({"precision": prec, "resumed_from": resumed["resumed_from"],
                  "steps_run": resumed["steps_run"], "straight": straight["losses"],
                  "resumed": resumed["losses"], "max_abs_diff": float(d.max()),
                  "max_rel_diff": float((d / np.abs(np.array(straight["losses"][5:]))).max())}))
