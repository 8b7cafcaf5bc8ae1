"""Regenerate the parameter tables in docs/ from the stages' parameter models.

* ``docs/stages.md``: every built-in stage, its summary, parameter table and a YAML example.
* In any docs page, a block ``<!-- params: NAME -->`` ... ``<!-- /params -->`` holds NAME's
  table; it is rewritten here, so edit the field docstrings in the stage's ``Params`` instead.

``python scripts/sync_param_tables.py`` rewrites them; ``--check`` only reports what differs
(exit 1), which tests/core/test_params_model.py runs.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curator.core.catalog import markdown_table, stage_info  # noqa: E402
from curator.core.registry import FAMILIES, builtin_stages, resolve  # noqa: E402

BLOCK = re.compile(r"(<!-- params: ([a-z0-9_]+) -->\n)(.*?)(<!-- /params -->)", re.S)


def stages_page() -> str:
    stages = builtin_stages()
    out = ["# Stage reference", "",
           "Generated from each stage's parameter model by `scripts/sync_param_tables.py` "
           "(do not edit by hand: edit the field docstrings of the stage's `Params`). "
           "`curator stages NAME` prints the same; `--json` for programs. The family pages "
           "(docs/acquire.md, filters.md, dedup.md...) explain when to use each stage.", ""]
    by_family: dict[str, list[str]] = {}
    for name, target in stages.items():
        by_family.setdefault(target.split(":")[0].rsplit(".", 1)[0], []).append(name)
    for fam in FAMILIES:
        names = by_family.get(fam, [])
        if not names:
            continue
        out += [f"## {fam.split('.')[-1]}", ""]
        for name in names:
            info = stage_info(name, resolve(name), stages[name])
            path = info.target.split(":")[0].replace(".", "/") + ".py"
            out += [f"### `{name}`", "", f"{info.summary} ({info.kind} stage, `{path}`)", "",
                    markdown_table(info), "", "```yaml", info.example, "```", ""]
    return "\n".join(out).rstrip() + "\n"


def sync(check: bool) -> list[str]:
    """Rewrite (or with ``check`` compare) every generated part; returns the files that differ."""
    stages = builtin_stages()
    changed = []
    want = {ROOT / "docs" / "stages.md": stages_page()}
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name == "stages.md":
            continue
        text = page.read_text()

        def table(m: re.Match[str]) -> str:
            name = m.group(2)
            info = stage_info(name, resolve(name), stages.get(name, ""))
            return m.group(1) + markdown_table(info) + "\n" + m.group(4)

        new = BLOCK.sub(table, text)
        if new != text:
            want[page] = new
    for path, text in want.items():
        if not path.exists() or path.read_text() != text:
            changed.append(str(path.relative_to(ROOT)))
            if not check:
                path.write_text(text)
    return changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="report differences, write nothing")
    args = ap.parse_args()
    changed = sync(args.check)
    for c in changed:
        print(("out of date: " if args.check else "rewrote: ") + c)
    return 1 if (changed and args.check) else 0


if __name__ == "__main__":
    raise SystemExit(main())
