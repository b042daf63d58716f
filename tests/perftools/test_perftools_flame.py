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


def test_static_svg_for_pages():
    import re
    import xml.dom.minidom

    from contention_book.perftools.flame import flame_svg

    p = load(FIX / "perf" / "postgres_update.perf-script.txt")
    f = flame_svg(p, title="postgres <UPDATE>", note="what it can see " * 30, width=500)
    xml.dom.minidom.parseString(f.svg)  # well-formed: names with < and & are escaped
    assert f.width == 500 and f'width="500" height="{f.height}"' in f.svg
    assert "postgres &lt;UPDATE&gt;" in f.svg and "<script" not in f.svg  # an <img> runs no script
    # every drawn box lies inside the picture, and no label is wider than its box allows
    boxes = re.findall(r'<g><title>[^<]*</title><rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', f.svg)
    assert len(boxes) > 10
    for x, w in boxes:
        assert float(x) >= 0 and float(x) + float(w) <= 500 + 0.01
    assert "postgres" in f.svg and "[kernel.kallsyms]" in f.svg  # the module legend
    assert abs(sum(f.self_shares.values()) - 1.0) < 1e-6  # every sample is some function's own
    empty = flame_svg(None, title="no stacks here")
    assert "<rect x=" not in empty.svg.replace('<rect width="100%"', "") and empty.self_shares == {}
