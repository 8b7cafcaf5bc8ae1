"""The stage API: every step of a pipeline is one of three kinds (``Stage.kind``).

* :class:`Source` lists shards and reads documents from them (files, URLs, dumps).
* :class:`ShardStage` maps one shard's documents to output documents, streaming. Its common
  special cases are :class:`Filter` (keep or reject, with a reason), :class:`Modifier` (rewrite
  one document) and :class:`BatchStage` (work on lists, e.g. a model that predicts in batches).
* :class:`GlobalStage` needs the whole dataset (dedup, tokenizer or classifier training); it runs
  as several phases, each a distributed ``ctx.map`` over shards or partitions.

A stage's parameters are its ``__init__`` keyword arguments. Their annotations and defaults
*are* the YAML schema: the pipeline builds a pydantic model from the signature, so an unknown
key or a wrong type is reported before anything runs. Only plain, JSON-able values belong in
parameters (they also form the stage's fingerprint, which decides what a rerun must redo).
Parameters that several stages share are declared once, as the annotated fields of a
:class:`Params` mixin (the download settings of every acquire source, for instance).

Writing a filter takes a few lines (see :func:`filter`)::

    from curator import filter

    @filter
    def short_lines(doc, max_ratio: float = 0.5) -> bool:
        lines = doc.text.splitlines() or [""]
        return sum(len(x) < 30 for x in lines) / len(lines) <= max_ratio
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, create_model

from curator.core.document import Document
from curator.core.identity import spec_paths
from curator.core.shard_context import ShardContext, StageContext


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or
                                   (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


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


# -- parameters that name files -------------------------------------------------------------


@dataclass(frozen=True)
class PathParam:
    """Marks a parameter's type as naming a file or folder (``Annotated[str, PathParam(...)]``;
    use :data:`FilePath`, :data:`DirPath`, :data:`OutputDir`). Plain metadata on the type,
    so it works the same in an ``__init__`` signature, a :class:`Params` mixin or a pydantic
    model field, and inside ``X | None``, ``list[X]`` or ``dict[str, X]``.

    ``role="input"``: the stage reads it (a word list, a model, a tokenizer folder): the
    identity of its content (every file of a folder; size, mtime, ctime and inode, or a hash
    with ``identity: content``) is part of the stage's key, so editing the file reruns the
    stage (:func:`path_params`). ``role="output"``: a folder or file the stage writes.
    ``role="documents"``: a source's input documents (known per shard, not per stage)."""

    kind: str  # "file" | "dir"
    role: str = "input"  # "input" | "output" | "documents"


#: A parameter naming a file the stage reads (globs allowed); part of the stage's key.
FilePath = Annotated[str, PathParam("file")]
#: A parameter naming a folder the stage reads (a tokenizer, a model); every file in it is
#: part of the stage's key.
DirPath = Annotated[str, PathParam("dir")]
#: A parameter naming a folder the stage writes (also declare it in ``output_dirs``).
OutputDir = Annotated[str, PathParam("dir", "output")]
#: A parameter naming a file the stage writes.
OutputFile = Annotated[str, PathParam("file", "output")]
#: A source's document files (globs): each shard's key holds the identity of the files it
#: reads, so a changed file reruns exactly its shards (not the whole stage).
DocumentPaths = Annotated[str, PathParam("file", "documents")]


def _path_marker(tp: Any) -> PathParam | None:
    """The :class:`PathParam` inside a type (``FilePath | None``, ``list[FilePath]``...)."""
    if get_origin(tp) is Annotated:
        args = get_args(tp)
        for m in args[1:]:
            if isinstance(m, PathParam):
                return m
        return _path_marker(args[0])
    for a in get_args(tp):
        found = _path_marker(a)
        if found is not None:
            return found
    return None


def path_params(cls: type[Stage], role: str = "input") -> dict[str, PathParam]:
    """``name -> PathParam`` of a stage's parameters typed as paths with ``role``, read from
    its parameter model (so a pydantic model's fields work the same)."""
    out: dict[str, PathParam] = {}
    for name, fi in cls.params_model().model_fields.items():
        marker = next((m for m in fi.metadata if isinstance(m, PathParam)), None) or \
            _path_marker(fi.annotation)
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
    """Base class of all stages. Subclasses set ``name`` (the YAML name) and take parameters
    as keyword arguments of ``__init__``."""

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

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def params_model(cls) -> type[BaseModel]:
        """A pydantic model of the ``__init__`` parameters, then the shared ones of its
        :class:`Params` bases when ``__init__`` takes ``**params`` (``extra`` keys forbidden)."""
        cached = cls.__dict__.get("_params_model")
        if cached is not None:
            return cached
        fields: dict[str, Any] = {}
        for p in _init_params(cls):
            ann = p.annotation if p.annotation is not inspect.Parameter.empty else Any
            default = p.default if p.default is not inspect.Parameter.empty else ...
            fields[p.name] = (ann, default)
        if _takes_params(cls):
            for name, field_def in shared_params(cls).items():
                fields.setdefault(name, field_def)
        model = create_model(  # type: ignore[call-overload]
            f"{cls.__name__}Params",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
            **fields,
        )
        cls._params_model = model  # type: ignore[attr-defined]
        return model

    @classmethod
    def from_params(cls, params: dict[str, Any] | None = None, *, id: str | None = None) -> Stage:
        """Validate ``params`` against the signature and build the stage."""
        model = cls.params_model()
        validated = model(**(params or {}))
        values = {k: getattr(validated, k) for k in model.model_fields}
        stage = cls(**values)
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
            for p in _strings(params.get(name)):
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
        """First line of the class docstring, for ``curator stages``."""
        return (inspect.getdoc(type(self)) or "").split("\n")[0]


class Source(Stage):
    """Reads documents from outside the pipeline. ``shards`` runs once (on the root process)
    and must be cheap; ``read`` runs on workers, once per shard."""

    kind = "source"

    def shards(self, ctx: StageContext) -> list[ShardSpec]:
        raise NotImplementedError

    def read(self, shard: ShardSpec, ctx: ShardContext) -> Iterator[Document]:
        raise NotImplementedError

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


# -- parameters shared by several stages ---------------------------------------------------


class Params:
    """A group of parameters that several stages share, declared once as annotated class
    fields with defaults (``retries: int = 5``), like a dataclass.

    A stage that inherits a ``Params`` mixin and whose ``__init__`` takes ``**params`` (and
    passes them on: ``super().__init__(**params)``) gets these fields as YAML parameters after
    its own: validated, defaulted and fingerprinted like its own, set as attributes. A stage
    whose ``__init__`` takes no ``**params`` (a custom source written against the base class)
    keeps the defaults as fixed settings, its parameters and fingerprint unchanged. Fields of a
    stage class itself are never parameters; a stage lists the shared fields it does not take in
    ``params_excluded``.
    """

    #: Shared fields that this stage does not take as parameters (they keep their defaults).
    params_excluded: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: Any) -> None:
        allowed = shared_params(type(self))
        for name, value in params.items():
            if name not in allowed:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument "
                                f"'{name}'")
            setattr(self, name, value)


def shared_params(cls: type) -> dict[str, tuple[Any, Any]]:
    """``name -> (annotation, default)`` of the fields that ``cls`` inherits from
    :class:`Params` mixins (bases first, in declaration order), less ``params_excluded``."""
    out: dict[str, tuple[Any, Any]] = {}
    for base in reversed(cls.__mro__):
        if not (isinstance(base, type) and issubclass(base, Params)) or base is Params \
                or issubclass(base, Stage):
            continue
        for name, ann in inspect.get_annotations(base, eval_str=True).items():
            if getattr(ann, "__origin__", None) is ClassVar or ann is ClassVar:
                continue
            out[name] = (ann, base.__dict__.get(name, ...))
    for name in getattr(cls, "params_excluded", ()):
        out.pop(name, None)
    return out


def _takes_params(cls: type) -> bool:
    """The stage's own ``__init__`` has a ``**params`` argument (it passes shared parameters
    on); a stage without an ``__init__`` of its own takes none."""
    init = cls.__init__  # type: ignore[misc]
    if not issubclass(cls, Params) or init is Params.__init__:
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD
               for p in inspect.signature(init).parameters.values())


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
