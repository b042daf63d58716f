"""Chapter 4: last-page insert contention (document 003, SQLCAT 2009).

Every insert into a B-tree whose key only grows lands on the same leaf, the
rightmost one, and must hold that page's latch (SQL Server's PAGELATCH_EX;
PostgreSQL's exclusive buffer content lock) while it adds its row.  With
enough concurrent inserters they queue there.  Hash partitioning gives each
partition its own B-tree and so its own last page; a non-sequential key
spreads the inserts but splits pages in the middle.

Its own pieces beyond the shape (chapters/__init__.py): run_common, what both
engines' runs share (one driver call, the waited-for page resolved to its
index on SQL Server, the read cost of a lookup from either engine's plan).
The process-per-session driver of the driver benchmark is
:mod:`contention_book.harness.procdriver`.
"""
from ..shared.diagnose import ChapterQueries
from ..shared.lazy import drawing_modules
from . import claims, finding, recordings, tables
from .claims import verdicts
from .finding import key_numbers
from .recordings import header_note, load_shown
from .spec import SPEC

diagnose = ChapterQueries(SPEC.chapter)  # the On your own server queries (chapters.shared.diagnose)
__getattr__ = drawing_modules(__name__)  # figures and diagrams (matplotlib) on first use: a live run draws nothing

__all__ = ["SPEC", "load_shown", "header_note", "key_numbers", "verdicts", "claims", "diagnose", "diagrams",
           "figures", "finding", "recordings", "tables"]
