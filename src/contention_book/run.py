"""``python -m contention_book.run <chapter> --engine ...``: a live run (see :mod:`contention_book.harness.runner`)."""
import sys

from .harness.runner import main

if __name__ == "__main__":
    sys.exit(main())
