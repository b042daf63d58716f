"""Flame graph / icicle figures and the SVG."""

from pathlib import Path

from matplotlib.figure import Figure

from contention_book.perftools import build_tree, flame_figure, load, profile_from_records, write_svg
from contention_book.perftools.flame import _layout

FIX = Path(__file__).parent / "fixtures"


def test_flame_figure_png(tmp_path):
    p = load(FIX / "perf" / "postgres_update.perf-script.txt")
    fig = flame_figure(p, title="postgres UPDATE")
    assert isinstance(fig, Figure)
    out = tmp_path / "flame.png"
    fig.savefig(out, dpi=80)
    assert out.stat().st_size > 0
    legend = fig.legends[0]
    labels = [t.get_text() for t in legend.get_texts()]
    assert "postgres" in labels and "[kernel.kallsyms]" in labels


def test_icicle_and_process_root(tmp_path):
    p = load(FIX / "wpa" / "logcache_before.csv")
    fig = flame_figure(p, icicle=True, process_root=True, min_fraction=0.05)
    fig.savefig(tmp_path / "icicle.png", dpi=60)
    assert (tmp_path / "icicle.png").stat().st_size > 0
    ax = fig.axes[0]
    assert ax.get_ylim()[1] <= 0.5  # hangs from the top


def test_tree_and_small_frames_merged():
    recs = [(["m!main", "m!big"], 90)] + [(["m!main", f"m!tiny{i}"], 1) for i in range(10)]
    p = profile_from_records(recs)
    root = build_tree(p)
    assert root.weight == 100 and root.children[0].weight == 100
    boxes = _layout(root, 0.05 * root.weight, None)
    names = [b[3].name for b in boxes]
    assert "10 smaller frames" in names  # ten 1% boxes merged into one grey box
    assert not any(n.startswith("m!tiny") for n in names)
    boxes = _layout(root, 0.5 * root.weight, None)
    assert [b[3].name for b in boxes] == ["all", "m!main", "m!big"]  # merged box too small


def test_svg_has_titles_and_zoom(tmp_path):
    p = load(FIX / "wpa" / "tree_en_us.csv")
    out = tmp_path / "f.svg"
    write_svg(p, out, title="tree <fixture>")
    text = out.read_text()
    assert text.startswith("<svg") and text.rstrip().endswith("</svg>")
    assert "<title>sqlmin.dll!LogAppendContext::BackOff (239, 23.90%)</title>" in text
    assert "onclick=\"z(this)\"" in text and "tree &lt;fixture&gt;" in text
    import xml.dom.minidom

    xml.dom.minidom.parseString(text)  # well-formed
