"""Entry point of one ``torchrun`` rank: ``python -m curator.train.worker CONFIG.json``."""

from __future__ import annotations

import json
import os
import sys

from curator.core.errors import CuratorError


def main(argv: list[str]) -> int:
    from curator.train.config import TrainConfig
    from curator.train.trainer import train

    cfg = TrainConfig.load_json(argv[0])
    try:
        summary = train(cfg)
    except CuratorError as e:
        print(f"curator train (rank {os.environ.get('RANK', '0')}): error: {e}", file=sys.stderr)
        return e.exit_code
    if os.environ.get("RANK", "0") == "0":
        with open(os.path.join(os.path.abspath(cfg.save), "train_summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
