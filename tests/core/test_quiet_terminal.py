"""The terminal holds curator's lines: a Dask worker slow to exit is not killed with a warning,
and a dashboard tab closed mid-session is not a Bokeh traceback in curator's log."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

from tests.helpers import cli_env

SLOW_EXIT = '''import atexit, time
import curator
atexit.register(time.sleep, 6)  # a library slow to tear down (torch on a busy machine)

@curator.modifier
def slow_exit(doc):
    return doc
'''


def test_dask_workers_slow_to_exit_are_not_killed_at_the_end(tmp_path):
    (tmp_path / "slowexit_h47.py").write_text(SLOW_EXIT)
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"id": str(i), "text": "a b c"}) + "\n"
                                              for i in range(4)))
    (tmp_path / "p.yaml").write_text(
        "name: q\nwork_dir: w\nstages:\n  - read_jsonl: {paths: a.jsonl}\n"
        "  - slowexit_h47:slow_exit: {}\n  - write_jsonl: {path: out}\n")
    env = cli_env()
    env["PYTHONPATH"] += f":{tmp_path}"
    r = subprocess.run([sys.executable, "-m", "curator", "run", "p.yaml", "--executor", "dask",
                        "--workers", "2"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "still alive" not in r.stderr and "killing" not in r.stderr, r.stderr[-2000:]


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_closed_dashboard_tab_is_not_a_traceback_in_the_log():
    """What Tornado logs when a tab closes before Bokeh set up its session (the error Bokeh's
    own connection code raises, logged as Tornado logs it), with a real local cluster and its
    dashboard: dropped. Any other error of the dashboard still shows."""
    from bokeh.server.connection import ServerConnection

    from curator.core.executors import DaskExecutor

    keep = _Keep()
    app_log = logging.getLogger("tornado.application")
    app_log.addHandler(keep)
    ex = DaskExecutor(workers=1)
    try:
        conn = ServerConnection.__new__(ServerConnection)
        conn._session = None
        try:
            conn.session  # noqa: B018 - Bokeh asserts the session exists
        except AssertionError:
            app_log.error("Uncaught exception GET /status/ws (127.0.0.1)", exc_info=True)
        try:
            raise ValueError("a real dashboard bug")
        except ValueError:
            app_log.error("Uncaught exception GET /status (127.0.0.1)", exc_info=True)
    finally:
        ex.close()
        app_log.removeHandler(keep)
    assert [r.getMessage() for r in keep.records] == [
        "Uncaught exception GET /status (127.0.0.1)"]
