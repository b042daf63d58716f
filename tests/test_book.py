"""The book as a reader meets it: notebooks run on recorded data, live runs, the HTML build, no leaks."""
import json
import re
import shutil
import subprocess
import sys

import nbformat
import pytest
import yaml

from contention_book.harness import book, book_pages
from contention_book.harness.recording import data_root, repo_root


def test_notebooks_are_committed_without_outputs_and_have_parameters():
    notebooks = book.notebooks()
    assert "ghost-cleanup" in notebooks
    for name, path in notebooks.items():
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), name
        tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{name}: exactly one cell tagged 'parameters'"
        for param in ("source", "recording", "engine", "target", "record_to"):
            assert re.search(rf"^{param}\s*=", tagged[0].source, re.M), f"{name}: parameter {param}"


def test_toc_lists_only_chapters_that_exist():
    toc = yaml.safe_load((repo_root() / "book" / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    sections = [s["file"] for part in toc["parts"] for c in part["chapters"] for s in c.get("sections", [])]
    chapters = [f for f in files if f.startswith("chapters/")]
    assert sections == [f"{f}-details" for f in chapters]  # each chapter's details page, right under it
    for f in files:
        if f.startswith("chapters/"):
            assert f.split("/")[1] in {p.stem for p in book.notebooks().values()}
        elif f not in book_pages.GENERATED:  # the Findings and Data pages are written by the builder
            assert (repo_root() / "book" / f"{f}.md").exists()


def glue_keys(nb_path):
    nb = json.loads(nb_path.read_text())
    keys = set()
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            keys.update(out.get("metadata", {}).get("scrapbook", {}).get("name", "") and
                        [out["metadata"]["scrapbook"]["name"]] or [])
    return keys


def referenced_glue(nb_path):
    nb = json.loads(nb_path.read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return {m.split(":")[0] for m in re.findall(r"\{glue:(?:text|figure|md)\}`([^`]+)`", text)} | \
           set(re.findall(r"```\{glue:figure\} (\S+)", text))


@pytest.mark.slow
def test_a_recording_copied_elsewhere_renders(tmp_path):
    from contention_book.chapters import ghost_cleanup as ghost

    copy = tmp_path / "colleague" / "their-run"
    shutil.copytree(data_root() / "ghost-cleanup" / ghost.SPEC.reference["postgres"], copy)
    out = book.execute("ghost-cleanup", {"recording": str(copy)}, output=tmp_path / "out.ipynb")
    shown = outputs_text(out) + outputs_text(book.details_path(out))  # the Recordings section is on the details page
    assert "`their-run`" in shown and "from outside this book's data" in shown  # the closing Recordings section
    assert str(tmp_path) not in shown  # and no path of this machine on the page


def outputs_text(path) -> str:
    """Everything an executed notebook shows (its outputs), not its source cells."""
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            parts.append(o.get("text", "") if isinstance(o.get("text"), str) else "".join(o.get("text", [])))
            for value in (o.get("data") or {}).values():
                parts.append(value if isinstance(value, str) else "".join(value) if isinstance(value, list) else "")
    return "\n".join(parts)


@pytest.mark.slow
def test_a_tampered_recording_gives_a_clear_error(tmp_path):
    from contention_book.chapters import ghost_cleanup as ghost

    copy = tmp_path / "tampered"
    shutil.copytree(data_root() / "ghost-cleanup" / ghost.SPEC.reference["postgres"], copy)
    with open(copy / "runs.csv", "a") as fh:
        fh.write("extra,0,1,1,1,1,1,0\n")
    with pytest.raises(SystemExit, match=r"RecordingError: recording .*tampered: file runs.csv has sha256"):
        book.execute("ghost-cleanup", {"recording": str(copy)}, output=tmp_path / "out.ipynb")


@pytest.mark.slow
@pytest.mark.live
def test_live_chapter_run_renders_and_leaks_no_password(pg, tmp_path, capfd):
    from conftest import KNOWN_PASSWORD, TEST_ENV_VAR

    record_to = tmp_path / "recordings"
    record_to.mkdir()
    out = book.execute("ghost-cleanup", {"source": "live", "engine": "postgres", "target": TEST_ENV_VAR,
                                         "updates": 2000, "repetitions": 1, "record_to": str(record_to)},
                       output=tmp_path / "live.ipynb")
    made = [p for p in record_to.iterdir() if p.is_dir()]
    assert len(made) == 1 and (made[0] / "manifest.json").exists()
    details = out.with_name(f"{out.stem}-details{out.suffix}")  # the builder splits a chapter into two pages
    pages = out.read_text() + (details.read_text() if details.exists() else "")
    assert f"`{made[0].name}`" in pages  # the chapter's Recordings section (details page) names the new recording
    captured = capfd.readouterr()
    outputs = {"stdout": captured.out, "stderr": captured.err, str(out): pages}
    for f in made[0].rglob("*"):
        if f.is_file():
            outputs[str(f)] = f.read_bytes().decode("utf-8", "replace")
    leaks = [where for where, text in outputs.items() if KNOWN_PASSWORD in text]
    assert not leaks, f"the password appears in: {leaks}"
    assert TEST_ENV_VAR in pages  # the *name* of the target is recorded, which is fine


@pytest.mark.slow
def test_the_book_builds_with_warnings_as_errors():
    proc = subprocess.run([sys.executable, "-m", "contention_book.harness.book", "build"], cwd=repo_root(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = repo_root() / "book" / "_build" / "html"
    # a chapter is its main page and its details page (the recordings it renders are named on the details page)
    chapter = "".join((html / "chapters" / f"03-ghost-cleanup{part}.html").read_text() for part in ("", "-details"))
    assert "Ghost cleanup under row versioning" in chapter
    # the recordings it renders, named by their manifests' titles (the ids stay in the Data page's links)
    assert "Ghost cleanup on SQL Server 15" in chapter and "Ghost cleanup: one row, its key updated" in chapter
    for name, notebook in book.notebooks().items():  # every chapter is a page, with its figures
        page = html / "chapters" / f"{notebook.stem}.html"
        assert page.exists(), f"{name}: no page {page}"
        text = page.read_text() + (html / "chapters" / f"{notebook.stem}-details.html").read_text()
        assert "<img" in text and "Run it yourself" in text, f"{name}: page without figures or run instructions"
        assert "Traceback" not in text, f"{name}: an error was rendered into the page"
    assert (html / "running-live.html").exists() and (html / "recordings.html").exists()


@pytest.mark.slow
@pytest.mark.parametrize("chapter", list(book.notebooks()))
def test_notebook_runs_on_recorded_data(chapter, tmp_path):
    """Every value a chapter's prose quotes was glued.  Checked on the book build's own execution (the test
    above, in the same work unit: tests/conftest.py), which is this one: the chapter on its recorded data, stamped
    with the inputs there are now; run alone, or after an edit, the chapter is executed here."""
    notebook = book.notebooks()[chapter]
    out = book.executed_path(notebook)
    if not book.up_to_date(chapter, notebook):
        out = book.execute(chapter, {}, output=tmp_path / f"{chapter}.ipynb")
    for page in (out, book.details_path(out)):  # the main page and the details page each quote their own glue
        missing = referenced_glue(page) - glue_keys(page)
        assert not missing, f"{page.name}: prose refers to values the notebook did not glue: {sorted(missing)}"


@pytest.mark.slow
def test_a_failed_chapter_leaves_a_warning_page_not_a_broken_copy(tmp_path, monkeypatch):
    """A half-executed notebook lacks glued values and would break every later build: it is set aside."""
    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A broken chapter"),
                nbformat.v4.new_code_cell("raise ValueError('deliberately broken')")]
    nbformat.write(nb, tmp_path / "notebooks" / "99-broken.ipynb")
    monkeypatch.setenv("CONTENTION_BOOK_ROOT", str(tmp_path))
    with pytest.raises(book.ChapterFailed, match="chapter broken failed in cell .*ValueError: deliberately broken"):
        book.execute("broken", {})
    page = nbformat.read(tmp_path / "book" / "chapters" / "99-broken.ipynb", as_version=4)
    assert len(page.cells) == 2 and "did not build:\n\n```text\nValueError: deliberately broken\n```" in \
        page.cells[0].source
    assert "details page <99-broken-details>" in page.cells[1].source  # the link the book's table of contents needs
    assert (tmp_path / "book" / "chapters" / "99-broken-details.ipynb").exists()
    assert page.cells[0].source.startswith("# A broken chapter")
    assert (tmp_path / "book" / "_failed" / "99-broken.ipynb").exists()


def test_a_failed_chapters_page_keeps_its_title_not_its_glued_opening(tmp_path, monkeypatch):
    """The page that stands in for a failed chapter has no glue: its values were never computed."""
    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A chapter\n\n*Source: an article.*\n\n```{admonition} In short\n"
                                              "It ran {glue:text}`speedup` times faster.\n```"),
                nbformat.v4.new_code_cell("raise ValueError('broken')")]
    nbformat.write(nb, tmp_path / "notebooks" / "98-glued.ipynb")
    monkeypatch.setenv("CONTENTION_BOOK_ROOT", str(tmp_path))
    out = tmp_path / "page.ipynb"
    book.placeholder("glued", tmp_path / "notebooks" / "98-glued.ipynb", out, "ValueError: broken")
    text = nbformat.read(out, as_version=4).cells[0].source
    assert text.startswith("# A chapter\n\n*Source: an article.*") and "{glue" not in text and "In short" not in text
