"""Entry point of one ``torchrun`` rank: ``python -m curator.train.worker CONFIG.json``."""

from __future__ import annotations

import json
import os
import sys

from curator.base.errors import CuratorError, fs_error_line


def main(argv: list[str]) -> int:
    from curator.storage.atomic import atomic_open
    from curator.train.config import TrainConfig
    from curator.train.trainer import train

    cfg = TrainConfig.load_json(argv[0])
    rank = os.environ.get("RANK", "0")
    try:
        summary = train(cfg)
        if rank == "0":
            with atomic_open(os.path.join(os.path.abspath(cfg.save), "train_summary.json"),
                             "w") as f:
                json.dump(summary, f, indent=1)
    except CuratorError as e:
        print(f"curator train (rank {rank}): error: {e}", file=sys.stderr)
        return e.exit_code
    except OSError as e:  # disk full, no permission, read-only: one line per rank
        line = fs_error_line(e)
        if line is None or os.environ.get("CURATOR_DEBUG"):
            raise
        print(f"curator train (rank {rank}): error: {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
