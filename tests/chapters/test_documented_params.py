"""Every documented command line uses real parameter names and values.

The notebooks' prose, the book's pages and the README show readers commands to copy: ``make chapter ...
PARAMS="..."`` and ``python -m contention_book.run CHAPTER --engine E --param k=v``.  Each one found is put
through the parameter parser (``harness.params.parse``) with its chapter's SPEC, as the runner would, so an
example the parser refuses (a renamed parameter, a value out of range, a placeholder like ``...``) fails here,
naming the file and line, instead of failing for the reader.
"""
from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from contention_book.chapters import PACKAGES, package
from contention_book.harness.params import ParameterError, parse, split_assignments

ROOT = Path(__file__).resolve().parents[2]
MAKE = re.compile(r"\bmake\s+(?:chapter|record)\b")
RUN = re.compile(r"-m\s+contention_book\.run\b")
BARE_PARAMS = re.compile(r"""\bPARAMS=(?:"[^"]*"|'[^']*'|\S+)""")
CHAPTER_MENTION = re.compile(r"\bCH=([a-z][\w-]*)|contention_book\.run\s+([a-z][\w-]*)")
CODE_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def chapters() -> dict[str, object]:
    """chapter name -> its SPEC."""
    return {name: package(name, "spec").SPEC for name in PACKAGES}


@dataclass
class Command:
    where: str                       # "notebooks/04-last-page-insert.ipynb, cell 33, line 4"
    text: str                        # the command as written
    chapter: str | None
    engine: str | None
    params: dict[str, str] = field(default_factory=dict)
    problem: str = ""                # a malformed command line (before the parameter parser)


def _snippets(text: str) -> list[tuple[int, str]]:
    """(line number, code) for every fenced code line (with ``\\`` continuations joined) and inline code span."""
    out: list[tuple[int, str]] = []
    fenced = []
    for m in FENCE.finditer(text):
        start = text.count("\n", 0, m.start(1)) + 1
        lines = m.group(1).splitlines()
        i = 0
        while i < len(lines):
            line, first = lines[i], i
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + " " + lines[i]
            out.append((start + first, line))
            i += 1
        fenced.append((m.start(), m.end()))
    for m in CODE_SPAN.finditer(text):
        if any(a <= m.start() < b for a, b in fenced):
            continue
        out.append((text.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())))
    return sorted(out)


def _strip_comment(line: str) -> str:
    """A shell line without its trailing ``# comment`` (a ``#`` inside quotes stays)."""
    quote = None
    for i, ch in enumerate(line):
        if ch in "\"'" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _context_chapter(text: str, upto: int, default: str | None) -> str | None:
    """The chapter a command without CH= is about: the nearest one named before it, else the page's own."""
    last = None
    for m in CHAPTER_MENTION.finditer(text[:upto]):
        last = m.group(1) or m.group(2)
    return last or default


def commands_in(text: str, where: str, default_chapter: str | None = None) -> list[Command]:
    """Every make / python -m contention_book.run command (and bare PARAMS="...") in a markdown text."""
    out = []
    lines_at = [0] + [m.end() for m in re.finditer("\n", text)]
    for lineno, code in _snippets(text):
        code = _strip_comment(code).strip()
        at = f"{where}, line {lineno}"
        offset = lines_at[min(lineno - 1, len(lines_at) - 1)]
        if MAKE.search(code):
            try:
                words = shlex.split(code[MAKE.search(code).start():])
            except ValueError as exc:
                out.append(Command(at, code, None, None, problem=f"cannot split the line: {exc}"))
                continue
            env = dict(w.split("=", 1) for w in words[2:] if "=" in w and w.split("=", 1)[0].isupper())
            cmd = Command(at, code, env.get("CH"), env.get("ENGINE"))
            try:
                cmd.params = split_assignments(shlex.split(env.get("PARAMS", "")), "PARAMS")
            except (ParameterError, ValueError) as exc:
                cmd.problem = str(exc)
            out.append(cmd)
        elif RUN.search(code):
            try:
                words = shlex.split(code[RUN.search(code).end():], posix=False)
            except ValueError as exc:
                out.append(Command(at, code, None, None, problem=f"cannot split the line: {exc}"))
                continue
            chapter = words[0] if words and not words[0].startswith("-") else None
            engine, items, i = None, [], 1 if chapter else 0
            while i < len(words):
                if words[i] == "--engine" and i + 1 < len(words):
                    engine, i = words[i + 1], i + 2
                elif words[i] == "--param" and i + 1 < len(words):
                    items.append(words[i + 1]), None
                    i += 2
                else:
                    i += 1
            cmd = Command(at, code, chapter, engine)
            try:
                cmd.params = split_assignments(items)
            except ParameterError as exc:
                cmd.problem = str(exc)
            out.append(cmd)
        else:
            for m in BARE_PARAMS.finditer(code):
                value = m.group(0).split("=", 1)[1].strip("\"'")
                cmd = Command(at, code, _context_chapter(text, offset, default_chapter), None)
                try:
                    cmd.params = split_assignments(shlex.split(value), "PARAMS")
                except (ParameterError, ValueError) as exc:
                    cmd.problem = str(exc)
                out.append(cmd)
    return out


def documented_commands() -> list[Command]:
    """The commands of every notebook's markdown cells, every page under book/ and the README."""
    by_notebook = {spec.notebook: name for name, spec in chapters().items()}
    out = []
    for nb_path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "markdown":
                out += commands_in("".join(cell["source"]), f"notebooks/{nb_path.name}, cell {i}",
                                   by_notebook.get(nb_path.name))
    for md in sorted((ROOT / "book").glob("*.md")) + [ROOT / "README.md"]:
        out += commands_in(md.read_text(encoding="utf-8"), str(md.relative_to(ROOT)))
    return out


def refusal(cmd: Command) -> str:
    """Why the parser refuses this command's parameters (empty when it accepts them)."""
    if cmd.problem:
        return cmd.problem
    specs = chapters()
    if not cmd.params and (cmd.chapter is None or not re.fullmatch(r"[a-z][a-z-]*", cmd.chapter)):
        return ""  # a template ("make chapter CH=<chapter> ...", "... run CHAPTER --engine ENGINE"): nothing to parse
    if cmd.chapter is None:
        return "no chapter: the command names none and none is named before it"
    if cmd.chapter not in specs:
        return f"chapter {cmd.chapter!r}: expected one of {', '.join(sorted(specs))}"
    spec = specs[cmd.chapter]
    engines = [cmd.engine] if cmd.engine else list(spec.engines)
    if cmd.engine and cmd.engine not in spec.engines:
        return f"engine {cmd.engine!r}: chapter {cmd.chapter} runs on {', '.join(spec.engines)}"
    errors = []
    for engine in engines:  # a command without ENGINE is fine if some engine of the chapter takes its parameters
        try:
            parse(spec.params, cmd.params, engine)
            return ""
        except ParameterError as exc:
            errors.append(f"{engine}: {exc}")
    return "; ".join(errors)


COMMANDS = documented_commands()


def test_the_scanner_finds_the_documented_commands():
    assert len(COMMANDS) >= 20
    assert any(c.chapter == "last-page-insert" and c.params.get("partitions") == "16" for c in COMMANDS)
    assert any(c.where.startswith("README.md") for c in COMMANDS)


def test_the_check_can_fail():
    """A bad example is caught: a renamed parameter, a placeholder value, and a value out of range."""
    text = ("```bash\nmake chapter CH=latch-fairness SOURCE=live ENGINE=native PARAMS=\"threads=1,2 duration_ms=5\"\n"
            "python -m contention_book.run last-page-insert --engine postgres --param sessions=...\n"
            "make chapter CH=last-page-insert SOURCE=live ENGINE=postgres \\\n  PARAMS=\"partitions=100\"\n```\n"
            "For example `PARAMS=\"rows_per_call=0\"`.\n")
    found = commands_in(text, "example.md")
    assert len(found) == 4
    reasons = [refusal(c) for c in found]
    assert "unknown parameters 'duration_ms'" in reasons[0] and "'threads'" in reasons[0]
    assert "sessions" in reasons[1] and "partitions" in reasons[2] and "rows_per_call" in reasons[3]
    assert found[3].chapter == "last-page-insert"  # named earlier on the page


@pytest.mark.parametrize("cmd", COMMANDS, ids=[c.where for c in COMMANDS])
def test_documented_command_parameters_parse(cmd):
    reason = refusal(cmd)
    assert not reason, f"{cmd.where}: {cmd.text!r}: {reason}"
