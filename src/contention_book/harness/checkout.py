"""Where this checkout is, without loading the recording machinery (pandas, jsonschema).

A live run takes its locks before anything heavy is imported, so a second run is refused in a
fraction of a second; the locks' default home is in the checkout (``.cache``).  The rule is
the one place it is written (the recording machinery and the book import it from here).
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "CONTENTION_BOOK_ROOT"


def repo_root() -> Path:
    """The checkout this package runs from (override with CONTENTION_BOOK_ROOT)."""
    env = os.environ.get(ROOT_ENV)
    return Path(env).resolve() if env else Path(__file__).resolve().parents[3]


def data_root() -> Path:
    """Where the book's recordings live: ``data/`` in the checkout."""
    return repo_root() / "data"
