"""Chapter 4: last-page insert contention (document 003, SQLCAT 2009).

Every insert into a B-tree whose key only grows lands on the same leaf, the
rightmost one, and must hold that page's latch (SQL Server's PAGELATCH_EX;
PostgreSQL's exclusive buffer content lock) while it adds its row.  With
enough concurrent inserters they queue there.  Hash partitioning gives each
partition its own B-tree and so its own last page; a non-sequential key
spreads the inserts but splits pages in the middle.

Modules: :mod:`.live` (runs, PostgreSQL path), :mod:`.live_sqlserver`,
:mod:`.pages` (waited-for page -> index), :mod:`.readcost` (plans),
:mod:`.analysis` (recordings -> tables and numbers),
:mod:`.figures`, :mod:`.procdriver` (a process-per-session driver for the
driver benchmark).
"""
from .common import CHAPTER, DEFAULT_MEASURED, LABELS, NOTEBOOK, PUBLISHED, VARIANTS  # noqa: F401
from .live import run_live  # noqa: F401
