"""What ``curator stages NAME`` prints and the docs' parameter tables hold, both read from the
stage's parameter model (:mod:`curator.core.params`), so they cannot drift from what the YAML
accepts. ``scripts/sync_param_tables.py`` rewrites the tables in docs/ and a test checks them.
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from curator.core.params import field_rows
from curator.core.stage import Stage, first_paragraph


@dataclass(frozen=True)
class StageInfo:
    """One stage as ``curator stages NAME --json`` gives it."""

    name: str
    kind: str
    target: str
    summary: str
    description: str
    params: list[dict[str, Any]]
    example: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def stage_info(name: str, cls: type[Stage], target: str = "") -> StageInfo:
    doc = inspect.getdoc(cls) or ""
    summary = first_paragraph(doc)
    rest = doc.strip().partition("\n\n")[2]
    rows = field_rows(cls.params_model())
    return StageInfo(name=name, kind=cls.kind, target=target or f"{cls.__module__}:"
                     f"{cls.__qualname__}", summary=summary.strip(), description=rest.strip(),
                     params=rows, example=yaml_example(name, cls))


def _placeholder(row: dict[str, Any]) -> Any:
    t = row["type"]
    if t.startswith("list"):
        return ["..."]
    if t.startswith("dict"):
        return {}
    return "<" + t.split(" | ")[0] + ">"


def yaml_example(name: str, cls: type[Stage]) -> str:
    """A pipeline entry for the stage with every parameter at its default (required ones as
    ``<type>`` placeholders), nested groups nested: a starting point to edit."""
    params: dict[str, Any] = {}
    for row in field_rows(cls.params_model()):
        if row["type"] == "group":
            continue
        value = _placeholder(row) if row["required"] else row["default"]
        node = params
        *parents, leaf = row["name"].split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    entry = {name: params} if params else name
    return yaml.safe_dump({"stages": [entry]}, sort_keys=False, default_flow_style=None,
                          width=88).rstrip()


def _cell(value: Any) -> str:
    if isinstance(value, str):
        text = value if value else '""'
    else:
        text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
        if text.endswith("\n...") or text.endswith("..."):
            text = text.rsplit("\n", 1)[0].strip()
    return text.replace("|", "\\|")


def _esc(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table(info: StageInfo) -> str:
    """The parameter table for docs/: name, type, default, help (constraints appended)."""
    if not info.params:
        return "No parameters."
    lines = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    for r in info.params:
        default = "required" if r["required"] else ("" if r["type"] == "group" else
                                                    f"`{_cell(r['default'])}`")
        help_ = r["help"] + (f" ({r['constraints']})" if r["constraints"] else "")
        cells = [f"`{r['name']}`", _esc(r["type"]), default, _esc(help_)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def text_page(info: StageInfo) -> str:
    """``curator stages NAME`` for a terminal."""
    out = [f"{info.name} ({info.kind} stage, {info.target})", ""]
    if info.summary:
        out.append(info.summary)
    if info.description:
        out += ["", info.description]
    out += ["", "Parameters:" if info.params else "Parameters: none"]
    width = max((len(r["name"]) for r in info.params), default=0)
    for r in info.params:
        if r["type"] == "group":
            out.append(f"  {r['name']:{width}}  (group) {r['help']}".rstrip())
            continue
        default = "required" if r["required"] else f"default {_cell(r['default'])}"
        extra = f"; {r['constraints']}" if r["constraints"] else ""
        out.append(f"  {r['name']:{width}}  {r['type']}, {default}{extra}")
        if r["help"]:
            out += textwrap.wrap(r["help"], 96, initial_indent=" " * (width + 6),
                                 subsequent_indent=" " * (width + 6))
    out += ["", "Example:", info.example]
    return "\n".join(out)
