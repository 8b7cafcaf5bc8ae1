"""curator changes no other package's state at run time: inside a real ``curator run`` (the
command, so with its native-reads library preloaded and everything a run imports), no attribute
of another package's module or class holds a function curator defined. A user's code in the
same process (a custom stage, a notebook) therefore calls every library as it ships.

The check runs in the stage of a user module, after curator has read and filtered documents,
and looks at every module loaded then (one level into their classes): the shape every runtime
patch takes, whichever module it is in."""

from __future__ import annotations

import json

from tests.core.test_trust_adversarial import _pipe, _setup, curator

SCAN = """
import json
import os
import sys

from curator import filter

EXEMPT = {"sys", "builtins", "__main__"}  # the interpreter's own hooks are the application's
#: hooks the standard library documents as the application's to replace
HOOKS = {"warnings.showwarning"}


def _owner(value):
    func = getattr(value, "__func__", value)
    mod = getattr(func, "__module__", None)
    if callable(func) and isinstance(mod, str) and mod.split(".")[0] == "curator":
        return mod + "." + getattr(func, "__qualname__", "?")
    return None


def scan():
    found = []
    for name, mod in list(sys.modules.items()):
        top = name.split(".")[0]
        if mod is None or top in ("curator", "tests", "scanmod") or name in EXEMPT:
            continue
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        for key, value in items:
            owner = _owner(value)
            if owner and f"{name}.{key}" not in HOOKS:
                found.append(f"{name}.{key} = {owner}")
            if isinstance(value, type) and value.__module__ == name:
                for attr, member in list(vars(value).items()):
                    owner = _owner(member)
                    if owner:
                        found.append(f"{name}.{key}.{attr} = {owner}")
    return sorted(found)


_DONE = []


@filter
def scan_state(doc) -> bool:
    if not _DONE:
        _DONE.append(1)
        with open(os.environ["SCAN_OUT"], "w") as f:
            json.dump({"modules": len(sys.modules), "found": scan()}, f)
    return True
"""


def test_no_other_packages_module_or_class_holds_a_curator_function(tmp_path, monkeypatch):
    _setup(tmp_path, SCAN, "scanmod")
    _pipe(tmp_path, "scanmod:scan_state")
    out = tmp_path / "scan.json"
    monkeypatch.setenv("SCAN_OUT", str(out))
    curator(tmp_path, "run", "p.yaml")
    got = json.loads(out.read_text())
    assert got["modules"] > 200  # the run's imports were there to look at
    assert got["found"] == [], got["found"]
