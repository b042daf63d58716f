"""A chapter kernel's imports leave scipy.stats and scipy.cluster out (their import time), and seaborn still draws
a KDE (cumulative too) with scipy's gaussian_kde and a clustered heat map with scipy's clustering."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_setup_import_loads_no_scipy_stats_yet_seaborn_draws_kde_and_clustermap_with_scipy():
    code = textwrap.dedent("""
        import sys
        import matplotlib
        matplotlib.use("Agg")
        import numpy as np
        from contention_book.chapters.shared.notebook import sns
        assert "scipy.stats" not in sys.modules and "scipy.cluster" not in sys.modules, sorted(
            m for m in sys.modules if m.startswith("scipy"))
        x = np.random.default_rng(1).normal(size=200)
        ax = sns.kdeplot(x=x)
        ax = sns.kdeplot(x=x, cumulative=True)  # needs scipy's integrate_box_1d, as with scipy loaded up front
        from scipy.stats import gaussian_kde
        line = ax.get_lines()[-1]
        ys = line.get_ydata()
        assert 0.99 < ys[-1] <= 1.0 + 1e-9 and ys[0] < 0.01, (ys[0], ys[-1])
        import seaborn._statistics as st
        kde = st.gaussian_kde(x)
        assert type(kde) is gaussian_kde  # scipy's own estimator, not seaborn's vendored copy
        grid = sns.clustermap(np.random.default_rng(2).normal(size=(6, 4)))
        assert len(grid.dendrogram_row.reordered_ind) == 6
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout[-2000:] + proc.stderr[-3000:]
