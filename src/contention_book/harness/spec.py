"""A chapter described as data: its engines, variants, parameters and recording layout.

Every ``chapters/<chapter>/spec.py`` defines one :class:`ChapterSpec` named
``SPEC``.  The live runner, the recording reader and the published-data
writer all read it, so a file's path and columns are written down once.

Where files go in a recording (the same in every chapter):

- ``runs.csv``: one row per variant x point x repetition;
- ``results/``: other measured tables a run produces (per-CPU-pair
  latencies, latency ladders, per-point summaries a program prints);
- ``dmv/``: server state read once or before and after each point
  (DMV or ``pg_stat_*`` deltas, index and page statistics);
- ``samples/``: series polled *during* a run, and the shares computed
  straight from them (wait-event samples, counters at 1 Hz, pinned pages);
- ``stacks/``: collapsed CPU stacks (perf, or a converted WPA/xperf export);
- ``published/``: tables transcribed from a source (published recordings only);
- ``run.log``: what the live runner printed (plan, progress, restores).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import pandas as pd

from .params import Param

ENGINES = ("native", "postgres", "sqlserver")
FOLDERS = ("results/", "dmv/", "samples/", "stacks/", "published/")

# Columns that hold words in every table that has them; every other column a layout declares holds numbers
# (or nothing), unless its Table names it in ``text``.
TEXT_COLUMNS = frozenset({
    "variant", "name", "counter", "instance_name", "unit", "method", "placement", "l3", "function", "machine",
    "relation", "backend_type", "wait", "phase", "index", "query", "measurement", "fact", "layout", "statement",
    "topic", "page", "object", "is_last_page", "worker_cpus"})


@dataclass(frozen=True)
class Identity:
    """An accounting identity every row of a measured table must satisfy (what went in = what came out + what
    is left), written once here and checked by the live runner after each point and by the loader.

    ``holds(frame)`` returns a boolean Series, True where the row balances.
    ``needs`` names the columns it reads; a measured recording of one of
    ``engines`` (all engines when empty) that lacks one of them cannot be
    checked, which is an error when ``required``.
    """

    name: str                                   # "pushed = popped + backlog change + lost"
    holds: Callable[[pd.DataFrame], pd.Series]
    needs: tuple[str, ...]
    engines: tuple[str, ...] = ()
    required: bool = True

    def applies_to(self, engine: str) -> bool:
        return not self.engines or engine in self.engines


class Unbalanced(RuntimeError):
    """A point whose numbers do not balance: the design under test is broken, not slow."""


def unbalanced(table: "Table", frame: pd.DataFrame, engine: str) -> list[tuple[int, Identity]]:
    """(row position, identity) for every row of ``frame`` that fails one of ``table``'s identities."""
    out = []
    for ident in table.identities:
        if not ident.applies_to(engine) or not set(ident.needs) <= set(frame.columns) or frame.empty:
            continue
        ok = ident.holds(frame).reindex(frame.index).fillna(False).astype(bool)
        out += [(pos, ident) for pos in (~ok).to_numpy().nonzero()[0]]
    return sorted(out, key=lambda x: x[0])


def missing_for_identities(table: "Table", frame: pd.DataFrame, engine: str) -> list[tuple[Identity, list[str]]]:
    """Required identities that cannot be checked because ``frame`` lacks their columns."""
    return [(i, [c for c in i.needs if c not in frame.columns]) for i in table.identities
            if i.required and i.applies_to(engine) and not set(i.needs) <= set(frame.columns)]


def point_words(row: Mapping) -> str:
    """'ring at 4 sessions, repetition 2': the point a row belongs to, in words."""
    parts = [str(row["variant"])] if "variant" in row else []
    for col, word in (("sessions", "sessions"), ("producers", "producers"), ("threads", "threads"),
                      ("repetition", "repetition")):
        if col == "sessions" and "threads" in row and row.get("threads") == row.get("sessions"):
            continue  # the same count twice: a native run's threads are its sessions
        if col in row and pd.notna(row[col]):
            value = row[col]
            value = int(value) if isinstance(value, float) and float(value).is_integer() else value
            parts.append(f"repetition {value}" if col == "repetition" else f"at {value} {word}")
    return " ".join(parts) or "the point"


def check_balanced(table: "Table", frame: pd.DataFrame, engine: str, where: str = "") -> None:
    """Raise :class:`Unbalanced` naming the point and identity when a just-measured row does not balance."""
    for ident, cols in missing_for_identities(table, frame, engine):
        raise Unbalanced(f"{where or table.path}: cannot check {ident.name!r}: no column {', '.join(cols)}")
    bad = unbalanced(table, frame, engine)
    if bad:
        pos, ident = bad[0]
        row = frame.iloc[pos]
        shown = ", ".join(f"{c}={row[c]}" for c in ident.needs)
        raise Unbalanced(f"{where or table.path}: {point_words(row)} does not balance: {ident.name} ({shown})")


@dataclass(frozen=True)
class Table:
    """One CSV in a recording: its path, the columns a chapter reads, and who must have it.

    ``required`` names the recordings that must hold the file: engine names
    (measured recordings of that engine) and/or ``"published"``.
    """

    path: str
    columns: tuple[str, ...]
    required: tuple[str, ...] = ()
    description: str = ""
    values: Mapping[str, tuple] = field(default_factory=dict)  # column -> the values it may hold (e.g. variants)
    unique: tuple[str, ...] = ()  # columns no two rows of a measured recording share (published rows are as printed)
    text: tuple[str, ...] = ()  # columns holding words beyond TEXT_COLUMNS; the rest hold numbers
    identities: tuple[Identity, ...] = ()  # accounting identities each measured row must satisfy
    optional: tuple[str, ...] = ()  # columns a recording may lack; where present, checked like the declared ones

    def __post_init__(self) -> None:
        if self.path != "runs.csv" and not self.path.startswith(FOLDERS):
            raise ValueError(f"table {self.path}: expected runs.csv or a path under {', '.join(FOLDERS)}")
        if not self.path.endswith(".csv"):
            raise ValueError(f"table {self.path}: expected a .csv file")

    @property
    def numeric(self) -> tuple[str, ...]:
        """The declared columns (required or optional) that must hold finite numbers (or be empty)."""
        return tuple(c for c in (*self.columns, *self.optional) if c not in TEXT_COLUMNS and c not in self.text)

    def required_for(self, kind: str, engine: str) -> bool:
        return ("published" in self.required) if kind == "published" else (engine in self.required)


#: Off-CPU and wake-up stacks of a live run (perftools.capture.OffCpuRecorder), folded, weighed in microseconds
#: blocked: ``stacks/<variant>.offcpu-folded.gz`` and ``stacks/<variant>.wakeup-folded.gz`` (not ``.folded.gz``,
#: which a recording reads as a CPU profile), and one row per capture in OFFCPU_CAPTURES: what it folded and what
#: it cost (perf record's own CPU seconds, per second recorded; perf.data's bytes).
OFFCPU_STACKS = "stacks/{variant}.offcpu-folded.gz"
WAKEUP_STACKS = "stacks/{variant}.wakeup-folded.gz"
OFFCPU_CAPTURES = Table(
    "stacks/offcpu_captures.csv",
    ("variant", "sessions", "repetition", "threads", "call_graph", "window_s", "events", "intervals", "blocked_us",
     "open_at_end", "began_before", "wakeup_us", "perf_cpu_s", "perf_cpu_per_s", "data_bytes", "fold_s"),
    description="per off-CPU capture: the point, the threads watched, intervals folded and dropped, perf's cost",
    unique=("variant", "sessions", "repetition"), text=("threads", "call_graph"))


def known_variants(variants: Mapping[str, tuple[str, ...]], labels: Mapping[str, str]) -> tuple[str, ...]:
    """Every variant name a recording of the chapter may hold: its engines' variants and the labelled ones."""
    return tuple(sorted(set(labels) | {v for vs in variants.values() for v in vs}))


@dataclass(frozen=True)
class ChapterSpec:
    """What a chapter is, as data."""

    chapter: str                       # "logcache-spinlock": the data/ folder and the notebook's name
    notebook: str                      # "02-logcache-spinlock.ipynb"
    titles: Mapping[str, str] | str    # engine -> the manifest title of a live run (one text: every engine's)
    variants: Mapping[str, tuple[str, ...]]  # engine -> variants, baseline first
    labels: Mapping[str, str]          # variant -> the words a page uses for it
    params: tuple[Param, ...]          # live-run parameters (harness.params)
    layout: Mapping[str, Table]        # key -> table
    published: tuple[str, ...]         # ids of the published recordings the chapter always shows
    reference: Mapping[str, str]       # engine -> id of the book's measured reference recording
    native_programs: tuple[str, ...] = ()
    extra: Mapping[str, object] = field(default_factory=dict)

    @property
    def engines(self) -> tuple[str, ...]:
        return tuple(self.variants)

    def title(self, engine: str) -> str:
        """The manifest title of a live run on ``engine``."""
        if isinstance(self.titles, str):
            return self.titles
        return self.titles.get(engine, self.chapter)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def label(self, variant: str) -> str:
        return self.labels.get(variant, variant)
