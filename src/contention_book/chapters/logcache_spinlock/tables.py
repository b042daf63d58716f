"""The cache-line chapter's tables, key numbers and stack section, computed from the recordings shown."""
from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np
import pandas as pd


from contention_book.harness import load_record, machine_card
from ..shared.spread import ratio_spread, spread
from .spec import BACKOFF_FUNCTIONS, BASELINE, LABELS, MIN_CPUS_FOR_ALONE, RELIEVED
from ..shared.stacks import StackSection, share_of, flame
from .recordings import LogcacheRecording

NAN = float("nan")


def _f(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return NAN


# -- native: core to core ----------------------------------------------------------
def c2c_matrix(nat: LogcacheRecording) -> pd.DataFrame:
    """Symmetric CPU x CPU matrix of median one-way latency (ns); the diagonal is empty."""
    c = nat.table("c2c")
    if c is None or c.empty:
        return pd.DataFrame()
    cpus = sorted(set(c["cpu_a"]).union(c["cpu_b"]))
    m = pd.DataFrame(np.nan, index=cpus, columns=cpus)
    for r in c.itertuples(index=False):
        m.loc[r.cpu_a, r.cpu_b] = m.loc[r.cpu_b, r.cpu_a] = float(r.median_one_way_ns)
    m.index.name, m.columns.name = "CPU", "CPU"
    return m


def relation(a: dict, b: dict) -> str:
    if a["package"] >= 0 and a["package"] != b["package"]:
        return "cross socket"
    if a["core"] >= 0 and a["core"] == b["core"]:
        return "SMT sibling"
    if a.get("l3", "unknown") != "unknown" and a.get("l3") == b.get("l3"):
        return "same L3 (socket or CCX)"
    if a.get("l3", "unknown") != "unknown":
        return "other L3, same socket"
    return "same socket"


VIRTUAL = "unknown (virtual CPUs)"


def on_hypervisor(nat: LogcacheRecording) -> str | None:
    """The hypervisor the recording's machine card saw, or None (no card, or none seen).  A guest's L3 and
    socket topology says nothing about where the host runs its virtual CPUs."""
    card = machine_card.load(nat.recording)
    return (card or {}).get("topology", {}).get("hypervisor") or None


def c2c_pairs(nat: LogcacheRecording) -> pd.DataFrame:
    """Each measured pair with its relation (from the recorded topology; unknown on virtual CPUs)."""
    c = nat.table("c2c")
    if c is None or c.empty:
        return pd.DataFrame(columns=["cpu_a", "cpu_b", "relation", "median_one_way_ns"])
    if on_hypervisor(nat):
        out = c.copy()
        out["relation"] = VIRTUAL
        return out
    topo = nat.table("topology")
    info = {int(r.cpu): {"core": int(r.core), "package": int(r.package), "l3": str(r.l3)}
            for r in topo.itertuples(index=False)} if topo is not None else {}
    unknown = {"core": -1, "package": -1, "l3": "unknown"}
    out = c.copy()
    out["relation"] = [relation(info.get(int(a), unknown), info.get(int(b), unknown))
                       for a, b in zip(c["cpu_a"], c["cpu_b"])]
    return out


RELATION_WORDS = {"SMT sibling": "two hyperthreads of one core", "same L3 (socket or CCX)": "two cores sharing an L3",
                  "other L3, same socket": "two cores of one socket with separate L3s",
                  "same socket": "two cores of one socket", "cross socket": "two sockets"}


def relations_sentence(pairs: pd.DataFrame) -> str:
    """Where the measured pairs sat, as a sentence (on virtual CPUs: that nobody can tell)."""
    if not len(pairs):
        return "No pair was measured."
    counts = pairs["relation"].value_counts()
    if VIRTUAL in counts.index:
        return ("The CPUs are virtual, so which host cores ran them, and what they share, is unknown.")
    if len(counts) == 1:
        words = RELATION_WORDS.get(counts.index[0], counts.index[0])
        return f"The {'pair ran' if counts.iloc[0] == 1 else 'pairs all ran'} on {words}."
    parts = [f"{v} on {RELATION_WORDS.get(k, k)}" for k, v in counts.items()]
    return f"Of the pairs, {parts[0].replace(' on ', ' ran on ', 1)}, " + ", ".join(parts[1:]) + "."


def c2c_by_relation(nat: LogcacheRecording) -> pd.DataFrame:
    p = c2c_pairs(nat)
    if p.empty:
        return pd.DataFrame(columns=["relation", "pairs", "median_one_way_ns", "min_ns", "max_ns"])
    g = p.groupby("relation")["median_one_way_ns"]
    return pd.DataFrame({"pairs": g.size(), "median_one_way_ns": g.median(), "min_ns": g.min(),
                         "max_ns": g.max()}).reset_index()


def c2c_comparison(nat: LogcacheRecording, published: LogcacheRecording) -> pd.DataFrame:
    """Published medians per machine and relation next to this machine's."""
    pub = published.table("published_c2c")
    rows = [] if pub is None else [
        {"machine": r.machine, "relation": r.relation, "median_one_way_ns": float(r.median_one_way_ns),
         "source": f"published ({r.source})"} for r in pub.itertuples(index=False)]
    cpu = nat.recording.host.get("cpu_model") or "this machine"
    for r in c2c_by_relation(nat).itertuples(index=False):
        rows.append({"machine": f"{cpu} (measured)", "relation": r.relation,
                     "median_one_way_ns": float(r.median_one_way_ns), "source": "measured here"})
    return pd.DataFrame(rows)


# -- native: the cost ladder ---------------------------------------------------------
def ladder(nat: LogcacheRecording) -> pd.DataFrame:
    """ns per operation, cheapest first: cache hits, a line transfer, memory, a context switch."""
    rows = []
    chase = nat.table("chase")
    if chase is not None and len(chase):
        ch = chase.sort_values("size_bytes")
        names = {0: "load, L1-sized set", len(ch) - 1: "load, memory-sized set"}
        for i, r in enumerate(ch.itertuples(index=False)):
            size = int(r.size_bytes)
            human = f"{size // 2**20} MiB" if size >= 2**20 else f"{size // 1024} KiB"
            rows.append({"operation": f"{names.get(i, 'load')} ({human})", "ns": float(r.ns_per_load),
                         "kind": "memory" if i == len(ch) - 1 else "cache"})
    pairs = c2c_pairs(nat)
    if len(pairs):
        for rel, g in pairs.groupby("relation"):
            rows.append({"operation": f"cache-line transfer, {rel}", "ns": float(g["median_one_way_ns"].median()),
                         "kind": "line transfer"})
    cs = nat.table("ctxswitch")
    if cs is not None:
        for r in cs.itertuples(index=False):
            what = "context switch, same CPU" if r.placement == "same_cpu" else "wake a sleeper on another CPU"
            rows.append({"operation": f"{what} ({r.method})", "ns": float(r.median_ns_per_handoff),
                         "kind": "context switch" if r.placement == "same_cpu" else "cross-CPU wake-up"})
    return pd.DataFrame(rows).sort_values("ns").reset_index(drop=True) if rows else pd.DataFrame(
        columns=["operation", "ns", "kind"])


# -- native: the toy log cache ------------------------------------------------------
INTERVAL_COLUMNS = ("throughput", "spins_per_record", "backoffs_per_million_records", "writer_flushes_per_s",
                    "writer_share_pct")
BYSTANDER = 50.0  # below this % of the log flushed by a writer with a CPU of its own, the workers did the flushing
TOOK_OVER = 10.0  # percentage points of the log A's writer flushed fewer than B's: the workers took over its flushes


def flush_split(runs: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """Per run, the bytes the log writer flushed and the bytes the workers flushed themselves (inline), or None
    when the recording cannot say.  The program prints both (``writer_bytes``, ``inline_bytes``).  A recording
    made before it did gives them exactly all the same: a worker flushed only a buffer too full for one more
    record, so each of its ``inline_flushes`` moved floor(buffer_bytes / record_bytes) whole records."""
    if {"writer_bytes", "inline_bytes"} <= set(runs.columns):
        return runs["writer_bytes"].astype(float), runs["inline_bytes"].astype(float)
    if {"inline_flushes", "buffer_bytes", "record_bytes", "bytes_flushed"} <= set(runs.columns):
        inline = (runs["inline_flushes"] * (runs["buffer_bytes"] // runs["record_bytes"]) * runs["record_bytes"])
        return (runs["bytes_flushed"] - inline).astype(float), inline.astype(float)
    return None


def with_flush_split(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with ``writer_share_pct`` (% of the flushed bytes the writer flushed) and ``inline_flushes_per_s``
    where the recording has what they are computed from."""
    out = runs
    split = flush_split(runs)
    if split is not None:
        writer, inline = split
        total = writer + inline
        out = out.assign(writer_share_pct=(100 * writer / total).where(total > 0))
    if {"inline_flushes", "elapsed_s"} <= set(runs.columns):
        out = out.assign(inline_flushes_per_s=runs["inline_flushes"] / runs["elapsed_s"])
    return out


def logcache_summary(nat: LogcacheRecording) -> pd.DataFrame:
    r = nat.runs
    if r is None or r.empty or "spins_per_record" not in r:
        return pd.DataFrame()
    r = with_flush_split(r)
    g = r.groupby(["variant", "workers"], sort=False)
    out = g.agg(repetitions=("throughput", "size"), throughput=("throughput", "median"),
                spins_per_record=("spins_per_record", "median"), backoffs_per_record=("backoffs_per_record", "median"),
                collisions_per_record=("collisions_per_record", "median"),
                writer_flushes_per_s=("writer_flushes_per_s", "median"),
                writer_wait_p50_ns=("writer_wait_p50_ns", "median"),
                writer_wait_p99_ns=("writer_wait_p99_ns", "median")).reset_index()
    # backoffs are rare per record: per million records reads better than a column of zeros
    out["backoffs_per_million_records"] = out["backoffs_per_record"] * 1e6
    for col in ("writer_share_pct", "inline_flushes_per_s"):
        if col in r:
            m = r.groupby(["variant", "workers"], sort=False)[col].median()
            out[col] = [float(m.get((v, w), NAN)) for v, w in zip(out["variant"], out["workers"])]
    if "writer_backoffs" in r:
        wb = (r["writer_backoffs"] / r["elapsed_s"]).groupby([r["variant"], r["workers"]], sort=False).median()
        out["writer_backoffs_per_s"] = [float(wb.get((v, w), NAN)) for v, w in zip(out["variant"], out["workers"])]
    if "worker_cpus" in r and "writer_cpu" in r:
        first = r.drop_duplicates(["variant", "workers"]).set_index(["variant", "workers"])
        out["worker_cpus"] = [str(first.loc[(v, w), "worker_cpus"]) for v, w in zip(out["variant"], out["workers"])]
        out["writer_cpu"] = [int(first.loc[(v, w), "writer_cpu"]) for v, w in zip(out["variant"], out["workers"])]
    r = r.assign(backoffs_per_million_records=r["backoffs_per_record"] * 1e6)
    for col in (c for c in INTERVAL_COLUMNS if c in r):  # the interval each bar of the figure draws as a whisker
        spreads = [spread(part[col]) for _, part in r.groupby(["variant", "workers"], sort=False)]
        out[f"{col}_low"] = [x.low for x in spreads]
        out[f"{col}_high"] = [x.high for x in spreads]
    out["setting"] = out["variant"].map(lambda v: LABELS.get(v, v))
    return out


TOY_RATE_COLUMNS = {"worker_cpus": "workers' CPUs", "writer_cpu": "writer's CPU",
                    "throughput": "records/s", "throughput_low": "records/s, low", "throughput_high": "records/s, high",
                    "repetitions": "repetitions"}
TOY_FLUSH_COLUMNS = {"writer_flushes_per_s": "writer's flushes/s", "inline_flushes_per_s": "workers' flushes/s",
                     "writer_share_pct": "% of the log the writer flushed"}
TOY_LOCK_COLUMNS = {"collisions_per_record": "collisions per record", "spins_per_record": "spins per record",
                    "backoffs_per_million_records": "backoffs per million records",
                    "writer_wait_p50_ns": "writer's median wait (ns, bucket edge)",
                    "writer_wait_p99_ns": "writer's 99th pct. wait (ns, bucket edge)",
                    "writer_backoffs_per_s": "writer's backoffs/s"}


def toy_tables(summary: pd.DataFrame, judged: bool) -> list[tuple[pd.DataFrame, str]]:
    """The toy's medians as two narrow tables (where each thread ran and how fast; what the lock cost), each
    with its caption.  ``judged``: whether variant B isolates the writer cleanly on this machine."""
    if summary.empty:
        return []
    label = "" if judged else " Variant B is shown, not judged: on this machine its workers share one CPU."
    base = summary.assign(variant=summary["variant"].map(lambda v: LABELS.get(v, v)), workers=summary["workers"].astype(int))
    out = []
    for cols, caption in ((TOY_RATE_COLUMNS, "The toy log cache by variant and worker count (measured, medians of "
                                             "the repetitions, with the interval of records/s): where each thread "
                                             "ran and how fast."),
                          (TOY_FLUSH_COLUMNS, "The toy log cache by variant and worker count (measured, medians): who "
                                              "flushed the buffer. The writer flushes it when it wakes; a worker "
                                              "flushes it only when it finds it full, while holding the lock."),
                          (TOY_LOCK_COLUMNS, "The toy log cache by variant and worker count (measured, medians): what "
                                             "the spinlock cost per record, and how long the writer waited for it. The waits are read "
                                             "from a histogram whose buckets are at most 12.5% wide, so each is the "
                                             "upper edge of its bucket (a value such as 16,777,216 ns is the edge "
                                             "2²⁴ ns, about 17 ms), not an exact time.")):
        keep = [c for c in cols if c in base.columns]
        if not keep:
            continue
        frame = base[["variant", "workers", *keep]].rename(columns={"variant": "variant", "workers": "workers", **cols})
        out.append((frame.set_index(["variant", "workers"]).round(4), caption + label))
    return out


def _cpus_text(cpus: str) -> str:
    c = str(cpus).split()
    return f"CPU {c[0]}" if len(c) == 1 else "CPUs " + ", ".join(c[:-1]) + f" and {c[-1]}"


def plural(count: int, noun: str) -> str:
    """'1 worker', '4 workers': prose without "(s)"."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def pairs_text(count: int) -> str:
    """The CPU pairs the ping-pong measured, as the subject of "gave": 'single CPU pair', '6 CPU pairs'."""
    return "single CPU pair" if count == 1 else ("no CPU pair" if not count else f"{count:,} CPU pairs")


def wait_text(ns: float) -> str:
    """A histogram bucket's edge in µs, to the precision the number carries: 8,192 ns -> '8 µs', 576 -> '0.6 µs'."""
    if ns != ns:
        return "an unknown time"
    us = ns / 1e3
    return f"{us:,.0f} µs" if us >= 1 else f"{us:.1f} µs"


def transfer_cost_sentence(nat: LogcacheRecording) -> str:
    """Said once, where the chapter first quotes its transfer cost: the cost is this recording's own measurement,
    and on a virtual machine it depends on where the hypervisor put the two vCPUs, so recordings made on the same
    machine at other times (other chapters') measured other values.  On bare metal: only the first part."""
    own = "That transfer cost is this recording's own measurement."
    if not on_hypervisor(nat):
        return own
    return (own + " On a virtual machine it depends on where the hypervisor placed the two vCPUs at that moment "
            "(on two hyperthreads of one host core, on two cores, or on two sockets), and that placement can change "
            "from one run to the next: other chapters' recordings, made on the same kind of machine, measured "
            "other values.")


def limit_sentence(n: Mapping[str, Any], lc: pd.DataFrame) -> str:
    """Why records per second are not set against the one-transfer-per-hand-off limit: the limit binds hand-offs
    between CPUs (under MESI, an acquisition by a core other than the last holder's pulls the line over), while a
    record is one acquisition, and the computed collisions per record (acquisitions that found the lock taken) say
    how few acquisitions waited for another holder.  Workers that share one CPU move no line between them."""
    limit = n.get("nat_c2c_handoffs_per_s", NAN)
    ca, cb = n.get("nat_a_collisions_per_record", NAN), n.get("nat_b_collisions_per_record", NAN)
    if not (limit == limit and limit > 0 and ca == ca):
        return ""
    apart = {}
    if len(lc) and "worker_cpus" in lc:
        for v in ("writer_shared", "writer_alone"):
            at = lc[(lc["variant"] == v) & (lc["workers"] == n.get(f"nat_{'a' if v == 'writer_shared' else 'b'}_workers"))]
            if len(at):
                apart[v] = len(set(str(at["worker_cpus"].iloc[0]).split()))
    tail = (" The limit binds only hand-offs between CPUs: under MESI every acquisition by a core other than the "
            "last holder's pulls the line over, while a core that takes the lock again finds the line in its own "
            "cache. So records per second, which count every acquisition, are not set against that limit.")
    b_alone = apart.get("writer_alone") == 1 and n.get("nat_b_workers", 0) > 1
    both = cb == cb and not b_alone
    counts = (f"A's workers collided (found the lock taken) {ca:.4f} times per record"
              + (f" and B's {cb:.4f}" if both else ""))
    worst = max(ca, cb) if both else ca
    if worst < 0.5:
        head = (f"{counts}: nearly every acquisition found the lock free, as a worker re-taking the lock it has "
                "just released on the same core does, with no other holder to hand over from.")
    else:
        head = f"{counts}: most acquisitions found the lock taken and waited for a hand-off."
    if b_alone:
        head += " Both of B's workers share one CPU, so passing the lock between them moves no line at all."
    return head + tail


def placement_text(lc: pd.DataFrame, workers: int) -> str:
    """Where the recording put the workers and the writer in each variant, in words."""
    if lc.empty or "worker_cpus" not in lc:
        return "The recording does not say where each thread ran."
    at = lc[lc["workers"] == workers].set_index("variant")
    parts = []
    for v, name in (("writer_shared", "A"), ("writer_alone", "B")):
        if v in at.index:
            wc, lw = str(at.loc[v, "worker_cpus"]), int(at.loc[v, "writer_cpu"])
            shared = str(lw) in wc.split()
            parts.append(f"{name} ran the {workers} worker{'' if workers == 1 else 's'} on {_cpus_text(wc)} and the writer on CPU {lw}"
                         + (" with them" if shared else " alone"))
    text = "In this recording, " + "; ".join(parts) + "." if parts else "The recording does not say where each thread ran."
    if "writer_alone" in at.index and len(str(at.loc["writer_alone", "worker_cpus"]).split()) < workers:
        text += (" On this machine B leaves the workers fewer CPUs than there are workers, so they take turns on"
                 " one CPU and pass the lock without moving its cache line between cores.")
    return text


# -- database curves ---------------------------------------------------------------
# PostgreSQL's counterpart of XDESMGR: the waits that serialise handing out transaction ids and ending
# transactions (GetNewTransactionId takes XidGenLock; ProcArrayEndTransaction takes ProcArrayLock, or joins the
# group clearing of ProcArrayGroupUpdate).  Wait event names: PostgreSQL's "Wait Event Types" tables.
XID_WAITS = ("LWLock:XidGen", "LWLock:ProcArray", "IPC:ProcArrayGroupUpdate")


def xid_wait_shares(pg, variant: str = "default", sessions: int | None = None) -> tuple[int, dict[str, Any]]:
    """At ``sessions`` (default: the recording's most): each XID_WAITS wait's share of the client backends'
    samples, and the WAL insertion locks' (``LWLock:WAL*``) share, each a Spread over repetitions."""
    w = pg.by_repetition("pg_waits") if pg is not None else None
    if w is None or w.empty or "repetition" not in w:
        return 0, {}
    cb = w[(w["backend_type"] == "client backend") & (w["variant"] == variant)]
    if cb.empty:
        return 0, {}
    top = int(cb["sessions"].max()) if sessions is None else int(sessions)
    if top not in set(cb["sessions"]):
        return 0, {}
    per = cb[cb["sessions"] == top].groupby(["repetition", "wait"])["samples"].sum().unstack(fill_value=0)
    share = per.div(per.sum(axis=1), axis=0)
    out = {name: spread(share[name] if name in share else [0.0] * len(share)) for name in XID_WAITS}
    wal = [c for c in share.columns if str(c).startswith("LWLock:WAL")]
    out["LWLock:WAL*"] = spread(share[wal].sum(axis=1) if wal else [0.0] * len(share))
    return top, out


def throughput_curve(recs: Mapping[str, LogcacheRecording] | list[LogcacheRecording]) -> pd.DataFrame:
    """Inserts per second by sessions and variant, for every database recording given: median and interval."""
    rows = []
    for g in (recs.values() if isinstance(recs, Mapping) else recs):
        if g.engine == "native" or g.runs is None:
            continue
        for (variant, sessions), part in g.runs.groupby(["variant", "sessions"], sort=False):
            s = spread(part["throughput"])
            rows.append({"recording": g.label, "kind": g.kind, "engine": g.engine, "variant": variant,
                         "setting": LABELS.get(variant, variant), "sessions": int(sessions),
                         "throughput": s.median, "low": s.low, "high": s.high, "repetitions": s.n})
    return pd.DataFrame(rows, columns=["recording", "kind", "engine", "variant", "setting", "sessions", "throughput",
                                       "low", "high", "repetitions"])


def pg_wait_table(pg: LogcacheRecording, backend_type: str = "client backend", top: int = 8) -> pd.DataFrame:
    w = pg.table("pg_waits")
    if w is None or w.empty:
        return pd.DataFrame()
    w = w[w["backend_type"] == backend_type]
    keep = w.groupby("wait")["share"].max().sort_values(ascending=False).head(top).index
    t = w[w["wait"].isin(keep)].pivot_table(index=["variant", "sessions"], columns="wait", values="share",
                                            aggfunc="sum", fill_value=0.0)
    return (t * 100).round(1)


def wal_bytes_text(wal: pd.DataFrame | None) -> str:
    """WAL bytes per insert in the default variant, named by its points as the WAL table shows them: the one value
    when all round alike, else the range from the fewest sessions to the most (e.g. "177 bytes of WAL at 1
    session to 192 at 8")."""
    if wal is None or wal.empty:
        return "an unrecorded number of bytes of WAL"
    d = wal[wal["variant"] == "default"] if (wal["variant"] == "default").any() else wal
    d = d.sort_values("sessions")
    per = d["wal_bytes"] / d["rows"]
    lo_s, hi_s = int(d["sessions"].iloc[0]), int(d["sessions"].iloc[-1])
    if round(per.min()) == round(per.max()):
        return f"about {per.iloc[0]:,.0f} bytes of WAL at every point of the default variant"
    if per.is_monotonic_increasing or per.is_monotonic_decreasing:
        return (f"{per.iloc[0]:,.0f} bytes of WAL at {lo_s} session{'s' if lo_s != 1 else ''} to {per.iloc[-1]:,.0f} "
                f"at {hi_s} (default variant)")
    return f"between {per.min():,.0f} and {per.max():,.0f} bytes of WAL at {lo_s} to {hi_s} sessions (default variant)"


def pg_wal_table(pg: LogcacheRecording) -> pd.DataFrame:
    w = pg.table("pg_wal")
    if w is None or w.empty:
        return pd.DataFrame()
    out = w[["variant", "sessions"]].copy()
    out["variant"] = out["variant"].map(lambda v: LABELS.get(v, v))
    out["WAL records / insert"] = w["wal_records"] / w["rows"]
    out["WAL bytes / insert"] = w["wal_bytes"] / w["rows"]
    out["WAL MB/s"] = w["wal_bytes"] / w["elapsed_s"] / 1e6
    if "wal_write" in w:
        out["WAL writes/s"] = w["wal_write"] / w["elapsed_s"]
    if "wal_buffers_full" in w:
        out["times WAL buffers were full"] = w["wal_buffers_full"]
    return out.round(2)


def sqlserver_spin_table(ss: LogcacheRecording) -> pd.DataFrame:
    s = ss.table("spinlocks")
    if s is None or s.empty:
        return pd.DataFrame()
    s = s[s["name"].isin(["LOGCACHE_ACCESS", "XDESMGR"])].copy()
    rows = s["rows"] if "rows" in s else np.nan
    s["spins per insert"] = s["spins"] / rows
    s["backoffs per insert"] = s["backoffs"] / rows
    return s[["variant", "sessions", "name", "collisions", "spins", "backoffs", "spins per insert",
              "backoffs per insert"]]


# -- the numbers the prose quotes --------------------------------------------------
# What the most frequent wait of the inserting backends means (the prose quotes the one that applies;
# plain text, since a glued string is not parsed as Markdown).
WAIT_MEANINGS = {
    "Lock:extend": "Lock:extend is the sessions queueing to grow the table's file by a page: a cost of the "
                   "table, not of the log.",
    "LWLock:WALInsert": "LWLock:WALInsert is waiting for one of the eight WAL insertion locks: the nearest thing "
                        "to LOGCACHE_ACCESS.",
    "LWLock:WALWrite": "LWLock:WALWrite is waiting for a WAL write or flush another process is doing.",
    "IO:WALWrite": "IO:WALWrite is a backend waiting for a write of WAL to the operating system to finish.",
    "IO:WALSync": "IO:WALSync is a backend waiting for WAL to reach the disk.",
    "Client:ClientRead": "Client:ClientRead is a backend waiting for the client's next call: time in the driver, "
                         "not in the server.",
    "LWLock": "An LWLock wait is a backend queued on one of PostgreSQL's lightweight locks.",
    "Lock": "A Lock wait is a backend queued on a heavyweight lock.",
}


def _best(curve: pd.DataFrame, engine: str, variant: str) -> tuple[float, float]:
    c = curve[(curve["engine"] == engine) & (curve["variant"] == variant)]
    if c.empty:
        return NAN, NAN
    r = c.loc[c["throughput"].idxmax()]
    return float(r["throughput"]), float(r["sessions"])


def toy_point(nat) -> dict:
    """The toy's deciding worker count, or why the recording cannot decide.

    Variant B isolates the writer only if each worker also has a CPU of its own: otherwise B's workers take turns
    on one CPU and pass the lock with no cache-line transfer, the very cost the claim is about.  That needs 2 or
    more workers (so the lock moves between cores) on CPUs other than the writer's, so at least
    MIN_CPUS_FOR_ALONE CPUs (a quarter of the machine or less for the writer).  Returns ``workers`` (None when
    none decides), ``why`` (words for "not testable here"; "" when testable) and ``missing`` (a point the
    recording lacks; "")."""
    runs = nat.runs
    cpus = int(nat.recording.host.get("logical_cpus") or 0)
    both = runs.groupby("workers")["variant"].nunique()
    both = sorted(int(w) for w in both[both == 2].index)
    shown = both[-1] if both else (int(runs["workers"].max()) if len(runs) else 0)

    def alone_cpus(w):
        part = runs[(runs["workers"] == w) & (runs["variant"] == "writer_alone")]
        return len(str(part["worker_cpus"].iloc[0]).split()) if len(part) and "worker_cpus" in part else 0

    if cpus < MIN_CPUS_FOR_ALONE:
        k = alone_cpus(shown)
        return {"workers": None, "shown": shown, "missing": "", "why": (
            f"{cpus} CPUs: B puts {shown} worker{'s' if shown != 1 else ''} on {k} CPU{'s' if k != 1 else ''} beside "
            "the writer's, so they pass the lock by time slicing with no cache-line transfer, which confounds "
            "freeing the writer's core" if k and k < shown else
            f"{cpus} CPUs: B leaves no CPU for two or more workers to move the lock between cores")}
    ok = [w for w in both if 2 <= w <= cpus - 1 and alone_cpus(w) >= w]
    if not ok:
        return {"workers": None, "shown": shown, "why": "", "missing": (
            f"a point with 2 to {cpus - 1} workers in both variants, each worker on a CPU of its own")}
    return {"workers": ok[-1], "shown": ok[-1], "why": "", "missing": ""}


TOY_KEY_COLUMNS = ("throughput", "collisions_per_record", "spins_per_record", "backoffs_per_record", "writer_flushes_per_s", "writer_wait_p50_ns",
                   "writer_share_pct", "inline_flushes_per_s")


def byte_size(n: float) -> str:
    """64 MiB, 60 KiB, 512 bytes."""
    if n != n:
        return "an unknown number of bytes"
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.{0 if n % size == 0 else 1}f} {unit}"
    return f"{n:,.0f} bytes"


def _duration(us: float) -> str:
    return f"{us / 1e3:,.1f} ms" if us >= 1000 else f"{us:,.0f} µs"


def _who_flushed(n: Mapping[str, Any]) -> str:
    """How much of the log the starved writer still flushed, repetition by repetition where the recording says
    (a median of 100% can hide repetitions in which the workers flushed part of the log inline)."""
    ma, ka = n.get("nat_a_reps", 0), n.get("nat_a_writer_all_reps", 0)
    mb, kb = n.get("nat_b_reps", 0), n.get("nat_b_writer_all_reps", 0)
    sa, sb = n["nat_a_writer_share_pct"], n["nat_b_writer_share_pct"]
    if not ma:
        return f"it still flushed {sa:.0f}% of the log in the median repetition (against {sb:.0f}% with a CPU of its own)."
    alone = ((f"with a CPU of its own it did in all {mb}" if kb == mb else f"with a CPU of its own it did in {kb} of {mb}")
             if kb else f"with a CPU of its own it did in none of {mb}") if mb else ""
    if ka == ma:
        return f"it still flushed all of the log in every one of the {ma} repetitions" + (f"; {alone}." if alone else ".")
    if ka == 0:
        return (f"in none of the {ma} repetitions did it flush all of the log (median {sa:.0f}%); the workers flushed "
                "the rest inline" + (f"; {alone}." if alone else "."))
    return (f"it still flushed all of the log in {ka} of {ma} repetitions; in the other {ma - ka} the workers flushed "
            "part of it inline" + (f", and {alone}." if alone else "."))


def flush_ratio(alone: float, shared: float) -> float:
    """How many times as often the writer flushed with a CPU of its own as when it shared one.  A writer that never
    flushed while sharing (a small run can end before it comes round) flushed infinitely less often, not a
    division error; one that flushed in neither variant has no ratio to give (1.0: nothing changed)."""
    if alone != alone or shared != shared:
        return NAN
    if shared:
        return alone / shared
    return float("inf") if alone else 1.0


def writer_words(n: Mapping[str, Any]) -> dict[str, str]:
    """What the toy's log writer did, in words, from the numbers :func:`table_numbers` has gathered: how long the
    buffer lasts against the writer's sleep (``nat_buffer_sentence``), whether the writer or the workers flushed
    the log and whether sharing a CPU starved the writer (``nat_writer_sentence``), and what a two-CPU machine
    showed of it (``nat_two_cores_costs``)."""
    out = {}
    rate = max((x for x in (n["nat_a_throughput"], n["nat_b_throughput"]) if x == x), default=NAN)
    lasts_us = n["nat_buffer_bytes"] / (rate * n["nat_record_bytes"]) * 1e6 if rate == rate and rate > 0 else NAN
    sleep = n["nat_flush_us"]
    if lasts_us == lasts_us and sleep == sleep and sleep > 0:
        k = lasts_us / sleep
        if k >= 10:
            out["nat_buffer_sentence"] = (
                f"The buffer holds about {_duration(lasts_us)} of records at the faster variant's rate, "
                f"{k:,.0f} times the writer's sleep, so a writer that comes round on time empties it long before it "
                "fills; a worker flushes only when the writer has been kept away that long.")
        elif k < 1:
            out["nat_buffer_sentence"] = (
                f"The buffer holds only about {_duration(lasts_us)} of records at the faster variant's rate, "
                "less than the writer's sleep, so the workers fill it before the writer comes round and flush it "
                "themselves.")
        else:
            out["nat_buffer_sentence"] = (
                f"The buffer holds about {_duration(lasts_us)} of records at the faster variant's rate, "
                f"{k:,.1f} times the writer's sleep.")
    else:
        out["nat_buffer_sentence"] = ""
    fx, sa, sb = n["nat_flush_x"], n["nat_a_writer_share_pct"], n["nat_b_writer_share_pct"]
    starved = False
    if fx != fx:
        out["nat_writer_sentence"] = "This recording has no log-cache runs to compare."
    elif sb == sb and sb < BYSTANDER:
        shared = f" ({sa:.0f}% when it shared one)" if sa == sa else ""
        out["nat_writer_sentence"] = (
            f"But the writer was mostly a bystander here: even with a CPU of its own it flushed only {sb:.0f}% of "
            f"the log{shared}, and the workers flushed the rest themselves, so its flush rate says little about a "
            "starved writer.")
    elif fx == float("inf"):  # a small run: sharing a CPU, the writer never came round to flush in the window
        starved = True
        alone = f" (with a CPU of its own it flushed {sb:.0f}% of the log)" if sb == sb else ""
        out["nat_writer_sentence"] = (
            f"Sharing a CPU with busy workers the writer starved: it did not flush once{alone}, and the workers "
            "flushed the whole log themselves.")
    elif fx >= 2:
        starved = True
        if sa == sa and sa <= sb - TOOK_OVER:
            others = (", each time holding the lock while the other worker" + ("s" if n["nat_a_workers"] > 2 else "")
                      + " waited") if n["nat_a_workers"] >= 2 else ""
            out["nat_writer_sentence"] = (
                f"With a CPU of its own the writer flushed {sb:.0f}% of the log. Sharing a CPU with busy workers it "
                f"starved: it flushed {fx:,.0f} times less often, only {sa:.0f}% of the log, and the workers flushed "
                f"the rest themselves{others}.")
        elif sa == sa:
            out["nat_writer_sentence"] = (
                f"Sharing a CPU with busy workers the writer starved: it flushed {fx:,.0f} times less often than "
                f"with a CPU of its own, each flush larger, yet {_who_flushed(n)}")
        else:
            out["nat_writer_sentence"] = (
                f"Sharing a CPU with busy workers the writer starved: it flushed {fx:,.0f} times less often than "
                "with a CPU of its own (this recording does not say how much of the log the workers flushed).")
    elif fx <= 0.5:
        out["nat_writer_sentence"] = ("Here the writer flushed less often with a CPU of its own, the opposite of "
                                      "the starvation the article describes.")
    else:
        out["nat_writer_sentence"] = ("Here the writer's flush rate barely changed between the variants, so this "
                                      "recording shows no starved writer.")
    out["nat_two_cores_costs"] = ("the line transfer, the context switch, and a log writer starved when it shares a "
                                  "busy CPU" if starved else "the line transfer and the context switch")
    return out


def table_numbers(shown) -> dict[str, Any]:
    """Every number the prose glues but the opening (:func:`.finding.key_numbers` adds it)."""
    published, pub_c2c, measured = shown.published, shown.pub_c2c, shown.measured
    n: dict[str, Any] = {}
    runs = published.runs.set_index("variant")
    for v, tag in (("default", "base"), ("no_logwriter_core", "aff"), ("no_logwriter_core_tf8015", "tf8015")):
        n[f"pub_{tag}_rate"] = _f(runs.loc[v, "throughput"]) if v in runs.index else NAN
        n[f"pub_{tag}_threads"] = int(runs.loc[v, "sessions"]) if v in runs.index else 0
    n["pub_aff_x"] = n["pub_aff_rate"] / n["pub_base_rate"]
    shares = published.table("published_stacks")
    def share(variant, needle):
        s = shares[(shares["variant"] == variant) & shares["function"].str.contains(needle, regex=False)]
        return _f(s["pct"].iloc[0]) if len(s) else NAN
    n["pub_backoff_base_pct"] = share("default", "BackOff")
    n["pub_backoff_aff_pct"] = share("no_logwriter_core", "BackOff")
    n["pub_sqllang_pct"] = share("no_logwriter_core", "sqllang")
    lang = shares[(shares["variant"] == "no_logwriter_core") & shares["function"].str.contains("sqllang", regex=False)]
    n["pub_sqllang_threads"] = int(lang["sessions"].iloc[0]) if len(lang) and lang["sessions"].notna().iloc[0] else 0
    n["pub_xdesmgr_pct"] = share("no_logwriter_core", "XDESMGR")
    n["pub_host"] = published.recording.host.get("description", "")
    n["pub_cpus"] = int(published.recording.host.get("logical_cpus") or 0)
    version = str(published.recording.engine.get("version", ""))
    n["pub_version"] = version[version.find("(") + 1:version.rfind(")")] if "(" in version else f"SQL Server {version}"
    pc = pub_c2c.table("published_c2c")
    for rel, key in (("SMT sibling", "smt"), ("same socket", "socket"), ("cross socket", "xsocket")):
        v = pc[(pc["machine"] == "Xeon E5-2695 v4") & (pc["relation"] == rel)]["median_one_way_ns"]
        n[f"pub_c2c_{key}_ns"] = _f(v.iloc[0]) if len(v) else NAN

    nat = measured.get("native")
    n["pub_c2c_xsocket_handoffs_m"] = 1e3 / n["pub_c2c_xsocket_ns"]  # hand-offs a second, in millions
    n["nat_id"] = nat.id if nat else "(no native recording)"
    toy = nat.runs if nat is not None and nat.runs is not None else None
    for key, col in (("nat_record_bytes", "record_bytes"), ("nat_buffer_bytes", "buffer_bytes"),
                     ("nat_flush_us", "flush_us")):
        n[key] = _f(toy[col].median()) if toy is not None and col in toy else NAN
    n["nat_buffer_text"] = byte_size(n["nat_buffer_bytes"])
    n["nat_cpu"] = (nat.recording.host.get("cpu_model") or "unknown CPU") if nat else ""
    n["nat_cpus"] = int(nat.recording.host.get("logical_cpus") or 0) if nat else 0
    pairs = c2c_pairs(nat) if nat else pd.DataFrame()
    n["nat_c2c_pairs"] = int(len(pairs))
    n["nat_c2c_median_ns"] = _f(pairs["median_one_way_ns"].median()) if len(pairs) else NAN
    n["nat_c2c_min_ns"] = _f(pairs["median_one_way_ns"].min()) if len(pairs) else NAN
    n["nat_c2c_max_ns"] = _f(pairs["median_one_way_ns"].max()) if len(pairs) else NAN
    n["nat_c2c_relations"] = ", ".join(sorted(pairs["relation"].unique())) if len(pairs) else "none"
    n["nat_c2c_pairs_text"] = pairs_text(len(pairs))
    n["nat_c2c_relations_sentence"] = relations_sentence(pairs)
    n["nat_c2c_handoffs_per_s"] = 1e9 / n["nat_c2c_median_ns"] if n["nat_c2c_median_ns"] == n["nat_c2c_median_ns"] else NAN
    # one pair has no range to print; several give their lowest and highest median
    lo, hi = n["nat_c2c_min_ns"], n["nat_c2c_max_ns"]
    n["nat_c2c_median_text"] = (f"{n['nat_c2c_median_ns']:.0f} ns" if len(pairs) == 1 or lo == hi else
                                f"{n['nat_c2c_median_ns']:.0f} ns (pairs from {lo:.0f} to {hi:.0f} ns)") \
        if len(pairs) else "nothing"
    if nat is not None and len(pairs):  # the run's own card: did the transfer cost move during it?
        from contention_book.harness import machine_card

        card = machine_card.load(nat.recording) if nat.recording.has("machine_card.json") else None
        if card and "one_way_transfer" in machine_card.placement_moved(card):
            at = card["phases"]
            n["nat_c2c_median_text"] += (
                f" (the same run's machine card measured {at['start']['costs']['one_way_transfer']['median']:.0f} ns "
                f"at its start and {at['end']['costs']['one_way_transfer']['median']:.0f} ns at its end: most probably "
                "the host placed the CPUs differently during the run, so on this machine a transfer's cost is not "
                "one number)")
    n["nat_c2c_own_sentence"] = transfer_cost_sentence(nat) if nat is not None and len(pairs) else ""
    h = n["nat_c2c_handoffs_per_s"]
    n["nat_c2c_handoffs_text"] = (f"{h / 1e6:.1f} million" if h >= 1e6 else f"{float(f'{h:.2g}'):,.0f}") \
        if h == h else "an unknown number of"
    chase = nat.table("chase") if nat else None
    if chase is not None and len(chase):
        ch = chase.sort_values("size_bytes")
        n["nat_l1_ns"], n["nat_mem_ns"] = _f(ch["ns_per_load"].iloc[0]), _f(ch["ns_per_load"].iloc[-1])
        n["nat_mem_mib"] = int(ch["size_bytes"].iloc[-1] // 2**20)
    else:
        n["nat_l1_ns"] = n["nat_mem_ns"] = NAN
        n["nat_mem_mib"] = 0
    cs = nat.table("ctxswitch") if nat else None
    def cs_ns(placement, method="futex"):
        if cs is None:
            return NAN
        v = cs[(cs["placement"] == placement) & (cs["method"] == method)]["median_ns_per_handoff"]
        return _f(v.iloc[0]) if len(v) else NAN
    n["nat_cs_same_ns"] = cs_ns("same_cpu")
    n["nat_cs_cross_ns"] = cs_ns("different_cpus")
    n["nat_cs_pipe_same_ns"] = cs_ns("same_cpu", "pipe")
    n["nat_cs_vs_line_x"] = n["nat_cs_same_ns"] / n["nat_c2c_median_ns"]
    n["nat_cs_vs_mem_x"] = n["nat_cs_same_ns"] / n["nat_mem_ns"]
    lc = logcache_summary(nat) if nat else pd.DataFrame()
    for tag, variant in (("a", "writer_shared"), ("b", "writer_alone")):
        part = lc[lc["variant"] == variant] if len(lc) else lc
        if len(part):
            top = part.loc[part["workers"].idxmax()]
            n[f"nat_{tag}_workers"] = int(top["workers"])
            for col in TOY_KEY_COLUMNS:
                n[f"nat_{tag}_{col}"] = _f(top[col]) if col in top else NAN
        else:
            n[f"nat_{tag}_workers"] = 0
            for col in TOY_KEY_COLUMNS:
                n[f"nat_{tag}_{col}"] = NAN
    for tag in ("a", "b"):  # a histogram bucket's edge: shown to the µs, not the ns (below 1 µs, to 0.1 µs)
        n[f"nat_{tag}_writer_wait_p50_us"] = n[f"nat_{tag}_writer_wait_p50_ns"] / 1e3
        n[f"nat_{tag}_writer_wait_text"] = wait_text(n[f"nat_{tag}_writer_wait_p50_ns"])
    # repetitions in which the writer flushed all of the log (the workers flushed none of it inline), per variant,
    # at the point the prose quotes: a median of 100% can hide repetitions where the workers flushed some
    for tag, variant in (("a", "writer_shared"), ("b", "writer_alone")):
        runs = nat.runs if nat is not None and nat.runs is not None else None
        part = runs[(runs["variant"] == variant) & (runs["workers"] == n[f"nat_{tag}_workers"])] \
            if runs is not None and "inline_flushes" in runs else None
        n[f"nat_{tag}_reps"] = int(len(part)) if part is not None else 0
        n[f"nat_{tag}_writer_all_reps"] = int((part["inline_flushes"] == 0).sum()) if part is not None else 0
    n["nat_b_vs_a_x"] = n["nat_b_throughput"] / n["nat_a_throughput"]
    n["nat_b_workers_text"] = plural(n["nat_b_workers"], "worker")
    if len(lc) and n["nat_b_workers"]:
        frame = nat.runs[nat.runs["workers"] == n["nat_b_workers"]]
        n["nat_b_vs_a_text"] = ratio_spread(frame, "throughput", "writer_alone", "writer_shared").text(".2f", "×")
    else:
        n["nat_b_vs_a_text"] = "not measured"
    n["nat_repetitions"] = nat.repetitions if nat is not None else 0
    n["nat_flush_x"] = flush_ratio(n["nat_b_writer_flushes_per_s"], n["nat_a_writer_flushes_per_s"])
    n["nat_spins_x"] = n["nat_a_spins_per_record"] / n["nat_b_spins_per_record"] \
        if n["nat_b_spins_per_record"] else NAN
    n["nat_placement"] = placement_text(lc, n["nat_b_workers"]) if len(lc) else ""
    n["nat_limit_sentence"] = limit_sentence(n, lc)
    n.update(writer_words(n))
    point = toy_point(nat) if len(lc) else {"workers": None, "why": "", "missing": "", "shown": 0}
    confounded = bool(point["why"])
    if confounded:
        n["nat_confound_sentence"] = (  # the placement sentence before it has already said why
            "So B's rate and spins are shown below but not credited to the writer's free core (the verdicts call "
            f"them not testable here); on {MIN_CPUS_FOR_ALONE} or more CPUs, B gives each worker a CPU of its own "
            "and tests what the article claims.")
    elif point["missing"]:
        n["nat_confound_sentence"] = (f"This recording has no point that isolates the writer without crowding the "
                                      f"workers: it lacks {point['missing']}.")
    elif len(lc):
        n["nat_confound_sentence"] = (f"Here B gave each of the {point['workers']} workers a CPU of its own besides the "
                                      "writer's, so it frees the writer's core without crowding the workers.")
    else:
        n["nat_confound_sentence"] = ""
    sx = n["nat_spins_x"]
    if sx == sx and sx >= 2 and confounded:
        n["nat_spins_sentence"] = (f"The toy's spins per record fell {sx:,.0f}-fold in B, but on this machine that "
                                   "comes from B's workers sharing one CPU, where they rarely find the lock held, "
                                   "not from the writer's free core.")
    elif sx == sx and sx >= 2:
        n["nat_spins_sentence"] = (f"The toy differs from the article here: its spins per record fell "
                                   f"{sx:,.0f}-fold in B. In A a worker spins while the writer has pushed the "
                                   "lock's holder off its CPU; B removes that.")
    elif sx == sx and sx > 0.5:
        n["nat_spins_sentence"] = ("The toy's spins per record, too, stayed within a factor of two between the "
                                   "variants.")
    elif sx == sx:
        n["nat_spins_sentence"] = "The toy's spins per record rose in B, unlike the article's BackOff share."
    else:
        n["nat_spins_sentence"] = ""

    pg = measured.get("postgres")
    n["pg_id"] = pg.id if pg else "(no PostgreSQL recording)"
    n["pg_version"] = pg.recording.engine["version"].split()[0] if pg else ""
    n["pg_batch"] = int(pg.recording.parameters.get("batch") or 1) if pg else 0
    n["pg_wait_sampler"] = load_record.wait_sampler_text(pg) if pg else ""
    n["pg_cpus"] = int(pg.recording.host.get("logical_cpus") or 0) if pg else 0
    curve = throughput_curve([pg]) if pg else pd.DataFrame(columns=["engine", "variant", "sessions", "throughput"])
    for tag, variant in (("def", "default"), ("pin", "walwriter_alone")):
        n[f"pg_{tag}_best"], n[f"pg_{tag}_best_sessions"] = _best(curve, "postgres", variant)
        c = curve[(curve["variant"] == variant)]
        n[f"pg_{tag}_one"] = _f(c.loc[c["sessions"] == c["sessions"].min(), "throughput"].iloc[0]) if len(c) else NAN
        n[f"pg_{tag}_max_sessions"] = int(c["sessions"].max()) if len(c) else 0
        n[f"pg_{tag}_at_max"] = _f(c.loc[c["sessions"] == c["sessions"].max(), "throughput"].iloc[0]) if len(c) else NAN
    n["pg_pin_vs_def_x"] = n["pg_pin_at_max"] / n["pg_def_at_max"]
    n["pg_pin_vs_def_text"] = ratio_spread(pg.runs, "throughput", "walwriter_alone", "default",
                                           where={"sessions": n["pg_pin_max_sessions"]}).text(".2f", "×") \
        if pg else "not measured"
    n["pg_repetitions"] = pg.repetitions if pg else 0
    n["pg_scaling_x"] = n["pg_def_best"] / n["pg_def_one"]
    wal = pg.table("pg_wal") if pg else None
    n["pg_wal_bytes_per_insert"] = _f((wal["wal_bytes"] / wal["rows"]).median()) if wal is not None and len(wal) else NAN
    n["pg_wal_bytes_text"] = wal_bytes_text(wal)
    waits = pg.table("pg_waits") if pg else None
    if waits is not None and len(waits):
        cb = waits[(waits["backend_type"] == "client backend") & (waits["variant"] == "default")]
        top_n = cb["sessions"].max() if len(cb) else 0
        at = cb[cb["sessions"] == top_n]
        walw = at[at["wait"].str.startswith("LWLock:WAL")]["share"].sum()
        n["pg_wal_lwlock_share_pct"] = _f(walw * 100)
        n["pg_cpu_share_pct"] = _f(at.loc[at["wait"] == "CPU", "share"].sum() * 100)
        n["pg_wait_sessions"] = int(top_n)
        other = at[at["wait"] != "CPU"].sort_values("share", ascending=False)
        n["pg_top_wait"] = str(other["wait"].iloc[0]) if len(other) else "none"
        n["pg_top_wait_pct"] = _f(other["share"].iloc[0] * 100) if len(other) else 0.0
        n["pg_top_wait_meaning"] = WAIT_MEANINGS.get(n["pg_top_wait"], WAIT_MEANINGS.get(
            n["pg_top_wait"].split(":")[0], ""))
    else:
        n["pg_top_wait"], n["pg_top_wait_pct"] = "none", NAN
        n["pg_top_wait_meaning"] = ""
        n["pg_wal_lwlock_share_pct"] = n["pg_cpu_share_pct"] = NAN
        n["pg_wait_sessions"] = 0
    top, xid = xid_wait_shares(pg)
    n["pg_xid_sessions_text"] = plural(top, "session") if top else "no sessions"
    for key, name in (("xidgen", "LWLock:XidGen"), ("procarray", "LWLock:ProcArray"),
                      ("groupupdate", "IPC:ProcArrayGroupUpdate"), ("wal", "LWLock:WAL*")):
        n[f"pg_xid_{key}_pct"] = _f(xid[name].median * 100) if xid else NAN
    n["pg_xid_xidgen_text"] = xid["LWLock:XidGen"].text(".0%") if xid else "not measured"
    # with one session nothing can queue for these locks: what they show there is not contention (ProcArray's
    # share at one session is the wait sampler's own footprint: chapter 4's details page)
    _, one = xid_wait_shares(pg, sessions=1)
    for key, name in (("xidgen", "LWLock:XidGen"), ("procarray", "LWLock:ProcArray"),
                      ("groupupdate", "IPC:ProcArrayGroupUpdate")):
        n[f"pg_xid_{key}_one_pct"] = _f(one[name].median * 100) if one else NAN
    ss = measured.get("sqlserver")
    n["ss_id"] = ss.id if ss else "(none: no SQL Server recording was made for this book)"
    for key in ("pg_def_best_sessions", "pg_wait_sessions", "pg_pin_max_sessions"):
        v = n[key]
        n[f"{key}_text"] = plural(int(v), "session") if v == v and v else "no sessions"
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in n.items()}


# -- stacks ----------------------------------------------------------------------------
def engine_of(profile) -> str:
    names = " ".join(map(str, profile.frame_names()[:5000]))
    return "sqlserver" if ("sqlmin" in names or "sqllang" in names or "sqlservr" in names) else "postgres"


def role(label: str) -> str | None:
    if label in BASELINE.values():
        return "baseline"
    if label in RELIEVED.values():
        return "relieved"
    return None


SHARE_COLUMNS = ["recording", "variant", "role", "what", "pct"]


def stack_shares_table(shown) -> pd.DataFrame:
    """Per capture: the share of samples whose stack holds the spinlock's backoff (or PostgreSQL's spin waits)."""
    rows = []
    for rid, profiles in shown.stack_groups.items():
        for variant, prof in profiles.items():
            needles = BACKOFF_FUNCTIONS[engine_of(prof)]
            rows.append({"recording": rid, "variant": variant, "role": role(variant),
                         "what": " / ".join(needles[:2]) + (" …" if len(needles) > 2 else ""),
                         "pct": share_of(prof, needles)})
    return pd.DataFrame(rows, columns=SHARE_COLUMNS)


def stack_section(shown, top: int = 10) -> StackSection:
    """Tables, flame graphs and sentences for every capture shown; ``numbers["shares"]`` as stack_shares_table."""
    from contention_book import perftools

    groups = shown.stack_groups
    out = StackSection(numbers={"shares": stack_shares_table(shown)})
    if not groups:
        out.text = "*No stack samples are shown: the recordings hold none, and no `stacks` export was given.*"
        return out
    texts = []
    labels = {v.id: v.label for v in [shown.published, *shown.measured.values()] if v is not None}
    for key, profiles in groups.items():
        rid = labels.get(key, key)  # said as the recording's engine and kind, not its folder name
        for variant, prof in profiles.items():
            eng = engine_of(prof)
            needles = BACKOFF_FUNCTIONS[eng]
            pct = share_of(prof, needles)
            t = perftools.top_functions(prof, n=top)
            frame = pd.DataFrame({
                "capture": f"{rid}: {LABELS.get(variant, variant)}", "function": t["function"],
                "exclusive %": t["exclusive_pct"].round(2), "inclusive %": t["inclusive_pct"].round(2),
            }).set_index(["capture", "function"])
            frame.attrs["caption"] = (f"The {top} functions with the most samples, {LABELS.get(variant, variant)} "
                                      f"({rid}): their own share of the samples and with what they called.")
            out.tables.append(frame)
            found = [n for n in needles if len(prof.find_frames(n))]
            if found:
                biggest = max(found, key=lambda n: share_of(prof, (n,)))
                c = perftools.callers(prof, biggest, depth=3)
                frame = (c.head(12).assign(capture=f"{rid}: {LABELS.get(variant, variant)}")[
                    ["capture", "depth", "path", "pct"]].rename(columns={"pct": "% of samples"}).round(2)
                    .set_index(["capture", "depth"]))
                frame.attrs["caption"] = (f"Who calls {biggest}, up to three frames, "
                                          f"{LABELS.get(variant, variant)} ({rid}).")
                out.tables.append(frame)
                texts.append(f"*{rid}, {LABELS.get(variant, variant)}*: stacks holding a spin-wait frame "
                             f"({', '.join(found)}) are {pct:.2f}% of samples; the callers table follows "
                             f"`{biggest}` up three frames")
            else:
                texts.append(f"*{rid}, {LABELS.get(variant, variant)}*: no spin-wait frame "
                             f"({', '.join(needles)}) in the samples")
            out.figures.append(flame(prof, f"{rid}: {LABELS.get(variant, variant)}", min_fraction=0.01))
        base = [v for v in profiles if role(v) == "baseline"]
        rel = [v for v in profiles if role(v) == "relieved"]
        if base and rel:
            d = perftools.diff(profiles[base[0]], profiles[rel[0]], by="function", n=top)
            names = f"{LABELS.get(base[0], base[0])} → {LABELS.get(rel[0], rel[0])}"
            frame = pd.DataFrame({
                "capture": f"{rid}: {names}", "function": d["name"], "% before": d["pct_a"].round(2),
                "% after": d["pct_b"].round(2), "change (points)": d["change_pp"].round(2)}).set_index(
                ["capture", "function"])
            frame.attrs["caption"] = f"The functions whose share of the samples changed most, {names} ({rid})."
            out.tables.append(frame)
    out.text = "; ".join(texts) + "."
    return out
