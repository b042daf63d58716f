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
from ..shared.spread import Spread, spread, summarize
from .spec import BASELINE, RANGE_QUERY, SHORT, deciding_sessions
from ..shared.memo import per_view

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
        return ("Each call the client makes is one INSERT of one row, its own transaction, so every row costs a client "
                "round trip")
    return (f"Each call the client makes runs a server-side loop that inserts {r} rows, each its own "
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
    """Rows/s per setting (columns) and sessions (rows, oversubscribed ones labelled), with the p99 latency per
    call beside each."""
    t = throughput_table(g)
    per = "insert" if rows_per_call(g) == 1 else f"call of {rows_per_call(g)} rows"
    wide = t.pivot(index="sessions", columns="setting", values="throughput").round(0)
    wide.columns = [f"{c}: rows/s" for c in wide.columns]
    if "p99_ms" in t:
        p99 = t.pivot(index="sessions", columns="setting", values="p99_ms")  # rounded once, by the table
        p99.columns = [f"{c}: p99 ms per {per}" for c in p99.columns]
        wide = pd.concat([wide, p99], axis=1)
    wide.index = [sessions_label(g, n) for n in wide.index]
    wide.index.name = "inserting sessions"
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


def delta_share(g: LpiRecording, variant: str, sessions: int, wait: str) -> float:
    """SQL Server: the share of the sessions' time spent in ``wait`` over a point, from the server's wait deltas
    (wait time over elapsed time times sessions); NaN without them."""
    wd, runs = g.wait_deltas, g.runs
    if wd is None or wd.empty or runs is None or "elapsed_s" not in runs or "wait_time_ms" not in wd:
        return float("nan")
    part = wd[(wd["variant"] == variant) & (wd["sessions"] == sessions)]
    run = runs[(runs["variant"] == variant) & (runs["sessions"] == sessions)]
    if part.empty or run.empty:
        return float("nan")
    reps = part["repetition"].nunique() if "repetition" in part else 1
    waited_ms = float(part.loc[part["name"] == wait, "wait_time_ms"].sum()) / max(reps, 1)
    return min(1.0, waited_ms / (float(run["elapsed_s"].median()) * 1000.0 * sessions))


def share_words(g: LpiRecording) -> str:
    """What a hot-latch share is a share of, in this recording."""
    return "of samples" if g.waits is not None else "of the sessions' time"


def leaf_wait(g: LpiRecording, q: dict[str, Spread]) -> tuple[Spread, str]:
    """The sequential key's queue at its last leaf, as a share, and the words that say it ("the last leaf in an
    estimated 6.4% of samples").  Where the non-sequential control ran, the share is the hot-latch share less the
    control's (both designs share the heap's end and the identity's sequence page; only the sequential one has the
    hot leaf), which is all that spreading the leaf could remove; without the control, the whole hot-latch share."""
    over = q["seq_over_random"]
    if over.n:
        return over, f"the last leaf in an estimated {q_text(q, 'seq_over_random', False)} {share_words(g)}"
    return q["seq_hot"], f"the sequential key's latch in {q_text(q, 'seq_hot', False)} {share_words(g)}"


def wait_share(g: LpiRecording, variant: str, sessions: int, wait: str, active_only: bool = False) -> float:
    if g.waits is None and g.engine == "sqlserver" and wait != IDLE:  # no samples: the server's wait deltas
        return delta_share(g, variant, sessions, wait)
    point = _wait_index(g, active_only).get((variant, sessions))
    return float("nan") if point is None else point.get(wait, 0.0)


@_once_per_pass
def _wait_index(g: LpiRecording, active_only: bool) -> dict[tuple, dict[str, float]]:
    """(variant, sessions) -> {wait: share}: a page asks for a hundred shares of one view, each a scan of the frame
    (0.1 s per repetition's numbers, before this)."""
    out: dict[tuple, dict[str, float]] = {}
    for (variant, sessions, wait), share in wait_shares(g, active_only=active_only, top=100) \
            .groupby(["variant", "sessions", "wait"])["share"].sum().items():
        out.setdefault((variant, sessions), {})[wait] = float(share)
    return out


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


def deciding(g: LpiRecording) -> int | None:
    """The session count that decides the verdicts (:func:`.spec.deciding_sessions`), or None if every point of
    the recording is oversubscribed."""
    runs = g.runs.dropna(subset=["sessions"]) if g.runs is not None else None
    return deciding_sessions(runs["sessions"] if runs is not None else (), g.cpus)


def sessions_label(g: LpiRecording, n: int, short: bool = False) -> str:
    """'2 sessions', '1 session', '8 sessions (oversubscribed: more than the 2 CPUs)' (``short``: without the
    reason, for figure labels)."""
    n = int(n)
    out = f"{n} session{'s' if n != 1 else ''}"
    if not (g.cpus and n > int(g.cpus)):
        return out
    return f"{out} (oversubscribed)" if short else f"{out} (oversubscribed: more than the {g.cpus} CPUs)"


def _pins_at(g: LpiRecording, sessions: int | None) -> pd.DataFrame | None:
    """The pinned-buffer samples taken at ``sessions`` (recordings made before pins were sampled at more than
    one point have them at the most sessions only: then nothing at any other count)."""
    if g.pins is None or g.pins.empty or sessions is None:
        return None
    p = g.pins[g.pins["sessions"] == sessions] if "sessions" in g.pins else g.pins
    return p if len(p) else None


def pin_roles(g: LpiRecording, sessions: int | None = None) -> pd.DataFrame:
    """PostgreSQL: share of pinned-buffer samples per page role (rightmost leaf, other leaf, heap, sequence...)
    per variant, at ``sessions`` (default: the deciding point)."""
    p = _pins_at(g, deciding(g) if sessions is None else sessions)
    if p is None:
        return pd.DataFrame(columns=["variant", "page", "pins", "share", "is_last_page"])
    p = p.assign(page=_pin_roles(p))
    out = p.groupby(["variant", "page"], as_index=False)["pins"].sum()
    out["share"] = out["pins"] / out.groupby("variant")["pins"].transform("sum")
    out["is_last_page"] = out["page"].isin(LAST_ROLES).astype(int)
    out["order"] = out["page"].map({r: i for i, r in enumerate(ROLE_ORDER)}).fillna(99)
    return out.sort_values(["variant", "order"]).drop(columns="order").reset_index(drop=True)


def pin_ranking(g: LpiRecording, top: int = 10, sessions: int | None = None) -> pd.DataFrame:
    """PostgreSQL: buffers held pinned by inserting backends, ranked, per variant, at ``sessions`` (default: the
    deciding point)."""
    p = _pins_at(g, deciding(g) if sessions is None else sessions)
    if p is None:
        return pd.DataFrame(columns=["variant", "page", "kind", "pins", "share", "is_last_page"])
    p = p.copy()
    p["kind"] = np.where(p["relation"].str.endswith("_pkey"), "index", "heap")
    p["page"] = p["relation"] + " block " + p["block"].astype(int).astype(str)
    p["is_last_page"] = _pin_roles(p).isin(LAST_ROLES).astype(int)
    p = p.groupby(["variant", "page", "relation", "kind"], as_index=False).agg(
        pins=("pins", "sum"), is_last_page=("is_last_page", "max"))
    p["share"] = p["pins"] / p.groupby("variant")["pins"].transform("sum")
    p = p.sort_values(["variant", "pins"], ascending=[True, False])
    return p.groupby("variant", sort=False).head(top).reset_index(drop=True)


def pin_last_page_share(g: LpiRecording, variant: str, sessions: int | None) -> float:
    """Of the pins on the index's pages at ``sessions``, the share on a rightmost leaf (or one that just was)."""
    p = _pins_at(g, sessions)
    if p is None:
        return float("nan")
    p = p[(p["variant"] == variant) & p["relation"].str.endswith("_pkey")]
    if p.empty or p["pins"].sum() == 0:
        return float("nan")
    return float(p.loc[_pin_roles(p).isin(LAST_ROLES), "pins"].sum() / p["pins"].sum())


def pins_per_repetition(counts: list[int]) -> str:
    """'10–20 pins per repetition' (or '13 pins in one repetition'): how few samples a pin share rests on."""
    if not counts:
        return ""
    lo, hi = min(counts), max(counts)
    if len(counts) == 1:
        return f"{lo} pins in one repetition"
    return f"{lo}–{hi} pins per repetition" if lo != hi else f"{lo} pins per repetition"


RIGHT_EDGE_HOPS = 8  # setup.sql's page role: a leaf at most this many right-links from the right edge "just split"


def pin_index_counts(g: LpiRecording, variant: str, sessions: int | None) -> list[int]:
    """The pins sampled on the index's pages at ``sessions``, one count per repetition (how many samples a
    share of them rests on)."""
    p = _pins_at(g, sessions)
    if p is None:
        return []
    p = p[(p["variant"] == variant) & p["relation"].str.endswith("_pkey")]
    if p.empty:
        return []
    if "repetition" not in p:
        return [int(p["pins"].sum())]
    return [int(v) for v in p.groupby("repetition")["pins"].sum()]


def pin_sequence_share(g: LpiRecording, variant: str, sessions: int | None) -> float:
    """Of all pins of ``variant`` at ``sessions``, the share on the identity's sequence (a one-page relation
    every insert locks, whatever the table's partitioning)."""
    p = _pins_at(g, sessions)
    if p is None:
        return float("nan")
    p = p[p["variant"] == variant]
    if p.empty or p["pins"].sum() == 0:
        return float("nan")
    return float(p.loc[_pin_roles(p) == "sequence", "pins"].sum() / p["pins"].sum())


def pin_pages_touched(g: LpiRecording, variant: str, sessions: int | None) -> int:
    p = _pins_at(g, sessions)
    if p is None:
        return 0
    p = p[(p["variant"] == variant) & p["relation"].str.endswith("_pkey")]
    return int(len(p.drop_duplicates(["relation", "block"])))


def hot_page_last_share(g: LpiRecording, variant: str, sessions: int | None) -> float:
    """SQL Server: of the page-latch waiting-task samples at ``sessions``, the share on a last page."""
    h = g.hot_pages
    if h is None or h.empty or sessions is None or "is_last_page" not in h:
        return float("nan")
    h = h[(h["variant"] == variant) & (h["sessions"] == sessions)]
    known = h["is_last_page"].notna()
    if h.empty or not known.any() or h["samples"].sum() == 0:
        return float("nan")
    return float(h.loc[known & (h["is_last_page"].astype(float) == 1), "samples"].sum() / h["samples"].sum())


def hot_page_table(g: LpiRecording, top: int = 8) -> pd.DataFrame:
    """The ranking the chapter shows at the deciding point: SQL Server's resolved waiting tasks, or PostgreSQL's
    pinned buffers by page role."""
    n = deciding(g)
    if g.hot_pages is not None and not g.hot_pages.empty:
        h = g.hot_pages[g.hot_pages["sessions"] == n].copy()
        h["page"] = h["page"] + " " + h["object"] + "." + h["index"].fillna("")
        h["pins"] = h["samples"]
        return h.sort_values(["variant", "samples"], ascending=[True, False]).groupby("variant").head(top)
    return pin_roles(g, n)


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
    return _first(g, read_cost_table, ("variant", "query"), (variant, query), col)


# -- numbers, verdicts, notes --------------------------------------------------------
def _tp(g: LpiRecording, variant: str, sessions: int) -> float:
    return _first(g, throughput_table, ("variant", "sessions"), (variant, sessions), "throughput")


def _dens(g: LpiRecording, variant: str, col: str) -> float:
    return _first(g, density_table, ("variant",), (variant,), col)


@_once_per_pass
def _row_index(g: LpiRecording, table, keys: tuple[str, ...]) -> tuple[pd.DataFrame, dict[tuple, int]]:
    """One of a view's tables and its first row for each value of ``keys``: a page asks for a hundred cells of
    one view, each a boolean scan of the frame before this."""
    frame, rows = table(g), {}
    for i, values in enumerate(zip(*(frame[k].tolist() for k in keys))):
        rows.setdefault(values, i)
    return frame, rows


def _first(g: LpiRecording, table, keys: tuple[str, ...], at: tuple, col: str) -> float:
    """``table(g)[col]`` on the first row whose ``keys`` equal ``at``; NaN if none."""
    frame, rows = _row_index(g, table, keys)
    i = rows.get(tuple(at))
    return float("nan") if i is None else float(frame[col].iloc[i])


def hot_wait(g: LpiRecording) -> str:
    return "LWLock:BufferContent" if g.engine == "postgres" else "PAGELATCH_EX"


@per_view
def measured_numbers(g: LpiRecording) -> dict[str, Any]:
    with _one_pass():
        return _measured_numbers(g)


def _measured_numbers(g: LpiRecording) -> dict[str, Any]:
    """One view's numbers.  Session-dependent ones are taken at the deciding point ``m_nd`` (the most sessions no
    higher than the CPUs); ``..._max`` ones at the most sessions, which may be oversubscribed."""
    nan = float("nan")
    t = throughput_table(g)
    nmax = int(t["sessions"].max()) if len(t) else 0
    nmin = int(t["sessions"].min()) if len(t) else 0
    nd = deciding(g)
    params = g.recording.parameters
    hot = hot_wait(g)
    nums: dict[str, Any] = {"m_engine": g.label, "m_cpus": g.cpus or nan, "m_nmax": nmax, "m_nmin": nmin,
                            "m_nd": nd if nd is not None else nan,
                            "m_partitions": int(params.get("partitions", 0) or 0),
                            "m_seconds": float(params.get("max_seconds", params.get("duration_s", nan))),
                            "m_sessions": ", ".join(str(int(s)) for s in sorted(t["sessions"].unique())),
                            "m_wait_hz": float(g.runs["wait_sampler_hz"].median()) if "wait_sampler_hz" in g.runs
                            else nan}
    at = nd if nd is not None else -1
    for v in ("sequential", "hash_partitioned", "random_key", "sequential_optimized"):
        nums[f"m_{v}_tp"] = _tp(g, v, at)
        nums[f"m_{v}_tp_max"] = _tp(g, v, nmax)
        nums[f"m_{v}_tp_one"] = _tp(g, v, nmin)
        nums[f"m_{v}_vs_seq"] = nums[f"m_{v}_tp"] / _tp(g, BASELINE, at)
        nums[f"m_{v}_vs_seq_max"] = nums[f"m_{v}_tp_max"] / _tp(g, BASELINE, nmax)
        nums[f"m_{v}_hot_share"] = wait_share(g, v, at, hot)
        nums[f"m_{v}_hot_share_max"] = wait_share(g, v, nmax, hot)
        nums[f"m_{v}_hot_share_one"] = wait_share(g, v, nmin, hot)
        nums[f"m_{v}_idle_share"] = wait_share(g, v, at, IDLE)
        lt = little(g, v, at, hot)
        nums[f"m_{v}_queue"], nums[f"m_{v}_wait_us"] = lt["queue"], lt["wait_us"]
        nums[f"m_{v}_last_page_share"] = (pin_last_page_share(g, v, nd) if g.engine == "postgres"
                                          else hot_page_last_share(g, v, nd))
        nums[f"m_{v}_sequence_share"] = pin_sequence_share(g, v, nd)
        nums[f"m_{v}_pages_pinned"] = pin_pages_touched(g, v, nd)
        for col in ("avg_leaf_density", "leaf_fragmentation", "rows_per_leaf", "leaf_pages", "rows"):
            nums[f"m_{v}_{col}"] = _dens(g, v, col)
    # the last leaf's own queue: the sequential key's buffer-lock share less the non-sequential control's, which
    # shares the heap's end and the identity's sequence page but not the leaf (Little's law on the difference)
    leaf = nums["m_sequential_hot_share"] - nums["m_random_key_hot_share"]
    nums["m_leaf_share"] = leaf
    nums["m_leaf_queue"] = leaf * nd if nd is not None else nan
    nums["m_leaf_wait_us"] = (nums["m_leaf_queue"] / nums["m_sequential_tp"] * 1e6
                              if _ok(nums["m_leaf_queue"]) and nums["m_sequential_tp"] else nan)
    nums["m_insert_us_one"] = 1e6 / nums["m_sequential_tp_one"] if nums["m_sequential_tp_one"] else nan
    nums["m_rows_per_call"] = rows_per_call(g)
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
    nums["m_sqlserver_parts_id_only"] = _read(g, "hash_partitioned", "point lookup by ID", "partitions_touched")
    nums["m_sqlserver_parts_hash"] = _read(g, "hash_partitioned", "point lookup by ID + hash predicate",
                                           "partitions_touched")
    return nums


# -- quantities quoted with their spread: one number, one rounding, in the prose and in the verdict rows ------------
# name -> (how it is computed from one repetition's numbers, its format, its unit)
QUOTED: dict[str, tuple[Any, str, str]] = {
    "seq_hot_one": (lambda x: x["m_sequential_hot_share_one"], ".0%", ""),
    "seq_hot": (lambda x: x["m_sequential_hot_share"], ".1%", ""),
    "seq_hot_max": (lambda x: x["m_sequential_hot_share_max"], ".0%", ""),
    "seq_hot_rise": (lambda x: x["m_sequential_hot_share"] - x["m_sequential_hot_share_one"], ".0%", ""),
    "seq_idle": (lambda x: x["m_sequential_idle_share"], ".0%", ""),
    "hash_hot": (lambda x: x["m_hash_partitioned_hot_share"], ".1%", ""),
    "random_hot": (lambda x: x["m_random_key_hot_share"], ".1%", ""),
    # the sequential key's share over the non-sequential control's at the same point: what the index's last leaf
    # adds, since both share the heap's end and the identity's sequence page
    "seq_over_random": (lambda x: x["m_sequential_hot_share"] - x["m_random_key_hot_share"], ".1%", ""),
    "hash_hot_ratio": (lambda x: x["m_hash_partitioned_hot_share"] / x["m_sequential_hot_share"]
                       if x["m_sequential_hot_share"] else float("nan"), ".2f", "×"),
    "seq_last_page": (lambda x: x["m_sequential_last_page_share"], ".0%", ""),
    "random_last_page": (lambda x: x["m_random_key_last_page_share"], ".0%", ""),
    "hash_sequence": (lambda x: x["m_hash_partitioned_sequence_share"], ".0%", ""),
    "seq_sequence": (lambda x: x["m_sequential_sequence_share"], ".0%", ""),
    "hash_vs_seq": (lambda x: x["m_hash_partitioned_vs_seq"], ".2f", "×"),
    "hash_vs_seq_max": (lambda x: x["m_hash_partitioned_vs_seq_max"], ".2f", "×"),
    "random_vs_seq": (lambda x: x["m_random_key_vs_seq"], ".2f", "×"),
    "opt_vs_seq": (lambda x: x["m_sequential_optimized_vs_seq"], ".2f", "×"),
    "seq_tp_one": (lambda x: x["m_sequential_tp_one"], ",.0f", " rows/s"),
    "seq_tp": (lambda x: x["m_sequential_tp"], ",.0f", " rows/s"),
    "seq_tp_max": (lambda x: x["m_sequential_tp_max"], ",.0f", " rows/s"),
    "point_reads": (lambda x: x["m_hash_point_reads"], ",.0f", ""),
    "noprune_reads": (lambda x: x["m_hash_point_noprune_reads"], ",.0f", ""),
    "noprune_ratio": (lambda x: x["m_hash_point_noprune_reads"] / x["m_hash_point_reads"], ".1f", "×"),
    "sqlserver_parts_ratio": (lambda x: x["m_sqlserver_parts_id_only"] / x["m_sqlserver_parts_hash"], ".1f", "×"),
    # rows per leaf page, repetition by repetition (the median of the ratios, not the ratio of the medians)
    "seq_rows_per_leaf": (lambda x: x["m_sequential_rows_per_leaf"], ".0f", ""),
    "random_rows_per_leaf": (lambda x: x["m_random_key_rows_per_leaf"], ".0f", ""),
    "density_ratio": (lambda x: x["m_random_key_avg_leaf_density"] / x["m_sequential_avg_leaf_density"], ".2f",
                      "×"),
}


_per_repetition_seen: dict[tuple, tuple[LpiRecording, list[dict[str, Any]]]] = {}


def per_repetition(g: LpiRecording) -> list[dict[str, Any]]:
    """:func:`measured_numbers` of each repetition on its own (ratios formed inside one repetition).

    A page asks for them three times (its numbers, its verdicts, its quoted spreads): they are computed once per
    view and set of tables (a table replaced is another set; the view is held, so its id is not reused)."""
    key = (id(g), tuple((name, id(frame)) for name, frame in g.tables.items()))
    if key not in _per_repetition_seen:
        if len(_per_repetition_seen) > 8:
            _per_repetition_seen.clear()
        _per_repetition_seen[key] = (g, [measured_numbers(v) for v in g.repetition_views().values()])
    return [dict(x) for x in _per_repetition_seen[key][1]]


def quoted(g: LpiRecording, per: list[dict[str, Any]] | None = None) -> dict[str, Spread]:
    """Every :data:`QUOTED` quantity's spread over repetitions."""
    per = per_repetition(g) if per is None else per
    out = {}
    for name, (fn, _fmt, _unit) in QUOTED.items():
        values = []
        for x in per:
            try:
                values.append(float(fn(x)))
            except (TypeError, ValueError, ZeroDivisionError):
                values.append(float("nan"))
        out[name] = spread(values)
    return out


def q_text(spreads: dict[str, Spread], name: str, full: bool = True) -> str:
    """A quoted quantity as the page prints it: its median alone, or with its interval (``full``)."""
    s, (_fn, fmt, unit) = spreads[name], QUOTED[name]
    if s.n == 0:
        return "not measured"
    return s.text(fmt, unit) if full else f"{s.median:{fmt}}{unit}"


class Prose(str):
    """A glued sentence: plain text that also offers itself as Markdown, so the page pastes it with ``{glue:md}``
    as ordinary prose (``{glue:text}`` would set a whole sentence in bold)."""

    def _repr_markdown_(self) -> str:
        return str(self)


def _ok(x) -> bool:
    return isinstance(x, (int, float)) and not np.isnan(x)


PROCARRAY = "LWLock:ProcArray"


def _procarray_shares(w, sessions: int):
    """The sequential key's ``LWLock:ProcArray`` share of samples per repetition at ``sessions``, or None."""
    part = w[(w["variant"] == "sequential") & (w["sessions"] == sessions)]
    if part.empty:
        return None
    tot = part.groupby("repetition")["samples"].sum()
    pa = part[part["wait"] == PROCARRAY].groupby("repetition")["samples"].sum().reindex(tot.index, fill_value=0)
    return (pa / tot).sort_index()


def sampler_text(g: LpiRecording, q: dict[str, Spread]) -> str:
    """One sentence under the claims table: the wait sampler's own footprint at one session (``LWLock:ProcArray``,
    partly commits waiting for the sampler), set beside the buffer-lock share the verdicts read, so that share is
    read with the caveat.  Empty when the recording shows no such footprint (under 5% of samples)."""
    w = g.by_repetition("waits") if hasattr(g, "by_repetition") else None
    runs = g.runs
    if g.engine != "postgres" or w is None or runs is None or "repetition" not in w or not q["seq_hot"].n:
        return ""
    one = int(runs["sessions"].min())
    shares = _procarray_shares(w, one)
    if shares is None:
        return ""
    share = float(shares.median())
    if share < 0.05:
        return ""
    nd = deciding(g)
    at_nd = ""
    if nd is not None and nd != one:  # the same footprint where the verdict is decided, in the page's interval
        at_two = _procarray_shares(w, nd)
        if at_two is not None:
            s2 = spread(at_two.tolist())
            hot = q["seq_hot"].median
            size = (f"{s2.median / hot:.0%} as large as the share that decides the verdict" if hot > 0 else
                    "beside a deciding share of zero")
            at_nd = (f"; at {sessions_label(g, nd)} it is still {s2.text('.1%')} of the sequential key's samples "
                     f"(median over repetitions), {size}")
    return (f"A caveat for the shares of samples above: with {sessions_label(g, one)} the wait sampler's own "
            f"footprint is of the same size, `LWLock:ProcArray` in {share:.0%} of the sequential key's samples, "
            "partly commits that wait for the sampler while it reads the wait events (details page, “What a small "
            f"machine can and cannot show”){at_nd}. So the {q_text(q, 'seq_hot')} on `{hot_wait(g)}` at "
            f"{sessions_label(g, nd) if nd is not None else 'the deciding point'} is read as a sampled share with "
            "an observer effect of that order, not as an exact cost.")


def procarray_text(g: LpiRecording) -> str:
    """What the sequential key's one-session ``LWLock:ProcArray`` share is, told from the recording: the share per
    repetition next to the rate per repetition.  pg_wait_sampling's collector reads every backend's wait event
    while it holds ProcArrayLock shared (probe_waits in its collector.c), and a commit needs that lock
    exclusive, so part of what a sample reports there is the sampler's own shadow.  A real 20% wait would cost
    the repetition that shows it about a fifth of its rate; the sentence says whether the rates followed."""
    w = g.by_repetition("waits") if hasattr(g, "by_repetition") else None
    runs = g.runs
    if g.engine != "postgres" or w is None or runs is None or "repetition" not in w:
        return ""
    one = int(runs["sessions"].min())
    share = _procarray_shares(w, one)
    if share is None:
        return ""
    rate = runs[(runs["variant"] == "sequential") & (runs["sessions"] == one)].set_index("repetition")["throughput"]
    rate = rate.reindex(share.index)
    if len(share) < 2 or share.median() < 0.05 or rate.isna().any():
        return ""
    lo, hi = share.idxmin(), share.idxmax()
    gap_share = share[hi] - share[lo]
    gap_rate = rate[lo] / rate[hi] - 1
    follows = gap_rate > 0.5 * gap_share
    return (
        f"With {sessions_label(g, one)}, the sequential key's samples show `LWLock:ProcArray` in "
        f"{share.median():.0%} of samples (median over {len(share)} repetitions; from {share.min():.0%} to "
        f"{share.max():.0%}), more than the page's `LWLock:BufferContent` at two sessions, with no other inserting "
        "session there to hold it. A commit takes ProcArrayLock exclusively to clear its transaction id, and the "
        "wait sampler holds the same lock shared while it reads every backend's wait event (pg_wait_sampling's "
        "collector does; a polling query takes it for its snapshot), so a backend that reaches its commit during "
        "a sample waits for the sampler, and that very sample records the wait. With one transaction every "
        f"{1e6 / rate.median():.1f} µs, commits are frequent enough for this to show. The repetitions cannot "
        f"settle whether the wait is the sampler's shadow or a real loss: the one with {share[lo]:.0%} ProcArray "
        f"samples inserted {rate[lo]:,.0f} rows/s and the one with {share[hi]:.0%} {rate[hi]:,.0f}, "
        + ("a gap in rate about as large as the gap in waits, so part of the wait may be real; "
           if follows else f"while the rates of all {len(rate)} repetitions spread over "
           f"{rate.max() / rate.min() - 1:.0%}, wider than that {gap_share * 100:.0f}-point gap in ProcArray samples, "
           "so the rates cannot show a real wait of that size. ")
        + "A run of the same point with wait sampling off would tell: a real wait of this size would show as a "
          "higher rate without the sampler.")


def prose_texts(g: LpiRecording, n: dict[str, Any], q: dict[str, Spread]) -> dict[str, str]:
    """Sentences whose direction depends on the recording, so the prose stays true of any recording.  Every
    share and ratio in them is a :data:`QUOTED` median, the number the verdict rows print."""
    hot = hot_wait(g)
    per_row = "round trip included" if n["m_rows_per_call"] == 1 else "inside the server-side loop"
    out = {"m_call_text": call_text(g) + ".", "m_procarray_text": Prose(procarray_text(g)),
           "m_sampler_text": sampler_text(g, q)}
    nd = n["m_nd"]
    if not _ok(nd):
        out["m_queue_text"] = (f"Every point of this recording ran more sessions than its {g.cpus} CPUs, so none "
                               "is in the articles' regime and the queue is not estimated here.")
    elif q["seq_hot"].n and q["seq_hot"].median > 0:
        out["m_queue_text"] = (
            f"In the measured run with {sessions_label(g, nd)} on the sequential key, {q_text(q, 'seq_hot', False)} "
            + ("of samples found a session waiting for" if g.waits is not None
               else "of the sessions' time went to waiting for")
            + f" {hot}. Not all of that is the last leaf: the non-sequential key, which shares the heap's end and "
            f"the identity's sequence page but not the leaf, showed {q_text(q, 'random_hot', False)} at the same "
            + (f"point. PostgreSQL does not say which buffer a waiter waits for, so the leaf's share is an estimate: "
               f"an estimated {q_text(q, 'seq_over_random', False)} of samples ({q_text(q, 'seq_hot', False)} on "
               f"{hot} less the control's {q_text(q, 'random_hot', False)}, the difference taken repetition by "
               f"repetition) were the leaf's. That is {n['m_leaf_queue']:.2f} sessions waiting on average; at "
               f"{n['m_sequential_tp']:,.0f} rows/s it means about {n['m_leaf_wait_us']:.1f} µs of waiting at the "
               "leaf per row."
               if q["random_hot"].n and _ok(n.get("m_leaf_wait_us")) else
               f"point. All of it, {n['m_sequential_queue']:.2f} sessions on average, would be "
               f"{n['m_sequential_wait_us']:.1f} µs of waiting per row at {n['m_sequential_tp']:,.0f} rows/s.")
            + f" For comparison, one session alone took {n['m_insert_us_one']:.1f} µs per row, {per_row}.")
    elif q["seq_hot"].n:
        out["m_queue_text"] = (
            f"In the measured run with {sessions_label(g, nd)} on the sequential key, no sample found a session "
            f"waiting for {hot}, so by this law the queue at the page was empty as far as "
            f"{n['m_wait_hz']:.0f} Hz sampling can see. One session alone took {n['m_insert_us_one']:.1f} µs per "
            f"row, {per_row}.")
    else:
        out["m_queue_text"] = "This recording has no wait samples, so the queue at the page cannot be estimated."
    idle, cpus = q["seq_idle"], n["m_cpus"]
    if idle.n and idle.median > 0.5 and _ok(nd):
        out["m_bound_text"] = (
            f"At {sessions_label(g, nd)}, {q_text(q, 'seq_idle', False)} of the sequential key's wait samples found "
            "a backend idle, waiting for its client to send the next statement. The client round trip, not the "
            "page and not the CPU of the server, bounds throughput in this recording; the queue at the latch "
            "hardly forms.")
    elif _ok(cpus) and n["m_nmax"] > cpus:
        out["m_bound_text"] = (
            f"With {sessions_label(g, n['m_nmax'])}, at most {cpus:.0f} backends run at any instant and the rest "
            "wait for a CPU. A backend that is preempted while it holds the rightmost leaf's lock makes every other "
            "inserter wait for it, which is how a queue at the page forms on few cores; that is why points with "
            "more sessions than CPUs are shown but decide no verdict.")
    else:
        out["m_bound_text"] = (f"No point of this recording ran more sessions than its {cpus:.0f} CPUs, so every "
                               "backend could be on a CPU at once." if _ok(cpus) else "")
    hx = q["hash_vs_seq"]
    at = sessions_label(g, nd) if _ok(nd) else "the deciding point"
    if hx.n and hx.median < 1:
        out["m_spread_text"] = (
            "The designs that spread the inserts pay for it in CPU (partition routing, more B-trees, splits in the "
            "middle), and here a short queue at one page did not win that back.")
        out["m_decide_text"] = (
            f"in this recording sessions waited on {leaf_wait(g, q)[1]} at "
            f"{at}, and hash partitioning ran at {q_text(q, 'hash_vs_seq', False)} the sequential key's rate there.")
    elif hx.n:
        out["m_spread_text"] = (
            "Here spreading the inserts paid for its extra CPU (partition routing, more B-trees): the queue at the "
            "one page cost more than the routing.")
        out["m_decide_text"] = (
            f"in this recording sessions waited on {leaf_wait(g, q)[1]} at "
            f"{at}, and hash partitioning ran at {q_text(q, 'hash_vs_seq', False)} the sequential key's rate there, "
            "so the queue was worth spreading.")
    else:
        out["m_spread_text"] = ("This recording does not hold both the sequential and the hash-partitioned design at "
                                f"{at}, so it cannot say whether spreading the inserts paid.")
        out["m_decide_text"] = (f"this recording cannot say which side of that line it is on: it lacks the "
                                f"sequential or the hash-partitioned design at {at}.")
    if g.engine == "postgres":
        out["m_spread_text"] += " With the identity key, every design also still shares one hot page, the sequence's."
    lp = q["seq_last_page"]
    if lp.n and g.engine == "postgres":
        out["m_pins_text"] = (
            f"At {sessions_label(g, nd)} on the sequential key, {q_text(q, 'seq_last_page', False)} of the pins on "
            f"index pages were within {RIGHT_EDGE_HOPS} leaves of the right edge (the rightmost leaf splits faster "
            f"than the sampler can name it), out of {n['m_sequential_leaf_pages']:,.0f} leaves"
            + (f", {pins_per_repetition(pin_index_counts(g, 'sequential', nd))}" if pin_index_counts(g, 'sequential', nd)
               else "") + ".")
    elif lp.n:
        out["m_pins_text"] = (f"At {sessions_label(g, nd)} on the sequential key, {q_text(q, 'seq_last_page', False)} "
                              "of the page-latch waiting-task samples were on a last page of the clustered index.")
    elif g.pins is not None or g.hot_pages is not None:
        out["m_pins_text"] = (
            f"This recording has no page-level samples at {sessions_label(g, nd) if _ok(nd) else 'the deciding point'}"
            ": either the sampler caught no inserting session on an index page there (each insert holds its page "
            "for microseconds), or the recording sampled pages only at its largest, oversubscribed, session count.")
    else:
        out["m_pins_text"] = "This recording has no page-level samples."
    return {k: Prose(v) for k, v in out.items()}


def cores_text(nums: dict[str, Any]) -> str:
    """'32 to 128 cores': the span of the sources' machines, from the published recordings."""
    lo, hi = nums.get("pub_cores_min", np.nan), nums.get("pub_cores_max", np.nan)
    return f"{lo:.0f} to {hi:.0f} cores" if _ok(lo) and _ok(hi) else "many cores"


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
                if "cores" in row and pd.notna(row["cores"]):
                    nums[f"{tag}_{key}_cores"] = float(row["cores"])
        if g.before_after is not None:
            for _, row in g.before_after.iterrows():
                k = row["measurement"].lower().replace(" ", "_").replace("/", "_per_")
                nums[f"{tag}_{k}_before"], nums[f"{tag}_{k}_after"] = float(row["before"]), float(row["after"])
    cores = [v for k, v in nums.items() if k.endswith("_cores")] + [nums[k] for k in ("sqlcat_fact0", "sqlcat_fact1")
                                                                     if k in nums]
    nums["pub_cores_min"] = min(cores) if cores else np.nan
    nums["pub_cores_max"] = max(cores) if cores else np.nan
    nums["sqlcat_gain_pct"] = (nums.get("sqlcat_customer_hash_partitioned_rel", np.nan) - 1) * 100
    nums["sqlcat_lab_gain_pct"] = (nums.get("sqlcat_lab32_hash_partitioned_rel", np.nan) - 1) * 100
    nums["wp_pos_x"] = nums.get("wp_pos_hash_partitioned_rel", np.nan)
    nums["wp_example_x"] = nums.get("wp_example_hash_partitioned_rel", np.nan)
    return nums


@per_view
def key_numbers(shown) -> dict[str, Any]:
    """Every number the prose glues.  Shares and ratios the verdict rows also print come from :func:`quoted`
    (medians over repetitions, same format), so the page never shows one quantity two ways."""
    g = shown.measured
    nums = {**published_numbers(shown.published), **measured_numbers(g)}
    q = quoted(g)
    nums.update(prose_texts(g, nums, q))
    for name in QUOTED:
        nums[f"q_{name}"] = q_text(q, name, full=False)
        nums[f"q_{name}_text"] = q_text(q, name, full=True)
    nums["m_nd_text"] = sessions_label(g, nums["m_nd"]) if _ok(nums["m_nd"]) else "no point within the CPUs"
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
        table = top_table(prof, SHORT.get(variant, variant), top).rename_axis(["setting", "function"])
        table.attrs["caption"] = (f"The {top} functions with the most CPU samples of their own, "
                                  f"{SHORT.get(variant, variant)} design, at the most sessions (perf, inserting "
                                  "backends only)")
        out.tables.append(table)
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


# -- who the buffer-lock sleepers were waiting behind (off-CPU stacks) -------------------------------
LOCK_SITES = (("the B-tree's pages (the insert's descent to its leaf)", ("_bt_",)),
              ("the identity's sequence page", ("read_seq_tuple", "nextval")),
              ("heap pages", ("heap_", "RelationGetBufferForTuple")),
              ("the lock manager's partitions", ("LockAcquire", "LockRelease")))


def lwlock_sleeps(g: LpiRecording, variant: str = "sequential") -> dict[str, float]:
    """Of the backends' time asleep in an LWLock (``LWLockAcquire`` on the off-CPU stacks), the share by what its
    caller was locking, plus ``total_share``: the LWLock sleeps' share of all the time off the CPU.  Empty without
    off-CPU stacks.  The caller names the lock: a buffer content lock taken by the B-tree code or the sequence
    code, where the wait event says only ``LWLock:BufferContent``."""
    from contention_book.harness.spec import OFFCPU_STACKS
    from contention_book.perftools.offcpu_view import blocked_under

    name = OFFCPU_STACKS.format(variant=variant)
    r = getattr(g, "recording", None)
    if r is None or not r.has(name):
        return {}
    callers, total = blocked_under(r.path / name, "LWLockAcquire")
    asleep = sum(callers.values())
    if not asleep or not total:
        return {}
    out = {label: 0.0 for label, _ in LOCK_SITES}
    out["elsewhere"] = 0.0
    for caller, us in callers.items():
        fn = caller.rsplit("!", 1)[-1]
        label = next((lab for lab, keys in LOCK_SITES if any(fn.startswith(k) for k in keys)), "elsewhere")
        out[label] += us / asleep
    out["total_share"] = asleep / total
    return out


def capture_label(g: LpiRecording) -> str:
    """The session count the stacks were captured at (the run with the most sessions), as the pages say it:
    '8 sessions (oversubscribed)'."""
    runs = getattr(g, "runs", None)
    if runs is None or "sessions" not in runs or runs["sessions"].dropna().empty:
        return "the run with the most sessions"
    return sessions_label(g, int(runs["sessions"].max()), short=True)


def lwlock_sleeps_text(g: LpiRecording, variant: str = "sequential") -> str:
    """The split as a sentence for the details page, or what the recording lacks."""
    split = lwlock_sleeps(g, variant)
    if not split:
        return "This recording has no off-CPU stacks to split the LWLock sleeps by what was being locked."
    parts = [f"{share:.0%} on {label}" for label, share in split.items()
             if label not in ("total_share", "elsewhere") and share >= 0.005]
    rest = split.get("elsewhere", 0.0)
    return (f"Sleeps in `LWLockAcquire` were {split['total_share']:.0%} of the {SHORT.get(variant, variant)} run's "
            f"time off the CPU at {capture_label(g)}. By the function that took the lock: {', '.join(parts)}"
            + (f", and {rest:.0%} elsewhere" if rest >= 0.005 else "") + ".")
