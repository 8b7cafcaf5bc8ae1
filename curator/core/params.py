"""A stage's parameters: one pydantic model per stage.

A built-in stage declares its parameters as a nested ``Params`` class::

    class ShortLines(Filter):
        \"\"\"Reject documents made mostly of short lines.\"\"\"

        class Params(StageParams):
            max_ratio: Ratio = 0.5
            \"\"\"Largest share of lines shorter than ``min_chars``.\"\"\"
            min_chars: PositiveInt = 30
            \"\"\"A line shorter than this is short.\"\"\"

        def check(self, doc):
            lines = doc.text.splitlines() or [""]
            short = sum(len(x) < self.min_chars for x in lines) / len(lines)
            return None if short <= self.max_ratio else self.name

From that one model come the YAML validation (types, defaults, constraints: an error names the
key), ``curator stages NAME`` and the parameter tables in docs/ (the docstring under each field
is its help line), the stage's fingerprint (the validated values), and its input identity
(fields typed :data:`~curator.core.stage.FilePath` / ``DirPath``). Related settings form a
nested group, itself a ``StageParams`` (``fuzzy_dedup: {redis: {nodes: [...], tls: {...}}}``);
the flat keys of earlier releases (``redis_nodes``) are still accepted, with a deprecation line.
A stage written as an ``__init__`` with keyword arguments, or a decorated function, gets the same
kind of model built from its signature.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "CuratorDeprecationWarning", "NonNegFloat", "NonNegInt", "PositiveFloat", "PositiveInt",
    "Ratio", "StageParams", "field_rows", "group_model", "iter_fields",
]

#: The stage being validated (its id), named in deprecation lines; set by ``Stage.from_params``.
OWNER: ContextVar[str] = ContextVar("curator_params_owner", default="")

#: A fraction, 0 to 1 inclusive.
Ratio = Annotated[float, Field(ge=0, le=1)]
#: An integer >= 1.
PositiveInt = Annotated[int, Field(ge=1)]
#: An integer >= 0.
NonNegInt = Annotated[int, Field(ge=0)]
#: A number > 0.
PositiveFloat = Annotated[float, Field(gt=0)]
#: A number >= 0.
NonNegFloat = Annotated[float, Field(ge=0)]


# -- parameters that name files (their identity is part of the stage key) ------------------


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


def path_marker(tp: Any) -> PathParam | None:
    """The :class:`PathParam` inside a type (``FilePath | None``, ``list[FilePath]``...)."""
    if get_origin(tp) is Annotated:
        args = get_args(tp)
        for m in args[1:]:
            if isinstance(m, PathParam):
                return m
        return path_marker(args[0])
    for a in get_args(tp):
        found = path_marker(a)
        if found is not None:
            return found
    return None


class CuratorDeprecationWarning(FutureWarning):
    """A setting that still works but will not in a later release (shown to users by default;
    ``curator`` prints it as one ``curator: warning:`` line)."""


class StageParams(BaseModel):
    """Base of every stage's parameter model and of nested parameter groups.

    Unknown keys are errors (a typo never silently falls back to a default). ``renamed`` maps
    keys of an earlier release to their dotted path now (``{"redis_tls": "redis.tls.enabled"}``);
    besides those, a flat key ``<group>_<field>`` of a nested group (``redis_nodes``) is read as
    ``<group>.<field>``. Both are accepted with a :class:`CuratorDeprecationWarning`.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True,
                              arbitrary_types_allowed=True, validate_default=False)

    #: Old key -> dotted path of its field now; accepted with a deprecation line.
    renamed: ClassVar[dict[str, str]] = {}
    #: Field -> the values of other fields under which it applies
    #: (``{"redis": {"backend": ("redis",)}}``). Under other values the field changes nothing,
    #: so the stage's key holds its default instead (:meth:`curator.core.stage.Stage.key_params`).
    applies_when: ClassVar[dict[str, dict[str, tuple[Any, ...]]]] = {}

    @model_validator(mode="before")
    @classmethod
    def _accept_old_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data:
            return data
        fields = cls.model_fields
        if all(k in fields for k in data):
            return data
        out = dict(data)
        for key in list(out):
            if key in fields or not isinstance(key, str):
                continue
            path = cls.renamed.get(key) or _flat_path(cls, key)
            if path is None:
                continue
            value = out.pop(key)
            _warn_old_key(cls, key, path)
            given = _get_path(out, path.split("."))
            if given is not _MISSING and given != value:
                raise ValueError(f"{key} (the old spelling) and {path} are both given, with "
                                 f"different values; keep {path}")
            _set_path(out, path.split("."), value)
        return out


def _warn_old_key(cls: type[StageParams], old: str, new: str) -> None:
    owner = OWNER.get()
    prefix = f"{owner}." if owner else ""
    warnings.warn(
        f"{prefix}{old} is deprecated: write {prefix}{new} (nested keys); the flat key is "
        "accepted until the next release", CuratorDeprecationWarning, stacklevel=4)


def group_model(annotation: Any) -> type[StageParams] | None:
    """The :class:`StageParams` group an annotation holds (``Group``, ``Group | None``,
    ``Annotated[Group, ...]``), or None for a plain value."""
    if isinstance(annotation, type) and issubclass(annotation, StageParams):
        return annotation
    if get_origin(annotation) is Annotated:
        return group_model(get_args(annotation)[0])
    for a in get_args(annotation):
        if isinstance(a, type) and issubclass(a, StageParams):
            return a
    return None


def iter_fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted name, FieldInfo)`` of every leaf field, nested groups flattened."""
    for name, fi in model.model_fields.items():
        sub = group_model(fi.annotation)
        if sub is not None:
            yield from iter_fields(sub, f"{prefix}{name}.")
        else:
            yield prefix + name, fi


def _flat_path(cls: type[BaseModel], key: str) -> str | None:
    """``redis_tls_ca_file`` -> ``redis.tls.ca_file`` when that names a field of nested groups."""
    for name, fi in cls.model_fields.items():
        sub = group_model(fi.annotation)
        if sub is None or not key.startswith(name + "_"):
            continue
        rest = key[len(name) + 1:]
        if rest in sub.renamed:
            return f"{name}.{sub.renamed[rest]}"
        if rest in sub.model_fields:
            return f"{name}.{rest}"
        deeper = _flat_path(sub, rest)
        if deeper is not None:
            return f"{name}.{deeper}"
    return None


_MISSING = object()


def _get_path(data: Any, parts: list[str]) -> Any:
    for p in parts:
        if isinstance(data, BaseModel):
            data = data.model_dump()
        if not isinstance(data, dict) or p not in data:
            return _MISSING
        data = data[p]
    return data


def _set_path(data: dict[str, Any], parts: list[str], value: Any) -> None:
    head = parts[0]
    if len(parts) == 1:
        data[head] = value
        return
    sub = data.get(head)
    if isinstance(sub, BaseModel):
        sub = sub.model_dump()
    if sub is None:
        sub = {}
    elif not isinstance(sub, dict):
        # a group given as a scalar shorthand (``tls: true``): the old key cannot be merged
        # into it, and dropping the old key's value would lose a setting without a word
        raise ValueError(f"{head} is given as {sub!r}; write it as a mapping to add "
                         f"{'.'.join(parts[1:])} to it")
    data[head] = sub = dict(sub)
    _set_path(sub, parts[1:], value)


# -- describing a model (curator stages NAME, the docs' tables) -------------------------------


def type_label(annotation: Any) -> str:
    """A short, readable type: ``int``, ``list[str]``, ``"a" | "b"``, ``str | None``."""
    from types import NoneType, UnionType
    from typing import Literal, Union

    origin = get_origin(annotation)
    if origin is Annotated:
        marker = next((m for m in get_args(annotation)[1:] if isinstance(m, PathParam)), None)
        if marker is not None:
            return ("folder" if marker.kind == "dir" else "file") + (
                " (written)" if marker.role == "output" else "")
        return type_label(get_args(annotation)[0])
    if origin is Literal:
        return " | ".join(repr(a) if not isinstance(a, bool) else str(a).lower()
                          for a in get_args(annotation))
    if origin in (Union, UnionType):
        parts = [type_label(a) for a in get_args(annotation) if a is not NoneType]
        if NoneType in get_args(annotation):
            parts.append("null")
        return " | ".join(parts)
    if origin is not None:
        args = ", ".join(type_label(a) for a in get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is NoneType:
        return "null"
    if isinstance(annotation, type):
        if issubclass(annotation, StageParams):
            return "group"
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _metadata(annotation: Any) -> list[Any]:
    """Constraint metadata inside ``Annotated[...]`` members of a union (``PositiveInt | None``)."""
    out: list[Any] = []
    for a in get_args(annotation):
        if get_origin(a) is Annotated:
            for m in get_args(a)[1:]:
                out.extend(getattr(m, "metadata", None) or [m])
    return out


#: How each constraint reads in ``curator stages`` and the docs: (its attribute, the words).
_CONSTRAINTS = {Ge: ("ge", ">= {}"), Gt: ("gt", "> {}"), Le: ("le", "<= {}"), Lt: ("lt", "< {}"),
                MinLen: ("min_length", "length >= {}"), MaxLen: ("max_length", "length <= {}")}


def _constraints(fi: Any) -> str:
    out = []
    for m in fi.metadata or _metadata(fi.annotation):
        attr, words = _CONSTRAINTS.get(type(m), (None, ""))
        if attr is not None:
            out.append(words.format(getattr(m, attr)))
    return ", ".join(out)


def field_rows(model: type[BaseModel], prefix: str = "") -> list[dict[str, Any]]:
    """One row per parameter (nested groups flattened to dotted names): ``name``, ``type``,
    ``default`` (JSON-able, or ``"required"``), ``constraints``, ``help``."""
    from pydantic_core import PydanticUndefined

    rows: list[dict[str, Any]] = []
    own = set(inspect.get_annotations(model))
    # the model's own fields first, then those of the shared groups it inherits
    ordered = sorted(model.model_fields.items(), key=lambda kv: kv[0] not in own)
    for name, fi in ordered:
        sub = group_model(fi.annotation)
        full = prefix + name
        if sub is not None:
            rows.append({"name": full, "type": "group", "default": None, "required": False,
                         "constraints": "", "help": (fi.description or "").strip()})
            rows.extend(field_rows(sub, full + "."))
            continue
        required = fi.is_required()
        if required:
            default: Any = None
        elif fi.default_factory is not None:
            default = fi.default_factory()  # type: ignore[call-arg]
        else:
            default = fi.default
        if isinstance(default, BaseModel):
            default = default.model_dump(mode="json")
        if default is PydanticUndefined:
            default = None
        marker = next((m for m in fi.metadata if isinstance(m, PathParam)), None)
        label = type_label(Annotated[fi.annotation, marker] if marker else fi.annotation)
        rows.append({
            "name": prefix + (fi.alias or name), "type": label, "default": default,
            "required": required, "constraints": _constraints(fi),
            "help": " ".join((fi.description or "").split()),
        })
    return rows
