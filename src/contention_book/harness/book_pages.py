"""The book's generated pages: Findings (every chapter's verdict rows in one table) and Data (every recording,
with a zip to download).  Both are written from data at build time, never typed.

A chapter's notebook saves its verdict rows with :func:`save_verdicts` as it renders them; :func:`write_findings`
gathers what the chapters saved, so the page shows exactly the rows the chapters show.
"""
from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pandas as pd

from .recording import data_root, repo_root

VERDICTS_DIR = Path("book") / "chapters" / "verdicts"
# Set by the book builder for the book's own executed copies only: a notebook executed elsewhere (a test, a
# reader's --output) must not change what the Findings page and the figure checks say.
PAGE_DATA_ENV = "CONTENTION_BOOK_PAGE_DATA"


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


def findings_frame(notebooks: dict[str, Path]) -> pd.DataFrame:
    """One row per claim of every chapter, from the rows each chapter saved when it was rendered."""
    rows = []
    for chapter, nb in notebooks.items():
        saved = repo_root() / VERDICTS_DIR / f"{chapter}.json"
        link = f'<a href="chapters/{nb.stem}.html#{claims_anchor(chapter)}">{_title(nb)}</a>'
        if not saved.exists():
            link = f'<a href="chapters/{nb.stem}.html">{_title(nb)}</a>'
            rows.append({"chapter": link, "claim": "(this chapter did not build, so its verdicts are missing)",
                         "published": None, "measured": None, "verdict": None, "rule": None})
            continue
        for r in json.loads(saved.read_text(encoding="utf-8")):
            rows.append({"chapter": link, "claim": r["claim"], "published": r["published"],
                         "measured": r["measured"], "verdict": r["verdict"], "rule": r["rule"]})
    return pd.DataFrame(rows, columns=["chapter", "claim", "published", "measured", "verdict", "rule"])


def write_findings(notebooks: dict[str, Path]) -> Path:
    from contention_book.chapters.shared.display import table_html

    frame = findings_frame(notebooks)
    counts = frame["verdict"].dropna().map(lambda v: str(v).split(":")[0]).value_counts()
    summary = ", ".join(f"{n} {v}" for v, n in counts.items()) or "no verdicts yet"
    html = table_html(frame, glossary="", raw=("chapter",), table_id="findings")
    page = ("# Findings\n\n"
            "Every claim the chapters check, in one table: what the article reported, what the recording shown in "
            "the chapter measured, the verdict and the rule that decides it. The rows are the chapters' own verdict "
            "rows, gathered when the book is built; follow a chapter's link for the numbers behind a row. "
            f"In this build: {summary}.\n\n"
            "```{raw} html\n" + html + "\n```\n")
    out = repo_root() / "book" / "findings.md"
    out.write_text(page, encoding="utf-8")
    return out


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


def write_data_page() -> Path:
    rows = []
    for chapter, folder, m in recordings():
        host = m.get("host") or {}
        machine = host.get("description") or host.get("cpu_model") or "—"
        if host.get("logical_cpus") and "logical" not in machine:
            machine += f" ({host['logical_cpus']} logical CPUs)"
        date = (m.get("started") or (m.get("citation") or {}).get("date") or "")[:10]
        engine = m.get("engine") or {}
        run_s = None
        if m.get("kind") == "measured" and m.get("started") and m.get("ended"):
            from datetime import datetime

            try:
                run_s = (datetime.fromisoformat(m["ended"].replace("Z", "+00:00"))
                         - datetime.fromisoformat(m["started"].replace("Z", "+00:00"))).total_seconds()
            except ValueError:
                run_s = None
        rows.append({"chapter": chapter, "recording": folder.name, "kind": m.get("kind", "?"),
                     "engine": f"{engine.get('name', '')} {engine.get('version', '')}".strip(),
                     "machine": machine, "date": date, "run time (s)": run_s, "size (KB)": round(_size(folder) / 1024),
                     "download": f'<a href="{DATA_URL}/{zip_name(chapter, folder)}">zip</a>'})
    from contention_book.chapters.shared.display import table_html

    frame = pd.DataFrame(rows)
    html = table_html(frame, glossary="", raw=("download",), table_id="recordings")
    page = ("# Data\n\n"
            "Every recording this book renders, published (an article's numbers, transcribed with their citation) or "
            "measured (a run of this code, with its command and machine). Each zip holds the recording's directory "
            "as it is under `data/`: its `manifest.json` lists every file with its SHA-256. Unzip one anywhere and "
            "render a chapter from it with `make chapter CH=<chapter> RECORDING=/path/to/it`.\n\n"
            "```{raw} html\n" + html + "\n```\n")
    out = repo_root() / "book" / "data.md"
    out.write_text(page, encoding="utf-8")
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
