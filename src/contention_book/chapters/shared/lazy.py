"""A chapter's figures and diagrams, imported on first use.

Why: both import matplotlib (about 0.6 s of CPU), and a live run, which imports the chapter for its spec and
runners, draws nothing.  A chapter's ``__init__`` sets ``__getattr__ = drawing_modules(__name__)``:
``chapter.figures`` and ``from <chapter> import figures`` still work, as PEP 562 lets a module's ``__getattr__``
answer for a name it does not hold yet.
"""
from __future__ import annotations

import importlib
from typing import Callable

DRAWING = ("diagrams", "figures")


def drawing_modules(package: str) -> Callable[[str], object]:
    """A module ``__getattr__`` that imports ``<package>.diagrams`` or ``.figures`` when first asked for."""
    def __getattr__(name: str):
        if name in DRAWING:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
