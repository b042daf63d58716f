"""Off-CPU stacks drawn and summarised: the flame graph of time blocked, and where it was blocked.

The folded files :mod:`.offcpu` writes (µs blocked, the process as the
root frame, the blocking state as the top frame) read as any folded stacks;
this module adds what an off-CPU view needs beyond a CPU one: the words
that say what it can and cannot see, under the figure, and a note figure
for a recording without off-CPU stacks.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["load", "flame", "note_figure", "blocked_by", "blocked_under", "state_of", "CAN_SEE", "CANNOT_SEE"]

CAN_SEE = ("Width: time off the CPU, by the stack the thread left with; the top frame is the state it left in "
           "(S asleep, D uninterruptible, R preempted).")
CANNOT_SEE = ("Not seen: CPU time (the CPU flame graph), waits still open when the capture stopped, and which lock "
              "a sleep stood for where many locks sleep on one futex or semaphore (the frames below it tell them "
              "apart).")

_STATE = re.compile(r"^\[state (\S+)")


def load(path):
    """A folded off-CPU (or wake-up) file as a :class:`Profile`; weights are microseconds."""
    from .importers import folded

    p = folded.load(path, process_root=True)
    p.meta["weight_unit"] = "µs"
    return p


def state_of(frame: str) -> str | None:
    m = _STATE.match(frame)
    return m.group(1) if m else None


_LIBS = ("libc.so", "libpthread", "ld-linux", "[vdso]", "inlined!")  # perf names a frame inlined in libc 'inlined' 


def _site(frames: list[str], depth: int = 3) -> str:
    """``caller > ... > call``: the ``depth`` deepest named frames of the program itself and the library
    call it waited in (``postgres!pg_sleep > postgres!WaitLatch > libc.so.6!epoll_wait``); the kernel's
    frames and unnamed ones skipped."""
    user = [fr for fr in frames if not fr.startswith(("[kernel.kallsyms]!", "[state "))]
    if not user:
        return "(kernel only)"
    lib = [fr for fr in user if fr.startswith(_LIBS)]
    call = lib[-1] if lib and user.index(lib[-1]) >= len(user) - 2 else ""
    own = [fr for fr in user if not fr.startswith(_LIBS) and not fr.endswith("[unknown]")]
    who = " > ".join(own[-depth:]) if own else user[-1]
    return f"{who} > {call}" if call and call != who else who


def _folded(path):
    """(frames, µs) of each line of a folded off-CPU file (lines without a stack are skipped)."""
    from .source import open_text

    with open_text(path) as f:
        for line in f:
            stack, _, w = line.rstrip("\n").rpartition(" ")
            if stack:
                yield stack.split(";"), float(w)


def blocked_by(path, *, top: int = 10, depth: int = 3):
    """Blocked time by where the program waited and the state, largest first: a DataFrame of ``site``,
    ``state``, ``us``, ``share`` (of all blocked time in the file).  The site is the program's deepest
    named frame and the library call it waited in (``postgres!WaitLatch > libc.so.6!epoll_wait``: a
    latch wait; ``postgres!secure_read > ...epoll_wait``: a client read)."""
    import pandas as pd

    rows: dict[tuple[str, str], float] = {}
    total = 0.0
    for frames, us in _folded(path):
        state = state_of(frames[-1]) or ""
        site = _site(frames[1:], depth)
        rows[(site, state)] = rows.get((site, state), 0.0) + us
        total += us
    out = pd.DataFrame([(s, st, us) for (s, st), us in rows.items()], columns=["site", "state", "us"])
    out["share"] = out["us"] / total if total else 0.0
    return out.sort_values("us", ascending=False).head(top).reset_index(drop=True)


def blocked_under(path, function: str) -> tuple[dict[str, float], float]:
    """Blocked time (µs) of the stacks that pass through ``function`` (a frame whose name ends in
    ``!function``), by the frame that called it; and the file's whole blocked time.  For a lock's sleeps: who
    was taking the lock (``_bt_relandgetbuf`` or ``read_seq_tuple`` calling ``LWLockAcquire``)."""
    callers: dict[str, float] = {}
    total = 0.0
    for frames, us in _folded(path):
        total += us
        for i in range(len(frames) - 1, 0, -1):
            if frames[i].rsplit("!", 1)[-1] == function:
                callers[frames[i - 1]] = callers.get(frames[i - 1], 0.0) + us
                break
    return callers, total


def note_figure(text: str, *, width: int = 760):
    """A picture that says, in words, why there is no graph (:class:`flame.FlameSvg` with no boxes)."""
    from .flame import flame_svg

    return flame_svg(None, title=text, width=width)


def flame(path, title: str, *, caption: str = "", width: int = 760, colour_of=None, min_fraction: float = 0.005):
    """An off-CPU flame graph of ``path`` (:class:`flame.FlameSvg`), with what it can and cannot see (and
    ``caption``) under its title; a note when the file is missing or holds no blocked time."""
    from .flame import flame_svg

    if not Path(path).is_file():
        return note_figure(f"{title}: no off-CPU stacks in this recording ({Path(path).name} is absent)", width=width)
    p = load(path)
    if not len(p.samples) or p.total_weight <= 0:
        return note_figure(f"{title}: the off-CPU capture holds no blocked time", width=width)
    total_ms = p.total_weight / 1000
    words = " ".join(x for x in (CAN_SEE, CANNOT_SEE, caption) if x)
    return flame_svg(p, title=f"{title} ({total_ms:,.0f} ms blocked in all)", note=words, width=width,
                     x_label=f"share of the time blocked (boxes under {min_fraction:.1%} merged)",
                     colour_of=colour_of, min_fraction=min_fraction)


def capture_words(rows, variant: str) -> str:
    """One sentence about a capture from its ``stacks/offcpu_captures.csv`` rows (a DataFrame): where it
    ran, what it folded and dropped, and what perf itself cost; empty when the variant has no row."""
    if rows is None or not len(rows):
        return ""
    r = rows[rows["variant"] == variant]
    if not len(r):
        return ""
    r = r.iloc[0]
    return (f"Captured at {int(r['sessions'])} sessions ({r['threads']}, call graph {r['call_graph']}) for "
            f"{r['window_s']:.1f} s: {int(r['intervals']):,} blocked intervals; {int(r['open_at_end'])} still open "
            f"at the end and {int(r['began_before'])} begun before it were dropped. perf record used "
            f"{r['perf_cpu_per_s'] * 1e3:.0f} ms of CPU per second and wrote {r['data_bytes'] / 1e6:.1f} MB; the "
            "sleeping threads' own cost of each event (in the kernel) is not in that figure.")
