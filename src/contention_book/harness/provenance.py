"""How a measured recording was made, in words fit for a public page: its command without the machine's paths,
its run time, the machine's 1-minute load average before and after, and the compiler.

Every figure comes from the recording's manifest at build time, so the Data page, ``running-live.md`` and
the chapters cannot disagree about a run time.  No path of the machine that made a recording (``--record-to
/tmp/...``, a home directory) reaches a page: :func:`public_text` puts the recording's place under ``data/``
or a placeholder in its stead.
"""
from __future__ import annotations

import html
import re
from datetime import datetime
from typing import Any, Mapping

# An absolute path: /x/y, ~/x, C:\x (not the "/s" of "calls/s", not a URL's "//host/path").
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~\\<])(?:~?/(?:[^\s'\"`;,()]+)|[A-Za-z]:\\[^\s'\"`;,()]+)")
RECORD_TO = re.compile(r"(--record-to(?:\s+|=)|RECORD_TO=)(\"[^\"]*\"|'[^']*'|\S+)")
RECORDING_VAR = re.compile(r"(RECORDING=|--recording(?:\s+|=))(\"[^\"]*\"|'[^']*'|\S+)")
PLACEHOLDER = "<a folder>"


def public_text(text: str, chapter: str = "", recording_id: str = "") -> str:
    """``text`` with no machine path: ``--record-to``/``RECORD_TO=`` name the recording's place under
    ``data/``, any other absolute path becomes :data:`PLACEHOLDER`."""
    here = f"data/{chapter}/{recording_id}" if chapter and recording_id else PLACEHOLDER
    out = RECORD_TO.sub(lambda m: m.group(1) + here, str(text))
    out = RECORDING_VAR.sub(lambda m: m.group(1) + (m.group(2) if not ABSOLUTE_PATH.fullmatch(m.group(2).strip("'\""))
                                                    else (recording_id or PLACEHOLDER)), out)
    return ABSOLUTE_PATH.sub(PLACEHOLDER, out)


def has_machine_path(text: str) -> bool:
    """True when ``text`` still holds an absolute path (a test's check of every generated page)."""
    return bool(ABSOLUTE_PATH.search(str(text)))


def _when(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def run_seconds(manifest: Mapping[str, Any]) -> float | None:
    """A measured recording's run time, from its manifest's start and end (None when it has neither)."""
    if manifest.get("kind") != "measured":
        return None
    start, end = _when(manifest.get("started")), _when(manifest.get("ended"))
    return (end - start).total_seconds() if start and end else None


# Recordings made before the runner kept the load in the manifest said it in a note, in these words.
NOTE_LOAD = re.compile(r"1-minute load average ([\d.]+) just before it started and ([\d.]+) at its end")


def load_of(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The 1-minute load average before and after the run, the wait for a quiet machine, and where the figures
    come from: the manifest's ``load`` (written by the runner), or an older recording's note; empty if neither."""
    load = manifest.get("load") or {}
    if load:
        return {"before": load.get("before_1min"), "after": load.get("after_1min"), "waited_s": load.get("waited_s"),
                "cpus": load.get("logical_cpus"), "quiet": load.get("quiet"), "source": "runner"}
    for note in manifest.get("notes") or []:
        m = NOTE_LOAD.search(str(note))
        if m:
            return {"before": float(m.group(1)), "after": float(m.group(2)), "waited_s": None, "cpus": None,
                    "source": "note"}
    return {}


def compiler_of(manifest: Mapping[str, Any]) -> str:
    """The compiler that built what ran: the C compiler of the native programs, or the one PostgreSQL's
    ``version()`` names; empty when the manifest does not say (SQL Server, a published recording)."""
    engine = manifest.get("engine") or {}
    if engine.get("name") == "native":
        return str(engine.get("version") or "")
    m = re.search(r"compiled by ([^,]+)", str(engine.get("build") or ""))
    return m.group(1).strip() if m else ""


def engine_words(manifest: Mapping[str, Any]) -> str:
    """The engine as a reader names it: "C programs", "PostgreSQL 15.18", "SQL Server 16.0.4135.4"; a published
    in-process recording by the language its own manifest names ("Java (the paper's JVM)")."""
    engine = manifest.get("engine") or {}
    name, version = engine.get("name", ""), str(engine.get("version") or "")
    if name == "native":
        return version if manifest.get("kind") == "published" and version else "C programs"
    if name == "postgres":
        return f"PostgreSQL {version.split()[0]}" if version else "PostgreSQL"
    if name == "sqlserver":
        return f"SQL Server {version}".strip()
    return f"{name} {version}".strip()


def machine_words(manifest: Mapping[str, Any]) -> str:
    host = manifest.get("host") or {}
    machine = host.get("description") or host.get("cpu_model") or "—"
    if host.get("logical_cpus") and "logical" not in machine:
        machine += f" ({host['logical_cpus']} logical CPUs)"
    return machine


def in_book_data(recording) -> bool:
    """A recording shipped in this book's data (``data/<chapter>/<id>``), not a reader's own from elsewhere: the
    Data page has a row for it, and its folder name need not be shown."""
    from .checkout import data_root

    path = recording.path
    return path.resolve().parent == (data_root() / recording.chapter).resolve() and path.name == recording.id


def anchor(chapter: str, recording_id: str) -> str:
    """The id of a recording's row on the Data page (chapters link to it)."""
    return re.sub(r"[^A-Za-z0-9-]+", "-", f"recording-{chapter}-{recording_id}").strip("-").lower()


ENGINE_NAMES = {"postgres": "PostgreSQL", "sqlserver": "SQL Server", "native": "native (C)"}


def recording_link(chapter: str, recording_id: str, data_page: str = "../data.html") -> str:
    """A recording named in words, linked to its row on the Data page, where its id, machine and commit are.  The
    Data page has a row for each ``data/<chapter>/<id>`` (book_pages.recordings); a recording from elsewhere (a
    reader's own) has none, and is named in words alone rather than by a broken link."""
    from .checkout import data_root

    m = re.fullmatch(r"measured-(\w+)-reference", recording_id)
    if m:
        words = f"this book's {ENGINE_NAMES.get(m.group(1), m.group(1))} reference run"
    elif recording_id.startswith("published-"):
        words = "the article's published numbers"
    else:
        words = f"the recording {recording_id}"
    if not (data_root() / chapter / recording_id / "manifest.json").is_file():
        return html.escape(words)
    return f'<a href="{data_page}#{anchor(chapter, recording_id)}">{html.escape(words)}</a>'


def recordings_note(measured, published) -> str:
    """The chapter's closing list of the recordings it renders: each one's id, engine, machine and date, with a
    link to the Data page row that says how it was made.  No command and no machine path: those are on the Data
    page, for the book's own recordings, or in a reader's own recording's manifest.

    ``measured`` is ``[(label, Recording)]``; ``published`` is ``[Recording]``."""
    import html as html_

    lines = ["This chapter renders the recordings below. How each measured one was made (its command, machine, "
             'compiler, and the machine\'s load before and after) is on the <a href="../data.html#provenance">Data '
             "page</a>."]
    for label, r in measured:
        m = r.manifest
        date = str(m.get("started") or "")[:10]
        ours = in_book_data(r)
        where = (f' (<a href="../data.html#{anchor(r.chapter, r.id)}-made">how it was made</a>)' if ours else
                 "; a recording from outside this book's data: its `manifest.json` says how it was made")
        folder = f" (folder `{r.path.name}`)" if r.path.name != r.id else ""
        lines.append(f"- {html_.escape(label)}: `{r.id}`{folder}, {engine_words(m)} on {machine_words(m)}, recorded "
                     f"{date}{where}")
        if not ours:
            lines += [f"  - note: {public_text(n, r.chapter, r.id)}" for n in m.get("notes") or []]
    for r in published:
        c = r.manifest.get("citation") or {}
        title = f"“{c.get('title', '')}”"
        if str(c.get("url", "")).startswith(("https://", "http://")):
            title = f"[{title}]({c['url']})"
        lines.append(f"- Published: `{r.id}`, transcribed from {c.get('author', '')}, {title} ({c.get('date', '')})")
    return "\n".join(lines)
