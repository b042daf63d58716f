"""The book's generated pages: Findings (every chapter's verdict rows in one table) and Data (every recording,
with a zip to download).  Both are written from data at build time, never typed.

A chapter's notebook saves its verdict rows with :func:`save_verdicts` as it renders them; :func:`write_findings`
gathers what the chapters saved, so the page shows exactly the rows the chapters show.
"""
from __future__ import annotations

import json
import os
import re
import sys
import zipfile
from pathlib import Path

import pandas as pd

from .recording import data_root, repo_root
from . import machine_card

VERDICTS_DIR = Path("book") / "chapters" / "verdicts"
# Set by the book builder for the book's own executed copies only: a notebook executed elsewhere (a test, a
# reader's --output) must not change what the Findings page and the figure checks say.
PAGE_DATA_ENV = "CONTENTION_BOOK_PAGE_DATA"
# An output's metadata that sends it to its chapter's details page (harness.book.split_page moves it there).
DETAILS_OUTPUT = {"contention_book": {"page": "details"}}


def page_data_dir() -> Path | None:
    value = os.environ.get(PAGE_DATA_ENV, "")
    return Path(value) if value else None


def claims_anchor(chapter: str) -> str:
    """The id of the anchor placed just before a chapter's verdict table (see shared.notebook.show_verdicts)."""
    return f"verdicts-{chapter}"
DATA_URL = "data"  # zips go to book/_build/html/data/
GENERATED = ("findings", "data")  # pages of book/_toc.yml that this module writes


def save_verdicts(chapter: str, rows: pd.DataFrame) -> Path | None:
    """Keep a chapter's verdict rows for the Findings page, when this execution is the book's own copy."""
    if page_data_dir() is None:
        return None
    out = repo_root() / VERDICTS_DIR / f"{chapter}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(rows.to_json(orient="records", force_ascii=False, indent=1), encoding="utf-8")
    return out


def _title(notebook: Path) -> str:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for line in src.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return notebook.stem


def chapter_links(notebooks: dict[str, Path]) -> dict[str, str]:
    """Each chapter's title linked to its page (HTML), by the chapter's slug: what the Findings tables show in their
    chapter column, never the slug itself."""
    import html as html_

    return {chapter: f'<a href="chapters/{nb.stem}.html">{html_.escape(_title(nb))}</a>'
            for chapter, nb in notebooks.items()}


FINDINGS_COLUMNS = ["chapter", "claim", "published", "recording", "tested_on", "measured", "size", "rule", "verdict"]


def findings_frame(notebooks: dict[str, Path]) -> pd.DataFrame:
    """One row per claim of every chapter, from the rows each chapter saved when it was rendered.  A column a
    chapter's saved rows lack (rows saved before it existed) stays empty here, and the page says so."""
    rows = []
    for chapter, nb in notebooks.items():
        saved = repo_root() / VERDICTS_DIR / f"{chapter}.json"
        link = f'<a href="chapters/{nb.stem}.html#{claims_anchor(chapter)}">{_title(nb)}</a>'
        if not saved.exists():
            link = f'<a href="chapters/{nb.stem}.html">{_title(nb)}</a>'
            rows.append({"chapter": link, "claim": "(this chapter did not build, so its verdicts are missing)"})
            continue
        for r in json.loads(saved.read_text(encoding="utf-8")):
            rows.append({"chapter": link, **{c: r.get(c) for c in FINDINGS_COLUMNS[1:]}})
    return pd.DataFrame(rows, columns=FINDINGS_COLUMNS)


def write_findings(notebooks: dict[str, Path]) -> Path:
    import html as html_

    from .verdict_table import VOCABULARY, totals, verdict_table_html

    frame = findings_frame(notebooks)
    counted = totals(frame["verdict"])
    summary = "; ".join(f"{v} {n}" for v, n in counted if n) or "no verdicts yet"  # a verdict may hold a comma
    own = sum(isinstance(p, str) and p.startswith(OWN_CHECK) for p in frame["published"])
    if own:
        summary += (". One of these rows is the book's own check, not an article's claim: its Published cell "
                    "begins “not in the article”" if own == 1 else
                    f". {own} of these rows are the book's own checks, not an article's claims: their Published "
                    "cells begin “not in the article”")
    meaning = dict(VOCABULARY)
    older = "a word of an older build of its chapter, from before this vocabulary"
    count_rows = "".join(f"<tr><td><b>{html_.escape(v)}</b></td><td>{html_.escape(meaning.get(v, older))}</td>"
                         f"<td>{n}</td></tr>" for v, n in counted)
    counts = ('<div class="table-wrap"><table class="book-table text-table" id="verdict-words"><caption>The verdict '
              'words, what each means, and how many claims carry it in this build</caption><thead><tr><th>verdict'
              "</th><th>meaning</th><th>claims</th></tr></thead>"
              f"<tbody>{count_rows}</tbody></table></div>")
    # one table per chapter, under its own heading: where a chapter tested its claims is said once, under it
    tables = []
    for i, (chapter, rows) in enumerate(frame.groupby("chapter", sort=False)):
        title = re.sub(r"<[^>]+>", "", chapter)
        tables.append(f'```{{raw}} html\n<h3 id="findings-{i + 1}">{chapter}</h3>\n' + verdict_table_html(
            rows, caption=f"The claims of {title}, with where they were tested and whether their size was compared", prefix="findings-table" if i == 0 else f"findings-table-{i + 1}",
            columns=("claim", "tested_on", "published", "measured", "size", "verdict"), shared=("tested_on",),
            missing_reason="the chapter gives no value for this claim") + "\n```\n")
    table = "\n".join(tables)
    page = ("# Findings\n\n"
            "Every claim the chapters check, in one table: what the article reported, where this book tested it, "
            "what the recording shown in the chapter measured, whether the size could be compared with the "
            "article's, and the verdict. The rule that decides each verdict is a numbered note under the table. "
            "The rows are the chapters' own verdict rows, gathered when the book is built; follow a chapter's "
            f"link for the numbers behind a row. The verdicts in this build: {summary}.\n\n"
            "A verdict answers two questions: does the measurement point the article's way (the *direction*), and "
            "is its size comparable with the article's, within a stated factor (the *size*)?\n\n"
            f"({INTERVALS_LABEL})=\n## How to read a number and its interval\n\n{INTERVALS}\n\n"
            "## The verdicts\n\n"
            "```{raw} html\n" + counts + "\n```\n\n"
            + table + predictions_section(notebooks)
            + machine_card.machine_predictions_markdown(
                machine_card.saved_machine_rows(repo_root() / PREDICTIONS_DIR), chapter_links(notebooks)))
    out = repo_root() / "book" / "findings.md"
    out.write_text(page, encoding="utf-8")
    return out


OWN_CHECK = "not in the article"  # a Published cell so begun: a check the book added, counted apart on Findings
PREDICTIONS_DIR = VERDICTS_DIR.parent / "predictions"   # written by each chapter's capacity section
NOT_ON_FINDINGS = ("workload bound", "no model")  # prediction rows that predict nothing: counted, not tabled

# Said once, here, for every chapter (chapters.shared.spread and capacity_page link to these labels; a test
# checks the numbers against spread's constants).
INTERVALS_LABEL, CAPACITY_LABEL, USL_LABEL = "how-to-read-intervals", "how-the-models-predict", "how-usl-is-fitted"
INTERVALS = ("A measured number followed by two numbers in brackets, such as 1.23× (1.10–1.41), is the median over "
             "the repetitions of a run and its 95% bootstrap interval (the middle 95% of the medians of 4,000 "
             "resamples, seeded so that a page rebuilds the same numbers). With exactly 5 repetitions, as most "
             "runs here have, that interval is in effect the lowest and highest of the five: a resampled median "
             "lands on an extreme more than 2.5% of the time, so read it as their range. Where fewer than 5 "
             "repetitions ran, the "
             "brackets say so: (range 1.10–1.41, 3 runs) gives the lowest and highest measured, and (one run) a "
             "single measurement. Ratios between two variants are paired by repetition (the variants ran "
             "interleaved), so the pair's ratio cancels most of the machine's drift.")
CAPACITY_METHOD = machine_card.MODELS_METHOD
USL_METHOD = machine_card.USL_METHOD


def predictions_section(notebooks: dict[str, Path]) -> str:
    """Findings' second table: one row per capacity model, from the rows each chapter saved when it rendered its
    "What this machine predicts" section (the verdict is the model's own rule: predicted, predicted as a bound,
    missed, no model)."""
    import html as html_

    rows = []
    for chapter, nb in notebooks.items():
        saved = repo_root() / PREDICTIONS_DIR / f"{chapter}.json"
        if saved.exists():
            link = f'<a href="chapters/{nb.stem}.html">{html_.escape(_title(nb))}</a>'
            # the chapter's title, not the slug a saved row carries in its own "chapter" field
            rows += [{**r, "chapter": link} for r in json.loads(saved.read_text(encoding="utf-8"))]
    if not rows:
        return ""
    cols = ("chapter", "quantity", "equation", "predicted", "published", "verdict")

    def category(r) -> str:
        return str(r.get("verdict", "")).split(":")[0].split(",")[0]  # "published only, the model fails …"

    counts: dict[str, int] = {}
    for r in rows:
        counts[category(r)] = counts.get(category(r), 0) + 1
    said = "; ".join(f"{w} {n}" for w, n in counts.items())
    # a row that predicts nothing (a bound the workload implies, a model without an input) is counted, and left
    # on its chapter's details page: here it would only pad the table
    unshown = [w for w in NOT_ON_FINDINGS if w in counts]
    rows = [r for r in rows if category(r) not in NOT_ON_FINDINGS]
    if unshown:
        said += (f" (the {' and '.join(f'*{w}*' for w in unshown)} rows predict nothing; they are listed on their "
                 "chapters' details pages, not in the table below)")
    body = "".join("<tr>" + "".join(f"<td>{r.get(c) if c == 'chapter' else html_.escape(str(r.get(c, '—')))}</td>"
                                    for c in cols) + "</tr>" for r in rows)
    head = "".join(f"<th>{c}</th>" for c in cols)
    table = ('<div class="table-wrap"><table class="book-table text-table" id="predictions"><caption>What each '
             "chapter's model predicts for the article's machine, from costs measured on the machine that built "
             f"the book, against the number the article published</caption><thead><tr>{head}</tr></thead>"
             f"<tbody>{body}</tbody></table></div>")
    return (f"\n({CAPACITY_LABEL})=\n## Predictions for the articles' machines\n\n{CAPACITY_METHOD} "
            f"The predictions in this build: {said}.\n\n```{{raw}} html\n{table}\n```\n\n"
            f"({USL_LABEL})=\n### The Universal Scalability Law fits\n\n{USL_METHOD}\n")


def recordings() -> list[tuple[str, Path, dict]]:
    out = []
    for manifest in sorted(data_root().glob("*/*/manifest.json")):
        try:
            m = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.append((manifest.parent.parent.name, manifest.parent, m))
    return out


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def zip_name(chapter: str, folder: Path) -> str:
    return f"{chapter}--{folder.name}.zip"


def _rows_html(rows: list[dict], columns: list[str], caption: str, table_id: str, raw: tuple[str, ...] = ()) -> str:
    """A captioned table whose rows carry ids (``_id``), so a chapter can link to one recording's row."""
    import html as html_

    from .display import MISSING, number_text

    def cell(col, value):
        if value is None or value == "" or (isinstance(value, float) and value != value):
            return MISSING
        return str(value) if col in raw else html_.escape(number_text(value))

    body = "".join(f'<tr id="{r["_id"]}">' + "".join(f"<td>{cell(c, r.get(c))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    head = "".join(f"<th>{html_.escape(c)}</th>" for c in columns)
    return (f'<div class="table-wrap"><table class="book-table text-table" id="{table_id}">'
            f"<caption>{html_.escape(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            "</table></div>")


def _load_words(m: dict) -> str:
    from .provenance import load_of

    load = load_of(m)
    if not load:
        return ""
    text = f"{load['before']:.2f} → {load['after']:.2f}" if load.get("after") is not None else f"{load['before']:.2f}"
    if load["source"] == "runner" and load.get("quiet") is False:
        text += f" (busy: still above half the logical CPUs after a wait of {load.get('waited_s') or 0:.0f} s)"
    elif load.get("waited_s") and load["waited_s"] >= 1:
        text += f" (waited {load['waited_s']:.0f} s for a quieter machine)"
    if load["source"] == "note":
        text += " (from the recording's note)"
    return text


def write_data_page() -> Path:
    """Every recording with its zip, then how each measured one was made (command without machine paths,
    compiler, the machine's load before and after), all from the manifests."""
    import html as html_

    from .provenance import NOTE_LOAD, anchor, compiler_of, engine_words, machine_words, public_text, run_seconds

    listed, made, notes = [], [], []
    for chapter, folder, m in recordings():
        rid = folder.name
        date = (m.get("started") or (m.get("citation") or {}).get("date") or "")[:10]
        run_s = run_seconds(m)
        listed.append({"_id": anchor(chapter, rid), "chapter": chapter, "recording": rid, "kind": m.get("kind", "?"),
                       "engine": engine_words(m), "machine": machine_words(m), "date": date,
                       "run time (s)": round(run_s) if run_s is not None else None,
                       "size (KB)": round(_size(folder) / 1024),
                       "download": f'<a href="{DATA_URL}/{zip_name(chapter, folder)}">zip</a>'})
        if m.get("kind") != "measured":
            continue
        command = public_text((m.get("measured") or {}).get("command", ""), chapter, rid)
        made.append({"_id": anchor(chapter, rid) + "-made", "recording": f"{chapter} / {rid}",
                     "command": f"<code>{html_.escape(command)}</code>" if command else "",
                     "compiler": compiler_of(m), "1-minute load, before → after": _load_words(m),
                     "git commit": (m.get("measured") or {}).get("git_commit") or ""})
        for note in m.get("notes") or []:
            if NOTE_LOAD.search(str(note)):  # an older recording's load note: its figures are in the table
                continue
            notes.append(f"<li><b>{html_.escape(chapter)} / {html_.escape(rid)}</b>: "
                         f"{html_.escape(public_text(note, chapter, rid))}</li>")
    every = _rows_html(listed, ["chapter", "recording", "kind", "engine", "machine", "date", "run time (s)",
                                "size (KB)", "download"], "Every recording this book renders", "recordings",
                       raw=("download",))
    how = _rows_html(made, ["recording", "command", "compiler", "1-minute load, before → after", "git commit"],
                     "How each measured recording was made", "provenance", raw=("command",))
    page = ("# Data\n\n"
            "Every recording this book renders, published (an article's numbers, transcribed with their citation) or "
            "measured (a run of this code, with its command and machine). Each zip holds the recording's directory "
            "as it is under `data/`: its `manifest.json` lists every file with its SHA-256. Unzip one anywhere and "
            "render a chapter from it with `make chapter CH=<chapter> RECORDING=/path/to/it`. Every figure on this "
            "page is read from the recordings' manifests when the book is built.\n\n"
            "```{raw} html\n" + every + "\n```\n\n"
            "## How each measured recording was made\n\n"
            "The command that made the recording (with its destination shown as its place under `data/`), the "
            "compiler that built what ran, and the machine's 1-minute load average just before the run started "
            "and at its end. A run's own threads and backends count in the load at its end. A load above half the "
            "logical CPUs before a run means something else was running: the runner then waits for the machine to "
            "quieten, for a set time at most, and says so here and in the recording's notes.\n\n"
            "```{raw} html\n" + how + "\n```\n\n"
            + ("## Notes kept with the recordings\n\n```{raw} html\n<ul class=\"recording-notes\">"
               + "".join(notes) + "</ul>\n```\n" if notes else ""))
    page += stacks_provenance([m for _, _, m in recordings()])
    page += "\n" + machine_card.cards_markdown()
    out = repo_root() / "book" / "data.md"
    out.write_text(page, encoding="utf-8")
    return out


def stacks_provenance(manifests: list[dict]) -> str:
    """How the measured PostgreSQL recordings' stacks were captured, and why on which server build: said from the
    manifests (a Debian package's version string names Debian; a server built by ``make pg-named`` does not)."""
    builds = sorted({(m.get("engine") or {}).get("version", "") for m in manifests
                     if m.get("kind") == "measured" and (m.get("engine") or {}).get("name") == "postgres"})
    if not builds:
        return ""
    debian = [b for b in builds if "Debian" in b]
    own = [b for b in builds if b and "Debian" not in b]
    said = []
    if own:
        said.append(f"{', '.join(own)} built from Debian's source package by `make pg-named` (`-O2 -g "
                    "-fno-omit-frame-pointer`, not stripped), run with `PG_BINDIR` pointing at it")
    if debian:
        said.append(f"Debian's own package ({', '.join(debian)})")
    return ("\n## How the PostgreSQL stacks were captured\n\n"
            "CPU stacks are sampled by `perf record -g -e cpu-clock` on the workload's backends. Debian's PostgreSQL "
            "binary is stripped, so perf cannot name its static functions: with it, about a quarter of the samples "
            "ended in `postgres![unknown]` and almost every sample had such a frame. DWARF unwinding "
            "(`--call-graph dwarf`) changed neither figure, because the stacks already unwound to `main`: what was "
            "missing was the symbols, not the frames. A server built from the same source without stripping names "
            "all but a fraction of a percent of them. Off-CPU stacks (`sched:sched_switch`, "
            "`perftools offcpu`) unwind with DWARF (`dwarf,8192`), because a sleeping backend's innermost frames are "
            "in libc, which keeps no frame pointers. The measured PostgreSQL recordings here ran on "
            + "; and on ".join(said) + ".\n")


RUN_TIMES = Path("book") / "chapters" / "run-times.md"  # included by running-live.md; written at every build


def write_run_times() -> Path:
    """The reference runs' times, from their manifests, as a table ``running-live.md`` includes."""
    from .provenance import engine_words, run_seconds

    lines = []
    for chapter, folder, m in recordings():
        run_s = run_seconds(m)
        if run_s is None:
            continue
        p = m.get("parameters") or {}
        host = m.get("host") or {}
        lines.append(f"| {chapter} | {engine_words(m)} | {folder.name} | {run_s:,.0f} | {p.get('repetitions', '—')} "
                     f"| {host.get('logical_cpus') or '—'} |")
    table = ("```{table} How long each measured recording took to make (from its manifest's start and end)\n"
             ":name: table-run-times\n\n"
             "| chapter | engine | recording | run time (s) | repetitions | logical CPUs |\n"
             "|---|---|---|---:|---:|---:|\n" + "\n".join(lines) + "\n```\n") if lines else \
        "*No measured recording is in this checkout.*\n"
    out = repo_root() / RUN_TIMES
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table, encoding="utf-8")
    return out


def write_zips(html_dir: Path) -> list[Path]:
    """A zip per recording next to the HTML; one is remade only when a file of its recording is newer."""
    out_dir = html_dir / DATA_URL
    out_dir.mkdir(parents=True, exist_ok=True)
    made = []
    for chapter, folder, _ in recordings():
        target = out_dir / zip_name(chapter, folder)
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        newest = max((p.stat().st_mtime for p in files), default=0)
        if target.exists() and target.stat().st_mtime >= newest:
            continue
        tmp = target.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for p in files:
                z.write(p, Path(folder.name) / p.relative_to(folder))
        tmp.replace(target)
        made.append(target)
    return made


PERFTOOLS_PAGES = Path("book") / "chapters"  # perftools-*.md, included by perftools.md; written at every build
PERFTOOLS_EXAMPLE_STACKS = Path("last-page-insert") / "measured-postgres-reference" / "stacks"
PERFTOOLS_EXAMPLES = {  # include file -> the perftools command line whose output it shows ($S: the stacks folder)
    "perftools-diff.md": ["diff", "$S/hash_partitioned.folded.gz", "$S/sequential.folded.gz", "--top", "5"],
    "perftools-callers.md": ["callers", "$S/sequential.folded.gz", "postgres!LWLockRelease", "--depth", "2",
                             "--min-pct", "10"],
}
PERFTOOLS_BENCH = Path("benchmarks") / "results" / "bench-perftools.json"  # written by make bench-perftools --json


def write_perftools_pages(out_dir: Path | None = None) -> list[Path]:
    """The perftools page's worked example, run on the shipped recording at build time (so its counts are the
    data's, not a copy), and its speed table from the last committed benchmark result."""
    out_dir = out_dir or repo_root() / PERFTOOLS_PAGES
    out_dir.mkdir(parents=True, exist_ok=True)
    stacks = data_root() / PERFTOOLS_EXAMPLE_STACKS
    # the examples' output depends on their command lines, the files they read and perftools' own code: the same
    # of all three gives the same pages, and running them took 1.2 s of every build (a fifth of an unchanged one)
    stamp_file, stamp = out_dir / ".perftools-examples.stamp", _perftools_examples_stamp(stacks)
    written = [out_dir / name for name in PERFTOOLS_EXAMPLES]
    if not (stamp_file.exists() and stamp_file.read_text(encoding="utf-8") == stamp
            and all(path.exists() for path in written)):
        stamp_file.unlink(missing_ok=True)
        _run_perftools_examples(out_dir, stacks)
        stamp_file.write_text(stamp, encoding="utf-8")
    speed = out_dir / "perftools-speed.md"
    bench = repo_root() / PERFTOOLS_BENCH
    if bench.exists():
        res = json.loads(bench.read_text(encoding="utf-8"))
        rows = [f"| {g['goal']} | {g['figure']:.2f}× | ≤ {g['limit']:.2f}× | {'met' if g['ok'] else 'missed'} |"
                for g in res["goals"]]
        speed.write_text(
            f"```{{table}} make bench-perftools on {res.get('machine', 'the build machine')}, {res.get('date', '')}: "
            f"whole processes, median of {res.get('repeat', 3)} interleaved runs\n:name: table-perftools-speed\n\n"
            "| what | figure | goal | outcome |\n|---|---:|---:|---|\n" + "\n".join(rows) + "\n```\n", encoding="utf-8")
    else:
        speed.write_text("*No benchmark result is in this checkout: `make bench-perftools` measures one.*\n",
                         encoding="utf-8")
    written.append(speed)
    return written


def _perftools_examples_stamp(stacks: Path) -> str:
    """A digest of what the examples' pages depend on: their command lines, the files they name, and every
    perftools source file (Python and C)."""
    import hashlib

    h = hashlib.sha256(json.dumps(PERFTOOLS_EXAMPLES, sort_keys=True).encode())
    named = {a.replace("$S", str(stacks)) for argv in PERFTOOLS_EXAMPLES.values() for a in argv if "$S" in a}
    code = Path(__file__).resolve().parents[1] / "perftools"
    sources = sorted(p for p in code.rglob("*") if p.suffix in (".py", ".c", ".h") and "__pycache__" not in p.parts)
    for path in [*sorted(Path(n) for n in named), *sources]:
        h.update(str(path.name).encode())
        h.update(path.read_bytes() if path.exists() else b"(missing)")
    return h.hexdigest()


def _run_perftools_examples(out_dir: Path, stacks: Path) -> None:
    import contextlib
    import io

    from contention_book.perftools.__main__ import main as perftools

    for name, argv in PERFTOOLS_EXAMPLES.items():
        buf, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            status = perftools([a.replace("$S", str(stacks)) for a in argv])
        if status != 0:
            raise SystemExit(f"[book] the perftools page's example `perftools {' '.join(argv)}` failed: {err.getvalue()}")
        # redirect_stdout is process-wide: the build's own "[book] ..." lines, printed by the threads that execute
        # chapters meanwhile, land in buf too; they go back to the console, not onto the page
        lines = buf.getvalue().splitlines(keepends=True)
        sys.__stdout__.write("".join(line for line in lines if line.startswith("[book] ")))
        text = "".join(line for line in lines if not line.startswith("[book] ")).replace(str(stacks), "$S")
        (out_dir / name).write_text(f"```text\n{text}```\n", encoding="utf-8")
