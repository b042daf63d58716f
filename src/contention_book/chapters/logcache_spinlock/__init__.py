"""Chapter 2: cache-line economics (document 001, Chris Adkin 2015: LOGCACHE_ACCESS on a big box).

A hot spinlock costs one cache-line transfer per hand-off; a context switch
on the lock holder's CPU costs far more.  The article sped up singleton
inserts on SQL Server by keeping every other scheduler off the log writer's
core.  This package runs the native microbenchmarks (core-to-core latency,
load latency, context switches, a toy log cache), the PostgreSQL analogue
(WAL insertion under N inserting sessions, the walwriter pinned alone) and
the SQL Server workload (with the affinity change inside the guard), writes
recordings, and turns any recording into the chapter's tables and figures.

Modules: common (names), recordings (loading), native_run, live_postgres,
live_sqlserver, live (the entry point), analysis, stacks, figures.
"""
from .common import (BASELINE, CHAPTER, DEFAULT_MEASURED, LABELS, NOTEBOOK, PUBLISHED, PUBLISHED_C2C, RELIEVED,
                     VARIANTS)
from .live import run_live
from .recordings import LogcacheRecording, load, load_measured, load_published

__all__ = ["CHAPTER", "NOTEBOOK", "PUBLISHED", "PUBLISHED_C2C", "DEFAULT_MEASURED", "VARIANTS", "BASELINE",
           "RELIEVED", "LABELS", "run_live", "load", "load_measured", "load_published", "LogcacheRecording"]
