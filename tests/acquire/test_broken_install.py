"""A broken or partial install (a package that fails to import) stops a source with one line
naming the stage and the import error; it is not taken for bad records. Before, every record
of the sample crawl was quarantined "extract failed: ImportError: ..." and the run went on
without them (exit 0 for a pipeline with nothing after the source that needed them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, cli_env


@pytest.mark.parametrize(("module", "stage"), [
    ("trafilatura", "  - id: web\n    common_crawl: {snapshot: CC-MAIN-2024-10, "
                    "base_url: data/sample/commoncrawl}\n"),
    ("mwparserfromhell", "  - id: wiki\n    wikipedia: {language: en, dump_date: latest, "
                         "base_url: data/sample/wikimedia}\n"),
])
def test_a_package_that_fails_to_import_stops_the_source(tmp_path, module, stage) -> None:
    fake = tmp_path / "fake" / module
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(f"raise ImportError('simulated broken install: {module}')\n")
    p = tmp_path / "p.yaml"
    p.write_text(f"name: t\nwork_dir: {tmp_path / 'w'}\nstages:\n{stage}"
                 f"  - write_jsonl: {{path: {tmp_path / 'out'}}}\n")
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "fake"), env["PYTHONPATH"]])
    r = subprocess.run([sys.executable, "-m", "curator", "run", str(p)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0, r.stderr
    err = [x for x in r.stderr.splitlines() if x.startswith("curator: error:")]
    assert len(err) == 1 and f"ImportError: simulated broken install: {module}" in err[0], \
        r.stderr
    quarantined = list((tmp_path / "w").glob("quarantine/**/*.*"))
    assert quarantined == [], quarantined
    # the same run with the real package installed goes through
    r = subprocess.run([sys.executable, "-m", "curator", "run", str(p)], cwd=ROOT, env=cli_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert list((tmp_path / "out").glob("*.jsonl*"))
