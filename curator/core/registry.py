"""Maps YAML stage names to stage classes, lazily.

Each stage family (a subpackage) declares ``STAGES = {"yaml_name": "module:Class"}`` in its
``__init__.py`` without importing anything heavy, so ``curator validate`` stays fast and a
missing optional dependency only matters to pipelines that use it. A YAML entry may also name
any class or decorated function by dotted path: ``my_pkg.filters:too_many_emojis``.
"""

from __future__ import annotations

import difflib
import importlib

from curator.base.errors import ConfigError
from curator.core import tracing
from curator.core.stage import Stage

#: Stage families, in the order ``curator stages`` lists them.
FAMILIES = [
    "curator.io",
    "curator.acquire",
    "curator.extract",
    "curator.filters",
    "curator.classifiers",
    "curator.dedup",
    "curator.tokenize",
    "curator.train",
    "curator.deploy",
]


def builtin_stages() -> dict[str, str]:
    """All built-in YAML names -> ``module:Class``."""
    out: dict[str, str] = {}
    for fam in FAMILIES:
        mod = importlib.import_module(fam)
        for name, target in getattr(mod, "STAGES", {}).items():
            if name in out:
                raise RuntimeError(f"stage name '{name}' defined twice ({out[name]}, {target})")
            out[name] = target
    return out


def is_builtin(cls: type) -> bool:
    """True when ``cls`` is the class registered under its YAML name by a curator family."""
    target = builtin_stages().get(getattr(cls, "name", ""))
    if not target:
        return False
    if ":" in target:
        mod, attr = target.split(":", 1)
    else:
        mod, _, attr = target.rpartition(".")
    return cls.__module__ == mod and cls.__qualname__ == attr


def load_object(target: str) -> object:
    """Import ``package.module:attr`` (or ``package.module.attr``)."""
    if ":" in target:
        mod_name, attr = target.split(":", 1)
    else:
        mod_name, _, attr = target.rpartition(".")
    tracing.install()  # what the module reads as it is imported is part of its stages' keys
    mod = importlib.import_module(mod_name)
    obj: object = mod
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def resolve(name: str) -> type[Stage]:
    """The stage class for a YAML name or a dotted path; ``ConfigError`` if there is none."""
    stages = builtin_stages()
    if name in stages:
        target = stages[name]
    elif ":" in name or "." in name:
        target = name
    else:
        close = difflib.get_close_matches(name, list(stages), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfigError(f"unknown stage '{name}'{hint}")
    try:
        obj = load_object(target)
    except ModuleNotFoundError as e:
        raise ConfigError(f"stage '{name}': cannot import '{target}': {e}") from e
    except AttributeError as e:
        raise ConfigError(f"stage '{name}': '{target}' not found: {e}") from e
    if not (isinstance(obj, type) and issubclass(obj, Stage)):
        raise ConfigError(
            f"stage '{name}': '{target}' is not a stage class (decorate a function with "
            "@curator.filter or @curator.modifier, or subclass a curator stage)"
        )
    return obj
