"""Build the book: papermill executes the chapters, Jupyter Book renders them.

    python -m contention_book.harness.book build                 # every chapter on its recorded data, then the HTML
    python -m contention_book.harness.book chapter ghost-cleanup --source live --engine postgres
    python -m contention_book.harness.book chapter ghost-cleanup --recording /some/recording/dir

Chapters are the notebooks ``notebooks/NN-<chapter>.ipynb``; executed copies
go to ``book/chapters/`` (never committed) and the HTML to
``book/_build/html``.  Warnings fail the build.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .live import COMMAND_ENV
from .recording import repo_root
from .redaction import redact

RECORDED_TIMEOUT_S = 600
LIVE_TIMEOUT_S = 4 * 3600


def notebooks() -> dict[str, Path]:
    """chapter name -> source notebook, from the file names ``NN-<chapter>.ipynb``."""
    out = {}
    for path in sorted((repo_root() / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        out[re.sub(r"^\d\d-", "", path.stem)] = path
    return out


def executed_path(notebook: Path) -> Path:
    return repo_root() / "book" / "chapters" / notebook.name


def coerce(value: str) -> Any:
    """Command-line parameter values: ints, floats and booleans become themselves."""
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def execute(chapter: str, parameters: dict[str, Any], *, output: Path | None = None, live: bool = False) -> Path:
    import papermill

    books = notebooks()
    if chapter not in books:
        raise SystemExit(f"unknown chapter {chapter!r}; expected one of: {', '.join(books)}")
    source = books[chapter]
    out = output or executed_path(source)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"[book] executing {source.relative_to(repo_root())} -> {out.relative_to(repo_root()) if out.is_relative_to(repo_root()) else out}"
          + (f" with {parameters}" if parameters else ""), flush=True)
    started = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(source), str(out), parameters=parameters, kernel_name="python3",
            cwd=str(repo_root()), progress_bar=False, log_output=live,
            execution_timeout=LIVE_TIMEOUT_S if live else RECORDED_TIMEOUT_S,
        )
    except papermill.PapermillExecutionError as exc:
        raise SystemExit(f"[book] chapter {chapter} failed in cell {exc.exec_count}: {exc.ename}: "
                         f"{redact(exc.evalue)}\n[book] the executed notebook with the error is {out}") from None
    print(f"[book] {chapter} executed in {time.perf_counter() - started:.1f} s", flush=True)
    return out


def build_html() -> Path:
    root = repo_root()
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(root / "book"), "--config", str(root / "_config.yml"),
           "--toc", str(root / "book" / "_toc.yml"), "--path-output", str(root / "book"), "-W", "-n", "--keep-going", "--quiet"]
    proc = subprocess.run(cmd, cwd=root)
    if proc.returncode != 0:
        raise SystemExit(f"[book] jupyter-book build failed (exit {proc.returncode})")
    index = root / "book" / "_build" / "html" / "index.html"
    print(f"[book] HTML: {index}")
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m contention_book.harness.book", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="execute every chapter on its recorded data, then build the HTML")
    b.add_argument("--no-html", action="store_true", help="execute only")
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

    started = time.perf_counter()
    if args.command == "build":
        for chapter in notebooks():
            execute(chapter, {})
    else:
        params: dict[str, Any] = {"source": args.source}
        for key in ("engine", "target", "recording", "record_to"):
            value = getattr(args, key)
            if value:
                params[key] = value
        if args.allow_server_changes:
            params["allow_server_changes"] = True
        for item in args.param:
            if "=" not in item:
                raise SystemExit(f"--param {item!r}: expected NAME=VALUE")
            key, value = item.split("=", 1)
            params[key.strip()] = coerce(value.strip())
        os.environ.setdefault(COMMAND_ENV, " ".join(["python -m contention_book.harness.book", *(argv or sys.argv[1:])]))
        execute(args.chapter, params, output=Path(args.output) if args.output else None,
                live=args.source == "live")
        for chapter, nb in notebooks().items():  # the rest of the book must exist to build it
            if chapter != args.chapter and not executed_path(nb).exists() and not args.no_html:
                execute(chapter, {})
    if not args.no_html:
        build_html()
    print(f"[book] done in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
