"""Chapter 5: LMAX queues in a database (document 004, Chris Adkin 2015-2016).

A queue is a contention test bed: every producer wants the next slot, every
consumer the oldest message.  The LMAX Disruptor solves it in process with a
pre-allocated power-of-two ring, sequences claimed with one atomic add,
cursors on cache lines of their own and consumers that batch.  The article
rebuilt that ring inside SQL Server on In-Memory OLTP and peeled off the
bottlenecks one by one, down to a spinlock on the metadata cache.

Its engines: run_native, run_postgres and run_sqlserver; the rest is the
shape of every chapter (chapters/__init__.py).
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
