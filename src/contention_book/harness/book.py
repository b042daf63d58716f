"""Build the book: papermill executes the chapters, Jupyter Book renders them.

    python -m contention_book.harness.book build                 # every chapter on its recorded data, then the HTML
    python -m contention_book.harness.book chapter ghost-cleanup --source live --engine postgres
        (the live run is its own process, ``python -m contention_book.run``; the chapter then renders its recording)
    python -m contention_book.harness.book chapter ghost-cleanup --recording /some/recording/dir

Chapters are the notebooks ``notebooks/NN-<chapter>.ipynb``; executed copies
go to ``book/chapters/`` (never committed) and the HTML to
``book/_build/html``.  Warnings fail the build.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import json
import os
import re
import shlex
import signal
import sys
import tempfile
import time

if __name__ == "__main__" and sys.argv[1:2] == ["from-make"]:
    # make chapter: Ctrl-C while Python loads ends this process quietly (nothing has started yet); a live run's
    # launcher installs its own handlers (forwarding to the runner) before it starts the runner
    signal.signal(signal.SIGINT, signal.SIG_DFL)
from pathlib import Path
from typing import Any

from .checkout import repo_root  # not .recording: its pandas would delay the kernels' start by most of a second
from .params import ParameterError, split_assignments
from .targets import TargetError, check_target_name
from .redaction import redact

RECORDED_TIMEOUT_S = 600
PARALLEL_CHAPTERS = 2  # chapters execute two at a time (each is one kernel; the machine has two cores)


def chapter_inputs(chapter: str, notebook: Path) -> list[Path]:
    """What a chapter's executed page depends on: its notebook, its recordings, and the code it imports (its own
    package, the shared chapter pieces, the harness and perftools)."""
    root = repo_root()
    src = root / "src" / "contention_book"
    package = chapter.replace("-", "_")
    trees = [root / "data" / chapter, src / "chapters" / package, src / "chapters" / "shared", src / "harness",
             src / "perftools"]
    files = [notebook]
    for tree in trees:
        files += sorted(p for p in tree.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    files += [src / "chapters" / "__init__.py", src / "__init__.py"]
    return [f for f in files if f.exists()]


def content_stamp(chapter: str, notebook: Path) -> str:
    """A SHA-256 over the names and contents of every input of a chapter."""
    import hashlib

    h = hashlib.sha256()
    root = repo_root()
    for f in chapter_inputs(chapter, notebook):
        h.update(str(f.relative_to(root)).encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def stamp_path(notebook: Path) -> Path:
    return repo_root() / "book" / "chapters" / ".stamps" / f"{notebook.stem}.sha256"


def up_to_date(chapter: str, notebook: Path) -> bool:
    """True when the executed copy exists and was made from exactly the inputs there are now."""
    stamp = stamp_path(notebook)
    return (executed_path(notebook).exists() and stamp.exists()
            and stamp.read_text().strip() == content_stamp(chapter, notebook))


def plan_lanes(seconds: dict[str, float], lanes: int) -> list[list[str]]:
    """Chapters shared among ``lanes`` so that the longest lane is as short as it can be, from each chapter's
    last time (``seconds``; unknown: infinite, so those are spread by count).  Every split is tried (five
    chapters in two lanes: 32); the greedy longest-first rule put the two longest chapters in different lanes,
    and left one lane idle for a quarter of the build while the other ran a third chapter.  Each lane runs
    its longest chapter first."""
    names = sorted(seconds, key=lambda c: (-seconds[c], c))
    if not names:
        return [[] for _ in range(lanes)]
    known = [s for s in seconds.values() if s != float("inf")]
    cost = {c: seconds[c] if seconds[c] != float("inf") else (max(known) if known else 1.0) for c in names}
    if len(names) > 12:  # too many splits to try: longest first, each to the lane that frees first
        plan = [[] for _ in range(lanes)]
        for c in names:
            min(plan, key=lambda p: sum(cost[x] for x in p)).append(c)
        return plan
    best, best_key = None, None
    for assignment in itertools.product(range(lanes), repeat=len(names)):
        plan = [[c for c, a in zip(names, assignment) if a == lane] for lane in range(lanes)]
        key = (max(sum(cost[c] for c in p) for p in plan), [len(p) for p in plan])
        if best_key is None or key < best_key:
            best, best_key = plan, key
    return best


class LanePlan:
    """The lanes' chapters (:func:`plan_lanes`); a lane that runs out takes a chapter another lane has not
    started yet, so a chapter slower than its last time does not leave a CPU idle."""

    def __init__(self, plan: list[list[str]], seconds: dict[str, float] | None = None) -> None:
        import threading

        self._plan, self._lock = [list(p) for p in plan], threading.Lock()
        self._seconds = seconds or {}

    def in_order(self) -> list[str]:
        """Every chapter, in the order it is expected to finish (by the lanes' last times added up)."""
        finish = {}
        for lane in self._plan:
            at = 0.0
            for c in lane:
                at += min(self._seconds.get(c, 1.0), 1e6)
                finish[c] = at
        return sorted(finish, key=lambda c: (finish[c], c))

    def has_more(self) -> bool:
        with self._lock:
            return any(self._plan)

    def next(self, lane: int) -> str | None:
        with self._lock:
            if self._plan[lane]:
                return self._plan[lane].pop(0)
            others = [p for p in self._plan if p]
            return max(others, key=len).pop() if others else None


def execute_if_changed(chapter: str, *, force: bool = False, kernel=None) -> bool:
    """Execute a chapter's notebook unless its stamp says nothing it depends on changed; True if executed."""
    nb = notebooks()[chapter]
    if not force and up_to_date(chapter, nb):
        print(f"[book] {chapter}: unchanged, not re-executed", flush=True)
        return False
    stamp = stamp_path(nb)
    stamp.unlink(missing_ok=True)
    before = content_stamp(chapter, nb)
    execute(chapter, {}, kernel=kernel)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(before + "\n")
    return True


def last_duration(notebook: Path) -> float:
    """Seconds the chapter's last execution took (papermill's record in the executed copy); infinite if unknown."""
    import json

    try:
        meta = json.loads(executed_path(notebook).read_text(encoding="utf-8"))["metadata"]
        return float(meta["papermill"]["duration"])
    except (OSError, ValueError, KeyError, TypeError):
        return float("inf")


def notebooks() -> dict[str, Path]:
    """chapter name -> source notebook, from the file names ``NN-<chapter>.ipynb``."""
    out = {}
    for path in sorted((repo_root() / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        out[re.sub(r"^\d\d-", "", path.stem)] = path
    return out


def executed_path(notebook: Path) -> Path:
    return repo_root() / "book" / "chapters" / notebook.name


DETAILS_TAG = "details"  # a notebook cell with this tag goes to the chapter's details page, not its main page
HIDDEN_INPUT = ("remove-input", "remove-cell", "hide-input")


def details_path(page: Path) -> Path:
    """Where a chapter's details page goes: ``NN-name-details.ipynb`` beside its executed main page."""
    return page.with_name(f"{page.stem}-details.ipynb")


def _is_glue(output) -> bool:
    return "scrapbook" in (output.get("metadata") or {})


def _number_tables(cells, chapter: str = "", start: int = 0) -> int:
    """Tables numbered in the order the pages show them, "Table 5.1", as Sphinx numbers the figures: through the
    main page, then on through its details page (``start``: how many the main page had), so no two tables of a
    chapter share a number; the parts of one split table keep one.  Returns the count so far."""
    new: dict[str, str] = {}
    prefix = f"{int(chapter)}." if chapter.isdigit() else ""

    def renumber(m: re.Match) -> str:
        new.setdefault(m.group(2), str(start + len(new) + 1))
        return f"{m.group(1)}Table {prefix}{new[m.group(2)]}."

    for cell in cells:
        for output in cell.get("outputs", []):
            data = output.get("data") or {}
            if isinstance(data.get("text/html"), str):
                data["text/html"] = re.sub(r"(<caption>\s*)Table (\d+)\.", renumber, data["text/html"])
    return start + len(new)


def _for_details(output) -> bool:
    """An output a chapter marked for its details page (``book_pages.DETAILS_OUTPUT`` in its metadata)."""
    return ((output.get("metadata") or {}).get("contention_book") or {}).get("page") == "details"


def _heading(cell) -> str | None:
    """The last second-level heading a markdown cell opens (the section a following cell belongs to)."""
    found = None
    if cell.cell_type == "markdown":
        fence = False
        for line in cell.source.splitlines():
            if line.lstrip().startswith(("```", ":::")):
                fence = not fence
            elif not fence and re.match(r"##\s+\S", line):
                found = line.lstrip("#").strip()
    return found


def split_page(page: Path) -> Path:
    """Make the executed copy a page a reader reads: no code input shown, and the cells tagged ``details``
    moved to a second page of the chapter, linked both ways.

    Every code cell gets ``remove-input`` (its outputs stay): the book shows results, never the code that made
    them (the code is in the notebook and in ``src/``).  A details cell keeps its order and is put under the
    heading of the section it came from; each page keeps a copy of every glued value (outputs only, hidden), so
    the prose on either page finds the numbers it quotes.  Returns the details page."""
    import copy

    import nbformat

    nb = nbformat.read(page, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            tags = list(cell.metadata.get("tags", []))
            if not set(tags) & set(HIDDEN_INPUT) or "hide-input" in tags:
                tags = [t for t in tags if t != "hide-input"] + ["remove-input"]
            cell.metadata["tags"] = tags
    title = next((line[2:].strip() for c in nb.cells if c.cell_type == "markdown"
                  for line in c.source.splitlines() if line.startswith("# ")), page.stem)
    main, details, section, written = [], [], None, None
    for cell in nb.cells:
        is_details = DETAILS_TAG in cell.metadata.get("tags", [])
        marked = [o for o in cell.get("outputs", []) if _for_details(o)] if not is_details else []
        if marked:  # a main-page cell with an output meant for the details page (a chapter's verdict rules)
            there_too = copy.deepcopy(cell)
            there_too.outputs = marked
            cell.outputs = [o for o in cell.outputs if not _for_details(o)]
            if section and written != section:
                details.append(nbformat.v4.new_markdown_cell(f"## {section}"))
                written = section
            details.append(there_too)
        if is_details:
            if section and _heading(cell) is None and written != section:
                details.append(nbformat.v4.new_markdown_cell(f"## {section}"))
                written = section
            details.append(cell)
            written = _heading(cell) or written
        else:
            main.append(cell)
        section = _heading(cell) or section
        if cell.cell_type == "code" and any(_is_glue(o) for o in cell.get("outputs", [])):
            glue_only = copy.deepcopy(cell)
            glue_only.outputs = [o for o in cell.outputs if _is_glue(o)]
            glue_only.metadata["tags"] = ["remove-cell"]
            (main if is_details else details).append(glue_only)
    there = details_path(page)
    back = nbformat.v4.new_markdown_cell(
        f"# {title}: details\n\n*The per-point tables, the model's inputs and the load checks behind "
        f"{{doc}}`{title} <{page.stem}>`. The chapter's main page has the finding, the mechanism, the evidence "
        "and what to do on your own server.*")
    link = nbformat.v4.new_markdown_cell(
        f"*Per-point tables, the models' inputs and the load checks: {{doc}}`this chapter's details "
        f"page <{there.stem}>`.*")
    if not any(c.cell_type == "markdown" for c in details):
        details.append(nbformat.v4.new_markdown_cell("*This chapter has nothing beyond its main page.*"))
    at = next((i + 1 for i, c in enumerate(main) if "In short" in (c.source + json.dumps(c.get("outputs", [])))),
              next((i + 1 for i, c in enumerate(main) if c.cell_type == "markdown"), 0))
    main.insert(at, link)
    nb_details = copy.deepcopy(nb)
    nb.cells, nb_details.cells = main, [back, *details]
    number = page.stem.split("-", 1)[0]
    _number_tables(nb_details.cells, number, _number_tables(nb.cells, number))
    nbformat.write(nb, page)
    nbformat.write(nb_details, there)
    return there


class ChapterFailed(SystemExit):
    """A chapter's notebook stopped with an error; the book keeps a page saying so in its place."""


def placeholder(chapter: str, source: Path, out: Path, message: str) -> None:
    """Put a page that says the chapter failed where its executed notebook goes, so the rest still builds.

    A half-executed copy lacks glued values the prose refers to, and would break every later build.
    """
    import nbformat

    from .provenance import public_text

    # the page names files by their place in the checkout, never by a path of the machine that built it
    message = public_text(message.replace(str(repo_root()) + os.sep, ""))
    nb = nbformat.read(source, as_version=4)
    title = next((line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines()
                  if line.startswith("# ")), f"# {chapter}")
    import json

    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), title)
    kept = []  # the title and source line only: an opening admonition or a glued value has nothing to show here
    for line in first.splitlines():
        if line.lstrip().startswith(("```", ":::")):
            break
        if "{glue" not in line:
            kept.append(line)
    first = "\n".join(kept).rstrip() or title
    sources = []
    for manifest in sorted((repo_root() / "data" / chapter).glob("published-*/manifest.json")):
        c = json.loads(manifest.read_text(encoding="utf-8")).get("citation") or {}
        if str(c.get("url", "")).startswith("http") and c["url"] not in [u for _, u in sources]:
            sources.append((c.get("title", c["url"]), c["url"]))
    links = "".join(f"\n- [{t}]({u})" for t, u in sources)
    page = nbformat.v4.new_notebook()
    page.cells = [nbformat.v4.new_markdown_cell(
        f"{first}\n\n````{{warning}}\nThis chapter did not build:\n\n```text\n{message}\n```\n````\n\n"
        f"Run `make chapter CH={chapter}` to see the whole error."
        + (f"\n\nThe chapter's sources:{links}" if links else ""))]
    page.metadata = nb.metadata
    nbformat.write(page, out)


def kernel_manager_class(log=None, fork_from: str | None = None):
    """The notebook kernels' manager.  On POSIX the kernel talks over Unix sockets (IPC) in a folder of its own
    that only this user can enter, rather than TCP on localhost, which every kernel warned about on the build's
    output.  ``log``, an open file, takes the kernel process's own output (its log, not the cells' outputs, which
    go to the notebook): the build prints it only for a chapter that failed.  ``fork_from``: the socket of a
    :mod:`.kernel_fork` server, whose forks replace a kernel started from nothing."""
    import shutil

    from jupyter_client.manager import AsyncKernelManager

    # a Unix socket's path holds at most 104-108 bytes: <folder>/k-<port>
    ipc = os.name == "posix" and len(tempfile.gettempdir()) < 64

    class BookKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            self._sockets, self.book_clients = None, []
            if ipc:
                self._sockets = tempfile.mkdtemp(prefix="contention-book-kernel-")  # mode 0700
                kwargs.setdefault("transport", "ipc")
                kwargs.setdefault("ip", os.path.join(self._sockets, "k"))
            super().__init__(**kwargs)

        def client(self, **kwargs):
            kc = super().client(**kwargs)
            self.book_clients.append(kc)  # papermill leaves a kernel it did not start connected: stop_kernel ends it
            return kc

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            if fork_from is not None and "ipykernel_launcher" in kernel_cmd:  # forked from the build's server
                at = kernel_cmd.index("ipykernel_launcher")
                kernel_cmd = [*kernel_cmd[:at], "contention_book.harness.kernel_fork", "launch", fork_from,
                              *kernel_cmd[at + 1:]]
            if log is not None:
                kw.setdefault("stdout", log)
                kw.setdefault("stderr", log)
            await super()._async_launch_kernel(kernel_cmd, **kw)

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if self._sockets and not restart:
                shutil.rmtree(self._sockets, ignore_errors=True)

    return BookKernelManager


# imported by every chapter's setup cell: a kernel started ahead of its chapter has them loaded when the chapter
# starts (an expression, so that it binds no name in the notebook's namespace)
WARM_MODULE = "contention_book.chapters.shared.notebook"
WARM_IMPORTS = f"__import__({WARM_MODULE!r}) and None"
FORKS_ENV = "CONTENTION_BOOK_KERNEL_FORKS"  # 0: every chapter's kernel started from nothing (no fork server)


class KernelForkServer:
    """The build's :mod:`.kernel_fork` server, holding :data:`WARM_MODULE`: each chapter's kernel is a fork of it
    (a fresh process, without a second of imports).  Its standard input is the build's: it ends with the build."""

    def __init__(self):
        import subprocess

        self._folder = tempfile.mkdtemp(prefix="contention-book-forks-")  # mode 0700: only this user connects
        self.socket = os.path.join(self._folder, "s")
        self.log = tempfile.TemporaryFile()
        self._process = subprocess.Popen([sys.executable, "-m", "contention_book.harness.kernel_fork", "serve",
                                          self.socket, WARM_MODULE], stdin=subprocess.PIPE, stdout=self.log,
                                         stderr=self.log, cwd=str(repo_root()))

    def close(self) -> None:
        import shutil
        import subprocess

        try:
            self._process.stdin.close()
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        finally:
            self.log.close()
            shutil.rmtree(self._folder, ignore_errors=True)


def start_kernel(forks: KernelForkServer | None = None):
    """A kernel for a chapter not yet running, started now so that its start and the imports every chapter needs
    (:data:`WARM_IMPORTS`, run at its start-up, hidden from the notebook's names) overlap the chapter before it;
    with ``forks``, a fork of that server, which has them already.  A fresh process per chapter still: nothing
    one chapter leaves behind reaches the next."""
    from jupyter_core.utils import run_sync

    log = tempfile.TemporaryFile()
    km = kernel_manager_class(log, forks.socket if forks else None)(kernel_name="python3")
    km.book_log = log
    run_sync(km.start_kernel)(cwd=str(repo_root()), extra_arguments=[f"--IPKernelApp.exec_lines={[WARM_IMPORTS]!r}"])
    return km


def stop_kernel(km) -> None:
    """Stop a kernel at once (its chapter is written; nothing is left to finish cleanly)."""
    from jupyter_core.utils import run_sync

    try:
        for kc in km.book_clients:
            kc.stop_channels()
        run_sync(km.shutdown_kernel)(now=True)
    finally:
        km.book_log.close()


def _kernel_said(log) -> str:
    """The tail of a kernel's own output, for a chapter that failed ("" when it said nothing)."""
    log.flush()
    log.seek(0)
    lines = [line for line in log.read().decode("utf-8", "replace").splitlines() if line.strip()]
    return "\n".join(f"[book]   {line}" for line in lines[-20:])


def execute(chapter: str, parameters: dict[str, Any], *, output: Path | None = None, kernel=None) -> Path:
    """Execute a chapter's notebook with papermill; a live run has already written its recording.  ``kernel``: a
    kernel started for it (:func:`start_kernel`), which the caller stops; else papermill starts and stops one."""
    import papermill

    books = notebooks()
    if chapter not in books:
        raise SystemExit(f"unknown chapter {chapter!r}; expected one of: {', '.join(books)}")
    source = books[chapter]
    out = output or executed_path(source)
    out.parent.mkdir(parents=True, exist_ok=True)
    if output is None:  # the book's copy is about to change: whatever made the old one no longer describes it
        stamp_path(source).unlink(missing_ok=True)
    print(f"[book] executing {source.relative_to(repo_root())} -> {out.relative_to(repo_root()) if out.is_relative_to(repo_root()) else out}"
          + (f" with {parameters}" if parameters else ""), flush=True)
    started = time.perf_counter()
    kernel_log = kernel.book_log if kernel is not None else tempfile.TemporaryFile()
    given = {"km": kernel} if kernel is not None else {"kernel_manager_class": kernel_manager_class(kernel_log)}
    try:
        papermill.execute_notebook(
            str(source), str(out), parameters=parameters, kernel_name="python3",
            cwd=str(repo_root()), progress_bar=False, execution_timeout=RECORDED_TIMEOUT_S,
            # written once at the end (and on an error): a save after every cell re-encoded and re-validated the
            # growing notebook about 80 times, a second of CPU per chapter taken from the kernels
            request_save_on_cell_execute=False,
            **given,
        )
    except papermill.PapermillExecutionError as exc:
        message = f"{exc.ename}: {redact(exc.evalue)}"
        where = f"the executed notebook with the error is {out}"
        if output is None:  # the book's own copy: keep the failed one aside, and a page that says so in its place
            failed = repo_root() / "book" / "_failed" / out.name
            failed.parent.mkdir(parents=True, exist_ok=True)
            out.replace(failed)
            placeholder(chapter, source, out, message)
            split_page(out)
            where = f"the executed notebook with the error is {failed}"
        said = _kernel_said(kernel_log)
        raise ChapterFailed(f"[book] chapter {chapter} failed in cell {exc.exec_count}: {message}\n[book] {where}"
                            + (f"\n[book] the kernel's own output:\n{said}" if said else "")) from None
    except BaseException:  # the kernel died or did not start: what it printed says why
        said = _kernel_said(kernel_log)
        if said:
            print(f"[book] {chapter}: the kernel's own output:\n{said}", file=sys.stderr, flush=True)
        raise
    finally:
        if kernel is None:
            kernel_log.close()
    if out.exists():  # papermill wrote it (always, outside a test that stands in for papermill)
        split_page(out)
    print(f"[book] {chapter} executed in {time.perf_counter() - started:.1f} s", flush=True)
    return out


def _sources(folder: Path) -> dict[Path, tuple[int, bytes]]:
    """Every page source under ``folder`` (not the build's output): its modification time and content hash."""
    import hashlib

    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and not {"_build", "_failed"} & set(path.relative_to(folder).parts):
            found[path] = (path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).digest())
    return found


def _keep_unchanged(before: dict[Path, tuple[int, bytes]]) -> None:
    """A generated page rewritten with the same content gets its old modification time back: Sphinx re-reads a
    page (and every page that includes it) when the time changed, whatever the content."""
    import hashlib

    for path, (mtime, digest) in before.items():
        try:
            stat = path.stat()
            if stat.st_mtime_ns != mtime and hashlib.sha256(path.read_bytes()).digest() == digest:
                os.utime(path, ns=(stat.st_atime_ns, mtime))
        except FileNotFoundError:
            continue


def sphinx_build(root: Path):
    """``jupyter-book build book -W -n --keep-going`` in this process: the same configuration, without a second
    Python start and its imports, and without the banner; Sphinx prints warnings only.  Sphinx keeps its
    environment in ``book/_build/.doctrees`` and re-reads only pages whose source changed.  Returns Sphinx's
    status (0: built without warnings) or the exception that stopped it."""
    from contextlib import chdir

    from jupyter_book.sphinx import build_sphinx

    book_dir = root / "book"
    with chdir(root):  # where the jupyter-book command ran
        return build_sphinx(book_dir, book_dir / "_build" / "html", use_external_toc=True, noconfig=True,
                            path_config=str(root / "_config.yml"),
                            confoverrides={"external_toc_path": (book_dir / "_toc.yml").as_posix(),
                                           "latex_individualpages": False, "nitpicky": True},
                            builder="html", warningiserror=True, keep_going=True, quiet=True)


_BUILD_LOCK_DEPTH = 0  # this process already holds the build lock (a chapter's render, then the HTML)


@contextlib.contextmanager
def _one_build_at_a_time(root: Path):
    """Two renders into one book (two ``make chapter`` at once) would replace each other's executed pages in
    ``book/chapters`` and files under ``book/_build`` (Sphinx writes its search index to a temporary name, then
    renames it): the second waits for the first.  Re-entrant within a process; live runs are not serialised."""
    global _BUILD_LOCK_DEPTH
    if _BUILD_LOCK_DEPTH:
        _BUILD_LOCK_DEPTH += 1
        try:
            yield
        finally:
            _BUILD_LOCK_DEPTH -= 1
        return
    lock = root / "book" / "_build" / ".build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("[book] another render of this book is running; waiting for it to finish", flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        _BUILD_LOCK_DEPTH = 1
        try:
            yield
        finally:
            _BUILD_LOCK_DEPTH = 0


def build_html() -> Path:
    with _one_build_at_a_time(repo_root()):
        return _build_html()


def _write_pages() -> None:
    """The pages the builder writes (Findings, Data, run times, perftools); one rewritten unchanged keeps its
    time, so Sphinx does not read it again."""
    from .book_pages import write_data_page, write_findings, write_perftools_pages, write_run_times

    before = _sources(repo_root() / "book")
    write_findings(notebooks())
    write_data_page()
    write_run_times()
    write_perftools_pages()
    _keep_unchanged(before)


def _html_done(status) -> Path:
    """Sphinx's status to the build's outcome: the zips and the HTML's place, or the reason it failed."""
    from .book_pages import write_zips

    if isinstance(status, KeyboardInterrupt):
        raise status
    if status != 0:
        raise SystemExit(f"[book] jupyter-book build failed ({status if isinstance(status, Exception) else 'warnings are errors'})")
    index = repo_root() / "book" / "_build" / "html" / "index.html"
    write_zips(index.parent)
    print(f"[book] HTML: {index}")
    return index


def _build_html() -> Path:
    _write_pages()
    return _html_done(sphinx_build(repo_root()))


def pending_docs(chapters: list[str]) -> list[str]:
    """The documents a build writes as it goes, in the order it should finish them: each chapter's main and
    details pages, then the Findings page (made from every chapter's verdicts).  A chapter with no executed copy
    yet (a fresh clone) gets a stand-in page, so that Sphinx finds every document of the table of contents when
    it starts; the stand-in is replaced before Sphinx reads it."""
    import nbformat

    books, docs = notebooks(), []
    for chapter in chapters:
        main = executed_path(books[chapter])
        for page in (main, details_path(main)):
            if not page.exists():
                page.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {chapter}")]), page)
            docs.append(f"chapters/{page.stem}")
    return [*docs, "findings"]


MAKE_VARS = ("CH", "SOURCE", "ENGINE", "TARGET", "RECORDING", "RECORD_TO", "ALLOW_SERVER_CHANGES", "PARAMS", "PAGE")


def argv_from_make(env: dict[str, str]) -> list[str]:
    """``make chapter``'s variables (passed through the environment) as this module's arguments.

    make never interpolates them into a shell line, so quotes, ``;`` and ``$``
    in a value stay data.  PARAMS is split like a shell would split words.
    """
    get = {k: (env.get(k) or "").strip() for k in MAKE_VARS}
    if not get["CH"]:
        raise SystemExit(f"make chapter: give CH=<chapter>, one of: {', '.join(notebooks())}")
    argv = ["chapter", get["CH"], "--source", get["SOURCE"] or "recorded"]
    for var, flag in (("ENGINE", "--engine"), ("TARGET", "--target"), ("RECORDING", "--recording"),
                      ("RECORD_TO", "--record-to")):
        if get[var]:
            argv += [flag, get[var]]
    if get["ALLOW_SERVER_CHANGES"].lower() in ("1", "true", "yes", "on"):
        argv.append("--allow-server-changes")
    if get["PAGE"]:  # the page to a file of the reader's, and no HTML: the book's own pages stay as they are
        argv += ["--output", get["PAGE"], "--no-html"]
    try:
        words = shlex.split(get["PARAMS"])
    except ValueError as exc:
        raise SystemExit(f"make chapter: PARAMS={get['PARAMS']!r}: {exc}") from None
    for word in words:
        argv += ["--param", word]
    return argv


def make_line(argv: list[str]) -> str:
    """The make command a reader would type for these arguments, for the manifest."""
    env = dict(os.environ)
    parts = ["make", "record" if env.get("SOURCE") == "live" and not env.get("RECORDING") else "chapter"]
    parts += [f"{k}={shlex.quote(env[k])}" for k in MAKE_VARS if env.get(k)]
    return " ".join(parts)


MAKE_OUTCOME_ENV = "CONTENTION_BOOK_MAKE_OUTCOME"  # the Makefile's file for the line make ends with


def from_make(argv: list[str]) -> int:
    """``make chapter`` / ``make record``: run, and leave the line that says why it did not succeed (a refusal,
    a failure) in the Makefile's outcome file instead of printing it.  make then prints it as its last line and
    exits non-zero (``$(error)``), where a failed recipe would have added its own "Error N" after it."""
    outcome = os.environ.get(MAKE_OUTCOME_ENV)
    if outcome:
        Path(outcome).unlink(missing_ok=True)
        _drop_stale_outcomes(Path(outcome).parent)
    try:
        check_target_name(os.environ.get("TARGET"))
        from .live import COMMAND_ENV

        os.environ.setdefault(COMMAND_ENV, make_line(argv))
        return main(argv_from_make(dict(os.environ)))
    except TargetError as exc:
        message, status = f"[book] {exc}", 2
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            raise
        message, status = str(exc.code), 1
    lines = [line for line in redact(message).splitlines() if line.strip()] or ["[book] failed"]
    for line in lines[1:]:  # the first line says what went wrong; the rest (where to look) comes before it
        print(line, flush=True)
    if outcome:
        try:
            Path(outcome).write_text(lines[0] + "\n", encoding="utf-8")
            return status
        except OSError:
            pass
    print(lines[0], file=sys.stderr, flush=True)
    return status


def _drop_stale_outcomes(folder: Path) -> None:
    """Outcome files of makes that died (a Ctrl-C stops make before it reads its file): named by make's pid."""
    for stale in folder.glob("contention-book-make-*.outcome"):
        try:
            os.kill(int(stale.name.split("-")[-1].split(".")[0]), 0)
        except (ValueError, ProcessLookupError):
            stale.unlink(missing_ok=True)
        except OSError:
            continue


def refuse_recorded_params(chapter: str, raw: dict[str, str]) -> None:
    """Parameters given to a recorded chapter: an unknown name is named as unknown (with the closest known
    one) before saying that live parameters need a live run."""
    from .chapter_registry import package, packages

    if chapter in packages():
        from .params import Param, check_names

        check_names((*package(chapter, "spec").SPEC.params, Param("stacks", "str", "")), raw)
    live_only = sorted(set(raw) - {"stacks"})
    if live_only:
        raise ParameterError(f"parameter{'s' if len(live_only) > 1 else ''} {', '.join(live_only)} "
                             f"appl{'y' if len(live_only) > 1 else 'ies'} to live runs only (SOURCE=live, --source live); a recorded chapter takes "
                             "stacks= alone")


def main(argv: list[str] | None = None) -> int:
    with contextlib.ExitStack() as held:  # the build lock, once taken, until the command ends
        return _main(argv, held)


def _main(argv: list[str] | None, held: contextlib.ExitStack) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["from-make"]:
        return from_make(argv)
    parser = argparse.ArgumentParser(prog="python -m contention_book.harness.book", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="execute every chapter on its recorded data, then build the HTML")
    b.add_argument("--no-html", action="store_true", help="execute only")
    b.add_argument("--force", action="store_true", help="re-execute every chapter, changed or not")
    sub.add_parser("sphinx")  # the builder's own: Sphinx alone, told which pages to wait for (harness.sphinx_gate)
    c = sub.add_parser("chapter", help="execute one chapter (recorded or live), then build the HTML")
    c.add_argument("chapter")
    c.add_argument("--source", choices=("recorded", "live"), default="recorded")
    c.add_argument("--engine", default=None)
    c.add_argument("--target", default=None, help="a DSN name or the NAME of an env var with a connection string")
    c.add_argument("--recording", default=None, help="a recording id under data/<chapter>/ or a directory")
    c.add_argument("--record-to", default=None)
    c.add_argument("--allow-server-changes", action="store_true")
    c.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    c.add_argument("--output", default=None, help="where to write the executed notebook")
    c.add_argument("--no-html", action="store_true")
    args = parser.parse_args(argv)
    if getattr(args, "target", None):
        try:
            check_target_name(args.target)
        except TargetError as exc:
            raise SystemExit(f"[book] {exc}") from None

    if args.command == "sphinx":
        from .sphinx_gate import NICE

        os.nice(NICE)
        status = sphinx_build(repo_root())
        if isinstance(status, BaseException):
            print(f"[book] jupyter-book build failed ({status})", file=sys.stderr, flush=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0 if status == 0 else 1)  # its files are written and closed: tearing down Sphinx's objects took 0.5 s
    started = time.perf_counter()
    failures: list[str] = []
    html_built = False
    if not getattr(args, "output", None):  # the book's own copies feed the Findings page and the figure checks
        from .book_pages import PAGE_DATA_ENV

        os.environ[PAGE_DATA_ENV] = str(repo_root() / "book" / "chapters")
    if args.command == "build":
        from concurrent.futures import ThreadPoolExecutor

        held.enter_context(_one_build_at_a_time(repo_root()))

        chosen, seconds = [], {}
        for chapter, nb in notebooks().items():
            if args.force or not up_to_date(chapter, nb):
                chosen.append(chapter)
                seconds[chapter] = last_duration(nb)
            else:
                print(f"[book] {chapter}: unchanged, not re-executed", flush=True)
        todo = LanePlan(plan_lanes(seconds, PARALLEL_CHAPTERS), seconds)

        forks = KernelForkServer() if os.name == "posix" and chosen and os.environ.get(FORKS_ENV) != "0" else None
        gate = None
        if chosen and not args.no_html:  # Sphinx starts with the chapters, and reads each once written
            from .sphinx_gate import GatedSphinx

            gate = GatedSphinx(pending_docs(todo.in_order()))

        def lane(number: int) -> None:
            """Chapters one after another, each in a kernel started while the one before it ran."""
            spare = None
            try:
                while True:
                    chapter = todo.next(number)
                    if chapter is None:
                        return
                    kernel, spare = spare or start_kernel(forks), None
                    try:
                        if todo.has_more():
                            spare = start_kernel(forks)
                        execute_if_changed(chapter, force=True, kernel=kernel)
                    except ChapterFailed as exc:  # one failed chapter does not stop the others
                        print(exc, flush=True)
                        failures.append(chapter)
                    finally:
                        stop_kernel(kernel)
                    if gate is not None:  # its pages are written (or, if it failed, the page that says so)
                        page = executed_path(notebooks()[chapter])
                        gate.written(f"chapters/{page.stem}", f"chapters/{details_path(page).stem}")
            finally:
                if spare is not None:
                    stop_kernel(spare)

        try:
            with ThreadPoolExecutor(max_workers=PARALLEL_CHAPTERS) as pool:
                lanes = [pool.submit(lane, number) for number in range(PARALLEL_CHAPTERS)]
                if gate is not None:  # while the kernels start
                    _write_pages()
                    gate.start()
                for done in lanes:
                    done.result()
            if forks is not None:  # no kernel is left to start: the server's exit overlaps Sphinx's writing
                forks.close()
                forks = None
            if gate is not None:
                from .book_pages import write_findings

                write_findings(notebooks())
                gate.written("findings")
                _html_done(gate.finish())
                gate, html_built = None, True
        finally:
            if forks is not None:
                forks.close()
            if gate is not None:
                gate.cancel()
    else:
        params: dict[str, Any] = {}
        if args.recording:
            params["recording"] = args.recording
        try:
            raw = split_assignments(args.param)
        except ParameterError as exc:
            raise SystemExit(f"[book] {exc}") from None
        if "stacks" in raw:
            params["stacks"] = raw["stacks"]
        if args.chapter not in notebooks():
            raise SystemExit(f"[book] unknown chapter {args.chapter!r}; expected one of: {', '.join(notebooks())}")
        if args.source == "live":
            if not args.engine:
                raise SystemExit("[book] a live run needs --engine (native, postgres or sqlserver)")
            from .chapter_registry import package
            from .runner import check_request
            from .recording import RecordingError

            try:  # what the runner would refuse, refused here: the refusal is then the last line printed
                check_request(package(args.chapter, "spec").SPEC, args.engine, raw, target=args.target,
                              record_to=args.record_to)
            except (ParameterError, TargetError, RecordingError) as exc:
                raise SystemExit(f"[book] refused: {exc}") from None
            from .launch import LiveRunFailed, LiveRunInterrupted, run_live
            from .live import COMMAND_ENV

            os.environ.setdefault(COMMAND_ENV, " ".join(["python -m contention_book.harness.book", *argv]))
            try:
                params["recording"] = str(run_live(args.chapter, args.engine, target=args.target, params=raw,
                                                   record_to=args.record_to,
                                                   allow_server_changes=args.allow_server_changes))
            except LiveRunFailed as exc:
                raise SystemExit(f"[book] {exc}") from None
            except LiveRunInterrupted as exc:
                print(f"[book] {exc}", flush=True)
                return exc.returncode if exc.returncode > 0 else 130
        else:
            try:
                refuse_recorded_params(args.chapter, raw)
            except ParameterError as exc:
                raise SystemExit(f"[book] refused: {exc}") from None
            if args.record_to or args.target or args.allow_server_changes:
                raise SystemExit("[book] refused: --target, --record-to (RECORD_TO) and --allow-server-changes "
                                 "apply to live runs only (SOURCE=live, --source live)")
        if not (args.output and args.no_html):  # a page written elsewhere, and no HTML, shares nothing
            held.enter_context(_one_build_at_a_time(repo_root()))  # after the live run: only the render waits
        execute(args.chapter, params, output=Path(args.output) if args.output else None)
        for chapter, nb in notebooks().items():  # the rest of the book must exist to build it
            if chapter != args.chapter and not executed_path(nb).exists() and not args.no_html:
                execute(chapter, {})
    if not args.no_html and not html_built:
        build_html()
    print(f"[book] done in {time.perf_counter() - started:.1f} s")
    if failures:
        print(f"[book] {len(failures)} chapter(s) failed and show a warning page instead: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
