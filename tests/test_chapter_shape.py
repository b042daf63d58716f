"""Every chapter has one shape, and the five notebooks differ only in prose, figures and their own cells."""
import ast
import re

import nbformat
import pytest

from contention_book.chapters import PACKAGES, package
from contention_book.harness import book
from contention_book.harness.chapter_registry import runners
from contention_book.harness.recording import repo_root
from contention_book.harness.spec import ChapterSpec

FILES = ("spec.py", "recordings.py", "tables.py", "claims.py", "finding.py", "model.py", "figures.py", "diagrams.py",
         "published.py")
SHARED_PARAMS = ("source", "recording", "engine", "target", "record_to", "allow_server_changes", "stacks")
CHAPTERS = sorted(PACKAGES)


def chapter_dir(chapter):
    return repo_root() / "src" / "contention_book" / "chapters" / PACKAGES[chapter]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_package_has_the_shape(chapter):
    folder = chapter_dir(chapter)
    missing = [f for f in FILES if not (folder / f).is_file()]
    assert not missing, f"{chapter}: missing {missing}"
    spec = package(chapter, "spec").SPEC
    assert isinstance(spec, ChapterSpec) and spec.chapter == chapter
    assert set(runners(chapter)) == set(spec.engines), f"{chapter}: a runner per engine"
    for engine in spec.engines:
        if engine != "native":
            assert (folder / f"run_{engine}.py").is_file(), f"{chapter}: run_{engine}.py"
    pkg = package(chapter)
    for name in ("SPEC", "load_shown", "key_numbers", "verdicts", "header_note"):
        assert hasattr(pkg, name), f"{chapter}: __init__ exports {name}"


def test_every_chapter_has_the_same_modules():
    """A newcomer who opens two chapters sees the same rooms: the same module names, run_<engine> files aside."""
    rooms = {c: sorted(p.name for p in chapter_dir(c).glob("*.py") if not p.name.startswith("run_"))
             for c in CHAPTERS}
    first = rooms[CHAPTERS[0]]
    assert all(r == first for r in rooms.values()), rooms


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_runners_take_only_the_context(chapter):
    """No **kwargs that would swallow a misspelled parameter; one argument, the RunContext."""
    import inspect

    for engine, fn in runners(chapter).items():
        sig = inspect.signature(fn)
        assert len(sig.parameters) == 1, f"{chapter}/{engine}: {sig}"
        assert not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_chapter_imports_another(chapter):
    others = {p for c, p in PACKAGES.items() if c != chapter}
    for path in chapter_dir(chapter).rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = set(name.split("."))
                assert not parts & others, f"{path} imports {name}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_layout_paths_follow_the_folder_rules_and_live_code_uses_them(chapter):
    spec = package(chapter, "spec").SPEC
    assert "runs" in spec.layout
    for path in chapter_dir(chapter).glob("run_*.py"):
        text = path.read_text()
        literal = re.findall(r"[\"'](?:dmv|samples|results|published)/[\w./-]+\.csv[\"']", text)
        assert not literal, f"{path.name} writes {literal}: take paths from SPEC.layout"


def _cells(chapter):
    nb = nbformat.read(book.notebooks()[chapter], as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return code[0], code[1]


def test_notebooks_share_their_parameter_cell_and_setup_cell():
    firsts, setups = {}, {}
    for chapter in CHAPTERS:
        params, setup = _cells(chapter)
        assert "parameters" in params.metadata.get("tags", [])
        names = re.findall(r"^(\w+)\s*=", params.source, re.M)
        assert tuple(names[:len(SHARED_PARAMS)]) == SHARED_PARAMS, f"{chapter}: {names}"
        firsts[chapter] = [line.replace(chapter, "<chapter>") for line in params.source.splitlines()
                           if line.split("=")[0].strip() in SHARED_PARAMS and not line.startswith("engine")]
        setups[chapter] = setup.source.replace(PACKAGES[chapter], "<pkg>")
        spec = package(chapter, "spec").SPEC
        for p in spec.params:  # every live parameter is a notebook parameter of the same name
            assert p.name in names, f"{chapter}: live parameter {p.name} is not in the parameters cell"
        assert "start(chapter, globals())" in setup.source
    assert len({tuple(v) for v in firsts.values()}) == 1, firsts
    assert len(set(setups.values())) == 1, setups


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_engine_has_its_run_function(chapter):
    import importlib

    spec = package(chapter, "spec").SPEC
    for engine in spec.engines:
        module = importlib.import_module(f"contention_book.chapters.{PACKAGES[chapter]}.run_{engine}")
        assert callable(getattr(module, f"run_{engine}", None)), f"{chapter}: run_{engine}.run_{engine}"
