"""Chapter 3: ghost cleanup under row versioning (document 002, Paul White 2024).

A one-row table whose key is updated N times, one transaction each.  Under
locking read committed the deleted key becomes a ghost that the background
task removes almost at once; under RCSI it is a *version ghost* that nobody
may remove while an older transaction could need it, and every later update
has to step over it.  The k-th update skips the k-1 ghosts before it, so the
work grows with N²/2.  PostgreSQL's analogue: dead tuples that a held-back
xmin horizon keeps from being pruned.

The package runs the variants live (SQL Server or PostgreSQL) and turns any
recording of this chapter into what the notebook shows, one concern per
module: ``live`` runs and records, ``data`` reads a recording, ``analysis``
computes the tables, numbers and verdicts, ``figures`` draws them.
"""
from .analysis import (  # noqa: F401 - the chapter's public API, as the notebook uses it
    curve_growth,
    elapsed_table,
    ghost_visits,
    growth_note,
    header_note,
    key_numbers,
    measured_numbers,
    storage_long,
    verdicts,
)
from .common import BASELINE, CHAPTER, DEFAULT_MEASURED, FILES, LABELS, NOTEBOOK, PUBLISHED, VARIANTS  # noqa: F401
from .data import GhostRecording, load, load_published  # noqa: F401
from .figures import plot_curve, plot_elapsed, plot_storage, stacks_section  # noqa: F401
from .live import chunk_sizes, counter_rates, run_live, sqlserver_changes  # noqa: F401
