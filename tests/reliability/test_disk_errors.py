"""Disk full (ENOSPC), read-only (EROFS) and no permission (EACCES) in the phases of global
stages and in ``curator train`` / ``curator export-triton``: one line naming the stage (and
phase) and the file, exit status 1, no traceback, no temporary left, and a rerun with room
completes.

The small disk is a real tmpfs mounted in a private mount namespace of the command under test
(``unshare --mount`` as root, ``unshare --user --map-root-user --mount`` otherwise), so no mount
outlives the test. Permission denied as root: the command runs without ``CAP_DAC_OVERRIDE``
(``setpriv --bounding-set``), so permission bits apply to it as to any user.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.helpers_core import make_corpus
from tests.helpers import cli_env, run_cli

CURATOR = [sys.executable, "-m", "curator"]
LEFT = "--- left in the mount ---"


@functools.cache
def _unshare() -> list[str] | None:
    """The unshare prefix that can mount a tmpfs here, or None."""
    if shutil.which("unshare") is None:
        return None
    for pre in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user", "--mount"]):
        p = subprocess.run([*pre, "sh", "-c", "mount -t tmpfs -o size=8k tmpfs /mnt"],
                           capture_output=True)
        if p.returncode == 0:
            return pre
    return None


def in_small_fs(mnt: Path, size: str, cmd: list[str], cwd: Path, ro: bool = False,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``cmd`` with a ``size`` tmpfs mounted on ``mnt`` (read-only with ``ro``); stdout
    ends with the temporaries (``*.tmp*``) left in the mount."""
    pre = _unshare()
    if pre is None:
        pytest.fail("cannot mount a tmpfs here (unshare from util-linux, installed by "
                    "scripts/setup.sh, or user namespaces are missing): ENOSPC/EROFS need a real "
                    "small filesystem")
    mnt.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if ro else "")
    script = ('mount -t tmpfs -o "$1" tmpfs "$2" || exit 99; m="$2"; shift 2; "$@"; rc=$?; '
              f'echo "{LEFT}"; find "$m" -name "*.tmp*"; exit $rc')
    return subprocess.run([*pre, "sh", "-c", script, "sh", opts, str(mnt), *cmd], cwd=cwd,
                          env=env or cli_env(), capture_output=True, text=True, timeout=300)


def one_error_line(res: subprocess.CompletedProcess) -> str:
    """The single ``curator: error:`` line of a failed command (and nothing like a
    traceback)."""
    assert res.returncode == 1, (res.returncode, res.stderr[-3000:])
    errs = [x for x in res.stderr.splitlines() if "error:" in x]
    assert len(errs) == 1, res.stderr[-3000:]
    assert "Traceback" not in res.stderr and "raise " not in res.stderr, res.stderr[-3000:]
    return errs[0]


def left_in_mount(res: subprocess.CompletedProcess) -> list[str]:
    return [x for x in res.stdout.split(LEFT, 1)[1].splitlines() if x.strip()]


def test_enospc_in_quality_classifier_training(tmp_path):
    make_corpus(str(tmp_path / "wiki.jsonl"), 2000, seed=1)
    make_corpus(str(tmp_path / "web.jsonl"), 2000, seed=2)
    pipe = tmp_path / "q.yaml"
    small = tmp_path / "small"
    pipe.write_text(
        f"name: q\nwork_dir: {small}/w\nstages:\n"
        f"  - {{id: wiki, read_jsonl: {{paths: {tmp_path}/wiki.jsonl, source: wiki}}}}\n"
        f"  - {{id: web, read_jsonl: {{paths: {tmp_path}/web.jsonl, source: web}}}}\n"
        "  - id: quality\n    train_quality_classifier: {positive_sources: [wiki], min_auc: 0}\n"
        "    inputs: [wiki, web]\n")
    # 4 MB: room for the sources and the training text, not for the fastText model, which
    # fastText writes without checking (the file used to be published cut short)
    res = in_small_fs(small, "4m", [*CURATOR, "run", str(pipe)], cwd=tmp_path)
    line = one_error_line(res)
    assert line.startswith(f"curator: error: stage 'quality', phase 'train': {small}/w/"
                           "stages/quality/artifacts/"), line
    assert "No space left on device [ENOSPC]" in line and "free space and rerun" in line
    assert left_in_mount(res) == []
    # with room, the rerun trains and publishes the model
    run_cli("run", str(pipe), cwd=tmp_path)
    done = json.loads((small / "w" / "stages" / "quality" / "_SUCCESS.json").read_text())
    assert os.path.getsize(done["artifacts"]["quality_model"]) > 1000


@pytest.mark.parametrize("kind,file", [("bpe", "tokenizer.json"),
                                       ("sentencepiece", "tokenizer.model")])
def test_enospc_in_tokenizer_training(tmp_path, kind, file):
    make_corpus(str(tmp_path / "in.jsonl"), 1500, seed=3)
    out = tmp_path / "tok"
    pipe = tmp_path / "t.yaml"
    pipe.write_text(f"name: t\nwork_dir: {tmp_path}/w\nstages:\n"
                    f"  - read_jsonl: {{paths: {tmp_path}/in.jsonl}}\n"
                    f"  - train_tokenizer: {{type: {kind}, vocab_size: 300, "
                    f"output_dir: {out}}}\n")
    res = in_small_fs(out, "4k", [*CURATOR, "run", str(pipe)], cwd=tmp_path)
    line = one_error_line(res)
    assert line == (f"curator: error: stage 'train_tokenizer', phase 'train': {out}/{file}: "
                    "No space left on device [ENOSPC]; free space and rerun (finished work "
                    "is kept)"), line
    assert left_in_mount(res) == []
    run_cli("run", str(pipe), cwd=tmp_path)
    assert (out / file).stat().st_size > 1000
    assert [p.name for p in out.iterdir() if ".tmp" in p.name] == []


def test_enospc_in_megatron_shards_and_erofs_in_a_curated_write(tmp_path):
    make_corpus(str(tmp_path / "in.jsonl"), 2000, seed=4)
    meg = tmp_path / "meg"
    pipe = tmp_path / "m.yaml"
    pipe.write_text(f"name: m\nwork_dir: {tmp_path}/w\nstages:\n"
                    f"  - read_jsonl: {{paths: {tmp_path}/in.jsonl, source: web}}\n"
                    "  - train_tokenizer: {vocab_size: 300}\n"
                    f"  - megatron_shards: {{output_dir: {meg}}}\n")
    res = in_small_fs(meg, "16k", [*CURATOR, "run", str(pipe)], cwd=tmp_path)
    line = one_error_line(res)
    assert line.startswith(f"curator: error: stage 'megatron_shards', phase 'merge': {meg}/"
                           "web_text_document."), line
    assert "No space left on device [ENOSPC]" in line and left_in_mount(res) == []

    ro = tmp_path / "ro"
    wpipe = tmp_path / "c.yaml"
    wpipe.write_text(f"name: c\nwork_dir: {tmp_path}/w2\nstages:\n"
                     f"  - read_jsonl: {{paths: {tmp_path}/in.jsonl}}\n"
                     f"  - {{id: curated, write_jsonl: {{path: {ro}/curated}}}}\n")
    res = in_small_fs(ro, "64k", [*CURATOR, "run", str(wpipe)], cwd=tmp_path, ro=True)
    line = one_error_line(res)
    # the stage claims its output folder before it starts, so a read-only one is reported
    # then, before any shard is written
    assert line.startswith("curator: error: stage 'curated': "), line
    assert f"{ro}/curated" in line and "Read-only file system [EROFS]" in line


def _no_dac(cmd: list[str]) -> list[str]:
    """``cmd`` without root's permission override (plain ``cmd`` for other users)."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("setpriv") is None:
        pytest.fail("root without setpriv (util-linux, installed by scripts/setup.sh): "
                    "permission bits cannot be made to apply")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *cmd]


def test_eacces_on_a_global_stage_output_folder(tmp_path):
    """A folder the run may not write is reported in one line when the stage claims its output
    folder, before its phases start."""
    make_corpus(str(tmp_path / "in.jsonl"), 500, seed=5)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    pipe = tmp_path / "t.yaml"
    pipe.write_text(f"name: t\nwork_dir: {tmp_path}/w\nstages:\n"
                    f"  - read_jsonl: {{paths: {tmp_path}/in.jsonl}}\n"
                    f"  - train_tokenizer: {{vocab_size: 300, output_dir: {locked}/tok}}\n")
    res = subprocess.run(_no_dac([*CURATOR, "run", str(pipe)]), cwd=tmp_path, env=cli_env(),
                         capture_output=True, text=True, timeout=300)
    line = one_error_line(res)
    assert line == (f"curator: error: stage 'train_tokenizer': {locked}/tok: "
                    "Permission denied [EACCES]; fix the permissions and rerun"), line


@pytest.fixture(scope="module")
def small_blend(tmp_path_factory: pytest.TempPathFactory) -> str:
    from curator.train.demo import write_demo_blend

    return write_demo_blend(str(tmp_path_factory.mktemp("blend")), {"web": 200},
                            split="90,10,0", vocab_size=320)


TRAIN = ["--num-layers", "1", "--hidden-size", "32", "--num-attention-heads", "2",
         "--seq-length", "32", "--micro-batch-size", "2", "--global-batch-size", "2",
         "--num-threads", "1"]


def test_train_enospc_is_one_line_and_leaves_no_checkpoint_temporary(tmp_path, small_blend):
    save = tmp_path / "ck"
    cmd = [*CURATOR, "train", "--blend", small_blend, "--save", str(save), *TRAIN,
           "--train-iters", "2"]
    # 128 KB: the dataset index cache and model_config.json fit, the checkpoint does not
    res = in_small_fs(save, "128k", cmd, cwd=tmp_path)
    line = one_error_line(res)
    assert line.startswith(f"curator: error: curator train: {save}/iter_0000002/mp_rank_00/"
                           "model_optim_rng.pt: No space left on device [ENOSPC]"), line
    assert left_in_mount(res) == []


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, small_blend: str) -> Path:
    """A checkpoint folder of a 2-iteration run (``curator train``)."""
    save = tmp_path_factory.mktemp("trained") / "ck"
    run_cli("train", "--blend", small_blend, "--save", str(save), *TRAIN, "--train-iters", "2",
            cwd=save.parent)
    return save


def test_train_removes_checkpoint_temporaries_of_a_killed_run(tmp_path, small_blend, trained):
    save = tmp_path / "ck"
    shutil.copytree(trained, save)
    # what a SIGKILLed earlier run leaves: temporaries of this and earlier versions' writers
    stale = [save / "iter_0000004" / "mp_rank_00" / "model_optim_rng.pt.tmp4242",
             save / "iter_0000004" / "mp_rank_00" / "model_optim_rng.pt.tmp-0123abcd",
             save / "latest_checkpointed_iteration.txt.tmp-89abcdef",
             # atomic_open's own names (host, PID; the run's id inside a pipeline run)
             save / "iter_0000004" / "mp_rank_00"
             / "model_optim_rng.pt.tmp-c967c6da-26677-427ab525",
             save / "train_summary.json.tmp-r0123456789ab-c967c6da-1-0123abcd"]
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half a checkpoint")
    user = save / "notes.tmp1"  # not a checkpoint temporary: left alone
    user.write_text("mine")
    # extend the run to iteration 3: no checkpoint of iteration 4 is ever published
    run_cli("train", "--blend", small_blend, "--save", str(save), *TRAIN, "--train-iters", "3",
            cwd=tmp_path)
    assert not any(p.exists() for p in stale)
    assert user.read_text() == "mine"
    assert (save / "latest_checkpointed_iteration.txt").read_text() == "3"
    assert [p for p in save.rglob("*") if ".tmp" in p.name and p != user] == []


def test_export_triton_to_a_read_only_folder_is_one_line(tmp_path, trained):
    ro = tmp_path / "ro"
    res = in_small_fs(ro, "64k", [*CURATOR, "export-triton", "--checkpoint", str(trained),
                                  "--output", str(ro / "repo")], cwd=tmp_path, ro=True)
    line = one_error_line(res)
    assert line.startswith(f"curator: error: curator export-triton: {ro}/repo"), line
    assert "Read-only file system [EROFS]" in line


def test_native_writer_that_writes_short_is_not_published(tmp_path):
    import errno

    from curator.storage.native import as_os_error, save_checked

    target = tmp_path / "model.bin"

    def short_writer(p: str) -> None:  # what fastText does when its writes fail: no error
        with open(p, "wb") as f:
            f.write(b"x" * 10)

    with pytest.raises(OSError) as e:
        save_checked(short_writer, str(target), 20)
    assert e.value.errno == errno.EIO and e.value.filename == str(target)
    assert "only 10 of 20 bytes" in str(e.value)
    assert list(tmp_path.iterdir()) == []  # nothing published, no temporary left
    save_checked(short_writer, str(target), 10)
    assert target.read_bytes() == b"x" * 10

    rust = as_os_error(Exception("No space left on device (os error 28)"), "/x/vocab.json")
    assert isinstance(rust, OSError) and rust.errno == errno.ENOSPC
    assert rust.filename == "/x/vocab.json"
    other = ValueError("not an OS error")
    assert as_os_error(other, "/x") is other


def test_enospc_in_a_fused_chain_names_the_stage_whose_file_filled_the_disk(tmp_path):
    """``read_jsonl -> min_words -> upper_first`` run fused, one pass per shard; the middle
    stage rejects most documents and ``rejected/`` is a 16 KB tmpfs. Its rejected file fills
    it when published: the error names 'min_words', not the chain's first stage 'read_jsonl'
    (one loop runs the chain; the stage that wrote is what a user can fix); the rerun with
    room completes."""
    rng = __import__("random").Random(3)
    with open(tmp_path / "d.jsonl", "w") as f:
        for i in range(600):  # random words: the rejected file compresses badly
            words = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz")
                                     for _ in range(rng.randint(3, 9))) for _ in range(12))
            f.write(json.dumps({"id": f"d{i}", "text": words if i % 10 else words * 4})
                    + "\n")
    wd = tmp_path / "w"
    (tmp_path / "p.yaml").write_text(
        f"name: fused\nwork_dir: {wd}\nprogress: off\nstages:\n"
        f"  - read_jsonl: {{paths: {tmp_path / 'd.jsonl'}}}\n"
        "  - tests.core.helpers_core:min_words: {n: 20}\n"
        "  - tests.core.helpers_core:upper_first: {}\n")
    res = in_small_fs(wd / "rejected", "16k", [*CURATOR, "run", "p.yaml"], cwd=tmp_path)
    line = one_error_line(res)
    assert "stage 'min_words'" in line and "[ENOSPC]" in line, line
    assert "rejected/min_words/" in line
    assert not left_in_mount(res)
    run_cli("run", "p.yaml", cwd=tmp_path)
    rep = json.loads((wd / "report.json").read_text())
    assert [s["docs_out"] for s in rep["stages"]] == [600, 60, 60]


@pytest.mark.parametrize("stage", ["word_count_filter: {min_words: 100000}",
                                   "exact_dedup: {}"])
def test_enospc_in_a_rejected_file_names_that_file_and_its_stage(tmp_path, stage):
    """``rejected/<stage>/`` on a full disk while a filter fused with its source rejects, or
    while ``exact_dedup`` removes duplicates: the line names the rejected file and the stage.
    The write error used to cross the shard output's block, which named its own file
    (`stages/<stage>/data/...`) instead."""
    make_corpus(str(tmp_path / "in.jsonl"), 3000, seed=6)
    recs = (tmp_path / "in.jsonl").read_text().splitlines()
    with open(tmp_path / "in.jsonl", "a") as f:  # every text twice, for exact_dedup
        f.writelines(r.replace('"id": "', '"id": "again-', 1) + "\n" for r in recs)
    rejected = tmp_path / "w" / "rejected"
    name = stage.split(":")[0]
    pipe = tmp_path / "r.yaml"
    pipe.write_text(f"name: r\nwork_dir: {tmp_path}/w\nstages:\n"
                    f"  - read_jsonl: {{paths: {tmp_path}/in.jsonl}}\n  - {stage}\n")
    res = in_small_fs(rejected, "64k", [*CURATOR, "run", str(pipe)], cwd=tmp_path)
    line = one_error_line(res)
    assert line == (f"curator: error: stage '{name}' failed on shard "
                    f"'read_jsonl-00000': {rejected}/{name}/read_jsonl-00000.jsonl.zst"
                    ": No space left on device [ENOSPC]; free space and rerun (finished work is "
                    "kept)"), line
    assert left_in_mount(res) == []
