"""Chapter 3: ghost cleanup under row versioning (document 002, Paul White 2024).

A one-row table whose key is updated N times, one transaction each.  Under
locking read committed the deleted key becomes a ghost that the background
task removes almost at once; under RCSI it is a *version ghost* that nobody
may remove while an older transaction could need it, and every later update
has to step over it.  The k-th update skips the k-1 ghosts before it, so the
work grows with N²/2.  PostgreSQL's analogue: dead tuples that a held-back
xmin horizon keeps from being pruned.

Modules: spec (the chapter as data), recordings (what the page shows),
live (one runner per engine) with run_postgres, run_sqlserver and run_common
(the driven session and the update-rate curve), tables (frames, key numbers,
the stacks section), claims (verdicts), figures, published (the article's
two recordings).
"""
from . import claims, figures, recordings, tables
from .claims import verdicts
from .recordings import header_note, load_shown
from .spec import SPEC
from .tables import key_numbers

__all__ = ["SPEC", "load_shown", "header_note", "key_numbers", "verdicts", "claims", "figures", "recordings",
           "tables"]
