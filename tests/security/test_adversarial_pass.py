"""Cases an adversarial pass found through the ``curator`` command: a custom stage's secret in a
parameter named like a token (``hf_token``, ``access_token``), and a work_dir that another user
of the machine made (a real account, ``useradd``), which would let its owner decide what every
rerun reads back."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.helpers import cli_env
from tests.security.helpers_security import OTHER, other_user

MODULE = """
from curator import filter


@filter
def tok(doc, hf_token: str = "", access_token: str = "", eod_token: str = "") -> bool:
    return True
"""

SECRETS = ("hf_AAAAsecretAAAA1", "ya29.BBBBsecretBBBB", "hf_CCCCsecretCCCC2")


def curator(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(tmp_path)])
    return subprocess.run(
        [sys.executable, "-m", "curator", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _data(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    with open(tmp_path / "data" / "in.jsonl", "w") as f:
        for i in range(20):
            f.write(json.dumps({"id": str(i), "text": "words " * (i + 3)}) + "\n")


def test_a_secret_in_a_parameter_named_like_a_token_reaches_no_output(tmp_path):
    _data(tmp_path)
    (tmp_path / "tokmod.py").write_text(MODULE)
    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nprogress: off\nstages:\n"
        "  - read_jsonl: {paths: 'data/*.jsonl'}\n"
        f"  - tokmod:tok: {{hf_token: {SECRETS[0]}, access_token: {SECRETS[1]}, "
        "eod_token: '</s>'}\n"
        "  - write_jsonl: {path: out}\n"
    )
    printed = []
    for args in (
        ("run", "p.yaml"),
        ("status", "p.yaml"),
        ("status", "p.yaml", "--set", f"stages.tok.hf_token={SECRETS[2]}"),
        ("report", "w"),
    ):
        p = curator(tmp_path, *args)
        assert p.returncode == 0, p.stdout + p.stderr
        printed.append(p.stdout + p.stderr)
    assert "parameter 'hf_token' changed" in printed[2], printed[2]  # a new value still counts
    for text in printed:
        assert not any(s in text for s in SECRETS), text
    for f in (tmp_path / "w").rglob("*"):
        if f.is_file():
            raw = f.read_bytes()
            raw = gzip.decompress(raw) if f.suffix == ".gz" else raw
            assert not any(s.encode() in raw for s in SECRETS), f
    # a tokenizer's special token is a setting, shown as it is
    report = json.loads((tmp_path / "w" / "report.json").read_text())
    assert "'</s>'" in json.dumps(report) or "</s>" in json.dumps(report)


def test_a_work_dir_another_user_made_is_refused(tmp_path):
    uid, gid = other_user()
    _data(tmp_path)
    shared = Path(tempfile.mkdtemp(prefix="curator-shared-", dir="/tmp"))
    try:
        shared.chmod(0o1777)  # like /tmp: anyone may make a folder there first
        wd = shared / "w"
        subprocess.run(
            [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={gid}",
                "--clear-groups",
                "--",
                "mkdir",
                "-m",
                "0755",
                str(wd),
            ],
            check=True,
        )
        (tmp_path / "p.yaml").write_text(
            f"name: t\nwork_dir: {wd}\nprogress: off\nstages:\n"
            "  - read_jsonl: {paths: 'data/*.jsonl'}\n  - write_jsonl: {path: out}\n"
        )
        p = curator(tmp_path, "run", "p.yaml")
        err = p.stderr.strip().splitlines()
        assert p.returncode == 1 and err[-1] == (
            f"curator: error: work_dir '{wd}' belongs to another user ({OTHER}, uid {uid}): "
            "its owner can change what every rerun reads back; use a folder of your own"
        ), p.stderr
        assert "Traceback" not in p.stderr and os.listdir(wd) == []
        # the user's own folder at the same place runs
        shutil.rmtree(wd)
        assert curator(tmp_path, "run", "p.yaml").returncode == 0
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_stage_id_named_like_a_secret_does_not_break_the_report(tmp_path):
    _data(tmp_path)
    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nprogress: off\nstages:\n"
        "  - id: db_password\n    read_jsonl: {paths: 'data/*.jsonl'}\n"
        "  - id: hf_token\n    word_count_filter: {min_words: 10}\n"
        "  - write_jsonl: {path: out}\n"
    )
    p = curator(tmp_path, "run", "p.yaml")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    report = json.loads((tmp_path / "w" / "report.json").read_text())
    counts = {s["id"]: s["docs_out"] for s in report["stages"]}
    assert counts == {"db_password": 20, "hf_token": 13, "write_jsonl": 13}, counts
    assert curator(tmp_path, "report", "w").returncode == 0
