"""Writing a chapter's published recordings: numbers transcribed from a source, with its citation.

Each chapter's ``published.py`` defines ``RECORDINGS = {id: write}``, where
``write(dest)`` writes one recording with a RecordingWriter.  Regenerating
them must reproduce the committed bytes (a test checks every checksum), so
what the book shows as published is exactly what the code says was
transcribed.

    python -m contention_book.chapters.<package>.published [--out DIR]
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Mapping

from contention_book.harness.recording import data_root


def main(chapter: str, recordings: Mapping[str, Callable[[Path], None]], argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=f"Write the published recordings of {chapter}.")
    ap.add_argument("--out", default=None, help=f"folder to write them in (default data/{chapter}/; "
                    "an existing recording is never overwritten)")
    args = ap.parse_args(argv)
    folder = Path(args.out) if args.out else data_root() / chapter
    for rid, write in recordings.items():
        write(folder / rid)
        print("wrote", folder / rid)
    return 0
