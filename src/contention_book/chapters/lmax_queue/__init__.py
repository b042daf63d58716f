"""Chapter 5: LMAX queues in a database (document 004, Chris Adkin 2015-2016).

A queue is a contention test bed: every producer wants the next slot, every
consumer the oldest message.  The LMAX Disruptor solves it in process with a
pre-allocated power-of-two ring, sequences claimed with one atomic add,
cursors on cache lines of their own and consumers that batch.  The article
rebuilt that ring inside SQL Server on In-Memory OLTP and peeled off the
bottlenecks one by one, down to a spinlock on the metadata cache.

Modules: spec (the chapter as data), recordings (what the page shows), live
(one runner per engine) with run_native, run_postgres, run_sqlserver,
tables (frames and key numbers), claims (verdicts), figures, diagrams (the
mechanism drawn), diagnose (the "On your own server" queries), published
(the article's and the LMAX paper's numbers).
"""
from ..shared.diagnose import ChapterQueries
from . import claims, diagrams, figures, recordings, tables
from .claims import verdicts
from .recordings import header_note, load_shown
from .spec import SPEC
from .tables import key_numbers

diagnose = ChapterQueries(SPEC.chapter)  # the On your own server queries (chapters.shared.diagnose)

__all__ = ["SPEC", "load_shown", "header_note", "key_numbers", "verdicts", "claims", "diagnose", "diagrams", "figures",
           "recordings", "tables"]
