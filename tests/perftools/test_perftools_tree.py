"""Rebuilding a WPA tree copy: indent is not depth.

WPA draws an only child at its parent's indent and marks nodes that have
siblings with ``|- ``.  These tests render trees the way WPA does (random
shapes included), read them back and compare every node's stack and self
weight with the tree they came from."""

import random
from collections import Counter

import pytest

from contention_book.perftools import FormatError, load, top_functions
from contention_book.perftools.importers.wpa_tree import parse_indent


class Node:
    def __init__(self, name, self_weight, children=()):
        self.name, self.self_weight, self.children = name, self_weight, list(children)

    @property
    def weight(self):
        return self.self_weight + sum(c.weight for c in self.children)


def render(root: Node, *, guide: str = "|    ", lead: str = "  ", process: str = "p.exe (1)") -> list[tuple[str, str, float]]:
    """Rows (process, stack cell, weight) as WPA copies them."""
    rows = [(process, "", root.weight), ("", "[Root]", root.weight)]

    def walk(node, level, marked):
        if marked:
            rows.append(("", lead + guide * (level - 1) + "|- " + node.name, node.weight))
        else:
            rows.append(("", lead + guide * level + node.name, node.weight))
        kids(node, level)

    def kids(node, level):
        if len(node.children) == 1:
            walk(node.children[0], level, False)
        else:
            for c in node.children:
                walk(c, level + 1, True)

    kids(root, 0)
    return rows


def to_csv(rows, delim=",") -> str:
    lines = [delim.join(["Line #", "Process", "Stack", "Weight (in view) (ms)"])]
    for i, (p, s, w) in enumerate(rows, 1):
        lines.append(delim.join([str(i * 3), p, s, f"{w:.6f}"]))  # gaps in Line #
    return "\n".join(lines) + "\n"


def expected(root: Node) -> Counter:
    out = Counter()

    def walk(node, path):
        path = path + (node.name,)
        if node.self_weight:
            out[path] += node.self_weight
        for c in node.children:
            walk(c, path)

    for c in root.children:
        walk(c, ())
    return out


def parsed(profile) -> Counter:
    out = Counter()
    for sid, w in zip(profile.samples["stack_id"], profile.samples["weight"]):
        out[tuple(profile.stack_names(int(sid)))] += w
    return out


def random_tree(rng: random.Random, depth: int = 0, counter=None) -> Node:
    counter = counter if counter is not None else [0]
    counter[0] += 1
    node = Node(f"m{rng.randint(0, 3)}.dll!f{counter[0]}", rng.choice([0, 0, 1, 2, 5]))
    if depth < 9:
        r = rng.random()
        n = 1 if r < 0.45 else (0 if r < 0.6 else rng.randint(2, 4))
        node.children = [random_tree(rng, depth + 1, counter) for _ in range(n)]
    if not node.children and not node.self_weight:
        node.self_weight = 1
    return node


def write(tmp_path, text, name="tree.csv"):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return f


def test_parse_indent():
    assert parse_indent("[Root]") == (0, False, "[Root]")
    assert parse_indent("  |- a.dll!f") == (2, True, "a.dll!f")
    assert parse_indent("  |    |- a.dll!f") == (7, True, "a.dll!f")
    assert parse_indent("  |    a.dll!f") == (7, False, "a.dll!f")
    assert parse_indent("  |    |  ") is None


def test_single_child_chain_keeps_its_indent(tmp_path):
    # a -> b -> c is a chain (one indent), c has two children
    root = Node("[Root]", 0, [Node("a!a", 0, [Node("a!b", 0, [Node("a!c", 1, [Node("a!d", 2), Node("a!e", 3)])])])])
    rows = render(root)
    cells = [r[1] for r in rows[2:]]
    assert cells == ["  a!a", "  a!b", "  a!c", "  |- a!d", "  |- a!e"]  # same indent, depths 1..3
    p = load(write(tmp_path, to_csv(rows)))
    assert parsed(p) == Counter({("a!a", "a!b", "a!c"): 1, ("a!a", "a!b", "a!c", "a!d"): 2, ("a!a", "a!b", "a!c", "a!e"): 3})


def test_sibling_after_deep_chain_returns_to_its_parent(tmp_path):
    text = (
        "Stack,Weight\n"
        "[Root],10\n"
        "  |- x!top1,7\n"
        "  |    x!only,7\n"  # only child of top1
        "  |    |- x!deep1,4\n"
        "  |    |    x!deeper,4\n"  # only child of deep1
        "  |    |    x!deepest,4\n"  # only child of deeper (same indent!)
        "  |    |- x!deep2,3\n"  # sibling of deep1, not of deepest
        "  |- x!top2,3\n"  # sibling of top1
    )
    p = load(write(tmp_path, text))
    assert parsed(p) == Counter({
        ("x!top1", "x!only", "x!deep1", "x!deeper", "x!deepest"): 4,
        ("x!top1", "x!only", "x!deep2"): 3,
        ("x!top2",): 3,
    })


def test_collapsed_node_and_line_gaps(tmp_path):
    # Line # jumps where a collapsed node hides its children: its weight is its own
    text = "Line #,Stack,Count,Weight\n1,[Root],9,9\n2,  |- a!f,6,6\n9,  |- a!g,3,3\n"
    p = load(write(tmp_path, text))
    assert parsed(p) == Counter({("a!f",): 6, ("a!g",): 3})


def test_self_weight_of_inner_nodes(tmp_path):
    text = "Stack,Weight\n[Root],10\n  a!main,10\n  |- a!work,6\n  |- a!idle,1\n"
    p = load(write(tmp_path, text))
    t = top_functions(p)
    assert t.set_index("function").loc["a!main", "exclusive"] == pytest.approx(3.0)
    assert t.set_index("function").loc["a!main", "inclusive"] == pytest.approx(10.0)


def test_root_self_weight_becomes_no_stack(tmp_path):
    text = "Stack,Weight\n[Root],10\n  |- a!f,6\n  |- a!g,3\n"
    p = load(write(tmp_path, text))
    assert parsed(p)[("n/a",)] == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(40))
def test_random_trees_round_trip(tmp_path, seed):
    rng = random.Random(seed)
    root = Node("[Root]", 0, [random_tree(rng) for _ in range(rng.randint(1, 3))])
    guide = rng.choice(["|    ", "|  ", "| "])
    delim = rng.choice([",", "\t"])
    p = load(write(tmp_path, to_csv(render(root, guide=guide), delim)), format="wpa_tree")
    assert parsed(p) == expected(root)
    assert p.total_weight == pytest.approx(root.weight)


def test_two_processes_two_trees(tmp_path):
    a = Node("[Root]", 0, [Node("a!x", 2), Node("a!y", 1)])
    b = Node("[Root]", 0, [Node("b!z", 4)])
    rows = render(a, process="a.exe (1)") + render(b, process="b.exe (2)")
    p = load(write(tmp_path, to_csv(rows)))
    by = p.samples.groupby("process", observed=True)["weight"].sum()
    assert by.to_dict() == {"a.exe (1)": 3.0, "b.exe (2)": 4.0}


def test_misaligned_sibling_is_an_error(tmp_path):
    # g and h are both children of f, but h's marker is one column left of g's
    text = "Stack,Weight\n[Root],10\n  |- a!f,6\n  |    |- a!g,3\n  |   |- a!h,2\n  |- a!k,4\n"
    with pytest.raises(FormatError) as e:
        load(write(tmp_path, text))
    assert e.value.line == 5 and "like its siblings" in str(e.value)
