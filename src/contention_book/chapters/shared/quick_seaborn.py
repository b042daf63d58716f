"""seaborn without scipy at its import: every chapter kernel imports seaborn, and seaborn imports scipy.stats and
scipy.cluster at its own import (about 1.2 s of CPU per kernel, more than pandas and matplotlib together), for
the kernel density estimate and the clustered heat map, which the book does not draw.

Here seaborn is imported with those two kept out, then given them back to load at their first use: its KDE gets
scipy's ``gaussian_kde`` and its clustered heat map scipy.cluster.hierarchy when one is first drawn, as with scipy
loaded up front.  scipy itself stays importable as usual for code that asks for it.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys

DEFERRED = ("scipy.stats", "scipy.cluster")


def _scipy_gaussian_kde(*args, **kwargs):
    from scipy.stats import gaussian_kde

    return gaussian_kde(*args, **kwargs)


class _OnFirstUse:
    """A module imported when one of its names is first looked up."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


def import_seaborn():
    """``import seaborn``, keeping scipy.stats and scipy.cluster out of it (see the module's words)."""
    if "seaborn" in sys.modules or any(name in sys.modules for name in DEFERRED):
        import seaborn  # already paid for (or scipy already loaded): nothing to save

        return seaborn
    for name in DEFERRED:
        sys.modules[name] = None  # an ImportError for seaborn's "try: from scipy... except ImportError"
    try:
        import seaborn
        import seaborn._statistics
        import seaborn.matrix
    finally:
        for name in DEFERRED:
            del sys.modules[name]
    if importlib.util.find_spec("scipy") is not None:  # scipy's own KDE and clustering, at their first use
        seaborn._statistics.gaussian_kde = _scipy_gaussian_kde
        seaborn._statistics._no_scipy = False
        seaborn.matrix.hierarchy = _OnFirstUse("scipy.cluster.hierarchy")
        seaborn.matrix._no_scipy = False
    return seaborn
