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
    from ..shared.claims import head
    from ..shared.in_short import UNTESTED, Markdown, number, verdict_list
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
            numbers[CLAIM3] = f"{m.group(3)}×"
            cost = f"{m.group(1)} ns, {m.group(3)}× a cache-line transfer ({m.group(2)} ns)"
    xdes = v.loc[v["claim"] == CLAIM5, "measured"]
    pg_row = isinstance(shown.measured, dict) and shown.measured.get("postgres") is not None and \
        shown.measured.get("sqlserver") is None
    if len(xdes) and pg_row and number(xdes.iloc[0]):  # the number is PostgreSQL's analogue, not an XDESMGR count
        numbers[CLAIM5] = f"PostgreSQL's XidGen {number(xdes.iloc[0]).split(' (')[0]}"
    found = (f"a context switch cost {cost}, so a lock holder pushed off its CPU costs far more than one that keeps "
             "running" if CLAIM3 in numbers
             else "nothing this recording can judge")
    # the box keeps each verdict's median; its interval is in the verdict table below
    for claim in v["claim"]:
        if claim not in numbers:
            row = v.loc[v["claim"] == claim, "measured"]
            numbers[claim] = number(row.iloc[0]).split(" (")[0] if len(row) else ""
    untested = v["verdict"].map(head).isin(UNTESTED)
    affinity = [c for c in (CLAIM1 + TOY, CLAIM1 + PG, CLAIM1) if c in set(v["claim"])]
    free_core = ("a free log writer core needs more CPUs to test"
                 if affinity and all(untested[v["claim"] == c].all() for c in affinity) else "")
    version = n.get("pub_version") or "the article's SQL Server"
    return Markdown(
        f"**Tested:** why taking the log writer's core out of SQL Server's affinity mask raised singleton inserts "
        f"from {n['pub_base_rate']:,.0f} to {n['pub_aff_rate']:,.0f} a second ({n['pub_aff_x']:.1f}×) in the "
        f"article ({version}, {shown.published.recording.host.get('logical_cpus')} CPUs), here on {where}. "
        f"**Found:** {found}" + (f"; {free_core}" if free_core else "") + ". "
        "**For a DBA:** before changing any affinity mask, measure LOGCACHE_ACCESS spins and back-offs and check "
        "where the log writers run: from SQL Server 2016 they sit on hidden schedulers on NUMA node 0, and the "
        "article's fix was tested only on a 2016 pre-release. "
        f"**Verdicts:** {verdict_list(v, {c: l for c, l in labels.items() if c in set(v['claim'])}, numbers)}")
