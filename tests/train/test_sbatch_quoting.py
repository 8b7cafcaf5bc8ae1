"""``curator train --sbatch``: every argument that comes from the user is quoted in the batch
script, so a ``$(...)``, a backquote or a ``;`` in a folder name, a partition or a time limit
stays text. The script is run by bash with stub ``scontrol``/``srun`` on PATH (they only print
what they receive); nothing the user typed may execute."""

from __future__ import annotations

import os
import shlex
import subprocess

from curator.cli import main
from curator.train.config import TrainConfig

STUB_SRUN = '#!/bin/sh\nprintf "%s\\n" "$@" > "$SRUN_ARGS"\n'
STUB_SCONTROL = '#!/bin/sh\necho node-a\necho node-b\n'


def test_sbatch_script_quotes_every_argument(blend_path: str, tmp_path, capsys) -> None:
    save = tmp_path / "ck $(touch pwned1) `touch pwned2` ;touch pwned3"
    job = tmp_path / "job.sh"
    partition = "gpu$(touch pwned4)"
    limit = "04:00:00;touch pwned5"
    assert main(["train", "--blend", blend_path, "--save", str(save), "--sbatch", str(job),
                 "--nodes", "2", "--gpus-per-node", "2", "--global-batch-size", "16",
                 "--partition", partition,
                 "--time", limit]) == 0
    text = job.read_text()
    assert subprocess.run(["bash", "-n", str(job)]).returncode == 0

    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, body in (("srun", STUB_SRUN), ("scontrol", STUB_SCONTROL)):
        (stubs / name).write_text(body)
        (stubs / name).chmod(0o755)
    args_file = tmp_path / "srun-args.txt"
    env = dict(os.environ, PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}",
               SLURM_JOB_NODELIST="node-[a-b]", SLURM_JOB_ID="4242", SRUN_ARGS=str(args_file))
    p = subprocess.run(["bash", str(job)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in tmp_path.iterdir() if x.name.startswith("pwned")) == []

    args = args_file.read_text().splitlines()
    # the node-side variables did expand; the user's text arrived unchanged, as one argument
    assert "--rdzv-endpoint=node-a:29500" in args and "--rdzv-id=4242" in args
    assert args[0] == "--kill-on-bad-exit=1" and args[-1] == str(save / "train_config.json")
    assert TrainConfig.load_json(args[-1]).save == str(save)
    sbatch = {ln.split("=", 1)[0]: ln.split("=", 1)[1] for ln in text.splitlines()
              if ln.startswith("#SBATCH --") and "=" in ln}
    assert shlex.split(sbatch["#SBATCH --partition"]) == [partition]
    assert shlex.split(sbatch["#SBATCH --time"]) == [limit]
    assert shlex.split(sbatch["#SBATCH --output"]) == [str(save / "slurm-%j.out")]


def test_sbatch_refuses_a_line_break_in_an_option(blend_path: str, tmp_path, capsys) -> None:
    job = tmp_path / "job.sh"
    rc = main(["train", "--blend", blend_path, "--save", str(tmp_path / "ck"), "--sbatch",
               str(job), "--gpus-per-node", "2", "--global-batch-size", "16",
               "--partition", "gpu\ntouch pwned"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert err[0].startswith("curator: error: train --sbatch: partition contains a line break")
    assert not job.exists()
