"""A Sphinx extension: two costs of the book's theme and bibliography paid once, not on every page.

Both are on the build's last stretch (Sphinx writing the pages after the last chapter), where nothing else runs:

- pybtex finds its style plugins by scanning every installed package's entry points, once per citation (31 of
  them, about 0.4 s a build).  The scan's answer is kept for the build: packages do not change during it.
- pydata-sphinx-theme renders each sidebar template to see whether it is empty, then renders it again for the
  page.  sphinx-book-theme's navigation (the whole table of contents) is never empty; the theme already skips the
  check for its own navigation templates, and this adds the book theme's to that list.

Each patches a function of the locked versions (requirements.lock) and leaves it alone if it has changed;
``tests/test_book_build.py`` fails when a patch no longer applies.
"""
from __future__ import annotations

import functools
import inspect

SIDEBAR_NAV = "sbt-sidebar-nav.html"


def patch_pybtex() -> bool:
    """Keep pybtex's entry-point lookups for the build; False if pybtex no longer looks them up this way."""
    try:
        import pybtex.plugin as plugin
    except ImportError:
        return False
    lookup = getattr(plugin, "entry_points", None)
    if lookup is None or getattr(lookup, "_book_cached", False):
        return lookup is not None

    @functools.lru_cache(maxsize=None)
    def cached(group: str, name: str) -> tuple:
        return tuple(lookup(group=group, name=name))

    def entry_points(*, group: str, name: str):
        return cached(group, name)

    entry_points._book_cached = True
    plugin.entry_points = entry_points
    return True


def patch_sidebar() -> bool:
    """Skip the empty-check render of the book theme's navigation; False if the theme's function changed."""
    try:
        from pydata_sphinx_theme import utils
    except ImportError:
        return False
    original = getattr(utils, "_update_and_remove_templates", None)
    if original is None or "templates_skip_empty_check" not in inspect.signature(original).parameters:
        return False
    if getattr(original, "_book_patched", False):
        return True

    @functools.wraps(original)
    def update(app, context, templates, section, templates_skip_empty_check=None):
        return original(app, context, templates, section, [*(templates_skip_empty_check or []), SIDEBAR_NAV])

    update._book_patched = True
    utils._update_and_remove_templates = update
    return True


def _before_reading(app, env, docnames) -> None:  # noqa: ARG001 - Sphinx's signature
    if docnames:  # a build with nothing to read need not import pybtex (a third of a second)
        patch_pybtex()


def setup(app):
    app.connect("env-before-read-docs", _before_reading)
    patch_sidebar()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
