"""The chapter's opening ("In short") and the whole set of glued numbers: built from the tables and the verdict
rows, so it sits above both (tables <- claims <- finding)."""
from __future__ import annotations

import re
from typing import Any

NAN = float("nan")

from .tables import table_numbers
from ..shared.memo import per_view


@per_view
def key_numbers(shown) -> dict[str, Any]:
    """Every number the prose glues, with the opening built from them and the verdicts."""
    n = table_numbers(shown)
    n["lc_in_short"] = in_short(shown, n)
    n["nat_distance_check"] = distance_sentence(shown)
    return n


def distance_sentence(shown) -> str:
    """The book's own check of the published ladder by distance on this machine: background, not an article claim."""
    from .claims import distance_check

    d = distance_check(shown)
    if d["verdict"].startswith("not testable here"):
        return (f"The book could not check that ladder on this machine: "
                f"{d['verdict'].removeprefix('not testable here: ')}.")
    holds = "holds" if d["verdict"] == "direction reproduced" else "does not hold"
    return (f"On this machine (the book's own check of the published matrices, not a claim of the article): "
            f"{d['measured']}, so the ladder {holds} here.")


def _labels() -> dict[str, str]:
    """Each claim's short name in the opening, as the article states it, in words a DBA reads without the chapter
    (no internal shorthand such as "the toy's rate"); the verdict table below holds the full claim."""
    from .claims import CLAIM1, CLAIM2, CLAIM3, CLAIM5, CLAIM6, PG, STACKS, STATIC, TOY, TOY_SPINS

    return {CLAIM3: "context switch dearer than twice a memory access",
            CLAIM1 + TOY: "free log writer core raises throughput (C toy)",
            CLAIM2 + TOY_SPINS: "fewer spins per record (C toy)",
            STATIC: "steady spins as throughput rises (C toy)",
            CLAIM1 + PG: "free walwriter CPU raises throughput (PostgreSQL)",
            CLAIM2 + STACKS: "less back-off in CPU stacks",
            CLAIM5: "pressure moves to XDESMGR",
            CLAIM6: "trace flag 8015 helps further",
            CLAIM1: "free log writer core raises inserts (SQL Server)"}


def in_short(shown, n: dict[str, Any]) -> str:
    """The opening: the finding and the numbers that carry it, the action, then each judged verdict beside its
    number.  It leads with what this chapter can say (what one hand-off of a hot lock costs here, running against
    switched in); the claims it could not test are counted, not listed: the claims table says why each."""
    from ..shared.in_short import UNTESTED, Markdown, number, verdict_list
    from ..shared.claims import head
    from .claims import CLAIM1, CLAIM3, CLAIM5, PG, TOY, verdicts
    from .spec import MIN_CPUS_FOR_ALONE

    v = verdicts(shown)
    cpus = {int(g.recording.host.get("logical_cpus") or 0) for g in shown.measured.values()}
    on = f"these {cpus.pop()} CPUs" if len(cpus) == 1 else "the machines measured"
    labels = _labels()
    numbers = {}
    switch = v.loc[v["claim"] == CLAIM3, "measured"]
    m = re.match(r"([\d,]+) ns per switch .*? against (\d+) ns per main-memory load \((\d+)×\)",
                 str(switch.iloc[0])) if len(switch) else None
    if m:
        # the article's comparison, with what the measurement adds to it (its system calls)
        numbers[CLAIM3] = f"{m.group(3)}× (an upper bound: it includes the system calls the article leaves out)"
    xdes = v.loc[v["claim"] == CLAIM5, "measured"]
    pg_row = isinstance(shown.measured, dict) and shown.measured.get("postgres") is not None and \
        shown.measured.get("sqlserver") is None
    if len(xdes) and pg_row and number(xdes.iloc[0]):  # the number is PostgreSQL's analogue, not an XDESMGR count
        numbers[CLAIM5] = f"PostgreSQL's XidGen {number(xdes.iloc[0]).split(' (')[0]}"
    # the box keeps each verdict's median; its interval is in the verdict table below
    for claim in v["claim"]:
        if claim not in numbers:
            row = v.loc[v["claim"] == claim, "measured"]
            numbers[claim] = number(row.iloc[0]).split(" (")[0] if len(row) else ""
    untested = v["verdict"].map(head).isin(UNTESTED)
    affinity = [c for c in (CLAIM1 + TOY, CLAIM1 + PG, CLAIM1) if c in set(v["claim"])]
    affinity_untested = not affinity or all(untested[v["claim"] == c].all() for c in affinity)
    version = n.get("pub_version") or "the article's SQL Server"
    gain = (f"{n['pub_aff_x']:.1f}× the inserts, {n['pub_base_rate']:,.0f} to {n['pub_aff_rate']:,.0f}/s on "
            f"{version}")
    line, cs = n.get("nat_c2c_median_ns", NAN), n.get("nat_cs_same_ns", NAN)
    if line == line and cs == cs:
        found = (f"a hot lock's hand-off is cheap while its holder runs and dear once a thread must be switched in: "
                 f"here a cache line moved between the two CPUs in {line:,.0f} ns, while a hand-off through a context "
                 f"switch took {cs:,.0f} ns, system calls included. That gap is why the article kept other work off "
                 "the log writer's core")
    else:
        found = "this recording cannot price a hand-off of a hot lock, running against switched in"
    if affinity_untested:
        has_ss = isinstance(shown.measured, dict) and shown.measured.get("sqlserver") is not None
        needs = "a SQL Server with cores to spare" if has_ss else f"SQL Server and {MIN_CPUS_FOR_ALONE} or more CPUs"
        found += f"; the gain it measured ({gain}) needs {needs}, so it is not tested on {on}."
    else:
        found += f"; whether that gained what the article measured ({gain}) is in the verdicts below."
    listed = verdict_list(v, {c: lab for c, lab in labels.items() if c in set(v["claim"])}, numbers,
                          name_untested=False)
    return Markdown(
        f"**Found:** {found[:1].upper() + found[1:]} "
        "**For a DBA:** before changing an affinity mask, measure LOGCACHE_ACCESS back-offs and see where the "
        f"log writers run (the placement query) rather than assume a node: from SQL Server 2016 on hidden schedulers on "
        f"NUMA node 0, while the article's build had its log writer on node 1. **Verdicts:** {listed}")
