"""Chapter 4: last-page insert contention (document 003, SQLCAT 2009).

Every insert into a B-tree whose key only grows lands on the same leaf, the
rightmost one, and must hold that page's latch (SQL Server's PAGELATCH_EX;
PostgreSQL's exclusive buffer content lock) while it adds its row.  With
enough concurrent inserters they queue there.  Hash partitioning gives each
partition its own B-tree and so its own last page; a non-sequential key
spreads the inserts but splits pages in the middle.

Modules: spec (the chapter as data), recordings (what the page shows),
finding (the "In short" opening and every glued number), diagrams (the mechanism drawn), diagnose (the "On
your own server" queries),
live (one runner per engine) with run_postgres and run_sqlserver, calls
(what one driver call runs, shared by both), pages (waited-for page ->
index), readcost (plans -> pages read), tables (frames, key numbers, the
stacks section), claims (verdicts), figures, published (the two sources).
The process-per-session driver of the driver benchmark is
:mod:`contention_book.harness.procdriver`.
"""
from ..shared.diagnose import ChapterQueries
from . import claims, diagrams, figures, finding, recordings, tables
from .claims import verdicts
from .finding import key_numbers
from .recordings import header_note, load_shown
from .spec import SPEC

diagnose = ChapterQueries(SPEC.chapter)  # the On your own server queries (chapters.shared.diagnose)

__all__ = ["SPEC", "load_shown", "header_note", "key_numbers", "verdicts", "claims", "diagnose", "diagrams",
           "figures", "finding", "recordings", "tables"]
