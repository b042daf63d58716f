"""The order a live run makes its measurements in: variants interleaved, round after round.

Running every variant once per round (A B C, A B C, ...) instead of all
repetitions of A before B spreads the machine's drift (a warming cache, a
neighbour's job, thermal limits) over every variant alike, so a ratio of
paired repetitions compares like with like.
"""
from __future__ import annotations

from typing import Iterator, Sequence


def interleaved(variants: Sequence[str], repetitions: int) -> Iterator[tuple[int, str]]:
    """(repetition, variant) pairs in run order: every variant once in each of ``repetitions`` rounds."""
    if repetitions < 1:
        raise ValueError(f"repetitions={repetitions}: expected at least 1")
    for repetition in range(repetitions):
        for variant in variants:
            yield repetition, variant
