"""What a page asks of one view many times, computed once while the page renders.

Why: a chapter's page asks for its key numbers and verdicts in its opening box, its prose, its claims table and
its details page, each time from the same loaded view; recomputing them was a sixth of a chapter's own time in a
book build.  A view does not change while its page renders, so :func:`per_view` keeps each result for that view
object (a copy is handed out, so a caller that edits it changes nothing kept).  The results are kept by the
object's identity, not in its attributes: a view copied with ``copy.copy`` (one repetition's view) must not
inherit its parent's results.  Outside a page (tests, scripts, which may change a view between two calls)
nothing is kept: :func:`rendering` turns it on, and ``notebook.start`` calls it.
"""
from __future__ import annotations

import copy
import functools
import weakref

_on = False
_kept: dict[int, dict] = {}  # id(view) -> {call: result}; an entry goes when its view is collected


def rendering(on: bool = True) -> None:
    """Keep results from now on (a page renders), or stop keeping them and forget what was kept."""
    global _on
    _on = on
    if not on:
        _kept.clear()


def per_view(fn):
    """Cache ``fn(view, *args)`` for ``view`` while a page renders; arguments that cannot be hashed skip it."""
    @functools.wraps(fn)
    def wrapper(view, *args, **kwargs):
        if not _on:
            return fn(view, *args, **kwargs)
        key = (fn.__module__, fn.__qualname__, args, tuple(sorted(kwargs.items())))
        try:
            hash(key)
        except TypeError:
            return fn(view, *args, **kwargs)
        kept = _kept.get(id(view))
        if kept is None:
            try:
                weakref.finalize(view, _kept.pop, id(view), None)  # the id may be reused once the view is gone
            except TypeError:  # no weak reference to this object: nothing can say when its id is free again
                return fn(view, *args, **kwargs)
            kept = _kept[id(view)] = {}
        if key not in kept:
            kept[key] = fn(view, *args, **kwargs)
        return copy.copy(kept[key]) if not hasattr(kept[key], "copy") else kept[key].copy()
    return wrapper
