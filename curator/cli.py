"""The ``curator`` command.

``curator run FILE``, ``curator validate FILE``, ``curator stages``, ``curator report WORK_DIR``;
stage families add their own commands (``train-tokenizer``, ``train``, ...) by naming a module
with a ``register(subparsers)`` function as ``CLI`` in their ``__init__.py``.

Errors a user can fix print one line and exit non-zero (2 for an invalid pipeline file);
``CURATOR_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

from curator import __version__
from curator.base.errors import ConfigError, CuratorError, fs_error_line, install_hint
from curator.base.redact import redact

_default_showwarning = warnings.showwarning


def _log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {redact(msg)}", file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    from curator.core import pipeline as pl
    from curator.core.executors import make_executor
    from curator.core.runner import Runner

    overrides = list(args.set or [])
    if args.executor:
        overrides.append(f"executor.type={args.executor}")
    if args.workers:
        overrides.append(f"executor.workers={args.workers}")
    if args.work_dir:
        overrides.append(f"work_dir={args.work_dir}")
    pipe = pl.load(args.file, overrides)
    if args.dry_run:
        return _print_status(pipe)
    logging.getLogger("distributed").setLevel(logging.WARNING)
    # One run per work_dir: taken before a cluster starts so a second run fails at once. Under
    # MPI only rank 0 may hold it, and ranks are known once the executor exists (the runner
    # takes it there).
    lock = None
    if pipe.config.executor.type != "mpi":
        from curator.core.lock import WorkDirLock

        lock = WorkDirLock(pipe.work_dir).acquire()
    try:
        with make_executor(pipe.config.executor, log=_log) as ex:
            log = _log if ex.is_root else None
            if log:
                log(f"pipeline '{pipe.config.name}': {len(pipe.nodes)} stages, executor "
                    f"{ex.kind} ({ex.size} worker{'s' if ex.size != 1 else ''}), "
                    f"work_dir {pipe.work_dir}")
                if pipe.imported_modules():
                    log(_imports_line(pipe))
            summary = Runner(pipe, ex, log=log, lock=lock).run()
            if ex.is_root:
                last = summary["stages"][-1]
                _log(f"done in {summary['seconds']:.1f}s: {last['docs_out']} documents out "
                     f"of '{last['id']}'")
                if pipe.config.report:
                    _log(f"report: {os.path.join(pipe.work_dir, 'report.html')}")
                for line in empty_source_lines(summary, pipe.work_dir):
                    _log(line)
    finally:
        if lock is not None:
            lock.release()
    return 0


def empty_source_lines(summary: dict[str, Any], work_dir: str) -> list[str]:
    """The run's last lines when a source produced no document from input that is not empty
    (a UTF-16 file read as UTF-8 once gave "0 documents out" and nothing else): what it read,
    and why its records were set aside, reason by reason."""
    import glob

    import orjson

    out = []
    for st in summary["stages"]:
        if st.get("kind") != "source" or st.get("docs_out"):
            continue
        size, files = 0, set()
        for m in glob.glob(os.path.join(work_dir, "stages", st["id"], "_done", "*.json")):
            try:
                with open(m, "rb") as f:
                    read = orjson.loads(f.read()).get("read") or {}
            except (OSError, orjson.JSONDecodeError, AttributeError):
                continue
            for path, ident in read.items() if isinstance(read, dict) else ():
                if isinstance(ident, dict) and isinstance(ident.get("size"), int):
                    files.add(path)
                    size += ident["size"]
        if not size and not st.get("docs_in"):
            continue
        what = (f"{size:,} bytes in {len(files)} file{'s' if len(files) != 1 else ''}"
                if size else f"{st.get('docs_in', 0):,} records")
        why = [f"{r}: {n:,}" for kind in ("quarantined", "rejected")
               for r, n in sorted((st.get(kind) or {}).items(), key=lambda x: -x[1])]
        q = sum((st.get("quarantined") or {}).values())
        line = (f"warning: source '{st['id']}' produced no documents from {what}: "
                + (f"{'; '.join(why)}" if why else "no record found in it (is it the format "
                   "and encoding this stage reads?)"))
        if q:
            line += f" (quarantined records: {os.path.join(work_dir, 'quarantine', st['id'])})"
        out.append(line)
    return out


def _print_status(pipe: object) -> int:
    from curator.core.native_reads import not_traced
    from curator.core.status import pipeline_status, render

    print(render(pipe, pipeline_status(pipe)))  # type: ignore[arg-type]
    why = not_traced()
    if why:
        print(f"note: files opened by native code and variables it reads are not traced ({why}); "
              "see docs/running.md")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from curator.core import pipeline as pl

    overrides = list(args.set or [])
    if args.work_dir:
        overrides.append(f"work_dir={args.work_dir}")
    return _print_status(pl.load(args.file, overrides))


def cmd_prune(args: argparse.Namespace) -> int:
    """Remove the folders of stages no longer in the pipeline (``curator status`` lists
    them); without ``--yes`` only list them."""
    from curator.core import pipeline as pl
    from curator.core.lock import WorkDirLock
    from curator.core.status import leftovers, prune, render_leftovers

    pipe = pl.load(args.file, list(args.set or []))
    items = leftovers(pipe)
    if not any(lo.folders or lo.outputs for lo in items):
        print(f"{args.file}: nothing to prune in {pipe.work_dir}")
        return 0
    if not args.yes:
        print("\n".join(render_leftovers(items, args.file)[:-1]))
        print("rerun with --yes to remove these curator-made folders")
        return 0
    with WorkDirLock(pipe.work_dir):  # never under a running pipeline
        removed = prune(pipe, items)
    for rel in removed:
        print(f"removed {os.path.join(pipe.work_dir, rel)}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from curator.core import pipeline as pl

    pipe = pl.load(args.file, list(args.set or []))
    problems, remote = source_problems(pipe)
    if problems:
        raise ConfigError(f"{args.file}: {len(problems)} input problem"
                          f"{'s' if len(problems) > 1 else ''} (nothing ran):\n  "
                          + "\n  ".join(problems[:MAX_PROBLEMS])
                          + (f"\n  ... {len(problems) - MAX_PROBLEMS} more"
                             if len(problems) > MAX_PROBLEMS else ""))
    print(f"{args.file}: valid pipeline '{pipe.config.name}' with {len(pipe.nodes)} stages")
    for n in pipe.nodes:
        arrow = f" <- {', '.join(n.inputs)}" if n.inputs else ""
        print(f"  {n.id} ({n.stage.name}, {n.stage.kind}){arrow}")
    for group in pipe.fused_groups():
        if len(group) > 1:  # docs/pipeline-yaml.md, "Fused stages and checkpoint"
            print(f"fused, one pass per shard (only '{group[-1].id}' writes shards): "
                  + " -> ".join(n.id for n in group))
    if pipe.imported_modules():
        print(_imports_line(pipe))
    for line in remote:
        print(line)
    return 0


#: How many problems one command prints (each a line); the rest are counted.
MAX_PROBLEMS = 20


def source_problems(pipe: Any) -> tuple[list[str], list[str]]:
    """What listing each source would fail on, found before anything runs: the same
    ``shards`` call a run makes first (a glob matching nothing, a folder with no dataset in
    it, a mirror folder that is not there), in a throwaway work_dir so that validating writes
    nothing. A source that reads over a network is not listed (validating never waits on a
    server, but its URLs' protocols must have a driver here; one fed by upstream stages has no
    listing of its own. Returns (problems, one line per source not listed)."""
    import tempfile

    import fsspec

    from curator.core.shard_context import StageContext
    from curator.core.stage import Source

    out: list[str] = []
    remote: list[str] = []
    with tempfile.TemporaryDirectory(prefix="curator-validate-") as tmp:
        for n in pipe.nodes:
            if not isinstance(n.stage, Source) or n.inputs:
                continue
            urls = n.stage.remote_inputs()
            if urls:
                remote.append(f"  {n.id}: not listed, reads {redact(urls[0])}"
                              f"{f' (and {len(urls) - 1} more)' if len(urls) > 1 else ''} "
                              "over the network")
                for u in urls:
                    proto = u.split("://", 1)[0]
                    if proto in ("http", "https"):
                        continue
                    try:
                        fsspec.get_filesystem_class(proto)
                    except (ImportError, ValueError) as e:
                        out.append(f"{n.id}: {redact(u)}: cannot read '{proto}://' URLs "
                                   f"here: {e}")
                continue
            try:
                n.stage.shards(StageContext(stage_id=n.id, work_dir=tmp, artifacts={},
                                            max_doc_bytes=pipe.max_doc_bytes))
            except CuratorError as e:
                out.append(str(e) if str(e).startswith(n.id) else f"{n.id}: {e}")
            except OSError as e:
                out.append(f"{n.id}: {fs_error_line(e) or e}")
    return out, remote


def _imports_line(pipe: object) -> str:
    """``imports: my_pkg.filters (custom stage: too_many_emojis), ...``: the code outside
    curator that loading this pipeline ran (docs/pipeline-yaml.md, "A pipeline file is code")."""
    by_mod: dict[str, list[str]] = {}
    for n in pipe.nodes:  # type: ignore[attr-defined]
        by_mod.setdefault(type(n.stage).__module__, []).append(n.id)
    parts = [f"{m} (custom stage: {', '.join(by_mod[m])})"
             for m in pipe.imported_modules()]  # type: ignore[attr-defined]
    return "imports: " + ", ".join(parts)


def add_import_paths(pipeline_file: str | None = None) -> list[str]:
    """Let pipelines name modules in the current directory (and next to the pipeline file)
    by dotted path, with the ``curator`` command as with ``python -m curator``. The folders
    go at the end of ``sys.path``: they cannot shadow the standard library or installed
    packages. Returns the folders added."""
    added = []
    dirs = [os.getcwd()]
    if pipeline_file:
        dirs.append(os.path.dirname(os.path.abspath(pipeline_file)))
    present = {os.path.abspath(p or os.curdir) for p in sys.path}
    for d in dirs:
        if d not in present:
            sys.path.append(d)
            present.add(d)
            added.append(d)
    return added


def cmd_stages(args: argparse.Namespace) -> int:
    import inspect

    from curator.core.registry import builtin_stages, resolve
    from curator.core.stage import first_sentence

    if args.name:
        import orjson

        from curator.core.catalog import markdown_table, stage_info, text_page

        try:  # a YAML name or a dotted path; ConfigError names close ones
            cls = resolve(args.name)
        except ConfigError as e:
            if "cannot import" not in str(e):
                raise
            raise ConfigError(f"{e} (a module beside a pipeline: add --pipeline FILE, or run "
                              "from its folder, or put the folder on PYTHONPATH)") from None
        info = stage_info(args.name, cls, builtin_stages().get(args.name, ""))
        if args.json:
            sys.stdout.write(orjson.dumps(info.to_json(), option=orjson.OPT_INDENT_2).decode()
                             + "\n")
        elif args.markdown:
            print(markdown_table(info))
        else:
            print(text_page(info))
        return 0
    rows = []
    for name, target in builtin_stages().items():
        try:
            cls = resolve(name)
            doc = first_sentence(inspect.getdoc(cls) or "")
            kind = cls.kind
        except CuratorError as e:
            doc, kind = f"(unavailable: {e})", "?"
        rows.append({"name": name, "kind": kind, "target": target, "summary": doc})
    if args.json:
        import orjson

        sys.stdout.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    for r in rows:
        # module:Class says where the code is: curator/<family>/<name>.py for most stages
        print(f"{r['name']:26s} {r['kind']:7s} {r['target']:56s} {r['summary']}")
    print("\n`curator stages NAME` shows a stage's parameters, defaults and a YAML example.")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import orjson

    from curator.core.report import RunReport, write_report

    path = os.path.join(args.work_dir, "report.json")
    try:
        with open(path, "rb") as f:
            report = RunReport.from_json(orjson.loads(f.read()))
    except OSError as e:
        raise CuratorError(f"{path}: cannot read run report: {e.strerror}") from None
    except ValueError as e:  # orjson.JSONDecodeError too
        raise CuratorError(f"{path}: not a curator run report: {e}") from None
    _, html = write_report(report, args.work_dir)
    print(html)
    return 0


def cmd_tls_certs(args: argparse.Namespace) -> int:
    import re

    from curator.core.tls import CLIENT, make_certs

    entries = [h.strip() for h in ",".join(args.hosts).split(",") if h.strip()]
    hosts = [[n.strip() for n in e.split("+") if n.strip()] for e in entries]
    names = [n for h in hosts for n in h]
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:-]*", n)]
    if not hosts or bad or not all(hosts):
        raise CuratorError(f"tls-certs --hosts: give host names or addresses, comma-separated, "
                           f"each host's names and addresses joined by '+'"
                           f"{' (not ' + ', '.join(repr(b) for b in bad) + ')' if bad else ''}")
    if CLIENT in [h[0] for h in hosts]:
        raise CuratorError(f"tls-certs --hosts: '{CLIENT}' is the name of the client "
                           "certificate; rename that host")
    if args.days < 1:
        raise CuratorError("tls-certs --days must be >= 1")
    for path in make_certs(args.dir, hosts, days=args.days):
        print(path)
    print(f"give each node {args.dir}/ca.pem and its own <host>.pem/.key (keep ca.key "
          "on this machine); the client uses client.pem/.key: docs/cluster.md")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from curator.core.samples import render, sample, stage_done
    from curator.core.stats import StageStats

    if args.n < 1:
        raise CuratorError("inspect: -n must be at least 1")
    rejected = args.rejected is not None
    reason = args.rejected or None
    done = stage_done(args.work_dir, args.stage)
    stats = StageStats.from_json(done.get("stats"))
    rej = stats.rejected
    shards = done.get("shards") or []
    if not rejected and shards and not any(s.get("path") for s in shards):
        raise CuratorError(f"stage '{args.stage}' ran fused with the stage after it and wrote "
                           "no shards of its own (see `curator validate`); inspect that stage, "
                           f"its rejections (--rejected), or set checkpoint: true on it")
    docs, total = sample(args.work_dir, args.stage, rejected=rejected, reason=reason, n=args.n,
                         seed=args.seed)
    what = (f"rejected{' for ' + repr(reason) if reason else ''}" if rejected else "kept")
    what = f"documents {what}"
    print(f"stage '{args.stage}' ({done.get('stage', '?')}): {stats.docs_out:,} kept, "
          f"{sum(rej.values()):,} rejected"
          + (f" ({', '.join(f'{r} {n:,}' for r, n in sorted(rej.items(), key=lambda x: -x[1]))})"
             if rej else ""))
    if rejected and not total and rej:
        print("(the rejected documents were not saved: save_rejected is off)")
    print(f"{len(docs)} of {total:,} {what}, seed {args.seed}:")
    try:
        for k, d in enumerate(docs, 1):
            print(render(d, k, len(docs), lines=args.lines))
        sys.stdout.flush()
    except BrokenPipeError:  # `curator inspect ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="curator", description=__doc__.split("\n")[0])
    p.add_argument("--version", action="version", version=f"curator {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a pipeline YAML (resumes where it stopped)")
    r.add_argument("file")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a key, e.g. executor.type=dask or stages.<id>.<param>=v")
    r.add_argument("--executor", choices=["local", "dask", "mpi"])
    r.add_argument("--workers", type=int)
    r.add_argument("--work-dir")
    r.add_argument("--dry-run", action="store_true",
                   help="print what a run would reuse and redo (as `curator status`), run nothing")
    r.set_defaults(func=cmd_run)

    st = sub.add_parser("status", help="per stage: done, stale or to run, and why (runs nothing)")
    st.add_argument("file")
    st.add_argument("--set", action="append", metavar="KEY=VALUE")
    st.add_argument("--work-dir")
    st.set_defaults(func=cmd_status)

    pr = sub.add_parser("prune", help="remove the folders of stages no longer in the pipeline "
                        "(lists them; --yes removes)")
    pr.add_argument("file")
    pr.add_argument("--set", action="append", metavar="KEY=VALUE")
    pr.add_argument("--yes", action="store_true", help="remove them (default: only list)")
    pr.set_defaults(func=cmd_prune)

    v = sub.add_parser("validate", help="check a pipeline YAML without running it")
    v.add_argument("file")
    v.add_argument("--set", action="append", metavar="KEY=VALUE")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("stages", help="list the built-in stages, or describe one: every "
                       "parameter with its type, default and help, and a YAML example")
    s.add_argument("name", nargs="?", help="a stage's YAML name (or a dotted path to a custom "
                   "stage)")
    s.add_argument("--pipeline", dest="file", metavar="FILE",
                   help="import custom stages as this pipeline does (modules beside it)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--markdown", action="store_true", help="the parameter table as in docs/")
    s.set_defaults(func=cmd_stages)

    tc = sub.add_parser("tls-certs", help="make a CA and mutual-TLS certificates for the "
                        "nodes of a Dask cluster or a Redis Cluster (docs/cluster.md, "
                        "docs/dedup.md)")
    tc.add_argument("dir", help="folder to write ca.pem/.key, <host>.pem/.key, client.pem/.key")
    tc.add_argument("--hosts", action="append", required=True,
                    help="the cluster's hosts, comma-separated; one host's names and "
                    "addresses joined by '+' (node1+node1.lan+10.0.0.5): its certificate "
                    "carries them all and is named after the first")
    tc.add_argument("--days", type=int, default=365, help="validity (default 365)")
    tc.set_defaults(func=cmd_tls_certs)

    rep = sub.add_parser("report", help="re-render report.html from a work_dir's report.json")
    rep.add_argument("work_dir")
    rep.set_defaults(func=cmd_report)

    ins = sub.add_parser("inspect", help="print sample documents a stage kept or rejected")
    ins.add_argument("work_dir")
    ins.add_argument("stage", help="stage id")
    ins.add_argument("--rejected", nargs="?", const="", default=None, metavar="REASON",
                     help="show rejected documents (only those of REASON, or of a reason "
                          "prefix such as gopher_quality:)")
    ins.add_argument("-n", type=int, default=5, help="how many documents (default 5)")
    ins.add_argument("--seed", type=int, default=0, help="which sample (default 0)")
    ins.add_argument("--lines", type=int, default=5, help="lines of text per document")
    ins.set_defaults(func=cmd_inspect)

    from curator.core.registry import FAMILIES

    for fam in FAMILIES:
        mod = importlib.import_module(fam)
        cli_mod = getattr(mod, "CLI", None)
        if cli_mod:
            importlib.import_module(cli_mod).register(sub)
    return p


class _Redacting:
    """A text stream that masks secrets (:func:`~curator.base.redact.redact`) in what is
    written through it: every line curator, a library's logger or a warning prints."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, s: str) -> int:
        self._stream.write(redact(s))
        return len(s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the command itself (not a call from Python): native reads traced
        from curator.core.native_reads import reexec

        reexec()
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Redacting(out), _Redacting(err)
    # restored on return only: an exception's traceback is printed (after this returns)
    # through the redacting streams too
    rc = _main(argv)
    sys.stdout, sys.stderr = out, err
    return rc


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """A deprecated setting is one ``curator: warning:`` line, not a source location."""
    from curator.core.params import CuratorDeprecationWarning

    if issubclass(category, CuratorDeprecationWarning):
        sys.stderr.write(f"curator: warning: {message}\n")
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


def _main(argv: Sequence[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    parser = build_parser()
    args = parser.parse_args(argv)
    add_import_paths(getattr(args, "file", None))
    try:
        return int(args.func(args) or 0)
    except CuratorError as e:
        if os.environ.get("CURATOR_DEBUG"):
            raise
        # one write() call: lines from several MPI ranks sharing a pipe stay whole
        sys.stderr.write(f"curator: error: {redact(str(e))}\n")
        sys.stderr.flush()
        return e.exit_code
    except ModuleNotFoundError as e:  # a light install without the stage's extra
        hint = install_hint(e)
        if not hint or os.environ.get("CURATOR_DEBUG"):
            raise
        sys.stderr.write(f"curator: error: curator {args.command}: the module '{e.name}' is not "
                         f"installed{hint}\n")
        sys.stderr.flush()
        return 1
    except BrokenPipeError:  # `curator stages | head`: the reader left; so do we, quietly
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush goes there
        return 141  # 128 + SIGPIPE, what a shell tool killed by the signal reports
    except OSError as e:  # disk full, no permission, read-only: one line, any command
        line = fs_error_line(e)
        if line is None or os.environ.get("CURATOR_DEBUG"):
            raise
        sys.stderr.write(f"curator: error: curator {args.command}: {redact(line)}\n")
        sys.stderr.flush()
        return 1
    except KeyboardInterrupt:
        print("curator: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
