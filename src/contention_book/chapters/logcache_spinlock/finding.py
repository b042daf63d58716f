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
    return n


def in_short(shown, n: dict[str, Any]) -> str:
    """The opening: the finding, the number that carries it, the action, then every verdict beside its number."""
    from ..shared.claims import tested_on
    from ..shared.in_short import Markdown, number, verdict_list
    from .claims import CLAIM1, CLAIM2, CLAIM3, CLAIM4, CLAIM5, CLAIM6, PG, STACKS, STATIC, TOY, TOY_SPINS, verdicts

    v = verdicts(shown)
    where = " and ".join(f"a {tested_on(g).replace('C model', 'C toy model')}" if g.engine == "native" else f"a {tested_on(g)}"
                         for g in shown.measured.values()) or "no measured recording"
    labels = {CLAIM3: "context switch against line transfer",
              CLAIM1 + TOY: "the toy's rate", CLAIM2 + TOY_SPINS: "the toy's spins",
              STATIC: "the toy's spins per second", CLAIM1 + PG: "walwriter pinned", CLAIM2 + STACKS: "back-off in stacks",
              CLAIM4: "cost by distance", CLAIM5: "pressure moves to XDESMGR", CLAIM6: "trace flag 8015",
              CLAIM1: "free writer core (SQL Server)"}
    switch = v.loc[v["claim"] == CLAIM3, "measured"]
    numbers = {}
    if len(switch):
        m = re.match(r"([\d,]+) ns per switch .*? against (\d+) ns per line transfer \((\d+)×\)", str(switch.iloc[0]))
        if m:
            numbers[CLAIM3] = f"{m.group(1)} ns against {m.group(2)} ns ({m.group(3)}×)"
            cost = f"{m.group(1)} ns, {m.group(3)}× a cache-line transfer ({m.group(2)} ns)"
    xdes = v.loc[v["claim"] == CLAIM5, "measured"]
    pg_row = isinstance(shown.measured, dict) and shown.measured.get("postgres") is not None and \
        shown.measured.get("sqlserver") is None
    if len(xdes) and pg_row and number(xdes.iloc[0]):  # the number is PostgreSQL's analogue, not an XDESMGR count
        numbers[CLAIM5] = f"PostgreSQL's XidGen {number(xdes.iloc[0])}"
    wake = ""
    nat = shown.measured.get("native") if isinstance(shown.measured, dict) else None
    if nat is not None:
        from ..shared.capacity import card_cost

        cs = nat.table("ctxswitch")  # the recording's own cross-CPU wake-up (the number its details page gives)
        # the futex wake-up, the way a lock's waiter sleeps (the pipe's ping-pong is a different mechanism; a mean of
        # the two was no cost of either)
        futex = cs[(cs["placement"] != "same_cpu") & (cs["method"] == "futex")] \
            if cs is not None and {"placement", "method"} <= set(cs.columns) else None
        cross = futex["median_ns_per_handoff"] if futex is not None else None
        if cross is not None and len(cross):
            wake = f", and waking an owner asleep on the other CPU {float(cross.median()) / 1e3:.0f} µs"
        else:
            w = card_cost(nat, "futex_wake")
            wake = f", and waking an owner asleep on the other CPU {w.median / 1e3:.0f} µs" if w is not None else ""
    found = (f"a context switch cost {cost}{wake}, so handing a lock to a running thread is far cheaper than "
             "waking its next owner" if CLAIM3 in numbers
             else "nothing this recording can judge")
    return Markdown(
        f"**The article:** on a two-socket, {shown.published.recording.host.get('logical_cpus')}-CPU server, taking "
        f"the log writer's core out of SQL Server's affinity mask raised singleton inserts from "
        f"{n['pub_base_rate']:,.0f} to {n['pub_aff_rate']:,.0f} a second ({n['pub_aff_x']:.1f}×): the hot spinlock "
        "(LOGCACHE_ACCESS) then changed hands between running threads. "
        f"**Found here,** on {where}: {found}; the affinity claims need more than 2 CPUs. "
        "**For a DBA:** measure LOGCACHE_ACCESS spins and back-offs before changing the affinity mask; on a "
        "small machine the CPU given up can cost more than it relieves. "
        f"**Verdicts:** {verdict_list(v, {c: l for c, l in labels.items() if c in set(v['claim'])}, numbers)}")
