"""A pipeline file's YAML before it is validated: parsed with its aliases bounded, the line of
every key path (so that an error names it), and the overrides applied on top of it
(``--set a.b=c``, ``CURATOR__A__B=c``), each remembered by the location it set.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from curator.base.errors import ConfigError

#: The keys of a stage entry that are not its YAML name.
RESERVED = {"id", "inputs", "checkpoint"}


def env_overrides(environ: dict[str, str] | None = None) -> list[str]:
    """Overrides from the environment: ``CURATOR__EXECUTOR__TYPE=dask`` is
    ``executor.type=dask``. Layers, lowest first: the file, the environment, ``--set``."""
    env = os.environ if environ is None else environ
    out = []
    for k, v in sorted(env.items()):
        if k.startswith("CURATOR__") and len(k) > 9:
            out.append(".".join(p.lower() for p in k[9:].split("__")) + "=" + v)
    return out


#: Most YAML nodes a pipeline file may stand for once its aliases are expanded. Anchors and
#: aliases share nodes, so 700 bytes can stand for billions ("billion laughs"); everything
#: that walks the data (line lookup, validation, fingerprints) would then take that long.
MAX_YAML_NODES = 1_000_000


def parse(text: str, source: str) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """The document in ``text`` and the line of each key path in it; ``ConfigError`` naming
    ``source`` and the line on invalid YAML, an alias bomb or nesting too deep."""
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _check_expanded_size(node, source)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from e
    except RecursionError:
        raise ConfigError(f"{source}: invalid YAML: nested too deeply") from None
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None and isinstance(data, dict):
        collect_lines(node, (), lines)
    return data, lines


def load_bounded(text: str, source: str) -> Any:
    """``yaml.safe_load`` that refuses alias bombs (:func:`_check_expanded_size`)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node, source)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expanded_size(root: yaml.Node, source: str) -> None:
    """Count the nodes ``root`` stands for with aliases expanded, each shared node once
    (memoised), so the check costs the size of the file, not of the expansion. Refuses a
    recursive alias and an expansion above :data:`MAX_YAML_NODES`."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise ConfigError(f"{source}:{node.start_mark.line + 1}: invalid YAML: an alias "
                              "refers to a node that contains it (recursive alias)")
        active.add(key)
        n = 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                n += size(k) + size(v)
                if n > MAX_YAML_NODES:
                    break
        elif isinstance(node, yaml.SequenceNode):
            for v in node.value:
                n += size(v)
                if n > MAX_YAML_NODES:
                    break
        active.discard(key)
        if n > MAX_YAML_NODES:
            raise ConfigError(
                f"{source}:{node.start_mark.line + 1}: invalid YAML: its aliases expand to "
                f"more than {MAX_YAML_NODES:,} values (an alias bomb?); refusing to load it")
        sizes[key] = n
        return n

    size(root)


def collect_lines(node: yaml.Node, path: tuple[Any, ...], out: dict[tuple[Any, ...], int],
                   seen: set[int] | None = None) -> None:
    """Line of each key path. A node reached again through an alias is not walked again:
    paths under it fall back to the alias's own line."""
    out.setdefault(path, node.start_mark.line + 1)
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value
            out[path + (key,)] = k.start_mark.line + 1
            collect_lines(v, path + (key,), out, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            collect_lines(v, path + (i,), out, seen)


def apply_override(data: dict[str, Any], ov: str, source: str) -> tuple[Any, ...]:
    """``a.b=c``: set a key; ``stages.<id or index>.<param>=v`` reaches a stage's parameter.
    Returns the location it set (errors there name the override, not a line of the file).
    The value is parsed as YAML (``10`` is an int, ``[a, b]`` a list). Every mapping on the
    way is copied before it is changed: a YAML alias (``- word_count_filter: *common``) is the
    same object as its anchor, and setting one stage's parameter must not set another's."""
    if "=" not in ov:
        raise ConfigError(f"--set {ov}: expected KEY.PATH=VALUE")
    key, raw = ov.split("=", 1)
    try:
        value = load_bounded(raw, f"--set {key}") if raw else ""
    except yaml.YAMLError:
        value = raw
    except RecursionError:
        raise ConfigError(f"--set {key}: value nested too deeply") from None
    parts = key.split(".")
    cur: Any = data
    if parts[0] == "stages" and len(parts) >= 3 and isinstance(data.get("stages"), list):
        i = _stage_entry(data["stages"], parts[1], ov)
        entry = data["stages"][i] = dict(data["stages"][i])
        rest = parts[2:]
        # `checkpoint` is also a parameter of some stages (export_triton): a bool is the
        # stage key, anything else the parameter
        if len(rest) == 1 and rest[0] in RESERVED and (
                rest[0] != "checkpoint" or isinstance(value, bool)):
            entry[rest[0]] = value
            return ("stages", i, rest[0])
        kind = next(k for k in entry if k not in RESERVED)
        if rest[0] == kind:
            rest = rest[1:]
        if not rest:
            raise ConfigError(f"--set {ov}: name a stage parameter, e.g. stages.<id>.<param>=v")
        entry[kind] = dict(entry[kind]) if isinstance(entry.get(kind), dict) else {}
        cur, parts = entry[kind], rest
        at: tuple[Any, ...] = ("stages", i, kind, *rest)
    else:
        at = tuple(parts)
    for part in parts[:-1]:
        if not isinstance(cur, dict):
            raise ConfigError(f"--set {ov}: '{part}' is not inside a mapping")
        if isinstance(cur.get(part), list):
            # replacing the list by a mapping turned `--set stages.0={...}` into "stages:
            # Input should be a valid list", an error about the file, not about the override
            hint = (": set one parameter of a stage, stages.<id or index>.<param>=value"
                    if part == "stages" and cur is data else "")
            raise ConfigError(f"--set {ov}: '{part}' is a list, not a mapping{hint}")
        cur[part] = dict(cur[part]) if isinstance(cur.get(part), dict) else {}
        cur = cur[part]
    if not isinstance(cur, dict):
        raise ConfigError(f"--set {ov}: cannot set a key inside a non-mapping")
    cur[parts[-1]] = value
    return at


def _stage_entry(stages: list[Any], part: str, ov: str) -> int:
    """The index of the stage an override names (by id, YAML name or index)."""
    if part.isdigit():
        i = int(part)
        if i >= len(stages):
            raise ConfigError(f"--set {ov}: there is no stages[{i}]")
        return i
    for i, entry in enumerate(stages):
        kinds = [k for k in entry if k not in RESERVED]
        implied = kinds[0].split(":")[-1].split(".")[-1] if kinds else None
        if entry.get("id") == part or (not entry.get("id") and part in (*kinds[:1], implied)):
            return i
    raise ConfigError(f"--set {ov}: no stage with id '{part}'")
