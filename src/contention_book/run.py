"""``python -m contention_book.run <chapter> --engine ...``: a live run (see :mod:`contention_book.harness.runner`)."""
import signal
import sys

if __name__ == "__main__":  # Ctrl-C while Python loads the harness ends the run quietly: nothing has started yet
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # (the runner installs its own handlers before it starts anything)

from .harness.runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
