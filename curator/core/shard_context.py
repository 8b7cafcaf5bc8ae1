"""What a stage sees in a worker: where it writes, and how it rejects, counts and quarantines
documents of one shard. Below :mod:`curator.core.shard_runner`, which drives these contexts, and
:mod:`curator.core.context`, which adds the driver-side context of global stages."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.base.redact import redact_fast, redact_value
from curator.base.urls import public_url
from curator.storage import nofollow
from curator.storage.atomic import open_compressed_write
from curator.storage.limits import DEFAULT_MAX_DOC_MB, mb_to_bytes
from curator.storage.shards import RecordWriter

DEFAULT_MAX_DOC_BYTES = mb_to_bytes(DEFAULT_MAX_DOC_MB)


class Mapper(Protocol):
    """What the contexts need from an executor (:class:`curator.core.executors.Executor`),
    declared here so that this layer does not import the executors above it."""

    size: int

    @property
    def is_root(self) -> bool: ...

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any],
            progress: Any = None) -> list[Any]: ...

    def broadcast(self, value: Any) -> Any: ...


class StageContext:
    """Shared by every kind of stage: locations and upstream artifacts."""

    def __init__(self, *, stage_id: str, work_dir: str, artifacts: dict[str, Any],
                 save_rejected: bool = True, max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES) -> None:
        self.stage_id = stage_id
        self.work_dir = work_dir
        self.upstream_artifacts = artifacts
        self.save_rejected = save_rejected
        #: The run-wide cap on one document or raw record (pipeline ``max_doc_mb``).
        self.max_doc_bytes = max_doc_bytes

    def doc_cap(self, max_doc_mb: float | None = None) -> int:
        """The byte cap a reader enforces: its own ``max_doc_mb`` if set, else the run's."""
        return mb_to_bytes(max_doc_mb) if max_doc_mb is not None else self.max_doc_bytes

    @property
    def stage_dir(self) -> str:
        """Private folder of this stage under ``work_dir`` (intermediates, artifacts)."""
        return os.path.join(self.work_dir, "stages", self.stage_id)

    @property
    def artifact_dir(self) -> str:
        d = os.path.join(self.stage_dir, "artifacts")
        nofollow.confine(self.work_dir)
        nofollow.makedirs(d)
        return d

    def shard_name(self, index: int) -> str:
        """The conventional name of a source's ``index``-th shard: unique across the pipeline
        because it starts with the stage id."""
        return f"{self.stage_id}-{index:05d}"

    def artifact(self, name: str, default: Any = ConfigError) -> Any:
        """An artifact (a tokenizer path, a model path...) published by an upstream stage."""
        if name in self.upstream_artifacts:
            return self.upstream_artifacts[name]
        if default is ConfigError:
            raise ConfigError(
                f"stage '{self.stage_id}' needs an artifact '{name}' but no upstream stage "
                f"produced one (available: {sorted(self.upstream_artifacts) or 'none'})"
            )
        return default

    def output_path(self, path: str) -> str:
        """Resolve a user-given output path: relative paths live under ``work_dir`` and may not
        escape it; absolute paths and URLs are taken as given."""
        if "://" in path or os.path.isabs(path):
            nofollow.confine(path)  # a declared output: nothing below it is followed
            return path
        full = os.path.normpath(os.path.join(self.work_dir, path))
        root = os.path.normpath(self.work_dir)
        # Both spellings are checked: '..' in the path, and symlinks inside work_dir that
        # lead out of it (the resolved path; work_dir itself may be a symlink).
        real, real_root = os.path.realpath(full), os.path.realpath(root)
        for p, r in ((full, root), (real, real_root)):
            if p != r and not p.startswith(r.rstrip(os.sep) + os.sep):
                via = f" (through a symlink, to {real})" if p is real else ""
                raise ConfigError(
                    f"stage '{self.stage_id}': output path '{path}' escapes work_dir{via}; "
                    "give an absolute path to write outside it"
                )
        nofollow.confine(full)
        return full


class ShardContext(StageContext):
    """Per-shard context: reject, quarantine and count. Lives in the worker process."""

    def __init__(self, *, shard: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.shard = shard
        self.rejected: Counter[str] = Counter()
        self.quarantined: Counter[str] = Counter()
        self.counters: Counter[str] = Counter()
        #: Files written for this shard outside the stage folder (see :meth:`wrote`).
        self.files: list[str] = []
        #: removals per ``"<meta.source>\t<reason>"`` (the report's source x rule table)
        self.rejected_by_source: Counter[str] = Counter()
        #: the source a document without ``meta.source`` is counted under when rejected: a
        #: source stage's own name (it may reject before it sets the field), else "-"
        self.default_source = "-"
        #: what the stage's ``prepare`` made of its whole input (``ShardStage.surveys_input``)
        self.prepared: Any = None
        #: the rejected / quarantine writers, opened on first use, closed by :meth:`close`
        self._files = contextlib.ExitStack()
        self._writers: dict[str, RecordWriter] = {}

    # -- the four verbs stages use ---------------------------------------------------------
    def reject(self, doc: Document, reason: str, **extra: Any) -> None:
        """Remove ``doc`` from the output; it goes to ``work_dir/rejected/<stage>/`` with the
        reason (and ``extra``, e.g. ``duplicate_of``)."""
        reason = redact_fast(reason)
        self.rejected[reason] += 1
        self.rejected_by_source[f"{doc.meta.get('source') or self.default_source}\t{reason}"] += 1
        if self.save_rejected:
            rec = doc.to_record()
            rec["rejected"] = {"stage": self.stage_id, "reason": reason, **{
                k: redact_fast(v) if isinstance(v, str) else redact_value(v, env=True)
                for k, v in extra.items()}}
            self._writer("rejected").write(rec)

    def quarantine(self, record: Any, reason: str, **where: Any) -> None:
        """Set aside an input record that could not be used (malformed line, bad WARC record).
        ``where`` locates it (file, line, offset)."""
        # where it came from and why, without a URL's password or an environment secret (the
        # record itself is input data, kept as it was)
        reason = redact_fast(reason)
        where = {k: redact_fast(public_url(v) if k == "file" else v) if isinstance(v, str)
                 else v for k, v in where.items()}
        self.quarantined[reason] += 1
        if isinstance(record, bytes):
            record = record.decode("utf-8", "replace")
        if isinstance(record, Document):
            record = record.to_record()
        if isinstance(record, str) and len(record) > 100_000:
            record = record[:100_000] + "...[truncated]"
        self._writer("quarantine").write(
            {"stage": self.stage_id, "shard": self.shard, "reason": reason, **where,
             "record": record}
        )

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to a named counter; counters are summed per stage in the report."""
        self.counters[name] += n

    def wrote(self, path: str) -> None:
        """Record a file this shard wrote outside the stage folder (a writer's output): when
        the shard is redone or disappears (its input file was removed) the file is removed
        with it, so the output folder never keeps documents of a stale shard."""
        self.files.append(path)

    # -- plumbing ---------------------------------------------------------------------------
    def _writer(self, kind: str) -> RecordWriter:
        cur = self._writers.get(kind)
        if cur is None:
            path = os.path.join(self.work_dir, kind, self.stage_id, f"{self.shard}.jsonl.zst")
            cur = self._writers[kind] = RecordWriter(
                self._files.enter_context(open_compressed_write(path)), path)
        return cur

    def close(self, ok: bool = True) -> None:
        """Publish the rejected/quarantine files (``ok``) or discard their temporaries."""
        stack, self._files, self._writers = self._files, contextlib.ExitStack(), {}
        if ok:
            stack.close()
        else:  # an exception through the writers makes each discard its temporary file
            with contextlib.suppress(_Aborted), stack:
                raise _Aborted


class _Aborted(Exception):
    """Raised through a shard's open writers when the shard failed."""
