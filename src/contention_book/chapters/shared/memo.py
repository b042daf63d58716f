"""What a page asks of one view many times, computed once while the page renders.

Why: a chapter's page asks for its key numbers and verdicts in its opening box, its prose, its claims table and
its details page, each time from the same loaded view; recomputing them was a third of a chapter's own time
in a book build.  A view does not change while its page renders, so :func:`per_view` keeps each result on the
view object (a copy is handed out, so a caller that edits it changes nothing kept).  Outside a page (tests,
scripts, which may change a view between two calls) nothing is kept: :func:`rendering` turns it on, and
``notebook.start`` calls it.
"""
from __future__ import annotations

import copy
import functools

_on = False


def rendering(on: bool = True) -> None:
    """Keep results from now on (a page renders), or stop keeping them."""
    global _on
    _on = on


def per_view(fn):
    """Cache ``fn(view, *args)`` on ``view`` while a page renders; arguments that cannot be hashed skip it."""
    @functools.wraps(fn)
    def wrapper(view, *args, **kwargs):
        store = getattr(view, "__dict__", None)
        if not _on or store is None:
            return fn(view, *args, **kwargs)
        key = (fn.__module__, fn.__qualname__, args, tuple(sorted(kwargs.items())))
        try:
            hash(key)
        except TypeError:
            return fn(view, *args, **kwargs)
        kept = store.setdefault("_per_view", {})
        if key not in kept:
            kept[key] = fn(view, *args, **kwargs)
        return copy.copy(kept[key]) if not hasattr(kept[key], "copy") else kept[key].copy()
    return wrapper
