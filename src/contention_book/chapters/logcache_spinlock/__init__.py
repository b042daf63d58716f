"""Chapter 2: cache-line economics (document 001, Chris Adkin 2015: LOGCACHE_ACCESS on a big box).

A hot spinlock costs one cache-line transfer per hand-off; a context switch
on the lock holder's CPU costs far more.  The article sped up singleton
inserts on SQL Server by keeping every other scheduler off the log writer's
core.  The chapter runs native microbenchmarks (core-to-core latency, load
latency, context switches, a toy log cache), a PostgreSQL analogue (WAL
insertion under N sessions, the walwriter pinned alone) and the article's
SQL Server workload (the affinity change inside the guard).

Its engines: run_native, run_postgres and run_sqlserver; the rest is the
shape of every chapter (chapters/__init__.py).
"""
from ..shared.diagnose import ChapterQueries
from ..shared.lazy import drawing_modules
from . import claims, finding, recordings, tables
from .claims import verdicts
from .recordings import header_note, load_shown
from .spec import SPEC
from .finding import key_numbers

diagnose = ChapterQueries(SPEC.chapter)  # the On your own server queries (chapters.shared.diagnose)
__getattr__ = drawing_modules(__name__)  # figures and diagrams (matplotlib) on first use: a live run draws nothing

__all__ = ["SPEC", "load_shown", "header_note", "key_numbers", "verdicts", "claims", "diagnose", "diagrams", "figures",
           "finding", "recordings", "tables"]
