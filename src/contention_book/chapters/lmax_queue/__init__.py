"""Chapter 5: LMAX queues in a database (document 004, Chris Adkin 2015-2016).

A queue is a contention test bed: every producer wants the next slot, every
consumer the oldest message.  The LMAX Disruptor solves it in process with a
pre-allocated power-of-two ring, sequences claimed with one atomic add,
cursors on cache lines of their own and consumers that batch.  The article
rebuilt that ring inside SQL Server on In-Memory OLTP and peeled off the
bottlenecks one by one, down to a spinlock on the metadata cache.

Modules: ``common`` (names), ``recordings`` (loading), ``native_run``,
``live_postgres``, ``live_sqlserver`` and ``live`` (measuring), ``analysis``
(tables, key numbers, verdicts) and ``figures`` (seaborn).
"""
from .common import CHAPTER, DEFAULT_MEASURED, LABELS, NOTEBOOK, PUBLISHED, VARIANTS  # noqa: F401
from .live import parse_sessions, parse_variants, run_live  # noqa: F401
from .recordings import LmaxRecording, load, load_measured, load_published  # noqa: F401
