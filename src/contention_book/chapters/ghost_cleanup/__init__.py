"""Chapter 3: ghost cleanup under row versioning (document 002, Paul White 2024).

A one-row table whose key is updated N times, one transaction each.  Under
locking read committed the deleted key becomes a ghost that the background
task removes almost at once; under RCSI it is a *version ghost* that nobody
may remove while an older transaction could need it, and every later update
has to step over it.  The k-th update skips the k-1 ghosts before it, so the
work grows with N²/2.  PostgreSQL's analogue: an idle REPEATABLE READ
transaction (SNAPSHOT's twin) pins every dead tuple; an idle READ COMMITTED
one (the article's RCSI transaction) pins nothing; and even then a key
update leaves a dead line pointer and an index entry that only VACUUM frees.

Its own pieces beyond the shape (chapters/__init__.py): run_common, what the
PostgreSQL and SQL Server runs share (the driven session, the update-rate
curve); finding holds the opening and the sentences that depend on which
variants a recording holds.
"""
from ..shared.diagnose import ChapterQueries
from ..shared.lazy import drawing_modules
from . import claims, finding, recordings, tables
from .claims import verdicts
from .recordings import header_note, load_shown
from .spec import SPEC
from .tables import key_numbers

diagnose = ChapterQueries(SPEC.chapter)  # the On your own server queries (chapters.shared.diagnose)
__getattr__ = drawing_modules(__name__)  # figures and diagrams (matplotlib) on first use: a live run draws nothing

__all__ = ["SPEC", "load_shown", "header_note", "key_numbers", "verdicts", "claims", "diagnose", "diagrams", "figures",
           "finding", "recordings", "tables"]
