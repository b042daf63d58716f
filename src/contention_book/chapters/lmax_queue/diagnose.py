"""The chapter's "On your own server" queries (see chapters.shared.diagnose)."""
from __future__ import annotations

from ..shared import diagnose as _shared
from ..shared.diagnose import ENGINES, LANG, Query  # noqa: F401
from .spec import CHAPTER


def queries(engine: str) -> list[Query]:
    return _shared.queries(CHAPTER, engine)


def files(engine: str):
    return [q.path for q in queries(engine)]


def markdown(engine: str) -> str:
    return _shared.markdown(CHAPTER, engine)
