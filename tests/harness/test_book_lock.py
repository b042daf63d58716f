"""harness.book: one render of the book at a time in one checkout."""
from __future__ import annotations


def test_two_renders_of_the_book_take_turns(tmp_path):
    """Two ``make chapter`` at once rendered into one book/_build, and Sphinx's search index of one vanished under
    the other (seen in the suite on 3 workers): the build lock makes the second wait, and is re-entrant."""
    import subprocess
    import sys
    import textwrap

    from contention_book.harness import book

    (tmp_path / "book").mkdir()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from pathlib import Path
        from contention_book.harness import book
        with book._one_build_at_a_time(Path({str(tmp_path)!r})):
            print("held", flush=True)
            time.sleep(1.5)
        """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    import time
    started = time.monotonic()
    with book._one_build_at_a_time(tmp_path):
        waited = time.monotonic() - started
        with book._one_build_at_a_time(tmp_path):  # re-entrant: no deadlock on its own lock
            pass
    holder.wait(timeout=30)
    assert waited >= 1.0, waited
