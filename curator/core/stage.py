"""The stage API: every step of a pipeline is one of three kinds (``Stage.kind``).

* :class:`Source` lists shards and reads documents from them (files, URLs, dumps).
* :class:`ShardStage` maps one shard's documents to output documents, streaming. Its common
  special cases are :class:`Filter` (keep or reject, with a reason), :class:`Modifier` (rewrite
  one document) and :class:`BatchStage` (work on lists, e.g. a model that predicts in batches).
* :class:`GlobalStage` needs the whole dataset (dedup, tokenizer or classifier training); it runs
  as several phases, each a distributed ``ctx.map`` over shards or partitions.

A stage's parameters are one pydantic model, its nested ``class Params(StageParams)``
(:mod:`curator.core.params`): types, defaults, constraints and a help line per field. It is the
YAML schema (an unknown key or a wrong value is reported, naming the key, before anything runs),
what ``curator stages NAME`` and the docs' tables show, and, as validated values, part of the
stage's fingerprint. Parameters that several stages share are a ``StageParams`` base their
models inherit (the download settings of every acquire source). A custom stage may instead
take its parameters as ``__init__`` keyword arguments; the same kind of model is built from
that signature.

Writing a filter takes a few lines (see :func:`filter`)::

    from curator import filter

    @filter
    def short_lines(doc, max_ratio: float = 0.5) -> bool:
        lines = doc.text.splitlines() or [""]
        return sum(len(x) < 30 for x in lines) / len(lines) <= max_ratio
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError, create_model
from pydantic_core import to_jsonable_python

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.core.identity import spec_paths
from curator.core.params import (  # noqa: F401 - the path types are part of the stage API
    OWNER,
    DirPath,
    DocumentPaths,
    FilePath,
    OutputDir,
    OutputFile,
    PathParam,
    StageParams,
    iter_fields,
    path_marker,
)
from curator.core.shard_context import ShardContext, StageContext
from curator.core.tracing import building as _tracing_building
from curator.core.tracing import install as _install_tracing

#: Passes an already validated model from :meth:`Stage.from_params` to ``Stage.__init__``.
_VALIDATED = "__validated__"


def _one_line(stage: str, e: ValidationError) -> str:
    err = e.errors()[0]
    key = "".join(f".{x}" for x in err["loc"])
    msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
    more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return f"{stage}{key}: {msg}{more}"


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)[.!?](?=\s+[A-Z`(]|$)")


def first_paragraph(doc: str) -> str:
    """A docstring's first paragraph on one line (docstrings wrap mid-sentence)."""
    return " ".join(doc.strip().split("\n\n")[0].split())


def first_sentence(doc: str) -> str:
    """The first whole sentence of a docstring's first paragraph: a summary that is not cut
    where the source line wrapped ("...a folder (or hf://) in the hub's")."""
    para = first_paragraph(doc)
    m = _SENTENCE_END.search(para)
    return para[:m.end()] if m else para


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or
                                   (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


@dataclass(frozen=True)
class HostNeeds:
    """What every process that runs a stage's tasks must have, checked on the driver and on
    each worker (Dask) or rank (MPI) before any stage of the run starts, so that a run does
    not stop hours later, after the upstream stages, on something that was known at once.

    ``env``: (variable, YAML key naming it) pairs that must be set in each process.
    ``loopback``: (address, YAML key) pairs of servers given by a loopback address, which
    only work when every process shares the driver's loopback interface (one host)."""

    env: tuple[tuple[str, str], ...] = ()
    loopback: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ShardSpec:
    """What a :class:`Source` will read as one shard: a unique name plus source-specific data
    (a path, a URL, a byte range...). ``data`` must be JSON-able."""

    name: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Shard:
    """A materialised shard: a file of documents written by a finished stage."""

    name: str
    path: str
    docs: int = 0
    bytes: int = 0
    #: What the shard's content depends on (set by the runner; see curator.core.identity).
    key: str = ""


def path_params(cls: type[Stage], role: str = "input") -> dict[str, PathParam]:
    """``name -> PathParam`` of a stage's parameters typed as paths with ``role``, read from
    its parameter model; a field of a nested group has a dotted name (``redis.tls.ca_file``)."""
    out: dict[str, PathParam] = {}
    for name, fi in iter_fields(cls.params_model()):
        marker = next((m for m in fi.metadata if isinstance(m, PathParam)), None) or \
            path_marker(fi.annotation)
        if marker is not None and marker.role == role:
            out[name] = marker
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


class Stage:
    """Base class of all stages. Subclasses set ``name`` (the YAML name) and declare their
    parameters as a nested ``class Params(StageParams)``."""

    #: YAML name, e.g. ``word_count_filter``. Defaults to the class name in snake case.
    name: ClassVar[str] = ""
    #: "source" | "shard" | "global"; set by the kind base classes below.
    kind: ClassVar[str] = ""
    #: A manual salt of the fingerprint, on top of the code digest (:mod:`curator.core.codehash`:
    #: the stage's module and the curator modules it imports, so editing them reruns it with no
    #: number to bump). Bump it only for a change the digest cannot see (a third-party library).
    version: ClassVar[int] = 1
    #: What the stage's output depends on that its imports do not show: modules it imports by a
    #: computed name, data files it reads (``curator/<family>/data/x.txt``, relative to the
    #: folder holding the package); hashed into the fingerprint like its own module.
    code_deps: ClassVar[tuple[str, ...]] = ()
    #: The folders of :meth:`output_dirs` are replaced as a whole (not only added to), so they
    #: may not even be a parent of the work_dir.
    replaces_outputs: ClassVar[bool] = False
    #: A shard stage that only observes or writes elsewhere can pass its input files through
    #: instead of rewriting them (writers, stats).
    passthrough: ClassVar[bool] = False

    #: The id of this stage in its pipeline; set by the pipeline.
    id: str = ""
    #: Validated parameters (what the YAML said plus defaults); set by :meth:`from_params`.
    params: dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__ or not cls.__dict__["name"]:
            cls.name = _snake(cls.__name__)

    #: The stage's parameter model (see :mod:`curator.core.params`): a nested
    #: ``class Params(StageParams)``. A stage without one takes its parameters as ``__init__``
    #: keyword arguments and gets a model built from that signature.
    Params: ClassVar[type[StageParams] | None] = None

    def __init__(self, **params: Any) -> None:
        """Validate ``params`` against :attr:`Params` and set each field as an attribute, then
        :meth:`setup`; a stage without ``Params`` (and so without parameters) is set up too.
        (A stage with an ``__init__`` of its own does its own setting up.)"""
        model = type(self).Params
        if model is None:
            if type(self).__init__ is Stage.__init__:
                self.setup()
            return
        if _VALIDATED in params:
            validated = params.pop(_VALIDATED)
        else:
            try:
                validated = model(**params)
            except ValidationError as e:  # built from Python: the error names the key too
                raise ConfigError(_one_line(type(self).name, e)) from None
        for name in type(validated).model_fields:
            setattr(self, name, getattr(validated, name))
        self.params = validated.model_dump(mode="json")
        self.setup()

    def setup(self) -> None:
        """Derive state from the validated parameters (compile a pattern, resolve a preset);
        runs once when the stage is built. Raise :class:`ConfigError` for a combination of
        values the model cannot express."""

    def key_params(self) -> dict[str, Any]:
        """The parameter values its results are keyed on: its parameters, each setting that
        does not apply under the values chosen (its model's ``applies_when``: a Redis setting
        under ``backend: embedded``) keyed as its default, so changing it reruns nothing."""
        params = dict(getattr(self, "params", None) or {})
        model = type(self).params_model()
        for name, cond in (getattr(model, "applies_when", None) or {}).items():
            field = model.model_fields.get(name)
            if field is not None and name in params and any(
                    params.get(k) not in values for k, values in cond.items()):
                params[name] = to_jsonable_python(field.get_default(call_default_factory=True))
        return params

    def host_needs(self) -> HostNeeds | None:
        """What each process running this stage's tasks needs (:class:`HostNeeds`); None:
        nothing to check."""
        return None

    def driver_check(self) -> None:
        """Check what the driver alone needs to finish this stage (a credential, a service it
        calls after the workers are done), before any stage of the run starts: raise
        :class:`ConfigError` with one line. Runs on the root process only."""

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def params_model(cls) -> type[BaseModel]:
        """The stage's parameter model: its :attr:`Params`, or one built from the ``__init__``
        keyword parameters (a custom stage, a decorated function); unknown keys are errors."""
        cached = cls.__dict__.get("_params_model")
        if cached is not None:
            return cached
        if cls.Params is not None:
            model: type[BaseModel] = cls.Params
            clash = [f for f in model.model_fields if hasattr(Stage, f)
                     or callable(getattr(cls, f, None))]
            if clash:
                raise TypeError(f"{cls.__name__}.Params: field(s) {clash} would hide an "
                                "attribute or method of the stage; rename them")
        else:
            fields: dict[str, Any] = {}
            for p in _init_params(cls):
                ann = p.annotation if p.annotation is not inspect.Parameter.empty else Any
                default = p.default if p.default is not inspect.Parameter.empty else ...
                fields[p.name] = (ann, default)
            model = create_model(  # type: ignore[call-overload]
                f"{cls.__name__}Params", __base__=StageParams, **fields,
            )
        cls._params_model = model  # type: ignore[attr-defined]
        return model

    @classmethod
    def from_params(cls, params: dict[str, Any] | None = None, *, id: str | None = None) -> Stage:
        """Validate ``params`` against the parameter model and build the stage. A deprecated
        key is reported as one warning naming the stage (``fuzzy_dedup.redis_nodes``)."""
        model = cls.params_model()
        token = OWNER.set(cls.name)
        try:
            validated = model(**(params or {}))
        finally:
            OWNER.reset(token)
        if cls.Params is not None:
            stage = cls(**{_VALIDATED: validated})
        else:
            stage = cls(**{k: getattr(validated, k) for k in model.model_fields})
            stage.params = validated.model_dump(mode="json")
        stage.id = id or cls.name
        return stage

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r}>"

    def __getstate__(self) -> dict[str, Any]:
        # Stages travel to Dask workers; anything cached on them (models) must not.
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_cache")}

    def input_files(self) -> list[str]:
        """Files the stage reads besides its input documents that no parameter typed
        :data:`FilePath` / :data:`DirPath` names (those count already, see
        :meth:`input_paths_of_params`): files derived from a parameter, say. Their identity is
        part of the stage's key: a changed file reruns the stage. Globs are expanded."""
        return []

    def input_paths_of_params(self) -> dict[str, str]:
        """``path -> "file" | "dir"`` of every parameter typed as an input path, from the
        validated parameters (:func:`path_params`)."""
        params = getattr(self, "params", None) or {}
        out: dict[str, str] = {}
        for name, marker in path_params(type(self)).items():
            value: Any = params
            for part in name.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            for p in _strings(value):
                out.setdefault(p, marker.kind)
        return out

    def output_dirs(self, ctx: StageContext) -> list[str]:
        """Folders this stage writes outside its stage folder (resolved with
        ``ctx.output_path``). The runner claims them before the stage runs: a folder that is the
        work_dir or the current folder, or that holds files without this stage's marker, is
        refused (see :mod:`curator.storage.outputs`), so a stage never overwrites or clears what
        curator did not write."""
        return []

    def describe(self) -> str:
        """The first sentence of the class docstring, for ``curator stages``."""
        return first_sentence(inspect.getdoc(type(self)) or "")


class Source(Stage):
    """Reads documents from outside the pipeline. ``shards`` runs once (on the root process)
    and must be cheap; ``read`` runs on workers, once per shard."""

    kind = "source"

    def shards(self, ctx: StageContext) -> list[ShardSpec]:
        raise NotImplementedError

    def read(self, shard: ShardSpec, ctx: ShardContext) -> Iterator[Document]:
        raise NotImplementedError

    def remote_inputs(self) -> list[str]:
        """Locations this source reads over a network (every URL among its parameters but
        ``file://``). ``curator validate`` lists a source (``shards``) only when it has none:
        validating checks local globs and folders and never waits on a server."""
        params = getattr(self, "params", None) or {}
        return [s for s in _strings(params) if "://" in s and not s.startswith("file://")]

    def input_paths(self, shard: ShardSpec) -> list[str]:
        """Files ``shard`` reads. Their identity (local: size, mtime_ns, inode; remote: ETag,
        Last-Modified, size) goes into the shard's key, so a changed file reruns exactly the
        shards that read it. Default: ``path``/``paths`` of the shard data, and ``url`` when
        it is a local file."""
        return spec_paths(shard.data)


class ShardStage(Stage):
    """Maps the documents of one shard to output documents, streaming.

    Reject a document with ``ctx.reject(doc, reason)``; quarantine an unusable record with
    ``ctx.quarantine(record, reason)``; count anything with ``ctx.count(name, n)``.
    """

    kind = "shard"
    #: Look at the whole input before any shard runs (:meth:`survey`, :meth:`prepare`): such
    #: a stage always heads its fused group, so its input shards are on disk.
    surveys_input: ClassVar[bool] = False

    def survey(self, docs: Iterator[Document]) -> Any:
        """What one input shard holds that :meth:`prepare` needs (JSON-able; runs on a
        worker, cached by the shard's key, so a rerun surveys only shards that changed)."""
        return None

    def prepare(self, surveys: list[Any], names: list[str], paths: list[str]) -> Any:
        """One JSON-able value from every input shard's survey (in shard order), given to
        every shard as ``ctx.prepared`` and part of every shard's key."""
        return None

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        raise NotImplementedError


class Filter(ShardStage):
    """Keep or reject each document. Override ``check`` (return a reason to reject, ``None`` to
    keep), or ``score`` + ``keep`` (the reason is then the stage name)."""

    def score(self, doc: Document) -> float:
        raise NotImplementedError

    def keep(self, score: float) -> bool:
        raise NotImplementedError

    def check(self, doc: Document) -> str | None:
        return None if self.keep(self.score(doc)) else self.name

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        check, reject = self.check, ctx.reject
        for doc in docs:
            reason = check(doc)
            if reason is None:
                yield doc
            else:
                reject(doc, reason)


class Modifier(ShardStage):
    """Rewrite each document; returning ``None`` (or empty text) rejects it with the stage name
    as the reason."""

    def modify(self, doc: Document) -> Document | None:
        raise NotImplementedError

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        modify, reject = self.modify, ctx.reject
        for doc in docs:
            out = modify(doc)
            if out is None or not out.text:
                reject(doc, self.name)
            else:
                yield out


class BatchStage(ShardStage):
    """Work on lists of documents (vectorised scoring, model inference). Rejections are made
    through ``ctx.reject`` inside ``process_batch``."""

    batch_size: int = 1024

    def process_batch(self, docs: list[Document], ctx: ShardContext) -> Iterable[Document]:
        raise NotImplementedError

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        batch: list[Document] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= self.batch_size:
                yield from self.process_batch(batch, ctx)
                batch = []
        if batch:
            yield from self.process_batch(batch, ctx)


class GlobalStage(Stage):
    """Needs the whole dataset. ``run`` is the driver: it calls ``ctx.map`` for distributed,
    resumable phases and ends with ``ctx.write_shards`` (documents out) or
    ``ctx.passthrough`` (documents unchanged; only artifacts such as a model are produced).

    Under MPI the driver runs on every rank (SPMD) and ``ctx.map`` is a collective, so the
    driver must be deterministic; write shared files only inside mapped tasks or when
    ``ctx.is_root``.
    """

    kind = "global"

    def run(self, shards: list[Shard], ctx: PhaseContext) -> list[Shard]:
        raise NotImplementedError


class PhaseContext(StageContext):
    """What a global stage's ``run`` is given: a :class:`StageContext` plus distributed,
    resumable phases. :class:`curator.core.context.GlobalContext` is its one implementation;
    it is declared here so that the stage API does not import the module that runs it."""

    #: Artifacts this stage publishes for downstream stages (JSON-able values).
    artifacts: dict[str, Any]

    @property
    def is_root(self) -> bool:
        raise NotImplementedError

    @property
    def workers(self) -> int:
        raise NotImplementedError

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], *, phase: str | None = None,
            keys: Sequence[str] | None = None) -> list[Any]:
        raise NotImplementedError

    def write_shards(
        self,
        process: Callable[[Iterator[Document], ShardContext], Iterator[Document]],
        shards: Sequence[Shard],
    ) -> list[Shard]:
        raise NotImplementedError

    def passthrough(self, shards: Sequence[Shard]) -> list[Shard]:
        raise NotImplementedError

    def count(self, name: str, n: int = 1) -> None:
        raise NotImplementedError


# -- decorators for the common case: a plain function -------------------------------------


class _FunctionStageType(type):
    """Metaclass of decorated functions: the stage class is also still the function.
    ``my_filter(doc)`` (a positional argument, or the first parameter by name) calls the
    function as written; keyword parameters alone build the stage, as the pipeline does."""

    function: Callable[..., Any]
    _first: str

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if args or cls._first in kwargs:
            return cls.function(*args, **kwargs)
        return super().__call__(**kwargs)


def filter(fn: Callable[..., bool] | None = None, *, name: str | None = None) -> Any:
    """Turn ``fn(doc, **params) -> bool`` (True keeps) into a :class:`Filter` stage class.

    The function's keyword parameters become the stage's YAML parameters. The result can
    still be called like the function: ``my_filter(doc, max_ratio=0.1)`` returns its bool.
    """

    def wrap(f: Callable[..., bool]) -> type[Filter]:
        return _function_stage(f, Filter, name, "check")

    return wrap(fn) if fn is not None else wrap


def modifier(fn: Callable[..., Document | None] | None = None, *, name: str | None = None) -> Any:
    """Turn ``fn(doc, **params) -> Document | None`` into a :class:`Modifier` stage class
    (still callable like the function)."""

    def wrap(f: Callable[..., Document | None]) -> type[Modifier]:
        return _function_stage(f, Modifier, name, "modify")

    return wrap(fn) if fn is not None else wrap


def _function_stage(f: Callable[..., Any], base: type, name: str | None, method: str) -> type:
    sig = inspect.signature(f, eval_str=True)
    if not sig.parameters:
        raise TypeError(f"@{'filter' if method == 'check' else 'modifier'} {f.__name__}: the "
                        "function takes the document as its first parameter")
    first = next(iter(sig.parameters))
    params = list(sig.parameters.values())[1:]  # drop `doc`
    stage_name = name or f.__name__

    def __init__(self: Any, **kwargs: Any) -> None:
        bound = inspect.Signature(params).bind(**kwargs)
        bound.apply_defaults()
        self.kwargs = dict(bound.arguments)

    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]
    )

    if method == "check":

        def check(self: Any, doc: Document) -> str | None:
            return None if f(doc, **self.kwargs) else self.name

        body = {"check": check}
    else:

        def modify(self: Any, doc: Document) -> Document | None:
            return f(doc, **self.kwargs)

        body = {"modify": modify}
    cls = _FunctionStageType(
        f.__name__,
        (base,),
        {"__init__": __init__, "name": stage_name, "__doc__": f.__doc__,
         "__module__": f.__module__, "__qualname__": f.__qualname__, "function": staticmethod(f),
         "__wrapped__": staticmethod(f), "_first": first, **body},
    )
    return cls


def _init_params(cls: type) -> list[inspect.Parameter]:
    sig = inspect.signature(cls.__init__, eval_str=True)
    out = []
    for p in list(sig.parameters.values())[1:]:
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        out.append(p)
    return out


# From the first ``from curator import ...`` of a user's module on, what that module reads as it
# is imported or builds its stages is seen (and keyed): the reads of a module imported by a
# script using the Python API too, not only of those a pipeline file names.
_install_tracing()
_tracing_building(Stage.__init__, Stage.from_params.__func__)
