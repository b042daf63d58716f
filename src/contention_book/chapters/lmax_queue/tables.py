"""Tables, key numbers and verdicts, from any recordings of this chapter."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from contention_book.harness import load_record
from ..shared.spread import ratio_spread, spread, summarize
from .spec import LABELS, PG_LABELS
from .recordings import LmaxRecording
from ..shared.memo import per_view

NAN = float("nan")


def label(variant: str, engine: str = "") -> str:
    if engine == "postgres" and variant in PG_LABELS:
        return PG_LABELS[variant]
    return LABELS.get(variant, variant)


def logical_cpus(g: LmaxRecording) -> int | None:
    """The logical CPUs the recording ran on: the native programs' own count, else the host block's."""
    if g.engine == "native" and "cpus" in g.runs and len(g.runs):
        return int(g.runs["cpus"].iloc[0])
    cpus = (g.recording.host or {}).get("logical_cpus")
    return int(cpus) if cpus else None


def threads_per_session(g: LmaxRecording) -> tuple[int, int]:
    """(threads per session, threads besides): a database point runs a producer and a consumer per session;
    the native ring runs its producers and one consumer; SQL Server's push-only designs one thread a session."""
    if g.engine == "native":
        return 1, 1
    if g.engine == "postgres":
        return 2, 0
    return 1, 0


def regime_sessions(g: LmaxRecording) -> int | None:
    """The most sessions (producers) recorded whose threads fit the logical CPUs: the sources' regime, the one
    that decides verdicts.  None when no recorded point fits (or the CPU count is unknown)."""
    cpus = logical_cpus(g)
    if not cpus:
        return None
    per, extra = threads_per_session(g)
    fit = [int(n) for n in g.runs["sessions"].unique() if int(n) * per + extra <= cpus]
    return max(fit) if fit else None


def oversubscribed(g: LmaxRecording, sessions) -> bool:
    """True where a point's threads outnumber the logical CPUs (shown, labelled, never deciding a verdict)."""
    cpus = logical_cpus(g)
    per, extra = threads_per_session(g)
    return bool(cpus) and int(sessions) * per + extra > cpus


def scaling(g: LmaxRecording) -> pd.DataFrame:
    """Medians per variant and session count: push (and, with consumers, pop) rates with their intervals over
    repetitions, latencies, the backlog left at the end and messages lost."""
    runs = g.runs.copy()
    extra = [c for c in ("p50_ms", "p99_ms", "p50_ns", "p99_ns", "age_p50_ms", "age_p99_ms", "mean_batch",
                         "dequeue_per_s", "backlog", "lost", "consumers") if c in runs]
    keys = ["variant", "sessions"]
    agg = runs.groupby(keys, sort=False)[["throughput", *extra]].median().reset_index()
    for col in ("throughput", "dequeue_per_s", "age_p99_ms"):
        if col in runs:
            sp = summarize(runs, keys, col).set_index(keys)
            idx = pd.MultiIndex.from_frame(agg[keys])
            agg[f"{col}_low"] = sp["low"].reindex(idx).to_numpy()
            agg[f"{col}_high"] = sp["high"].reindex(idx).to_numpy()
    agg["repetitions"] = runs.groupby(keys, sort=False).size().to_numpy()
    agg["design"] = [label(v, g.engine) for v in agg["variant"]]
    agg["recording"] = g.label
    agg["kind"] = g.recording.kind
    for unit in ("p50", "p99"):
        if f"{unit}_ns" in agg:
            agg[f"{unit}_us"] = agg[f"{unit}_ns"] / 1e3
        elif f"{unit}_ms" in agg:
            agg[f"{unit}_us"] = agg[f"{unit}_ms"] * 1e3
    return agg


KEEPS_UP = 0.95  # a point whose consumers took off at least this share of what its producers pushed kept up
KEEPS_UP_COLUMN = "keeps up: delivered ÷ pushed"


def delivered_shares(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with consumers, each with ``delivered_share``: what its consumers took off over what its producers
    pushed in the same repetition (pushed and delivered are never taken from different repetitions)."""
    if "dequeue_per_s" not in runs:
        return runs.iloc[0:0].assign(delivered_share=pd.Series(dtype=float))
    with_consumers = runs["consumers"] > 0 if "consumers" in runs else pd.Series(True, index=runs.index)
    r = runs[with_consumers & (runs["throughput"] > 0)]
    return r.assign(delivered_share=r["dequeue_per_s"].astype(float) / r["throughput"].astype(float))


def delivered_share(runs: pd.DataFrame, variant: str, sessions: int | None):
    """The spread over repetitions of one point's delivered ÷ pushed (:func:`delivered_shares`)."""
    r = delivered_shares(runs)
    return spread(r.loc[(r["variant"] == variant) & (r["sessions"] == sessions), "delivered_share"])


def keeps_up(share) -> bool:
    """A point keeps up when the median over repetitions of its delivered ÷ pushed reaches :data:`KEEPS_UP`."""
    return bool(share.n) and share.median >= KEEPS_UP


def delivery(g: LmaxRecording) -> pd.DataFrame:
    """What each design delivered with consumers running: pushed and popped per second, delivered ÷ pushed
    (repetition by repetition, then the median and its interval, which decides whether it kept up), the age of a
    message when taken off and the backlog at the end (medians)."""
    if "dequeue_per_s" not in g.runs or not (g.runs.get("consumers", pd.Series([0])) > 0).any():
        return pd.DataFrame()
    t = scaling(g)
    t = t[t["consumers"] > 0] if "consumers" in t else t
    cols = ["design", "sessions", "throughput", "dequeue_per_s", "age_p50_ms", "age_p99_ms", "backlog"]
    out = t[[c for c in cols if c in t]].copy()
    shares = [delivered_share(g.runs, v, n) for v, n in zip(t["variant"], t["sessions"])]
    out[KEEPS_UP_COLUMN] = [f"{'yes' if keeps_up(s) else 'no'}: {s.text('.2f')}" for s in shares]
    # a point whose threads outnumber the CPUs is marked beside its producer count (a column of its own would
    # make the table too wide for the page)
    out["sessions"] = [f"{int(n)} (more threads than CPUs)" if oversubscribed(g, n) else int(n) for n in t["sessions"]]
    return out.rename(columns={"sessions": "producers (and consumers)", "throughput": "pushed per s",
                               "dequeue_per_s": "delivered per s", "age_p50_ms": "age when taken, p50 (ms)",
                               "age_p99_ms": "age when taken, p99 (ms)", "backlog": "backlog at the end"})


def paced(g: LmaxRecording) -> pd.DataFrame:
    """The designs at one scheduled push rate (open loop, one producer and one consumer): what each delivered and
    how old its messages were when taken, medians over repetitions with their spread (empty without paced
    points)."""
    t = g.by_repetition("paced")
    if t is None or t.empty:
        return pd.DataFrame()
    rows = []
    for variant, part in t.groupby("variant", sort=False):
        elapsed = part["elapsed_s"].astype(float)
        rows.append({"design": label(variant, g.engine), "variant": variant,
                     "scheduled per s": float(part["push_rate"].median()),
                     "pushed per s": spread(part["pushed"] / elapsed),
                     "delivered per s": spread(part["dequeued"] / elapsed),
                     "age when taken, p50 (ms)": spread(part["age_p50_ms"]),
                     "age when taken, p99 (ms)": spread(part["age_p99_ms"]),
                     "backlog at the end, median (max)": (f"{part['backlog'].median():,.0f} "
                                                          f"({part['backlog'].max():,.0f})") if "backlog" in part
                     else "",
                     "repetitions": len(part)})
    return pd.DataFrame(rows)


def paced_shown(t: pd.DataFrame) -> pd.DataFrame:
    """:func:`paced` as the page shows it: each spread in the book's words."""
    out = t.drop(columns=["variant"]).copy()
    out["scheduled per s"] = [f"{v:,.0f}" for v in out["scheduled per s"]]
    for col, fmt in (("pushed per s", ",.0f"), ("delivered per s", ",.0f"), ("age when taken, p50 (ms)", ".2f"),
                     ("age when taken, p99 (ms)", ".1f")):
        out[col] = [v.text(fmt) for v in out[col]]
    return out.set_index("design")


def paced_sentence(g: LmaxRecording) -> str:
    """What the paced points say, in words (the table gives the numbers)."""
    t = paced(g)
    if t.empty:
        return ("This recording has no run at a fixed push rate, so it cannot set the designs side by side at one "
                "load; a run with `paced_share` above 0 (the default) adds one.")
    rate = t["scheduled per s"].iloc[0]
    by = t.set_index("variant")
    kept = [r["design"] for _, r in t.iterrows() if r["delivered per s"].median >= KEEPS_UP * rate]
    kept_words = ("every design kept up" if len(kept) == len(t) else
                  f"{', '.join(kept) or 'no design'} kept up (delivered at least 95% of the schedule)")
    ring_vs = ""
    if "ring" in by.index and {"naive", "skip_locked"} & set(by.index):
        queue = "naive" if "naive" in by.index else "skip_locked"
        at_rate = ratio_spread(g.by_repetition("paced"), "dequeue_per_s", "ring", queue, where={"sessions": 1})
        flat_out = ratio_spread(g.runs, "dequeue_per_s", "ring", queue, where={"sessions": 1})
        if at_rate.n:
            ring_vs = (f" The ring delivered {at_rate.text('.2f', '×')} the messages of the "
                       f"{label(queue, g.engine)} queue table"
                       + (f" (flat out: {flat_out.text('.1f', '×')})" if flat_out.n else "") + ".")
            if len(kept) == len(t):
                ring_vs += (" Below both designs' capacity each delivers what is scheduled, so this ratio is 1 by "
                            "construction; the table shows how old their messages were on arrival.")
    return (f"At one producer and one consumer, each producer pushing {rate:,.0f} messages a second on a schedule "
            f"(about half the slowest design's flat-out delivery, so every design can keep up), {kept_words}."
            f"{ring_vs}")


def _at(table: pd.DataFrame, variant: str, sessions: int | None = None, col: str = "throughput") -> float:
    part = table[table["variant"] == variant]
    if sessions is not None:
        part = part[part["sessions"] == sessions]
    if part.empty or col not in part:
        return NAN
    return float(part[col].iloc[0])


def best(table: pd.DataFrame, variant: str) -> tuple[float, float]:
    """(highest median throughput, the session count where it was reached)."""
    part = table[table["variant"] == variant]
    if part.empty:
        return NAN, NAN
    row = part.loc[part["throughput"].idxmax()]
    return float(row["throughput"]), float(row["sessions"])


ONE_COUNTER = "shared_atomic"  # the layout whose threads all add to one counter
ONE_THREAD_ATOMIC = "single_atomic"  # the same atomic add on one thread: what the shared counter is set against
PER_COUNTER = "ns_per_counter_increment"


def counter_costs(g: LmaxRecording) -> pd.DataFrame:
    """The false-sharing runs with each layout's time per increment of one counter (column :data:`PER_COUNTER`):
    the run's wall time over the increments that counter received.  The C program's ``ns_per_increment`` divides
    the wall time by one thread's increments; that is already per counter where each thread has its own counter
    (one thread alone, adjacent, padded), but the shared counter receives every thread's increments, so its time
    is divided by the threads too.  That is how the LMAX paper counts (its 500 million increments are of one
    counter, by both threads together) and how the machine card counts its contended increment."""
    fs = g.false_sharing.copy()
    # recordings older than the threads column ran the shared counter with the program's two threads
    threads = fs["threads"].astype(float) if "threads" in fs else pd.Series(2.0, index=fs.index)
    fs[PER_COUNTER] = fs["ns_per_increment"].where(fs["layout"] != ONE_COUNTER, fs["ns_per_increment"] / threads)
    return fs


def false_sharing(g: LmaxRecording) -> pd.DataFrame:
    """Median time per increment of one counter, per layout (:func:`counter_costs`)."""
    fs = counter_costs(g).groupby("layout", sort=False)[PER_COUNTER].median().reset_index()
    fs["source"] = g.label
    return fs


def paper_increments(lmax: LmaxRecording) -> pd.DataFrame:
    inc = lmax.increments.copy()
    inc["ns_per_increment"] = inc["elapsed_ms"] * 1e6 / inc["increments"]
    return inc


def finding(adkin: LmaxRecording, topic: str, variant: str | None = None) -> pd.Series | None:
    f = adkin.findings
    part = f[(f["topic"] == topic) & ((f["variant"] == variant) if variant else True)]
    return part.iloc[0] if len(part) else None


# Waits the chapter's own loops make, named for what they are: a loop that found nothing to pop (an empty queue or
# ring, or a row another consumer took first) or a full ring sleeps in the server before it looks again; that is a
# session waiting for messages or for a free slot, not the server working.
WAIT_WORDS = {"Timeout:PgSleep": "waiting after a miss (server-side back-off)"}


def db_pressure(g: LmaxRecording) -> pd.DataFrame:
    """Where the database's time went: wait-event shares (PostgreSQL) or spinlock spins (SQL Server)."""
    if g.waits is not None:
        w = g.waits.copy()
        w["what"] = [WAIT_WORDS.get(x, x) for x in w["wait"]]
        w["value"] = w["share"]
        return w[["variant", "sessions", "what", "value"]]
    if g.spinlocks is not None:
        s = g.spinlocks.copy()
        total = s.groupby(["variant", "sessions"])["spins"].transform("sum")
        s["what"] = s["name"]
        s["value"] = (s["spins"] / total).where(total > 0, 0.0)
        return s[["variant", "sessions", "what", "value"]]
    return pd.DataFrame(columns=["variant", "sessions", "what", "value"])


def top_waits(g: LmaxRecording, variant: str, sessions: int | None = None, n: int = 2) -> str:
    w = db_pressure(g)
    if w.empty:
        return "not recorded"
    part = w[w["variant"] == variant]
    if part.empty:
        return "not recorded"
    sessions = sessions if sessions is not None else int(part["sessions"].max())
    part = part[(part["sessions"] == sessions) & (part["what"] != "CPU")].sort_values("value", ascending=False)
    if part.empty:
        return "nothing but CPU"
    return ", ".join(f"{r.what} ({r.value:.0%})" for r in part.head(n).itertuples())


def pushes_per_call(g: LmaxRecording) -> int:
    """Messages per database call in a recording (1 where the column is absent: one statement per message)."""
    if "pushes_per_call" not in g.runs:
        return 1
    values = set(g.runs["pushes_per_call"].dropna().astype(int))
    if len(values) != 1 or min(values) < 1:
        raise ValueError(f"recording {g.id}: runs.csv column pushes_per_call holds {sorted(values)}; "
                         "expected one positive whole number for the whole recording")
    return values.pop()


def client_wait_share(g: LmaxRecording) -> tuple[float, str]:
    """(share, what it is a share of): the time the workload's backends waited for their client.

    From the load check (``results/load_points.csv``: the median over points of the ClientRead share of all
    samples) when the recording has it; else from the wait table, whose samples are of sessions inside a
    statement, where ClientRead appears only for a session idle in a transaction."""
    points = g.by_repetition("load_points")
    if points is not None and "client_share" in points and points["client_share"].notna().any():
        return float(points["client_share"].median()), "of the backends' samples (median over the points)"
    if g.waits is None or g.waits.empty:
        return NAN, ""
    total = g.waits["samples"].sum()
    share = float(g.waits.loc[g.waits["wait"] == "Client:ClientRead", "samples"].sum() / total) if total else NAN
    return share, "of the sampled busy sessions"


def call_notes(g: LmaxRecording) -> dict[str, Any]:
    """How a database recording's calls were made, and what that means for reading its rates (prose)."""
    per_call = pushes_per_call(g)
    if g.engine != "postgres":
        chunk = g.recording.parameters.get("push_chunk", "?")
        return {"db_pushes_per_call": per_call, "db_call_how": f"the loops push in calls of {chunk} messages "
                "(the recording's push_chunk)", "db_client_note": "The PostgreSQL analogue is not in this recording."}
    cpus = g.recording.host.get("logical_cpus") or "its"
    share, of_what = client_wait_share(g)
    back_off = back_off_sentence(g)
    waited = "" if math.isnan(share) else (
        f" Across all runs, {share:.0%} {of_what} were spent waiting for the client's next statement "
        "(Client:ClientRead; the load check below gives it per point).")
    if per_call == 1:
        client = str(((getattr(g.recording, "manifest", None) or {}).get("measured") or {}).get("client") or "")
        via = "libpq" if client.startswith("psycopg") else "ODBC"  # recordings older than the field ran pyodbc
        how = ("each push is one statement, one round trip from the client and one transaction. Consumers pop one "
               "message per statement")
        read = ("Read these rates for what they are on this machine. Each push is one round trip from a Python "
                f"thread through {via}, and the client shares the same {cpus} CPUs with the server.{waited} So the "
                "curves compare the designs under the same client and say little about PostgreSQL's own ceiling, "
                "and the designs can come out in any order. The growth of the queue tables, the HOT share and the "
                "wait events do not depend on the client, and those are the figures to read. A run with "
                "pushes_per_call above 1 takes the client out of the way.")
    else:
        how = (f"each call runs a loop inside the server (a PL/pgSQL procedure) that pushes up to {per_call:,} "
               "messages, each committed as its own transaction, as the article's version 2 commits one atomic "
               f"block per message. Consumers pop up to {per_call:,} messages per call the same way. Rates are "
               f"messages per second; latency percentiles are per call of up to {per_call:,} messages")
        budget = g.recording.parameters.get("call_budget_ms")
        carries = (f"Each call carries up to {per_call:,} messages and ends once it has run {budget:g} ms, so" if budget
                   else f"Each call carries {per_call:,} messages, so")
        read = (f"{carries} the rates measure the server's work per message.{waited} The client and the sessions "
                f"share the same {cpus} CPUs: beyond {cpus} producers they take turns, and the absolute rates are this "
                "small machine's.")
    return {"db_pushes_per_call": per_call, "db_call_how": how, "db_client_note": f"{read} {back_off}",
            "db_wait_sampler": f"{load_record.wait_sampler_text(g)} {overcounted_text(g)}".strip()}


def overcounted_text(g: LmaxRecording) -> str:
    """Which points' wait samples were left out (recordings.set_aside_overcounted_waits), how far over what the
    sampler could take, and why, in words; "" when none."""
    over = g.table("waits_overcounted")
    if over is None or over.empty:
        return ""
    x = over["samples"] / over["ceiling"]
    lo, hi = f"{x.min():.2g}", f"{x.max():.2g}"
    span = f"{lo} times" if lo == hi else f"{lo} to {hi} times"
    points = over.groupby(["sessions", "repetition"]).size()
    where = "; ".join(f"{'every design' if n == g.runs['variant'].nunique() else f'{n} designs'} at {s} producers, "
                      + ("the first repetition" if r == 0 else f"repetition {r + 1}") for (s, r), n in points.items())
    if over["offcpu"].all():
        return (f"The {len(over)} point{'s' if len(over) != 1 else ''} that carried the off-CPU capture ({where}) are "
                f"left out of the wait shares (the sampler counted their ended sessions as on CPU: {span} the samples "
                "it could take) and out of the rate medians (perf ran beside them).")
    return (f"The wait shares leave out {len(over)} point{'s' if len(over) != 1 else ''} ({where}), where the sampler "
            f"counted ended sessions as on CPU ({span} the samples it could take).")


def back_off_sentence(g: LmaxRecording) -> str:
    """What a PostgreSQL session did when it found nothing to pop or a full ring, as its recording says (prose)."""
    how = g.recording.parameters.get("back_off")
    if how:
        return (f"A call that found nothing to pop, or a full ring, backed off {how}; a backend asleep in the server "
                f"shows Timeout:PgSleep, named here \"{WAIT_WORDS['Timeout:PgSleep']}\": waiting for messages or a "
                "free slot, not working.")
    return ("In this recording a call that found nothing to pop, or a full ring, returned at once and the client "
            "backed off before its next call, so its backend waited for the client (ClientRead) meanwhile.")


def one_session_note(d: pd.DataFrame, label_of) -> str:
    """Which design pushed fastest with one producer, from the scaling table (prose)."""
    one = d[d["sessions"] == 1].sort_values("throughput", ascending=False)
    if len(one) < 2:
        return ""
    parts = [f"{label_of(r.variant)} {r.throughput:,.0f}" for r in one.itertuples()]
    return (f"With one producer the push rates, fastest first, were: {', '.join(parts)} messages per second "
            "(each design with one consumer running).")


MAIN_RELATIONS = ("lmax_ring", "lmax_queue")  # the slots or the queue rows; the others are the ring's cursors
# in the order every design's rows are shown: the slots, then the producers' cursor, then the consumers'
RELATION_NAMES = {"lmax_ring": "ring slots", "lmax_ring_write": "producers' cursor",
                  "lmax_ring_read": "consumers' cursor", "lmax_queue": "queue table"}


def relation_summary(g: LmaxRecording, main_only: bool = False) -> pd.DataFrame:
    if g.relation is None:
        return pd.DataFrame()
    r = g.relation.copy()
    if main_only and "relation" in r:
        r = r[r["relation"].isin(MAIN_RELATIONS)]
    r["design"] = [label(v, g.engine) for v in r["variant"]]
    if "relation" in r:
        r["table"] = [RELATION_NAMES.get(x, x) for x in r["relation"]]
    r["table_MB"] = r["table_bytes"] / 2**20
    if "hot_share" not in r:
        upd = r["n_tup_upd"].astype(float)
        r["hot_share"] = (r["n_tup_hot_upd"] / upd).where(upd > 0)
    if "relation" in r:  # one order within every design and point: designs as recorded, producers, then tables
        rank = {name: i for i, name in enumerate(RELATION_NAMES)}
        design_at = {v: i for i, v in enumerate(pd.unique(r["variant"]))}
        r = r.assign(_d=r["variant"].map(design_at), _t=r["relation"].map(rank).fillna(len(rank)))
        r = r.sort_values(["_d", "sessions", "_t", "relation"], kind="stable").drop(columns=["_d", "_t"])
    return r


def delivery_numbers(db: LmaxRecording, d: pd.DataFrame) -> dict[str, Any]:
    """Pop rates, backlog, ages and losses the prose quotes, and the best delivered rate of any design."""
    n: dict[str, Any] = {}
    popped = "dequeue_per_s" in d and "consumers" in d and (d["consumers"] > 0).any()
    # delivered means taken off by a consumer: a design that ran without consumers (the article's push-only
    # In-Memory OLTP loops) delivered nothing to compare, so it has no delivered rate
    delivered = d["dequeue_per_s"].where(d["consumers"] > 0) if popped else pd.Series(NAN, index=d.index)
    d = d.assign(delivered=delivered)
    fit = regime_sessions(db)
    inside = d[d["sessions"] <= fit] if fit is not None else d.iloc[0:0]
    best_row = inside.loc[inside["delivered"].idxmax()] if len(inside) and inside["delivered"].notna().any() \
        else None
    n["db_best_delivered"] = float(best_row["delivered"]) if best_row is not None else NAN
    n["db_best_delivered_design"] = label(best_row["variant"], db.engine) if best_row is not None else "none"
    n["db_best_delivered_n"] = float(best_row["sessions"]) if best_row is not None else NAN
    for v in ("ring", "ring_durable", "ring_unlogged", "naive", "skip_locked"):
        part = d[d["variant"] == v]
        if part.empty or not popped:
            n[f"db_{v}_pop_best"] = n[f"db_{v}_backlog_maxn"] = n[f"db_{v}_age_p99_maxn"] = NAN
            n[f"db_{v}_lost_maxn"] = NAN
            continue
        n[f"db_{v}_pop_best"] = float(part["dequeue_per_s"].max())
        top = part[part["sessions"] == part["sessions"].max()].iloc[0]
        n[f"db_{v}_backlog_maxn"] = float(top.get("backlog", NAN))
        n[f"db_{v}_age_p99_maxn"] = float(top.get("age_p99_ms", NAN))
        n[f"db_{v}_lost_maxn"] = float(top.get("lost", NAN))
    if popped:
        points = d[d["consumers"] > 0]
        behind = [not keeps_up(delivered_share(db.runs, v, s)) for v, s in zip(points["variant"], points["sessions"])]
        n["db_keepup_sentence"] = (
            "Every design's consumers kept up with its producers." if not any(behind) else
            f"In {sum(behind)} of {len(points)} points the consumers took off less than {KEEPS_UP:.0%} of what the "
            "producers pushed (median over repetitions): those designs did not keep up, so their push rates are not "
            "rates a steady queue could sustain.")
    else:
        n["db_keepup_sentence"] = "This recording ran no consumers, so it cannot say whether a design keeps up."
    return n


def regime_numbers(db: LmaxRecording, d: pd.DataFrame) -> dict[str, Any]:
    """Delivered rates at the deciding point (the most sessions whose threads fit the CPUs), the ring's lead over
    the queue tables there (paired medians, as the claims compute them), and the widest spread between
    repetitions of one point, with what the recording says about it (prose)."""
    n: dict[str, Any] = {}
    reg = regime_sessions(db)
    n["db_regime_words"] = (f"{reg} producer{'s' if reg != 1 else ''} and {reg} consumer{'s' if reg != 1 else ''}"
                            if reg is not None else "no point of this recording")
    popped = "dequeue_per_s" in db.runs
    for v in ("ring", "ring_durable", "ring_unlogged", "naive", "skip_locked"):
        n[f"db_{v}_reg"] = _at(d, v, reg, "dequeue_per_s") if popped and reg is not None else NAN
    for other in ("naive", "skip_locked"):
        s = ratio_spread(db.runs, "dequeue_per_s", "ring", other, where={"sessions": reg}) \
            if popped and reg is not None else spread([])
        n[f"db_ring_{other}_x"] = s.median if s.n else NAN
    x = n["db_ring_naive_x"]
    n["db_ring_vs_queue"] = (f"the ring delivered {x:.1f}× the messages of an INSERT/DELETE queue table"
                             if not math.isnan(x) else "this recording has no ring and INSERT/DELETE queue to set "
                             "side by side there")
    # the queue table at the deciding point: what its producer pushed, where its sessions' time went
    n["db_naive_push_reg"] = _at(d, "naive", reg, "throughput") if reg is not None else NAN
    w = db.waits if db.waits is not None else pd.DataFrame(columns=["variant", "sessions", "wait", "share"])
    at = w[(w["variant"] == "naive") & (w["sessions"] == reg)] if reg is not None else w.iloc[0:0]
    n["db_naive_cpu_pct"] = float(at.loc[at["wait"] == "CPU", "share"].sum() * 100) if len(at) else NAN
    n["db_naive_lock_pct"] = float(at.loc[at["wait"].str.startswith("Lock:"), "share"].sum() * 100) \
        if len(at) else NAN
    n["db_queue_consumers_words"] = (f"{reg} consumer{'s' if reg != 1 else ''}" if reg is not None
                                     else "no deciding point")
    n.update(confound_numbers(db, reg))
    n["db_spread_sentence"] = spread_sentence(db)
    return n


def confound_numbers(db: LmaxRecording, reg: int | None) -> dict[str, Any]:
    """Why the flat-out comparison at the deciding point is not like for like, from the recording: what each
    producer pushed against what its consumer took (medians over repetitions), whether the ring ever filled, the
    SKIP LOCKED table beside the plain one, and in how many repetitions autovacuum ran on the queue table."""
    n: dict[str, Any] = {}
    runs = db.runs[db.runs["sessions"] == reg] if reg is not None else db.runs.iloc[0:0]

    def med(variant: str, col: str) -> float:
        part = runs[runs["variant"] == variant]
        return float(part[col].median()) if col in part and len(part) else NAN

    n["db_ring_push_reg"] = med("ring", "throughput")
    # each repetition's delivered over its own pushed, then the median: never one repetition's over another's
    share = delivered_share(runs, "ring", reg) if reg is not None else spread([])
    took = f"and its consumer took {med('ring', 'dequeue_per_s'):,.0f} (medians over repetitions)"
    n["db_ring_keeps_up_words"] = (
        "" if not share.n else
        f"{took}; within each repetition its consumer took a median {share.text('.0%')} of what its producer "
        "pushed, " + ("so it kept up" if keeps_up(share) else "so it fell behind")
        if share.median < 0.995 else f"{took}: all of it, repetition by repetition")
    q = delivered_shares(runs)
    q = q[q["variant"] == "naive"]
    over = spread(1 / q["delivered_share"]) if len(q) else spread([])
    n["db_naive_over_consumed"] = over.median if over.n else NAN
    n["db_naive_over_consumed_text"] = over.text(".1f") if over.n else "an unknown number of"
    full = runs.loc[runs["variant"] == "ring", "full_polls"] if "full_polls" in runs else pd.Series(dtype=float)
    n["db_ring_full_words"] = (
        f"its producer never found the ring full ({int(full.sum())} full-ring polls), and the ring ended a run "
        f"with a median of {med('ring', 'backlog'):,.0f} of its {int(runs['queue_size'].max()):,} slots in use"
        if len(full) and full.sum() == 0 and "queue_size" in runs else
        f"its producer found the ring full {int(full.sum()):,} times" if len(full) else
        "this recording does not say whether the ring filled")
    sl = ratio_spread(db.runs, "dequeue_per_s", "skip_locked", "naive", where={"sessions": reg}) \
        if reg is not None and "dequeue_per_s" in db.runs else spread([])
    n["db_skip_vs_naive"] = (f"{med('skip_locked', 'dequeue_per_s'):,.0f} against {med('naive', 'dequeue_per_s'):,.0f} "
                             f"a second, {sl.text('.2f', '×')} paired by repetition" if sl.n else "no pair to compare")
    n["db_autovacuum_words"] = "autovacuum's runs were not recorded"
    rel = db.by_repetition("relation")  # per repetition: db.relation holds the medians
    if rel is not None and reg is not None and "autovacuum_count" in rel:
        q = rel[(rel["relation"] == "lmax_queue") & (rel["sessions"] == reg) & (rel["variant"] == "naive")]
        if len(q):
            ran = int((q["autovacuum_count"] > 0).sum())
            n["db_autovacuum_words"] = (f"autovacuum ran on the plain queue table in {ran} of its {len(q)} "
                                        f"repetitions at this point" if ran else
                                        "autovacuum did not run on the queue table during these points")
    return n


def spread_sentence(db: LmaxRecording) -> str:
    """Where repetitions of one point disagreed most, and what the recording can say about why (prose)."""
    col = "dequeue_per_s" if "dequeue_per_s" in db.runs else "throughput"
    runs = db.runs[db.runs[col] > 0]
    g = runs.groupby(["variant", "sessions"])[col].agg(["min", "max", "size"])
    g = g[g["size"] > 1]
    if g.empty:
        return "Each point ran once, so this recording cannot show how much repetitions of a point differ."
    g = g.assign(x=g["max"] / g["min"]).sort_values("x", ascending=False)
    (variant, n), top = g.index[0], g.iloc[0]
    words = (f"Repetitions of one point differed by at most {top['x']:.1f}× (highest over lowest delivered rate), "
             f"for {label(variant, db.engine)} at {int(n)} "
             + (f"producer{'s' if int(n) != 1 else ''} and as many consumers" if db.engine == "postgres" else
                f"session{'s' if int(n) != 1 else ''}"))
    waits = top_waits(db, variant, int(n))
    why = []
    if waits not in ("not recorded", "nothing but CPU"):
        why.append(f"apart from CPU, its sampled waits were led by {waits} (median shares over repetitions)")
    if oversubscribed(db, n):
        who = (f"{int(n)} producers and {int(n)} consumers" if db.engine == "postgres" else f"{int(n)} sessions")
        why.append(f"its {who} outnumber the {logical_cpus(db)} logical CPUs, so each repetition also measures how "
                   "the scheduler shared them out")
    if "WAL" in waits or "IO:" in waits:
        why.append("a rate bound by the WAL flush follows the flush latency of a shared virtual disk")
    median_x = float(g["x"].median())
    tail = f"; the median point's repetitions differed by {median_x:.2f}×."
    return words + (": " + "; ".join(why) if why else "") + tail


def _py(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


SPLIT = 2.0  # repetitions of one point this far apart are two regimes, not noise around one


def split_sentence(runs: pd.DataFrame, variant: str = "ring", sessions: int = 1) -> str:
    """A sentence for the page when the repetitions of the ring's 1-producer point fall into two groups (the
    slowest under 1/SPLIT of the fastest): how many ran slow, by how much, and what the latency says; else ""."""
    part = runs[(runs["variant"] == variant) & (runs["sessions"] == sessions)]
    if len(part) < 3:
        return ""
    rate = part["throughput"].astype(float)
    if rate.min() * SPLIT > rate.max():
        return ""
    slow = part[rate < rate.max() / SPLIT]
    fast = part[rate >= rate.max() / SPLIT]
    lat = slow["p50_ns"].median() / fast["p50_ns"].median() if "p50_ns" in part else float("nan")
    return (f"{len(slow)} of the {len(part)} repetitions of the ring with one producer ran at "
            f"{slow['throughput'].median() / fast['throughput'].median():.2f} of the others' rate, with a median "
            f"enqueue-to-dequeue time {lat:.1f}× as long: the hand-off between the two CPUs itself got slower for "
            "those repetitions, which is why the interval of that ratio is wide (on a virtual machine the host "
            "decides which physical cores run the vCPUs, and may move them).")


@per_view
def key_numbers(shown) -> dict[str, Any]:
    """Every number the prose quotes, each taken from a recording."""
    adkin, lmax, native, db = shown.adkin, shown.lmax, shown.native, shown.db
    n: dict[str, Any] = {}
    host = adkin.recording.host
    n["pub_logical_cpus"] = host.get("logical_cpus") or NAN
    n["pub_cores"] = host.get("cores") or NAN
    n["pub_queue_size"] = adkin.recording.parameters.get("queue_size", NAN)
    knee = finding(adkin, "scaling_knee", "imoltp_v1")
    n["pub_knee_threads"] = float(knee["sessions"]) if knee is not None else NAN
    v3 = finding(adkin, "single_thread", "imoltp_v3")
    n["pub_v3_msgs"] = float(v3["value"]) if v3 is not None else NAN
    lt = lmax.runs.set_index(["variant", "topology"])["throughput"]
    for key, topo in (("1p1c", "1P-1C unicast"), ("3p1c", "3P-1C sequencer"), ("pipe", "3-stage pipeline")):
        n[f"lmax_{key}_abq"] = float(lt.get(("array_blocking_queue", topo), NAN))
        n[f"lmax_{key}_disruptor"] = float(lt.get(("disruptor", topo), NAN))
        n[f"lmax_{key}_x"] = n[f"lmax_{key}_disruptor"] / n[f"lmax_{key}_abq"]
    lat = lmax.findings.set_index("variant")["value"] if lmax.findings is not None else pd.Series(dtype=float)
    n["lmax_lat_abq_ns"] = float(lat.get("array_blocking_queue", NAN))
    n["lmax_lat_disruptor_ns"] = float(lat.get("disruptor", NAN))
    inc = paper_increments(lmax).set_index("method")["ns_per_increment"] if lmax.increments is not None else {}
    n["lmax_inc_single_ns"] = float(inc.get("single thread", NAN))
    counts = lmax.increments.set_index("method")["increments"] if lmax.increments is not None else {}
    n["lmax_inc_millions"] = float(counts.get("single thread", NAN)) / 1e6
    n["db_fillfactor"] = db.recording.parameters.get("fillfactor_ring", NAN)
    n["lmax_inc_cas2_ns"] = float(inc.get("two threads with CAS", NAN))
    n["lmax_inc_lock2_ns"] = float(inc.get("two threads with a lock", NAN))
    n["lmax_inc_cas1_ns"] = float(inc.get("single thread with CAS", NAN))
    ms = lmax.increments.set_index("method")["elapsed_ms"] if lmax.increments is not None else {}
    n["lmax_inc_cas1_ms"] = float(ms.get("single thread with CAS", NAN))
    n["lmax_inc_cas2_ms"] = float(ms.get("two threads with CAS", NAN))
    n["lmax_inc_cas_x"] = n["lmax_inc_cas2_ms"] / n["lmax_inc_cas1_ms"]
    n["pub_ceiling_x"] = n["lmax_1p1c_disruptor"] / n["pub_v3_msgs"]

    # native, measured
    t = scaling(native)
    n["nat_label"] = native.recording.host.get("cpu_model") or native.recording.host.get("description") or "this machine"
    n["nat_cpus"] = int(native.runs["cpus"].iloc[0]) if "cpus" in native.runs else NAN
    n["nat_ring_1p"] = _at(t, "ring", 1)
    n["nat_locked_1p"] = _at(t, "locked", 1)
    # ratios the prose quotes are the claims' own: medians of ratios paired by repetition, one rounding
    runs = native.runs
    n["nat_ring_1p_x"] = ratio_spread(runs, "throughput", "ring", "locked", where={"sessions": 1}).median
    n["nat_regime_p"] = regime_sessions(native) or 0
    maxp = int(t["sessions"].max())
    n["nat_maxp"] = maxp
    n["nat_ring_maxp"] = _at(t, "ring", maxp)
    n["nat_locked_maxp"] = _at(t, "locked", maxp)
    n["nat_ring_maxp_x"] = ratio_spread(runs, "throughput", "ring", "locked", where={"sessions": maxp}).median
    n["nat_maxp_oversubscribed"] = oversubscribed(native, maxp)
    n["nat_maxp_note"] = (f" ({maxp + 1} threads on {logical_cpus(native)} logical CPUs: oversubscribed, shown and "
                          "not deciding)" if n["nat_maxp_oversubscribed"] else " (every thread on a CPU of its own)")
    for q in ("ring", "locked"):
        for p in ("p50", "p99"):
            n[f"nat_{q}_1p_{p}_us"] = _at(t, q, 1, f"{p}_us")
            n[f"nat_{q}_maxp_{p}_us"] = _at(t, q, maxp, f"{p}_us")
    n["nat_locked_backlog_text"] = locked_backlog_text(native, n)
    n["nat_split_sentence"] = split_sentence(runs)
    n["nat_ring_maxp_batch"] = _at(t, "ring", maxp, "mean_batch")
    n["nat_ring_1p_batch"] = _at(t, "ring", 1, "mean_batch")
    fs = false_sharing(native).set_index("layout")[PER_COUNTER]
    for layout in ("single", "adjacent", "padded", ONE_COUNTER, ONE_THREAD_ATOMIC):
        n[f"fs_{layout}_ns"] = float(fs.get(layout, NAN))
    costs = counter_costs(native)
    n["fs_adjacent_x"] = ratio_spread(costs, PER_COUNTER, "adjacent", "padded", variant="layout").median
    # the contended atomic against the same atomic add on one thread (not against a plain increment, which would
    # measure the atomic instruction as much as the contention)
    n["fs_shared_x"] = ratio_spread(costs, PER_COUNTER, ONE_COUNTER, ONE_THREAD_ATOMIC, variant="layout").median
    n["fs_atomic_words"] = atomic_words(native, n)

    # the database, measured (PostgreSQL reference, or a reader's recording)
    d = scaling(db)
    n["db_label"] = db.label
    n["db_regime_n"] = regime_sessions(db)
    n["db_cpus"] = logical_cpus(db)
    n["db_repetitions"] = db.repetitions
    n.update(call_notes(db))
    n["db_one_session_note"] = one_session_note(d, lambda v: label(v, db.engine))
    n["db_maxn"] = int(d["sessions"].max())
    best_any = 0.0
    for v in ("ring", "ring_durable", "ring_unlogged", "naive", "skip_locked", "imoltp_v1", "imoltp_v2", "imoltp_v3",
              "disk_naive", "disk_ring_sequence"):
        b, at = best(d, v)
        n[f"db_{v}_best"], n[f"db_{v}_best_n"] = b, at
        n[f"db_{v}_1"] = _at(d, v, 1)
        n[f"db_{v}_maxn"] = _at(d, v, n["db_maxn"])
        n[f"db_{v}_p99_us_1"] = _at(d, v, 1, "p99_us")
        if not math.isnan(b):
            best_any = max(best_any, b)
    n["db_best_any"] = best_any or NAN
    n["db_ring_scaling_x"] = n["db_ring_maxn"] / n["db_ring_1"]
    n["db_unlogged_x"] = n["db_ring_unlogged_best"] / n["db_ring_best"]
    n.update(delivery_numbers(db, d))
    n.update(regime_numbers(db, d))
    n["db_paced_sentence"] = paced_sentence(db)
    n["db_window_sentence"] = window_sentence(db)
    n["db_cursor_growth_words"] = cursor_growth_words(db)
    # the ceiling compares what was delivered: the native ring's consumer took every message, so a database
    # design counts with the messages its consumers took off (its push rate where it ran no consumers)
    ring_1p = runs.loc[(runs["variant"] == "ring") & (runs["sessions"] == 1), "throughput"]
    top = n["db_best_delivered"]
    n["ceiling_x"] = spread(ring_1p / top).median if top and not math.isnan(top) else NAN
    n["ceiling_sentence"] = (
        f"The C ring with one producer and one consumer delivered {n['ceiling_x']:,.0f} times as many messages per "
        f"second as the best database design with {n['db_regime_words']}: {n['db_best_delivered_design']}, "
        f"{top:,.0f} per second." if not math.isnan(n["ceiling_x"]) else
        "This database recording has no design whose consumers took messages off at a point within the logical "
        "CPUs, so there is no delivered rate to set against the C ring's.")
    rel = relation_summary(db, main_only=True)
    for v in ("ring", "ring_unlogged", "naive", "skip_locked"):
        part = rel[rel["variant"] == v] if not rel.empty else rel
        n[f"db_{v}_dead_max"] = float(part["dead_tuples"].max()) if len(part) else NAN
        n[f"db_{v}_mb_max"] = float(part["table_MB"].max()) if len(part) else NAN
        n[f"db_{v}_hot_min"] = float(part["hot_share"].min()) if len(part) and part["hot_share"].notna().any() else NAN
    n["db_naive_age_p50_ms"] = _at(d, "naive", n["db_maxn"], "age_p50_ms")
    n["db_skip_locked_age_p50_ms"] = _at(d, "skip_locked", n["db_maxn"], "age_p50_ms")
    n["db_naive_waits"] = top_waits(db, "naive") if db.engine == "postgres" else top_waits(db, "disk_naive")
    n["db_ring_waits"] = top_waits(db, "ring") if db.engine == "postgres" else top_waits(db, "imoltp_v2")
    return {k: _py(v) for k, v in n.items()}


def atomic_words(native: LmaxRecording, n: dict) -> str:
    """The one-thread atomic beside the shared one (prose), or why this recording cannot set them side by side."""
    if math.isnan(n.get(f"fs_{ONE_THREAD_ATOMIC}_ns", NAN)):
        return ("This recording predates the one-thread atomic run, so it cannot say how much of that is the "
                "atomic instruction itself and how much the second thread.")
    s = ratio_spread(counter_costs(native), PER_COUNTER, ONE_COUNTER, ONE_THREAD_ATOMIC, variant="layout")
    return (f"The same atomic add on one thread, with no other core asking for the line, took "
            f"{n[f'fs_{ONE_THREAD_ATOMIC}_ns']:.2f} ns, so the second thread multiplied its cost by "
            f"{s.text('.1f', '×')}, paired by repetition.")


def backlog_growth(g: LmaxRecording, variant: str, sessions: int | None):
    """The spread over repetitions of how fast one point's backlog grew through its measured window (messages a
    second: the backlog at the end less the one at the start, over the window)."""
    r = g.runs
    need = {"backlog", "backlog_start", "elapsed_s"}
    if sessions is None or not need <= set(r.columns):
        return spread([])
    part = r[(r["variant"] == variant) & (r["sessions"] == sessions)]
    return spread((part["backlog"] - part["backlog_start"]) / part["elapsed_s"])


def window_sentence(g: LmaxRecording) -> str:
    """How long each point's measured window was, and what that means for a design whose backlog grows (prose)."""
    window = (g.recording.parameters or {}).get("duration_s")
    if not window:
        return ""
    words = f"Each point's measured window was {float(window):g} s."
    reg = regime_sessions(g)
    grew = backlog_growth(g, "naive", reg)
    if not grew.n or grew.median <= 0:
        return words
    start = g.runs.loc[(g.runs["variant"] == "naive") & (g.runs["sessions"] == reg), "backlog_start"].median()
    return (f"{words} Run flat out, the queue table never caught up: its backlog, a median of {start:,.0f} messages "
            f"when the window opened, grew by {grew.text(',.0f')} a second through it ({reg} producer"
            f"{'s' if reg != 1 else ''}, {reg} consumer{'s' if reg != 1 else ''}). Its delivered rate is a transient of "
            "that window, not a steady state: a longer window would leave more consumed entries for each pop to read "
            "past.")


CURSORS = ("lmax_ring_write", "lmax_ring_read")  # the ring designs' two one-row cursor tables


def cursor_growth_words(g: LmaxRecording) -> str:
    """How the ring designs' one-row cursor tables grew under concurrency (medians over repetitions; prose for
    the chapter's "Do" list), or "" when the recording has no cursor statistics."""
    rel = g.relation
    if rel is None or "relation" not in rel or rel.empty:
        return ""
    cur = rel[rel["relation"].isin(CURSORS)].assign(mb=lambda f: f["table_bytes"] / 2**20)
    one, more = cur[cur["sessions"] == 1], cur[cur["sessions"] > 1]
    if one.empty or more.empty:
        return ""
    top = more.loc[more["mb"].idxmax()]
    upd = more["n_tup_upd"].astype(float)
    hot = (more["n_tup_hot_upd"].astype(float) / upd).where(upd > 0).dropna()
    window = (g.recording.parameters or {}).get("duration_s")
    within = f" in one {float(window):g}-second run" if window else " in one run"
    return (f"with one producer each took {one['mb'].max():.3f} MB at most (table and index); with more they grew "
            f"to as much as {top['mb']:.2f} MB{within} ({label(top['variant'], g.engine)}, {int(top['sessions'])} "
            f"producers), although at least {hot.min():.1%} of their updates were HOT (sizes on the details page)")


def locked_backlog_text(native: LmaxRecording, n: dict) -> str:
    """How many messages the locked queue's median message waited behind (Little's law: rate × median latency),
    against its capacity."""
    size = (native.recording.parameters or {}).get("queue_size")
    rate, p50 = n.get("nat_locked_1p", NAN), n.get("nat_locked_1p_p50_us", NAN)
    if not size or not np.isfinite(rate) or not np.isfinite(p50) or rate <= 0:
        return "The locked queue's latency is mostly time spent waiting in the queue behind other messages."
    queued = rate * p50 * 1e-6
    return (f"The locked queue's latency is mostly waiting in the queue: its producer outruns its consumer, and "
            f"its median wait of {p50:,.0f} µs at {rate:,.0f} messages a second means about {queued:,.0f} messages "
            f"ahead of a typical one (Little's law: rate × wait), {queued / size:.0%} of its {int(size):,} slots.")
