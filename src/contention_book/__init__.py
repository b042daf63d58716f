"""contention-book: the code behind a reproducible book about contention inside database engines.

Three layers, each importing only the ones before it:

- :mod:`contention_book.perftools`: sampled CPU stacks (WPA, xperf, perf, folded) into one model;
- :mod:`contention_book.harness`: targets, the embedded PostgreSQL, the sessions driver, the guard,
  recordings, the live runner and the book builder;
- :mod:`contention_book.chapters`: one package per chapter, all of the same shape.

``python -m contention_book.run`` is a live run; ``perftools`` is the stack tool.
"""
