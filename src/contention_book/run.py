"""``python -m contention_book.run <chapter> --engine ...``: a live run (see :mod:`contention_book.harness.runner`)."""
import signal
import sys

if __name__ == "__main__":  # Ctrl-C while Python loads the harness ends the run quietly: nothing has started yet
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # (the runner installs its own handlers before it starts anything)
    if hasattr(signal, "pthread_sigmask"):  # harness.launch starts this process with its stop signals held
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP")])

from .harness.runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
