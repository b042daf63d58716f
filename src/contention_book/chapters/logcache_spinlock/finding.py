"""The chapter's opening ("In short") and the whole set of glued numbers: built from the tables and the verdict
rows, so it sits above both (tables <- claims <- finding)."""
from __future__ import annotations

import re
from typing import Any

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
    """The opening: the finding, the number that carries it, the action, then every verdict beside its number."""
    from ..shared.claims import tested_on
    from ..shared.claims import head
    from ..shared.in_short import UNTESTED, Markdown, number, verdict_list
    from .claims import CLAIM1, CLAIM3, CLAIM5, PG, TOY, verdicts
    from .spec import MIN_CPUS_FOR_ALONE

    v = verdicts(shown)
    names = [f"a {tested_on(g).replace('C model', 'C toy model')}" for g in shown.measured.values()]
    cpus = {int(g.recording.host.get("logical_cpus") or 0) for g in shown.measured.values()}
    on = f" on {cpus.pop()} CPUs" if len(cpus) == 1 else ""
    if on and all(x.endswith(on) for x in names):  # one machine: name its CPUs once
        where = f"{on.removeprefix(' on ')} ({' and '.join(x.removesuffix(on) for x in names)})"
    else:
        where = " and ".join(names) or "no measured recording"
    labels = _labels()
    switch = v.loc[v["claim"] == CLAIM3, "measured"]
    numbers = {}
    if len(switch):
        m = re.match(r"([\d,]+) ns per switch .*? against (\d+) ns per main-memory load \((\d+)×\)",
                     str(switch.iloc[0]))
        if m:
            numbers[CLAIM3] = f"{m.group(3)}×"
            # the article's comparison; the ratio to a line transfer is the book's own, in the prose below
            cost = f"{m.group(1)} ns, {m.group(3)}× a load from main memory ({m.group(2)} ns)"
    xdes = v.loc[v["claim"] == CLAIM5, "measured"]
    pg_row = isinstance(shown.measured, dict) and shown.measured.get("postgres") is not None and \
        shown.measured.get("sqlserver") is None
    if len(xdes) and pg_row and number(xdes.iloc[0]):  # the number is PostgreSQL's analogue, not an XDESMGR count
        numbers[CLAIM5] = f"PostgreSQL's XidGen {number(xdes.iloc[0]).split(' (')[0]}"
    found = (f"a context switch cost {cost}, so a holder pushed off its CPU costs far more than a running one"
             if CLAIM3 in numbers
             else "nothing this recording can judge")
    # the box keeps each verdict's median; its interval is in the verdict table below
    for claim in v["claim"]:
        if claim not in numbers:
            row = v.loc[v["claim"] == claim, "measured"]
            numbers[claim] = number(row.iloc[0]).split(" (")[0] if len(row) else ""
    untested = v["verdict"].map(head).isin(UNTESTED)
    affinity = [c for c in (CLAIM1 + TOY, CLAIM1 + PG, CLAIM1) if c in set(v["claim"])]
    affinity_untested = not affinity or all(untested[v["claim"] == c].all() for c in affinity)
    version = n.get("pub_version") or "the article's SQL Server"
    article = (f"taking the log writer's core out of SQL Server's affinity mask raised inserts "
               f"{n['pub_aff_x']:.1f}× ({n['pub_base_rate']:,.0f} to {n['pub_aff_rate']:,.0f}/s on {version}, "
               f"{shown.published.recording.host.get('logical_cpus')} CPUs)")
    if affinity_untested:
        has_ss = isinstance(shown.measured, dict) and shown.measured.get("sqlserver") is not None
        needs = "a SQL Server with cores to spare" if has_ss else f"SQL Server and {MIN_CPUS_FOR_ALONE} or more CPUs"
        opening = (f"**Not tested here:** the article's finding that {article}: it needs {needs}. "
                   f"**Tested instead**, on {where}: the article's comparison of a context switch with a "
                   "main-memory access. ")
    else:
        opening = f"**Tested:** whether {article} holds on {where}. "
    return Markdown(
        opening +
        f"**Found:** {found}. "
        "**For a DBA:** before changing an affinity mask, measure LOGCACHE_ACCESS back-offs and see where the "
        "log writers run: from SQL Server 2016, on hidden schedulers on NUMA node 0. "
        f"**Verdicts:** {verdict_list(v, {c: l for c, l in labels.items() if c in set(v['claim'])}, numbers)}")

