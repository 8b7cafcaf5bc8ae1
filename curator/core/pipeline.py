"""Pipeline YAML: load, override, validate and turn into a DAG of stages.

Every error names the key path and the YAML line, and nothing runs until the whole file is
valid. Schema (see docs/pipeline-yaml.md)::

    name: quickstart
    work_dir: work/quickstart          # relative to the current directory
    executor: {type: local}            # local | dask | mpi
    stages:
      - read_jsonl: {paths: data/sample/docs/*.jsonl}
      - word_count: {min_words: 20}    # input: the previous entry
      - id: wiki                       # a second branch starts at a source
        read_jsonl: {paths: data/sample/wiki.jsonl}
      - exact_dedup: {}
        inputs: [word_count, wiki]     # branches meet
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from curator.base.errors import ConfigError
from curator.base.redact import keyed_digest, redact_value
from curator.core.identity import KEY_FORMAT, code_identity, digest, fingerprint_key
from curator.core.pipeline_yaml import RESERVED, apply_override, env_overrides, parse
from curator.core.registry import is_builtin, resolve
from curator.core.stage import Stage
from curator.storage.limits import DEFAULT_MAX_DOC_MB
from curator.storage.outputs import protected_reason

#: A pipeline file is a page of YAML; anything this large is the wrong file (or an attack).
MAX_PIPELINE_CHARS = 1 << 20
_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class TLSConfig(BaseModel):
    """``executor.tls``: mutual TLS to a Dask scheduler (files from ``curator tls-certs``)."""

    model_config = ConfigDict(extra="forbid")
    ca_file: str
    cert: str
    key: str


class ExecutorConfig(BaseModel):
    """Where the pipeline runs."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["local", "dask", "mpi"] = "local"
    #: Dask: number of worker processes of the LocalCluster started when no address is given.
    workers: int | None = Field(default=None, ge=1)
    threads_per_worker: int = Field(default=1, ge=1)
    memory_limit: str = "auto"
    #: Dask: an existing scheduler (``tcp://host:8786``) or its scheduler file.
    address: str | None = None
    scheduler_file: str | None = None
    #: Dask: the CA, certificate and key to reach a ``tls://`` scheduler with (mutual TLS).
    tls: TLSConfig | None = None
    dashboard_address: str | None = "127.0.0.1:0"
    #: Dask: seconds without a single live worker (all killed, none started) after which the
    #: run stops with one line instead of waiting for ever.
    no_workers_timeout_s: float = Field(default=60.0, gt=0)
    #: Seconds a peer (another MPI rank, the Dask scheduler, a Redis node of fuzzy_dedup) may
    #: stay silent before it counts as lost (node down, network cut, process stopped): the run
    #: then stops with one line naming its host instead of waiting for ever (docs/cluster.md).
    peer_timeout_s: float = Field(default=120.0, gt=0)
    #: MPI: ``dynamic`` hands shards out from a queue on rank 0 as ranks become free;
    #: ``static`` stripes them ``rank, rank+size, ...`` (the old behaviour).
    schedule: Literal["dynamic", "static"] = "dynamic"


class PipelineConfig(BaseModel):
    """Top-level keys of a pipeline YAML."""

    model_config = ConfigDict(extra="forbid")
    name: str
    work_dir: str
    executor: ExecutorConfig = ExecutorConfig()
    #: Write removed documents to work_dir/rejected/<stage>/ with their reason.
    save_rejected: bool = True
    #: Progress display: auto (bar on a terminal, log lines otherwise), bar, log or off.
    progress: Literal["auto", "bar", "log", "off"] = "auto"
    #: Write report.json and report.html at the end of the run.
    report: bool = True
    #: Largest document (or raw record: JSONL line, decompressed arXiv paper, Wikipedia page)
    #: a reader materialises, in MiB. Bigger ones are skipped while they stream and quarantined
    #: with reason ``too_large``; a reader's own ``max_doc_mb`` parameter overrides it.
    max_doc_mb: float = Field(default=DEFAULT_MAX_DOC_MB, gt=0)
    #: How input files are known between runs: ``stat`` (size, mtime, ctime, inode: free) or
    #: ``content`` (size and an xxh3-128 hash of every local input file: each rerun reads them
    #: all once). See docs/running.md, "What a rerun reuses".
    identity: Literal["stat", "content"] = "stat"

    @field_validator("progress", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:  # YAML 1.1 reads a bare `off` as False
        return {False: "off", True: "auto"}.get(v, v) if isinstance(v, bool) else v
    stages: list[dict[str, Any]] = Field(min_length=1)

    @field_validator("work_dir")
    @classmethod
    def _local_work_dir(cls, v: str) -> str:
        # markers, locks and atomic renames need a POSIX filesystem; inputs and outputs may be
        # URLs, the work_dir may not (docs/cluster.md: put it on a shared filesystem)
        if "://" in v and not v.startswith("file://"):
            raise ValueError(
                f"work_dir must be a local or shared (NFS, Lustre, ...) directory, not a URL "
                f"('{v}'): completion markers and atomic renames need a POSIX filesystem; "
                "read inputs and write outputs to object stores instead (docs/cluster.md)")
        return v.removeprefix("file://")


@dataclass
class StageNode:
    id: str
    stage: Stage
    inputs: list[str]
    line: int | None = None
    fingerprint: str = ""
    #: What the fingerprint is made of (kept in the stage's markers to explain a rerun).
    identity: dict[str, Any] = field(default_factory=dict)
    #: ``checkpoint: true``: always write this stage's output shards (never fuse it away).
    checkpoint: bool = False
    #: The stage's name as the YAML gave it (``read_jsonl``, ``stages:long_docs``).
    target: str = ""


@dataclass
class Pipeline:
    config: PipelineConfig
    nodes: list[StageNode]
    source_file: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    #: A secret parameter was keyed with :attr:`temp_key`: the work_dir has no key yet.
    needs_key: bool = False
    #: Keys secrets until the work_dir's key exists (a first run creates it, then
    #: :meth:`seal` fingerprints again; ``curator status`` writes nothing).
    temp_key: bytes = field(default_factory=lambda: os.urandom(32), repr=False)

    def seal(self) -> None:
        """Before running: create the work_dir's fingerprint key when a secret parameter needs
        it (every rank may call this: the first creates it, the others read it) and fingerprint
        again with it."""
        if self.needs_key:
            fingerprint_key(self.work_dir, create=True)
            _fingerprint(self)

    @property
    def work_dir(self) -> str:
        return os.path.abspath(self.config.work_dir)

    @property
    def max_doc_bytes(self) -> int:
        return int(self.config.max_doc_mb * 1024 * 1024)

    def node(self, stage_id: str) -> StageNode:
        for n in self.nodes:
            if n.id == stage_id:
                return n
        raise KeyError(stage_id)

    def imported_modules(self) -> list[str]:
        """Modules outside curator that this pipeline imported for its stages (dotted paths
        such as ``my_pkg.filters:too_many_emojis``): importing a module runs its code, so
        ``curator validate`` and ``curator run`` name them."""
        mods = {type(n.stage).__module__ for n in self.nodes}
        return sorted(m for m in mods if m != "curator" and not m.startswith("curator."))

    def fused_groups(self) -> list[list[StageNode]]:
        """The stages as the runner runs them: chains of per-document stages fused into one
        pass per shard, in the order of their first stage.

        ``A -> B`` fuse when B is a shard stage whose only input is A, A is a source or shard
        stage whose only consumer is B, A has no ``checkpoint: true``, and B is not a
        passthrough stage (a writer's output *is* its input's files) or one that surveys its
        input first (``surveys_input``). So a stage's output is
        written (materialised) only where a global stage, a branch point (several consumers,
        or a stage with several inputs), a passthrough stage or the user needs it, and at the
        end of every chain."""
        consumers: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                consumers[i].append(n.id)
        groups: list[list[StageNode]] = []
        group_of: dict[str, list[StageNode]] = {}
        for n in self.nodes:
            up = self.node(n.inputs[0]) if len(n.inputs) == 1 else None
            if (up is not None and n.stage.kind == "shard" and not n.stage.passthrough
                    and not getattr(n.stage, "surveys_input", False)
                    and up.stage.kind in ("source", "shard") and consumers[up.id] == [n.id]
                    and not up.checkpoint):
                g = group_of[up.id]
            else:
                g = []
                groups.append(g)
            g.append(n)
            group_of[n.id] = g
        return groups

    def ancestors(self, stage_id: str) -> list[str]:
        """Upstream stage ids, nearest first (breadth-first)."""
        seen: list[str] = []
        frontier = list(self.node(stage_id).inputs)
        while frontier:
            nxt = []
            for s in frontier:
                if s not in seen:
                    seen.append(s)
                    nxt.extend(self.node(s).inputs)
            frontier = nxt
        return seen


# -- loading ---------------------------------------------------------------------------------


def load(path: str | int | Any, overrides: list[str] | None = None) -> Pipeline:
    """Read, override (``a.b=c``), validate and build a pipeline; ``ConfigError`` on any fault.
    Environment overrides (:func:`env_overrides`) apply before ``overrides``.

    ``path`` may also be an open file descriptor or a file object: it is read from where it
    stands and left open (the caller owns it)."""
    if not isinstance(path, str | int | os.PathLike):
        source = str(getattr(path, "name", "<stream>"))
        text = path.read(MAX_PIPELINE_CHARS + 1)
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ConfigError(f"{source}: not a UTF-8 text file ({e.reason} at byte "
                                  f"{e.start})") from e
        return _load_text(text, source, overrides)
    try:
        # a descriptor is the caller's: read it, never close it
        with open(path, encoding="utf-8", closefd=not isinstance(path, int)) as f:
            text = f.read(MAX_PIPELINE_CHARS + 1)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read pipeline file: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not a UTF-8 text file ({e.reason} at byte {e.start})") from e
    return _load_text(text, f"<fd {path}>" if isinstance(path, int) else os.fspath(path),
                      overrides)


def _load_text(text: str, source: str, overrides: list[str] | None) -> Pipeline:
    if len(text) > MAX_PIPELINE_CHARS:
        raise ConfigError(f"{source}: pipeline file larger than {MAX_PIPELINE_CHARS:,} "
                          "characters; is this the right file?")
    return loads(text, source=source, overrides=env_overrides() + list(overrides or []))


def loads(text: str, source: str = "<pipeline>", overrides: list[str] | None = None) -> Pipeline:
    data, lines = parse(text, source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a pipeline file must be a mapping with 'name', "
                          "'work_dir' and 'stages'")
    set_by: dict[tuple[Any, ...], str] = {}
    for ov in overrides or []:
        set_by[apply_override(data, ov, source)] = ov

    def where(loc: tuple[Any, ...]) -> str:
        for i in range(len(loc), -1, -1):
            if loc[:i] in set_by:  # a key an override set: the override is what to fix
                return f"--set {set_by[loc[:i]]}"
            if loc[:i] in lines:
                return f"{source}:{lines[loc[:i]]}"
        return source

    try:
        cfg = PipelineConfig(**data)
    except ValidationError as e:
        raise ConfigError(_format_error(e, (), where)) from None
    except TypeError as e:  # pragma: no cover - non-string keys
        raise ConfigError(f"{source}: {e}") from None

    nodes = _build_nodes(cfg, where)
    _check_outputs(cfg, nodes, where)
    pipe = Pipeline(cfg, nodes, source_file=source, raw=data)
    _fingerprint(pipe)
    return pipe


def _build_nodes(cfg: PipelineConfig, where: Any) -> list[StageNode]:
    nodes: list[StageNode] = []
    ids: set[str] = set()
    for i, entry in enumerate(cfg.stages):
        loc: tuple[Any, ...] = ("stages", i)
        if not isinstance(entry, dict):
            raise ConfigError(f"{where(loc)}: stages[{i}]: each stage is a mapping "
                              "'<stage_name>: {params}'")
        kinds = [k for k in entry if k not in RESERVED]
        if len(kinds) > 1:  # `input:` for `inputs:` read as a second stage name
            for k in kinds:
                close = difflib.get_close_matches(str(k), sorted(RESERVED), n=1, cutoff=0.7)
                if close:
                    raise ConfigError(f"{where(loc + (k,))}: stages[{i}].{k}: unknown key "
                                      f"(did you mean '{close[0]}'?)")
        if len(kinds) != 1:
            got = ", ".join(map(str, kinds)) or "nothing"
            raise ConfigError(f"{where(loc)}: stages[{i}]: expected exactly one stage name "
                              f"(besides 'id', 'inputs' and 'checkpoint'), got {got}")
        kind = kinds[0]
        try:
            cls = resolve(kind)
        except ConfigError as e:
            raise ConfigError(f"{where(loc + (kind,))}: stages[{i}]: {e}") from None
        params = entry[kind] if entry[kind] is not None else {}
        if not isinstance(params, dict):
            raise ConfigError(f"{where(loc + (kind,))}: stages[{i}].{kind}: parameters must be "
                              f"a mapping, got {type(params).__name__}")
        sid = entry.get("id") or _unique(cls.name if ":" in kind or "." in kind else kind, ids)
        if not isinstance(sid, str) or not _ID_RE.match(sid):
            raise ConfigError(f"{where(loc + ('id',))}: stages[{i}].id: '{sid}' is not a valid "
                              "id (letters, digits, '_', '-', '.')")
        if sid in ids:
            raise ConfigError(f"{where(loc + ('id',))}: stages[{i}].id: duplicate id '{sid}'")
        raw_inputs = entry.get("inputs")
        if raw_inputs is None:
            inputs = [] if cls.kind == "source" or not nodes else [nodes[-1].id]
        else:
            inputs = [raw_inputs] if isinstance(raw_inputs, str) else raw_inputs
            if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
                raise ConfigError(f"{where(loc + ('inputs',))}: stages[{i}].inputs: "
                                  "a stage id or a list of stage ids")
            for x in inputs:
                if x not in ids:
                    raise ConfigError(
                        f"{where(loc + ('inputs',))}: stages[{i}].inputs: '{x}' is not the id "
                        f"of an earlier stage (earlier: {', '.join(n.id for n in nodes) or '-'})"
                    )
        if cls.kind == "source" and inputs:
            raise ConfigError(f"{where(loc)}: stages[{i}]: '{kind}' is a source and takes no "
                              "inputs")
        if cls.kind != "source" and not inputs:
            raise ConfigError(f"{where(loc)}: stages[{i}]: '{kind}' needs input documents; "
                              "put a source (e.g. read_jsonl) before it")
        try:
            stage = cls.from_params(params, id=sid)
        except ValidationError as e:
            raise ConfigError(_format_error(e, ("stages", i, kind), where,
                                            label=f"stages[{i}].{kind}",
                                            model=cls.params_model())) from None
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{where(loc + (kind,))}: stages[{i}].{kind}: {e}") from None
        except ConfigError as e:
            raise ConfigError(_locate_setup_error(str(e), cls.name, kind, i, loc, where)) \
                from None
        checkpoint = entry.get("checkpoint", False)
        if not isinstance(checkpoint, bool):
            raise ConfigError(f"{where(loc + ('checkpoint',))}: stages[{i}].checkpoint: "
                              f"true or false, got {checkpoint!r}")
        ids.add(sid)
        nodes.append(StageNode(sid, stage, inputs, line=None, checkpoint=checkpoint,
                               target=kind))
    return nodes


def _locate_setup_error(msg: str, name: str, kind: str, i: int, loc: tuple[Any, ...],
                        where: Any) -> str:
    """A stage's own check of its parameters (``gopher_quality: unknown rule 'x'``,
    ``language_id.languages: 'english' is not a language ...``) with the file, the YAML line
    and the key path in front, as the model's errors have: a bare message has no line to
    look at."""
    head, sep, rest = msg.partition(": ")
    parts = head.split(".")
    if sep and parts[0] == name and all(parts[1:]):
        keys = tuple(parts[1:])
        return f"{where(loc + (kind, *keys))}: stages[{i}].{'.'.join((kind, *keys))}: {rest}"
    return f"{where(loc + (kind,))}: stages[{i}].{kind}: {msg}"


#: What curator itself keeps in a work_dir; no stage output may be (or be inside) one of them.
OWN_NAMES = ("stages", "rejected", "quarantine", "cache", "report.json", "report.html",
             "_outputs.json")


def _check_outputs(cfg: PipelineConfig, nodes: list[StageNode], where: Any) -> None:
    """Refuse, before anything runs, two output folders that are the same or one inside the
    other (the second stage would overwrite or clear the first's files) and an output inside
    curator's own folders of the work_dir (``stages/<id>/...``, ``rejected/``...), naming both
    stages and their YAML lines. Remote outputs are compared as URLs."""
    from curator.core.shard_context import StageContext

    work_dir = os.path.abspath(cfg.work_dir)
    real_wd = os.path.realpath(work_dir)
    seen: list[tuple[tuple[str, ...], str, str]] = []  # (path parts, node id, where)
    for i, n in enumerate(nodes):
        kind = next(k for k in cfg.stages[i] if k not in RESERVED)
        loc: tuple[Any, ...] = ("stages", i, kind)
        try:
            dirs = n.stage.output_dirs(StageContext(stage_id=n.id, work_dir=work_dir,
                                                    artifacts={}))
        except ConfigError as e:
            raise ConfigError(f"{where(loc)}: {e}") from None
        for d in dirs:
            if protected_reason(d, work_dir, n.stage.replaces_outputs):
                continue  # the work_dir, the current folder...: refused by name at run start
            key = next((k for k, v in n.stage.params.items() if isinstance(v, str) and v
                        and _same_output(v, d, work_dir)), None)
            at = where(loc + (key,) if key else loc)
            parts = _parts(d)
            mine = _parts(real_wd)
            if len(parts) > len(mine) and parts[:len(mine)] == mine and \
                    parts[len(mine)] in OWN_NAMES:
                inner = "/".join(parts[len(mine):])
                raise ConfigError(f"{at}: stages[{i}] '{n.id}': output folder '{d}' is inside "
                                  f"curator's own '{inner}' in the work_dir; give the output a "
                                  "folder of its own")
            for other, oid, oat in seen:
                k = min(len(other), len(parts))
                if other[:k] == parts[:k]:
                    how = ("the same folder as" if len(other) == len(parts) else
                           "inside the output folder of" if len(parts) > len(other) else
                           "a parent of the output folder of")
                    raise ConfigError(
                        f"{at}: stages[{i}] '{n.id}': output folder '{d}' is {how} stage "
                        f"'{oid}' ({oat}); one would overwrite or clear the other's files: give "
                        "each output a folder of its own")
            seen.append((parts, n.id, at))


def _parts(path: str) -> tuple[str, ...]:
    """A folder as comparable components: a local one resolved (``..``, symlinks), a URL by
    its scheme and ``/``-separated path."""
    if "://" in path and not path.startswith("file://"):
        scheme, rest = path.split("://", 1)
        return (scheme + "://", *[p for p in rest.split("/") if p])
    real = os.path.realpath(path.removeprefix("file://"))
    return tuple(p for p in real.split(os.sep) if p)


def _same_output(value: str, resolved: str, work_dir: str) -> bool:
    """Whether parameter ``value`` names output folder ``resolved`` (to point at its line)."""
    if "://" in value and not value.startswith("file://"):
        return value.rstrip("/") == resolved.rstrip("/")
    v = value.removeprefix("file://")
    full = v if os.path.isabs(v) else os.path.join(work_dir, v)
    return os.path.normpath(full) == os.path.normpath(resolved.removeprefix("file://"))


def _fingerprint(pipe: Pipeline) -> None:
    """A stage's fingerprint covers its YAML name, its code (a digest of its module and of the
    curator modules it imports, plus ``version``; the source and code objects of a custom one),
    its parameters and its inputs' fingerprints: change any of them and this stage and
    everything downstream reruns. Neither the package version nor where it is installed is part
    of it (see :mod:`curator.core.identity`, :mod:`curator.core.codehash`). The run-wide
    ``max_doc_mb`` in effect is part of every source's fingerprint (it decides what the source
    keeps, default or not). A secret in a parameter (a URL's password or token, a
    secret-named key) is stored as a digest keyed by the work_dir's key
    (:func:`curator.core.identity.fingerprint_key`): unreadable, and never the same for two
    secrets."""
    key = fingerprint_key(pipe.work_dir)
    used: list[bool] = []
    keyed = keyed_digest(key or pipe.temp_key)

    def mask(secret: str) -> str:
        used.append(True)
        return keyed(secret)

    fps: dict[str, str] = {}
    for n in pipe.nodes:
        cls = type(n.stage)
        builtin = is_builtin(cls)
        extra = [] if builtin or not (":" in n.target or "." in n.target) else [
            n.target.split(":", 1)[0] if ":" in n.target else n.target.rpartition(".")[0]]
        variables: set[str] = set()
        n.identity = {"stage": n.stage.name,
                      "code": code_identity(cls, builtin, extra, None if builtin else variables),
                      "params": redact_value(n.stage.key_params(), mask=mask),
                      "inputs": {i: fps[i] for i in n.inputs}, "format": KEY_FORMAT}
        env = {v: mask(f"{v}={os.environ[v]}") for v in sorted(variables) if v in os.environ}
        if env:  # the variables its code names, by value (keyed digests: they may be secrets)
            n.identity["env"] = env
        if n.stage.kind == "source":
            n.identity["max_doc_mb"] = pipe.config.max_doc_mb
        n.fingerprint = fps[n.id] = digest(n.identity)
    pipe.needs_key = bool(used) and key is None


def _unique(base: str, ids: set[str]) -> str:
    if base not in ids:
        return base
    i = 2
    while f"{base}_{i}" in ids:
        i += 1
    return f"{base}_{i}"


_UNION_MEMBER = re.compile(r"^(?:bool|int|float|str|bytes|none|[a-z_-]+\[.*\])$")


def _union_errors(errors: list[Any]) -> list[Any]:
    """One error for a value no member of a union accepts (``fast: bool | 'auto'`` given
    'maybe'): pydantic reports one per member, its name last in the location ("fast.bool",
    "fast.literal['auto']"), which read as a key path; merged: "fast: Input should be a valid
    boolean or 'auto'"."""
    if len(errors) < 2:
        return errors
    locs = [tuple(x["loc"]) for x in errors]
    head = locs[0][:-1]
    if not head or any(loc[:-1] != head or not isinstance(loc[-1], str)
                       or not _UNION_MEMBER.match(loc[-1]) for loc in locs):
        return errors
    wants = [x["msg"].split(",")[0].removeprefix("Input should be ") for x in errors]
    merged = dict(errors[0], loc=head, type="union", msg="Input should be " + " or ".join(wants))
    return [merged]


#: Errors of one pipeline file printed, one line each; the rest are counted.
MAX_ERRORS = 10


def _format_error(e: ValidationError, prefix: tuple[Any, ...], where: Any,
                  label: str | None = None, model: type[BaseModel] | None = None) -> str:
    """Every error of ``e``, one line each naming file:line and key (at most
    :data:`MAX_ERRORS`, then how many more): "(and 1 more)" would hide the second. A typo
    shows up twice (unknown key + the missing key it was meant as); the unknown key, with
    its did-you-mean, says both."""
    order = {"extra_forbidden": 0, "missing": 2}
    errors = sorted(_union_errors(e.errors()), key=lambda x: order.get(x["type"], 1))
    lines: list[str] = []
    meant: set[tuple[Any, ...]] = set()
    for err in errors:
        loc = tuple(err["loc"])
        if err["type"] == "missing" and loc in meant:
            continue
        path = (label + "." if label else "") + ".".join(
            f"[{x}]" if isinstance(x, int) else str(x) for x in loc
        )
        path = path.replace(".[", "[").rstrip(".")  # a rule over several keys has no key
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
            parent_fields = _fields_for(e, loc, model)
            if parent_fields:
                close = difflib.get_close_matches(str(loc[-1]), parent_fields, n=1)
                if close:
                    msg += f" (did you mean '{close[0]}'?)"
                    meant.add((*loc[:-1], close[0]))
        elif err["type"] == "missing":
            msg = "required key is missing"
        else:
            got = err.get("input")
            if got is not None and not isinstance(got, dict | list):
                msg += f" (got {got!r})"
        lines.append(f"{where(prefix + loc)}: {path}: {msg}")
    if len(lines) > MAX_ERRORS:
        lines = [*lines[:MAX_ERRORS], f"... and {len(lines) - MAX_ERRORS} more errors"]
    return "\n".join(lines)


def _fields_for(e: ValidationError, loc: tuple[Any, ...],
                model: type[BaseModel] | None = None) -> list[str]:
    """The keys allowed beside an unknown one: the stage's own parameter model when the error
    is in a stage's parameters (passed by the caller, so no other stage is imported)."""
    if model is not None:
        from curator.core.params import group_model

        for part in loc[:-1]:  # an unknown key inside a nested group (redis.nodez)
            fi = model.model_fields.get(str(part)) if model is not None else None
            model = group_model(fi.annotation) if fi is not None else None
        if model is not None:
            return list(model.model_fields)
    if len(loc) == 1:
        if e.title == "PipelineConfig":
            return list(PipelineConfig.model_fields)
        return []
    if len(loc) == 2 and loc[0] == "executor":
        return list(ExecutorConfig.model_fields)
    return []


