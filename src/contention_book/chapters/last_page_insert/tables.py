"""Recordings of the last-page-insert chapter -> the tables and numbers the notebook shows (verdicts: claims.py).

Works on any recording of this chapter: the published ones (SQL Server, as
the sources state them), a measured PostgreSQL one, or a reader's SQL Server
one.  Whatever a recording lacks becomes NaN or a sentence saying so, never
an error, so the prose still renders.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Sequence

import numpy as np
import pandas as pd

from contention_book.harness import recording as rec

from ..shared.stacks import StackSection, absent_text, flame, top_table
from .recordings import LpiRecording
from ..shared.spread import ratio_spread, spread, summarize
from .spec import BASELINE, RANGE_QUERY, SHORT

_pass_cache: dict | None = None  # set only while measured_numbers runs: one view's tables do not change then


def _once_per_pass(fn):
    """Inside one measured_numbers pass, compute each table of a view once (it asks for them dozens of times)."""
    @functools.wraps(fn)
    def wrapper(g, *args, **kwargs):
        if _pass_cache is None:
            return fn(g, *args, **kwargs)
        key = (fn.__name__, id(g), args, tuple(sorted(kwargs.items())))
        if key not in _pass_cache:
            _pass_cache[key] = fn(g, *args, **kwargs)
        return _pass_cache[key]
    return wrapper


@contextlib.contextmanager
def _one_pass():
    global _pass_cache
    outer, _pass_cache = _pass_cache, ({} if _pass_cache is None else _pass_cache)
    try:
        yield
    finally:
        _pass_cache = outer

IDLE = "idle (waiting for the client)"
HOT_WAITS = ("LWLock:BufferContent", "PAGELATCH_EX", "PAGELATCH_SH", "PAGELATCH_UP")


def rows_per_call(g: LpiRecording) -> int:
    """Rows each driver call inserted: the recording's parameter; 1 for recordings made before it existed."""
    value = g.recording.parameters.get("rows_per_call", 1)
    try:
        r = int(value)
    except (TypeError, ValueError):
        raise rec.RecordingError(f"recording {g.recording.id}: parameter rows_per_call {value!r}: "
                                 "expected a whole number, 1 or more") from None
    if r < 1:
        raise rec.RecordingError(f"recording {g.recording.id}: parameter rows_per_call {r}: expected 1 or more")
    return r


def call_text(g: LpiRecording) -> str:
    """How each driver call inserted its rows, in words, for the prose."""
    r = rows_per_call(g)
    if r == 1:
        return ("Each driver call is one INSERT of one row, its own transaction, so every row costs a client "
                "round trip")
    return (f"Each driver call runs a server-side loop that inserts {r} rows, each its own "
            "transaction, so the sessions stay inside the server between rows instead of waiting for a "
            "client round trip per row")


@_once_per_pass
def throughput_table(g: LpiRecording) -> pd.DataFrame:
    """Rows inserted per second per variant and session count (median over repetitions), with latency
    percentiles per driver call (a call inserts ``rows_per_call`` rows: one, or a server-side loop's worth)."""
    runs = g.runs.dropna(subset=["sessions"])
    if runs.empty:
        return pd.DataFrame(columns=["variant", "setting", "sessions", "throughput", "p50_ms", "p99_ms", "vs_one",
                                     "rows_per_call", "throughput_low", "throughput_high", "repetitions"])
    cols = [c for c in ("throughput", "p50_ms", "p99_ms") if c in runs]
    t = runs.groupby(["variant", "sessions"], sort=False)[cols].median().reset_index()
    sp = summarize(runs, ["variant", "sessions"], "throughput").set_index(["variant", "sessions"])
    idx = pd.MultiIndex.from_frame(t[["variant", "sessions"]])
    t["throughput_low"] = sp["low"].reindex(idx).to_numpy()
    t["throughput_high"] = sp["high"].reindex(idx).to_numpy()
    t["repetitions"] = sp["n"].reindex(idx).to_numpy()
    one = t[t["sessions"] == t["sessions"].min()].set_index("variant")["throughput"]
    t["vs_one"] = t["throughput"] / t["variant"].map(one)
    t["setting"] = t["variant"].map(lambda v: SHORT.get(v, v))
    t["sessions"] = t["sessions"].astype(int)
    t["rows_per_call"] = rows_per_call(g)
    return t


def throughput_wide(g: LpiRecording) -> pd.DataFrame:
    """Rows/s per setting (columns) and sessions (rows), with the p99 latency per call beside each."""
    t = throughput_table(g)
    per = "insert" if rows_per_call(g) == 1 else f"call of {rows_per_call(g)} rows"
    wide = t.pivot(index="sessions", columns="setting", values="throughput").round(0)
    wide.columns = [f"{c}: rows/s" for c in wide.columns]
    if "p99_ms" in t:
        p99 = t.pivot(index="sessions", columns="setting", values="p99_ms").round(2)
        p99.columns = [f"{c}: p99 ms per {per}" for c in p99.columns]
        wide = pd.concat([wide, p99], axis=1)
    return wide


def published_points(published: Sequence[LpiRecording]) -> pd.DataFrame:
    """Before/after pairs from the sources, normalised to their own 'before'."""
    rows = []
    for g in published:
        r = g.runs.dropna(subset=["relative"])
        for _, row in r.iterrows():
            rows.append({"source": g.label, "case": row["case"], "variant": row["variant"],
                         "setting": SHORT.get(row["variant"], row["variant"]), "relative": float(row["relative"]),
                         "throughput": row["throughput"], "unit": row["unit"]})
    return pd.DataFrame(rows)


# -- waits ---------------------------------------------------------------------------
@_once_per_pass
def wait_shares(g: LpiRecording, active_only: bool = False, top: int = 6) -> pd.DataFrame:
    """Share of samples per wait, per variant and sessions; small waits folded into 'other'."""
    if g.waits is None or g.waits.empty:
        return pd.DataFrame(columns=["variant", "setting", "sessions", "wait", "share"])
    w = g.waits.copy()
    if active_only:
        w = w[w["wait"] != IDLE]
    total = w.groupby(["variant", "sessions"])["samples"].transform("sum")
    w["share"] = w["samples"] / total
    keep = set(w.groupby("wait")["samples"].sum().sort_values(ascending=False).index[:top]) | {
        x for x in HOT_WAITS if x in set(w["wait"])}
    w["wait"] = w["wait"].where(w["wait"].isin(keep), "other")
    out = w.groupby(["variant", "sessions", "wait"], sort=False, as_index=False)[["samples", "share"]].sum()
    out["setting"] = out["variant"].map(lambda v: SHORT.get(v, v))
    return out


def wait_share(g: LpiRecording, variant: str, sessions: int, wait: str, active_only: bool = False) -> float:
    w = wait_shares(g, active_only=active_only, top=100)
    hit = w[(w["variant"] == variant) & (w["sessions"] == sessions) & (w["wait"] == wait)]
    if w[(w["variant"] == variant) & (w["sessions"] == sessions)].empty:
        return float("nan")
    return float(hit["share"].sum())


def little(g: LpiRecording, variant: str, sessions: int, wait: str = "LWLock:BufferContent") -> dict[str, float]:
    """Little's law at the page latch: sessions waiting on average (L), and the mean wait per insert (W = L / X)."""
    share = wait_share(g, variant, sessions, wait)
    t = throughput_table(g)
    row = t[(t["variant"] == variant) & (t["sessions"] == sessions)]
    x = float(row["throughput"].iloc[0]) if len(row) else float("nan")
    queue = share * sessions
    return {"share": share, "queue": queue, "throughput": x, "wait_us": queue / x * 1e6 if x else float("nan")}


# -- hot pages -----------------------------------------------------------------------
LAST_ROLES = ("rightmost leaf", "rightmost leaf, just split")
ROLE_ORDER = ("rightmost leaf", "rightmost leaf, just split", "other leaf", "internal", "root", "metapage", "heap", "sequence")


def _pin_roles(p: pd.DataFrame) -> pd.Series:
    if "role" in p:
        return p["role"]
    return pd.Series(np.where(p["relation"].str.endswith("_pkey"),
                              np.where(p["block"] == p["last_block"], "rightmost leaf", "other leaf"), "heap"),
                     index=p.index)


def pin_roles(g: LpiRecording) -> pd.DataFrame:
    """PostgreSQL: share of pinned-buffer samples per page role (rightmost leaf, other leaf, heap...) per variant."""
    if g.pins is None or g.pins.empty:
        return pd.DataFrame(columns=["variant", "page", "pins", "share", "is_last_page"])
    p = g.pins.assign(page=_pin_roles(g.pins))
    out = p.groupby(["variant", "page"], as_index=False)["pins"].sum()
    out["share"] = out["pins"] / out.groupby("variant")["pins"].transform("sum")
    out["is_last_page"] = out["page"].isin(LAST_ROLES).astype(int)
    out["order"] = out["page"].map({r: i for i, r in enumerate(ROLE_ORDER)}).fillna(99)
    return out.sort_values(["variant", "order"]).drop(columns="order").reset_index(drop=True)


def pin_ranking(g: LpiRecording, top: int = 10) -> pd.DataFrame:
    """PostgreSQL: buffers held pinned by inserting backends, ranked, per variant (the run with most sessions)."""
    if g.pins is None or g.pins.empty:
        return pd.DataFrame(columns=["variant", "page", "kind", "pins", "share", "is_last_page"])
    p = g.pins.copy()
    p["kind"] = np.where(p["relation"].str.endswith("_pkey"), "index", "heap")
    p["page"] = p["relation"] + " block " + p["block"].astype(int).astype(str)
    p["is_last_page"] = _pin_roles(p).isin(LAST_ROLES).astype(int)
    p = p.groupby(["variant", "page", "relation", "kind"], as_index=False).agg(
        pins=("pins", "sum"), is_last_page=("is_last_page", "max"))
    p["share"] = p["pins"] / p.groupby("variant")["pins"].transform("sum")
    p = p.sort_values(["variant", "pins"], ascending=[True, False])
    return p.groupby("variant", sort=False).head(top).reset_index(drop=True)


def pin_last_page_share(g: LpiRecording, variant: str) -> float:
    """Of the pins on the index's pages, the share on the index's last block (its rightmost leaf when keys grow)."""
    if g.pins is None:
        return float("nan")
    p = g.pins[(g.pins["variant"] == variant) & g.pins["relation"].str.endswith("_pkey")]
    if p.empty or p["pins"].sum() == 0:
        return float("nan")
    return float(p.loc[_pin_roles(p).isin(LAST_ROLES), "pins"].sum() / p["pins"].sum())


def pin_pages_touched(g: LpiRecording, variant: str) -> int:
    if g.pins is None:
        return 0
    p = g.pins[(g.pins["variant"] == variant) & g.pins["relation"].str.endswith("_pkey")]
    return int(len(p.drop_duplicates(["relation", "block"])))


def hot_page_table(g: LpiRecording, top: int = 8) -> pd.DataFrame:
    """The ranking the chapter shows: SQL Server's resolved waiting tasks, or PostgreSQL's pinned buffers."""
    if g.hot_pages is not None and not g.hot_pages.empty:
        h = g.hot_pages.copy()
        deepest = h.groupby("variant")["sessions"].transform("max")
        h = h[h["sessions"] == deepest]
        h["page"] = h["page"] + " " + h["object"] + "." + h["index"].fillna("")
        h["pins"] = h["samples"]
        return h.sort_values(["variant", "samples"], ascending=[True, False]).groupby("variant").head(top)
    return pin_roles(g)


# -- storage and reads -------------------------------------------------------------
@_once_per_pass
def density_table(g: LpiRecording) -> pd.DataFrame:
    """Per variant: leaf pages, rows, rows per leaf page, leaf density and fragmentation (leaf-page weighted)."""
    if g.index is None or g.index.empty:
        return pd.DataFrame(columns=["variant", "setting", "leaf_pages", "rows", "rows_per_leaf",
                                     "avg_leaf_density", "leaf_fragmentation", "btrees"])
    i = g.index.copy()
    i["w_density"] = i["avg_leaf_density"] * i["leaf_pages"]
    i["w_frag"] = i["leaf_fragmentation"] * i["leaf_pages"]
    out = i.groupby("variant", sort=False).agg(leaf_pages=("leaf_pages", "sum"), rows=("rows", "sum"),
                                                w_density=("w_density", "sum"), w_frag=("w_frag", "sum"),
                                                btrees=("index", "count")).reset_index()
    out["avg_leaf_density"] = out["w_density"] / out["leaf_pages"]
    out["leaf_fragmentation"] = out["w_frag"] / out["leaf_pages"]
    out["rows_per_leaf"] = out["rows"] / out["leaf_pages"]
    out["setting"] = out["variant"].map(lambda v: SHORT.get(v, v))
    return out.drop(columns=["w_density", "w_frag"])


@_once_per_pass
def read_cost_table(g: LpiRecording) -> pd.DataFrame:
    if g.read_cost is None:
        return pd.DataFrame(columns=["variant", "setting", "query", "partitions_touched", "logical_reads"])
    r = g.read_cost.copy()
    r["setting"] = r["variant"].map(lambda v: SHORT.get(v, v))
    return r


def _read(g: LpiRecording, variant: str, query: str, col: str) -> float:
    r = read_cost_table(g)
    hit = r[(r["variant"] == variant) & (r["query"] == query)]
    return float(hit[col].iloc[0]) if len(hit) else float("nan")


# -- numbers, verdicts, notes --------------------------------------------------------
def _tp(g: LpiRecording, variant: str, sessions: int) -> float:
    t = throughput_table(g)
    hit = t[(t["variant"] == variant) & (t["sessions"] == sessions)]
    return float(hit["throughput"].iloc[0]) if len(hit) else float("nan")


def _dens(g: LpiRecording, variant: str, col: str) -> float:
    d = density_table(g)
    hit = d[d["variant"] == variant]
    return float(hit[col].iloc[0]) if len(hit) else float("nan")


def measured_numbers(g: LpiRecording) -> dict[str, Any]:
    with _one_pass():
        return _measured_numbers(g)


def _measured_numbers(g: LpiRecording) -> dict[str, Any]:
    nan = float("nan")
    t = throughput_table(g)
    nmax = int(t["sessions"].max()) if len(t) else 0
    nmin = int(t["sessions"].min()) if len(t) else 0
    params = g.recording.parameters
    nums: dict[str, Any] = {"m_engine": g.label, "m_cpus": g.cpus or nan, "m_nmax": nmax, "m_nmin": nmin,
                            "m_partitions": int(params.get("partitions", 0) or 0),
                            "m_seconds": float(params.get("max_seconds", params.get("duration_s", nan))),
                            "m_sessions": ", ".join(str(int(s)) for s in sorted(t["sessions"].unique())),
                            "m_wait_hz": float(g.runs["wait_sampler_hz"].median()) if "wait_sampler_hz" in g.runs else nan}
    for v in ("sequential", "hash_partitioned", "random_key", "sequential_optimized"):
        nums[f"m_{v}_tp_max"] = _tp(g, v, nmax)
        nums[f"m_{v}_tp_one"] = _tp(g, v, nmin)
        nums[f"m_{v}_scale"] = nums[f"m_{v}_tp_max"] / nums[f"m_{v}_tp_one"]
        nums[f"m_{v}_vs_seq"] = nums[f"m_{v}_tp_max"] / _tp(g, BASELINE, nmax)
        hot = "LWLock:BufferContent" if g.engine == "postgres" else "PAGELATCH_EX"
        nums[f"m_{v}_hot_share"] = wait_share(g, v, nmax, hot)
        nums[f"m_{v}_hot_share_active"] = wait_share(g, v, nmax, hot, active_only=True)
        nums[f"m_{v}_hot_share_one"] = wait_share(g, v, nmin, hot)
        nums[f"m_{v}_idle_share"] = wait_share(g, v, nmax, IDLE)
        nums[f"m_{v}_cpu_share"] = wait_share(g, v, nmax, "CPU")
        lt = little(g, v, nmax, hot)
        nums[f"m_{v}_queue"], nums[f"m_{v}_wait_us"] = lt["queue"], lt["wait_us"]
        nums[f"m_{v}_last_page_share"] = pin_last_page_share(g, v)
        nums[f"m_{v}_pages_pinned"] = pin_pages_touched(g, v)
        for col in ("avg_leaf_density", "leaf_fragmentation", "rows_per_leaf", "leaf_pages", "rows"):
            nums[f"m_{v}_{col}"] = _dens(g, v, col)
    # the prose quotes these with their spread: "1.02× (95% interval 0.49–1.21×, median of 5)"
    runs = g.runs.dropna(subset=["sessions"])
    for v in ("hash_partitioned", "random_key", "sequential_optimized"):
        nums[f"m_{v}_vs_seq_text"] = ratio_spread(runs, "throughput", v, BASELINE, where={"sessions": nmax}).text(
            ".2f", "×")
    for n, key in ((nmin, "one"), (nmax, "max")):
        part = runs[(runs["variant"] == BASELINE) & (runs["sessions"] == n)]
        nums[f"m_sequential_tp_{key}_text"] = spread(part["throughput"]).text(",.0f", " rows/s")
    nums["m_insert_us_one"] = 1e6 / nums["m_sequential_tp_one"] if nums["m_sequential_tp_one"] else nan
    nums["m_rows_per_call"] = rows_per_call(g)
    nums.update(prose_texts(g, nums))
    nums["m_hash_point_reads"] = _read(g, "hash_partitioned", "point lookup", "logical_reads")
    nums["m_hash_point_noprune_reads"] = _read(g, "hash_partitioned", "point lookup, no partition pruning",
                                               "logical_reads")
    nums["m_hash_point_noprune_parts"] = _read(g, "hash_partitioned", "point lookup, no partition pruning",
                                               "partitions_touched")
    nums["m_seq_point_reads"] = _read(g, "sequential", "point lookup", "logical_reads")
    nums["m_hash_range_parts"] = _read(g, "hash_partitioned", RANGE_QUERY, "partitions_touched")
    nums["m_hash_range_reads"] = _read(g, "hash_partitioned", RANGE_QUERY, "logical_reads")
    nums["m_seq_range_reads"] = _read(g, "sequential", RANGE_QUERY, "logical_reads")
    nums["m_random_range_reads"] = _read(g, "random_key", RANGE_QUERY, "logical_reads")
    nums["m_range_rows"] = _read(g, "sequential", RANGE_QUERY, "rows_returned")
    return nums


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 or x == 0 else f"{x:.1%}"


def prose_texts(g: LpiRecording, n: dict[str, Any]) -> dict[str, str]:
    """Sentences whose direction depends on the recording, so the prose stays true of any recording."""
    def ok(x):
        return isinstance(x, (int, float)) and not np.isnan(x)

    hot = "LWLock:BufferContent" if g.engine == "postgres" else "PAGELATCH_EX"
    per_row = "round trip included" if n["m_rows_per_call"] == 1 else "inside the server-side loop"
    out = {"m_call_text": call_text(g) + "."}
    share, nmax = n["m_sequential_hot_share"], n["m_nmax"]
    if ok(share) and share > 0:
        out["m_queue_text"] = (
            f"In the measured run with {nmax} sessions on the sequential key, {_pct(share)} of samples found a "
            f"session waiting for {hot}. That is {n['m_sequential_queue']:.2f} sessions on average. At "
            f"{n['m_sequential_tp_max']:,.0f} rows/s it means about {n['m_sequential_wait_us']:.1f} µs of waiting "
            f"per row. For comparison, one session alone took {n['m_insert_us_one']:.1f} µs per row, {per_row}.")
    elif ok(share):
        out["m_queue_text"] = (
            f"In the measured run with {nmax} sessions on the sequential key, no sample found a session waiting "
            f"for {hot}, so by this law the queue at the page was empty as far as 20 Hz sampling can see: "
            f"the sessions spent their time elsewhere (see the wait shares below). One session alone took "
            f"{n['m_insert_us_one']:.1f} µs per row, {per_row}.")
    else:
        out["m_queue_text"] = "This recording has no wait samples, so the queue at the page cannot be estimated."
    idle, cpus = n["m_sequential_idle_share"], n["m_cpus"]
    if ok(idle) and idle > 0.5:
        out["m_bound_text"] = (
            f"At {nmax} sessions, {_pct(idle)} of the sequential key's wait samples found a backend idle, "
            "waiting for its client to send the next statement. The client round trip, not the page and not the "
            "CPU of the server, bounds throughput in this recording; the queue at the latch hardly forms.")
    else:
        out["m_bound_text"] = (
            f"With {nmax} sessions on {cpus} logical CPUs, at most {cpus} backends run at any instant and the rest "
            "wait for a CPU. A backend that is preempted while it holds the rightmost leaf's lock makes every "
            "other inserter wait for it, which is how a queue at the page forms even on few cores.")
    lp = n["m_sequential_last_page_share"]
    if ok(lp):
        out["m_pins_text"] = (
            f"With the sequential key, {_pct(lp)} of the pins on index pages were on the rightmost leaf, or on the "
            "leaf that had just handed that role to its new right sibling, out of "
            f"{n['m_sequential_leaf_pages']:,.0f} leaves. The hash-partitioned table spread its index pins over "
            f"{n['m_hash_partitioned_pages_pinned']} distinct pages and the non-sequential key over "
            f"{n['m_random_key_pages_pinned']}.")
    elif g.pins is not None:
        out["m_pins_text"] = (
            "In this recording the sampler caught no inserting backend holding a pin on a page of the sequential "
            "key's index: each insert holds its pins for microseconds, and between inserts the backends were "
            "elsewhere, so a sampler at a few hertz found nothing there to rank.")
    else:
        out["m_pins_text"] = "This recording has no page-level samples."
    return out


def published_numbers(published: Sequence[LpiRecording]) -> dict[str, Any]:
    nums: dict[str, Any] = {}
    for g in published:
        tag = "sqlcat" if g.recording.id == "published-sqlcat-2009" else "wp"
        facts = g.facts.set_index("fact")["value"] if g.facts is not None else pd.Series(dtype=float)
        for i, (fact, value) in enumerate(facts.items()):
            nums[f"{tag}_fact{i}"] = float(value)
        r = g.runs
        for case, part in r.groupby("case", sort=False):
            key = {"customer workload, 64-128 cores": "customer", "32-core lab (comment)": "lab32",
                   "32-core lab, later (comment)": "lab32later", "last-page example": "example",
                   "point-of-sale load test": "pos"}.get(case, case.replace(" ", "_"))
            for _, row in part.iterrows():
                nums[f"{tag}_{key}_{row['variant']}_tp"] = float(row["throughput"])
                nums[f"{tag}_{key}_{row['variant']}_rel"] = float(row["relative"])
        if g.before_after is not None:
            for _, row in g.before_after.iterrows():
                k = row["measurement"].lower().replace(" ", "_").replace("/", "_per_")
                nums[f"{tag}_{k}_before"], nums[f"{tag}_{k}_after"] = float(row["before"]), float(row["after"])
    nums["sqlcat_gain_pct"] = (nums.get("sqlcat_customer_hash_partitioned_rel", np.nan) - 1) * 100
    nums["sqlcat_lab_gain_pct"] = (nums.get("sqlcat_lab32_hash_partitioned_rel", np.nan) - 1) * 100
    nums["wp_pos_x"] = nums.get("wp_pos_hash_partitioned_rel", np.nan)
    return nums


def key_numbers(shown) -> dict[str, Any]:
    """Every number the prose glues."""
    nums = {**published_numbers(shown.published), **measured_numbers(shown.measured)}
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in nums.items()}


def stack_section(shown, top: int = 10) -> StackSection:
    """Top functions per variant from the perf stacks, plus lock-related shares, or why there are none."""
    g = shown.measured
    if not g.stacks:
        return StackSection(text=absent_text(g))
    from contention_book import perftools

    out = StackSection()
    parts = []
    for variant, path in sorted(g.stacks.items()):
        prof = perftools.load(path)
        out.tables.append(top_table(prof, SHORT.get(variant, variant), top).rename_axis(["setting", "function"]))
        incl = perftools.top_functions(prof, n=100000)
        lw = incl[incl["function"].str.contains("LWLockAcquire|LWLockWaitListLock|PGSemaphoreLock", regex=True)]
        share = float(lw["inclusive_pct"].max()) if len(lw) else 0.0
        parts.append(f"*{SHORT.get(variant, variant)}*: {share:.1f}% of samples inside a lightweight-lock "
                     "acquire or wait")
    out.text = ("Stacks were sampled with `perf` on the inserting backends during the run with the most "
                   "sessions. A backend asleep on a lock uses no CPU, so a CPU profile sees the lock only as the "
                   "cost of taking and releasing it. " + "; ".join(parts) + ".")
    if "sequential" in g.stacks:
        out.figures.append(flame(perftools.load(g.stacks["sequential"]), f"{g.label}: {SHORT['sequential']}"))
    return out
