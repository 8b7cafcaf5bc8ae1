"""Putting curator's exact twins of trafilatura functions in trafilatura's modules.

A twin (copies.py, link_density.py, resume.py) is argued equal to trafilatura's function for
one text of trafilatura only, so it goes in only when a digest of that text matches, and
benchmarks take trafilatura's own functions back inside a block to time the peer as it ships.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from types import ModuleType
from typing import Any


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Swap:
    """Functions of one trafilatura module (``module``) replaced by curator's
    (``replacements``: name -> function)."""

    def __init__(self, module: str, replacements: dict[str, Callable[..., Any]]) -> None:
        self.module, self.replacements = module, replacements
        #: trafilatura's own functions, kept when the twins go in.
        self.originals: dict[str, Any] = {}

    def target(self) -> ModuleType:
        return importlib.import_module(self.module)

    def installed(self) -> bool:
        mod = self.target()
        return all(getattr(mod, name) is f for name, f in self.replacements.items())

    def install(self, checked: Callable[[], bool]) -> bool:
        """Put the twins in when ``checked()`` (the digest test, run only when they are not
        in yet) says trafilatura is the text they were written for; True when they are in."""
        if self.installed():
            return True
        if not checked():
            return False
        mod = self.target()
        for name, f in self.replacements.items():
            self.originals.setdefault(name, getattr(mod, name))
            setattr(mod, name, f)
        return True

    @contextmanager
    def stock(self) -> Iterator[None]:
        """trafilatura's own functions inside the block."""
        mod = self.target()
        saved = {name: getattr(mod, name) for name in self.replacements}
        for name, value in saved.items():
            setattr(mod, name, self.originals.get(name, value))
        try:
            yield
        finally:
            for name, value in saved.items():
                setattr(mod, name, value)


@contextmanager
def stock_all(*swaps: Swap) -> Iterator[None]:
    """trafilatura's own functions of every one of ``swaps`` inside the block (a twin that
    trafilatura's modules imported by name is one :class:`Swap` per module)."""
    with ExitStack() as stack:
        for swap in swaps:
            stack.enter_context(swap.stock())
        yield
