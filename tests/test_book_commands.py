"""Every command line the book documents (its pages, the chapter notebooks, the README) names parameters the
chapter really takes, with values its parser accepts: a reader who copies one is not refused.

Found: ``make chapter|record CH=<chapter> ... PARAMS="..."`` and ``python -m contention_book.run <chapter>
--engine <engine> ... --param name=value``.  Each goes through the same parser the run uses
(:func:`harness.runner.resolve_params`); a recorded chapter (no ``SOURCE=live``) takes ``stacks=`` only.
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from contention_book.chapters import PACKAGES, package
from contention_book.harness.params import ParameterError, split_assignments
from contention_book.harness.runner import resolve_params

ROOT = Path(__file__).resolve().parents[1]
MAKE = re.compile(r"make (?:chapter|record) (?P<args>[^`\n|#]*?PARAMS=(?:\"[^\"]*\"|'[^']*'|\S+))")
RUN = re.compile(r"python -m contention_book\.run (?P<args>[^`\n|#]*--param[^`\n|#]*)")


def documents() -> list[tuple[str, str]]:
    """(where, text) of every page, notebook cell and the README."""
    out = [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in sorted((ROOT / "book").glob("*.md"))]
    out.append(("README.md", (ROOT / "README.md").read_text(encoding="utf-8")))
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"]):
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            out.append((f"{nb.relative_to(ROOT).as_posix()} cell {i}", src))
    return out


def commands() -> list[tuple[str, str, str, dict[str, str], bool]]:
    """(where, chapter, engine, raw parameters, live) of every documented command with parameters."""
    found = []
    for where, text in documents():
        for m in MAKE.finditer(text):
            try:
                words = dict(w.split("=", 1) for w in shlex.split(m.group("args")) if "=" in w)
            except ValueError:
                continue
            chapter = words.get("CH", "")
            if chapter not in PACKAGES:
                continue
            raw = split_assignments(shlex.split(words.get("PARAMS", "")), where="PARAMS")
            live = words.get("SOURCE") == "live" or m.group(0).startswith("make record")
            found.append((where, chapter, words.get("ENGINE", ""), raw, live))
        for m in RUN.finditer(text):
            try:
                argv = shlex.split(m.group("args"))
            except ValueError:
                continue
            if not argv or argv[0] not in PACKAGES or "--engine" not in argv:
                continue
            engine = argv[argv.index("--engine") + 1]
            items = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--param"]
            found.append((where, argv[0], engine, split_assignments(items), True))
    return found


def test_the_book_documents_commands_with_parameters():
    assert len(commands()) >= 5


@pytest.mark.parametrize("where, chapter, engine, raw, live", commands(),
                         ids=lambda v: v if isinstance(v, str) and len(v) < 60 else None)
def test_a_documented_command_names_real_parameters(where, chapter, engine, raw, live):
    spec = package(chapter, "spec").SPEC
    if not live:
        assert set(raw) <= {"stacks"}, f"{where}: a recorded chapter takes stacks= only, not {sorted(raw)}"
        return
    assert engine, f"{where}: a live run of {chapter} names no ENGINE"
    try:
        resolve_params(spec, engine, raw)
    except ParameterError as exc:
        pytest.fail(f"{where}: {chapter} on {engine} refuses {raw}: {exc}")


def test_the_check_can_fail():
    spec = package("latch-fairness", "spec").SPEC
    with pytest.raises(ParameterError):
        resolve_params(spec, "native", {"threads": "1,2", "duration_ms": "100"})  # issue 22's example
