"""Chapter 1: latch fairness and convoys (document 000, Paul White 2022).

Parallel workers of one data-changing plan add their log records to the
parent transaction under one latch, NESTING_TRANSACTION_FULL.  By default the
latch is *fair*: a releaser hands it to the longest waiter and wakes it, so
every acquisition under contention pays for a wake-up and a context switch.
Trace flag 3933 (from SQL Server 2019 CTP 2.5; per the article also effective in 2022 CTP 2.1) makes it *unfair*: the latch is released,
a running thread may take it, and waiters spin before they sleep.

Its engines: run_native (``native/latch_convoy.c`` over lock kinds and thread
counts) and run_sqlserver (the article's parallel insert, fair and, opt-in,
unfair); the rest is the shape of every chapter (chapters/__init__.py).
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
