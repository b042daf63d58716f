"""The book build's speed work keeps what a page shows: kernels started ahead, figures cut from their drawing,
pages Sphinx need not re-read, and a build output without the kernels' own chatter."""
from __future__ import annotations

import io
import os
import stat
import time

import nbformat
import numpy as np
import pytest

from contention_book.harness import book


def _notebook(tmp_path, name: str, *cells: str):
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {name}")] + [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "notebooks" / f"98-{name}.ipynb")


def _outputs(path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return ["".join(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
            for c in nb.cells if c.cell_type == "code" for o in c.outputs]


@pytest.mark.slow
def test_a_kernel_started_ahead_runs_a_chapter_as_a_fresh_one_would(tmp_path, monkeypatch, capfd):
    """Same outputs and execution counts as papermill's own kernel; the warm imports are loaded but not among the
    notebook's names; no 'Kernel is running over TCP' line; the kernel's socket folder is private and removed."""
    _notebook(tmp_path, "probe", "import sys\nprint('contention_book.chapters.shared.notebook' in sys.modules)",
              "print(sorted(k for k in get_ipython().user_ns if k == 'contention_book'))", "21 * 2")
    monkeypatch.setenv("CONTENTION_BOOK_ROOT", str(tmp_path))
    fresh = book.execute("probe", {}, output=tmp_path / "fresh.ipynb")
    kernel = book.start_kernel()
    folder = os.path.dirname(kernel.ip)
    try:
        if os.name == "posix":
            assert kernel.transport == "ipc" and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        ahead = book.execute("probe", {}, output=tmp_path / "ahead.ipynb", kernel=kernel)
    finally:
        book.stop_kernel(kernel)
    assert _outputs(fresh) == ["False\n", "[]\n", "42"]
    assert _outputs(ahead) == ["True\n", "[]\n", "42"]  # imported ahead, yet no name the notebook did not make
    counts = [[c.execution_count for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code"]
              for p in (fresh, ahead)]
    assert counts[0] == counts[1]
    assert os.name != "posix" or not os.path.exists(folder)
    said = capfd.readouterr()
    assert "TCP" not in said.out + said.err and "KeyboardInterrupt" not in said.out + said.err


def test_a_page_rewritten_unchanged_keeps_its_time_and_a_changed_one_does_not(tmp_path):
    (tmp_path / "_build").mkdir()
    same, changed, built = tmp_path / "same.md", tmp_path / "changed.md", tmp_path / "_build" / "x.html"
    for f in (same, changed, built):
        f.write_text("one\n")
        os.utime(f, ns=(1_000_000_000, 1_000_000_000))
    before = book._sources(tmp_path)
    assert built not in before
    time.sleep(0.01)
    same.write_text("one\n")
    changed.write_text("two\n")
    book._keep_unchanged(before)
    assert same.stat().st_mtime_ns == 1_000_000_000
    assert changed.stat().st_mtime_ns > 1_000_000_000


def _figure(legend_outside: bool):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.6, 3.5), layout=None if legend_outside else "constrained")
    for k in range(3):
        ax.plot(np.arange(10), np.arange(10) ** (1 + k / 3), marker="o", label=f"series {k}")
    ax.set(title="A title", xlabel="threads", ylabel="rate")
    if legend_outside:  # drawn past the canvas's right edge: only savefig(bbox_inches="tight") shows it
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    else:
        fig.legend(loc="outside lower center", ncol=3)
    return fig, plt


def test_a_figure_cut_from_its_drawing_is_the_picture_savefig_makes():
    from PIL import Image

    from contention_book.chapters.shared.notebook import _drawn_png

    fig, plt = _figure(legend_outside=False)
    saved = io.BytesIO()
    fig.savefig(saved, format="png", bbox_inches="tight", facecolor=fig.get_facecolor(), dpi=fig.dpi)
    assert _drawn_png(fig) is None, "not drawn yet: nothing to cut"
    fig.canvas.draw()
    cut = _drawn_png(fig)
    plt.close(fig)
    a = np.asarray(Image.open(saved)).astype(int)[..., :3]
    b = np.asarray(Image.open(io.BytesIO(cut))).astype(int)[..., :3]
    # savefig's box hugs the artists' boxes, this one the ink: a few pixels apart, no more
    assert all(abs(sa - sb) <= 12 for sa, sb in zip(a.shape[:2], b.shape[:2])), (a.shape, b.shape)
    ink_a, ink_b = (np.abs(x - 255).max(axis=2) > 64 for x in (a, b))
    ya, xa = (np.flatnonzero(ink_a.any(axis=k)) for k in (1, 0))
    yb, xb = (np.flatnonzero(ink_b.any(axis=k)) for k in (1, 0))
    drawn = (b != 255).any(axis=2)  # any pixel not the background, however faint
    assert np.flatnonzero(drawn.any(axis=1))[[0, -1]].tolist() == [10, b.shape[0] - 11]  # 0.1 in round the ink
    assert np.flatnonzero(drawn.any(axis=0))[[0, -1]].tolist() == [10, b.shape[1] - 11]
    # the same picture: the two inks, aligned at their top left, match up to a sub-pixel shift
    a2 = a[ya[0]:ya[-1] + 1, xa[0]:xa[-1] + 1]
    b2 = b[yb[0]:yb[-1] + 1, xb[0]:xb[-1] + 1]
    h, w = min(a2.shape[0], b2.shape[0]) - 2, min(a2.shape[1], b2.shape[1]) - 2
    near = np.min([np.abs(a2[1:1 + h, 1:1 + w] - b2[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]).max(axis=2)
                   for dy in (-1, 0, 1) for dx in (-1, 0, 1)], axis=0)
    assert near.mean() < 1.0 and (near > 64).mean() < 0.002, (near.mean(), (near > 64).mean())
    assert ink_b.mean() > 0.02  # the picture is not blank (else nothing is tested)


def test_a_figure_drawing_outside_its_canvas_is_left_to_savefig():
    from contention_book.chapters.shared.notebook import _drawn_png

    fig, plt = _figure(legend_outside=True)
    fig.canvas.draw()
    assert _drawn_png(fig) is None
    plt.close(fig)


def test_a_figure_scaled_to_the_column_is_cut_from_its_drawing():
    """fit_width scales 12 × 3.6 in to 7.6 in wide: 227.99999… px high, drawn on 228 rows.  Such a figure is
    still cut from its drawing (two of chapter 5's figures were drawn a second time by savefig for this)."""
    from contention_book.chapters.shared.notebook import _drawn_png
    from contention_book.chapters.shared.style import fit_width

    fig, plt = _figure(legend_outside=False)
    fig.set_size_inches(12, 3.6)
    fit_width(fig)
    assert fig.bbox.height != round(fig.bbox.height)  # the case: a height that is not a whole number of pixels
    fig.canvas.draw()
    assert _drawn_png(fig) is not None
    plt.close(fig)


def test_lanes_are_planned_so_the_longest_lane_is_shortest():
    from contention_book.harness.book import LanePlan, plan_lanes

    seconds = {"a": 12.7, "b": 11.7, "c": 8.9, "d": 7.7, "e": 7.3}
    plan = plan_lanes(seconds, 2)
    # longest first, each to the lane that frees first, puts a and b apart and ends at 27.7 s (b+c+e); this, 24.4
    assert sorted(map(sorted, plan)) == [["a", "b"], ["c", "d", "e"]]
    assert max(sum(seconds[c] for c in lane) for lane in plan) == pytest.approx(24.4)
    assert LanePlan(plan, seconds).in_order() == ["c", "a", "d", "e", "b"]  # the order Sphinx waits for them
    unknown = plan_lanes({c: float("inf") for c in seconds}, 2)
    assert sorted(len(lane) for lane in unknown) == [2, 3]  # nothing known: spread by count
    assert plan_lanes({}, 2) == [[], []]


def test_a_lane_that_runs_out_takes_a_chapter_not_yet_started():
    from contention_book.harness.book import LanePlan

    lanes = LanePlan([["a"], ["b", "c", "d"]])
    assert lanes.next(0) == "a" and lanes.next(1) == "b"
    assert lanes.next(0) == "d"  # lane 0 is free while lane 1 runs b: it takes the last of lane 1's
    assert lanes.next(1) == "c" and lanes.has_more() is False
    assert lanes.next(0) is None and lanes.next(1) is None


def test_the_sphinx_speed_patches_still_apply_to_the_locked_versions():
    """They patch functions of pybtex and pydata-sphinx-theme; an upgrade that changes either must be seen."""
    from pybtex.plugin import find_plugin

    from contention_book.harness import sphinx_speed

    assert sphinx_speed.patch_pybtex() and sphinx_speed.patch_pybtex()  # applies, and only once
    assert find_plugin("pybtex.style.formatting", "plain").__name__ == "Style"  # the cached lookup still finds it
    assert sphinx_speed.patch_sidebar() and sphinx_speed.patch_sidebar()
    from pydata_sphinx_theme import utils

    seen = {}

    class Templates:
        def render(self, template, ctx):
            seen[template] = seen.get(template, 0) + 1
            return "" if template == "empty.html" else "<nav/>"

    class App:
        class builder:
            templates = Templates()

    kept = utils._update_and_remove_templates(App, {}, ["sbt-sidebar-nav.html", "empty.html", "x.html"], "sidebars")
    assert kept == ["sbt-sidebar-nav.html", "x.html"]  # an empty template is still dropped
    assert "sbt-sidebar-nav.html" not in seen and seen["x.html"] == 1  # the navigation is not rendered to check it


def test_a_label_past_the_canvas_under_constrained_layout_is_left_to_savefig():
    """Constrained layout cannot always fit a long axis label: its ink reaches the edge and runs past it, and the
    cut would lose the rest; one that fits is cut from the drawing."""
    from contention_book.chapters.shared.notebook import _drawn_png

    fig, plt = _figure(legend_outside=False)
    fig.legends[0].remove()  # the label alone runs past
    fig.set_size_inches(3, 2)
    fig.axes[0].set_xlabel("a label much too long to fit under an axis this narrow, whatever the layout does")
    fig.canvas.draw()
    assert _drawn_png(fig) is None
    fig.set_size_inches(7.6, 3.5)
    fig.axes[0].set_xlabel("threads")
    fig.canvas.draw()
    assert _drawn_png(fig) is not None
    plt.close(fig)
