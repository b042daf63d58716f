"""From a small machine to the article's big one: predictions that can be wrong, and USL fits.

Why this module: the articles explain their curves after the fact, and the
Universal Scalability Law fits its terms to points already measured.  A
model here does the opposite: it takes *costs measured on the machine that
renders the chapter* (a line transfer, a wake-up, a per-version visit, a
single-thread service time), puts them into a stated equation together with
the article's own description of its workload and hardware, and predicts a
number the article published.  The published number is never an input of the
prediction that is checked against it.

Intervals are propagated by Monte Carlo: each input is drawn from a
triangular distribution over its measured interval (low, median, high), the
equation is evaluated per draw, and the 2.5-97.5 percentiles are the
prediction's interval.  Seeded, so a page rebuilds the same numbers.

The verdict of a prediction (:data:`PREDICTION_VERDICTS`):

- *predicted*: the published value lies inside the predicted interval;
- *predicted as a bound*: the model can only bound the quantity (the article
  does not give a needed quantity, or the model is a ceiling), and the
  published value is on the bound's side;
- *missed*: outside, with by how much;
- *no model*: the mechanism has no equation here, with why.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .spread import Spread, spread

PREDICTION_VERDICTS = ("predicted", "predicted as a bound", "missed", "no model")
KINDS = ("value", "at least", "at most")  # what the model says of the quantity
DRAWS = 4000
SEED = 20261126


@dataclass(frozen=True)
class Input:
    """One measured (or published-workload) quantity a model uses, with where it came from."""

    name: str          # "wake-up on another CPU"
    symbol: str        # "t_wake"
    value: Spread      # median with its interval
    unit: str          # "ns"
    source: str        # "measured: logcache-spinlock/measured-native-reference, results/context_switch.csv"

    @classmethod
    def exact(cls, name: str, symbol: str, value: float, unit: str, source: str) -> "Input":
        """A quantity with no spread: a count from the article's workload (rows, updates, threads)."""
        return cls(name, symbol, Spread(float(value), float(value), float(value), 1, "exact"), unit, source)

    @classmethod
    def measured(cls, name: str, symbol: str, values: Sequence[float], unit: str, source: str) -> "Input":
        return cls(name, symbol, spread(values), unit, source)

    @classmethod
    def interval(cls, name: str, symbol: str, median: float, low: float, high: float, unit: str,
                 source: str) -> "Input":
        """A quantity a recording gives as a median with percentiles (p10-p90 of a latency, say)."""
        low, high = min(low, median), max(high, median)
        return cls(name, symbol, Spread(float(median), float(low), float(high), 2, "given interval"), unit, source)


@dataclass(frozen=True)
class Prediction:
    chapter: str
    model: str                 # "fair hand-off serialises one wake-up per latch wait"
    equation: str              # "T_fair ≥ W · t_wake"
    quantity: str              # "the fair run's elapsed time"
    unit: str
    kind: str                  # one of KINDS
    published: float
    published_text: str        # "5.5 s (White 2022)"
    predicted: Spread
    inputs: tuple[Input, ...]
    lacks: str = ""            # what the model leaves out, said on the page
    published_kind: str = "value"  # "value" or "at least" / "at most" when the article itself gives a bound
    verdict: str = field(default="")
    f: Callable | None = field(default=None, compare=False, repr=False)  # the equation, for the figure's curve
    vary: str = ""             # the input symbol the figure sweeps (the article's point sits at its value)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"prediction {self.model!r}: kind {self.kind!r}, expected one of {KINDS}")
        object.__setattr__(self, "verdict", judge_prediction(self))

    def row(self) -> dict:
        p = self.predicted
        shown = {"value": "", "at least": "≥ ", "at most": "≤ "}[self.kind]
        return {"chapter": self.chapter, "model": self.model, "equation": self.equation, "quantity": self.quantity,
                "inputs": "; ".join(f"{i.symbol} = {_fmt(i.value.median)} {i.unit}" for i in self.inputs),
                "predicted": f"{shown}{_fmt(p.median)} {self.unit} (95% {_fmt(p.low)}–{_fmt(p.high)})",
                "published": self.published_text, "verdict": self.verdict, "lacks": self.lacks}


def no_model(chapter: str, quantity: str, published_text: str, why: str) -> dict:
    """A Findings row for a published number this book has no equation for, with why."""
    return {"chapter": chapter, "model": "—", "equation": "—", "quantity": quantity, "inputs": "—",
            "predicted": "—", "published": published_text, "verdict": f"no model: {why}", "lacks": why}


def _fmt(v: float) -> str:
    if not np.isfinite(v):
        return "∞" if v > 0 else "—"
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


def judge_prediction(p: Prediction) -> str:
    """The verdict rule, stated once: see the module docstring."""
    s, pub = p.predicted, p.published
    if s.n == 0 or not np.isfinite(s.median):
        return "no model: an input was not measured in this recording"
    lo, hi = s.low, s.high

    def miss(ref: float) -> str:
        side = "above" if pub > hi else "below"
        shown = f"the published {_fmt(pub)} lies {side} the predicted {_fmt(lo)}–{_fmt(hi)}"
        if ref > 0 and np.isfinite(ref):
            return f"missed: {shown} ({pub / ref:.3g}× the prediction)"
        return f"missed: {shown}"

    if p.kind == "at least":  # the model says the quantity is at least L
        if p.published_kind == "at most" and pub < lo:
            return miss(lo)
        return "predicted as a bound" if pub >= lo or p.published_kind == "at least" else miss(lo)
    if p.kind == "at most":
        if p.published_kind == "at least" and pub > hi:
            return miss(hi)
        return "predicted as a bound" if pub <= hi or p.published_kind == "at most" else miss(hi)
    if p.published_kind == "at least":  # "over 4 minutes": the interval must reach past it
        return "predicted" if hi >= pub else miss(hi)
    if p.published_kind == "at most":
        return "predicted" if lo <= pub else miss(lo)
    if lo <= pub <= hi:
        return "predicted"
    return miss(s.median)


def propagate(f: Callable[[Mapping[str, np.ndarray]], np.ndarray], inputs: Sequence[Input],
              draws: int = DRAWS) -> Spread:
    """The prediction's median (``f`` at the inputs' medians) and 95% interval (Monte Carlo over the inputs'
    intervals, each drawn from a triangular distribution low-median-high)."""
    rng = np.random.default_rng(SEED)
    sample = {}
    for i in inputs:
        v = i.value
        if v.n == 0 or not np.isfinite(v.median):
            return Spread(np.nan, np.nan, np.nan, 0, "none")
        if v.high > v.low:
            sample[i.symbol] = rng.triangular(v.low, min(max(v.median, v.low), v.high), v.high, size=draws)
        else:
            sample[i.symbol] = np.full(draws, v.median)
    out = np.asarray(f(sample), dtype=float)
    mid = float(np.asarray(f({i.symbol: np.asarray([i.value.median]) for i in inputs}), dtype=float).ravel()[0])
    low, high = np.nanpercentile(out, [2.5, 97.5])
    return Spread(mid, float(min(low, mid)), float(max(high, mid)), draws, "propagated 95%")


def predict(chapter: str, model: str, equation: str, quantity: str, unit: str, kind: str, published: float,
            published_text: str, f: Callable, inputs: Sequence[Input], lacks: str = "", published_kind: str = "value",
            vary: str = "") -> Prediction:
    """A :class:`Prediction` whose interval is propagated from ``inputs`` through ``f``; ``vary`` names the input
    the page's figure sweeps."""
    return Prediction(chapter, model, equation, quantity, unit, kind, published, published_text,
                      propagate(f, inputs), tuple(inputs), lacks, published_kind, f=f, vary=vary)


def sweep(p: Prediction, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The prediction's median and 95% band as ``p.vary`` runs over ``xs`` (the other inputs keep their spread)."""
    mid, low, high = [], [], []
    for x in xs:
        inputs = [Input.exact(i.name, i.symbol, x, i.unit, i.source) if i.symbol == p.vary else i for i in p.inputs]
        s = propagate(p.f, inputs, draws=800)
        mid.append(s.median), low.append(s.low), high.append(s.high)
    return np.asarray(mid), np.asarray(low), np.asarray(high)


def predictions_table(rows: Sequence[Prediction | dict]) -> pd.DataFrame:
    return pd.DataFrame([r.row() if isinstance(r, Prediction) else r for r in rows],
                        columns=["chapter", "model", "equation", "quantity", "inputs", "predicted", "published",
                                 "verdict", "lacks"])


def inputs_table(p: Prediction) -> pd.DataFrame:
    """The measured inputs of one prediction, as the page shows them."""
    return pd.DataFrame([{"input": i.name, "symbol": i.symbol, "median": _fmt(i.value.median),
                          "interval": (f"{_fmt(i.value.low)}–{_fmt(i.value.high)}" if i.value.n > 1 else "exact"),
                          "unit": i.unit, "source": i.source} for i in p.inputs])


# -- the Universal Scalability Law --------------------------------------------------------------------------

@dataclass(frozen=True)
class UslFit:
    """X(N) = λN / (1 + σ(N−1) + κN(N−1)), with bootstrap intervals for σ and κ."""

    sigma: Spread
    kappa: Spread
    lam: float          # X(1), the single-thread rate the curve is normalised by
    n_star: Spread      # peak concurrency √((1−σ)/κ); ∞ where κ is 0
    points: int
    source: str

    def curve(self, n: np.ndarray, sigma: float | None = None, kappa: float | None = None) -> np.ndarray:
        s = self.sigma.median if sigma is None else sigma
        k = self.kappa.median if kappa is None else kappa
        n = np.asarray(n, dtype=float)
        return self.lam * n / (1 + s * (n - 1) + k * n * (n - 1))

    def band(self, n: np.ndarray, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """2.5-97.5 percentile of the curve over the bootstrap (σ, κ) draws."""
        curves = np.stack([self.curve(n, s, k) for s, k in draws])
        return np.percentile(curves, 2.5, axis=0), np.percentile(curves, 97.5, axis=0)


def _log_error(n: np.ndarray, logx: np.ndarray, lam: float, sig: np.ndarray, kap: np.ndarray) -> np.ndarray:
    pred = np.log(lam * n) - np.log1p(sig[:, None, None] * (n - 1) + kap[None, :, None] * n * (n - 1))
    return ((pred - logx) ** 2).sum(axis=2)


def _fit_once(n: np.ndarray, x: np.ndarray) -> tuple[float, float, float]:
    """σ in [0, 1] and κ ≥ 0 minimising the squared error of log throughput, λ = the median rate at N = 1.

    A coarse grid (κ log-spaced) then a finer one around its best cell: robust where a curve falls by
    orders of magnitude, which a linearised fit weights badly, and fast enough to bootstrap."""
    lam = float(np.median(x[n == 1]))
    logx = np.log(x)
    sig = np.linspace(0.0, 1.0, 26)
    kap = np.concatenate([[0.0], np.logspace(-7, 2, 37)])
    err = _log_error(n, logx, lam, sig, kap)
    i, j = np.unravel_index(int(np.argmin(err)), err.shape)
    sig = np.linspace(sig[max(i - 1, 0)], sig[min(i + 1, len(sig) - 1)], 21)
    if j == 0:
        kap = np.concatenate([[0.0], np.logspace(-8, -7 + 0.25, 10)])
    else:
        kap = np.logspace(np.log10(kap[max(j - 1, 1)]), np.log10(kap[min(j + 1, len(kap) - 1)]), 21)
    err = _log_error(n, logx, lam, sig, kap)
    i, j = np.unravel_index(int(np.argmin(err)), err.shape)
    return float(sig[i]), float(kap[j]), lam


MIN_POINTS = 4


def fit_usl(frame: pd.DataFrame, n: str, x: str, source: str, resamples: int = 300
            ) -> tuple[UslFit, np.ndarray] | None:
    """σ and κ fitted to a throughput curve with at least :data:`MIN_POINTS` concurrency levels including 1.

    Fitted in log throughput over a grid of σ in [0, 1] and κ ≥ 0, with X(1)
    fixed at the measured single-session rate.  The bootstrap resamples the repetitions within each
    concurrency level (or, with one value per level, the residuals).  Returns
    the fit and its (σ, κ) draws, or None when the curve is too short."""
    part = frame[[n, x]].apply(pd.to_numeric, errors="coerce").dropna()
    part = part[part[x] > 0]
    levels = np.sort(part[n].unique())
    if len(levels) < MIN_POINTS or 1 not in levels:
        return None
    nn, xx = part[n].to_numpy(float), part[x].to_numpy(float)
    s0, k0, lam = _fit_once(nn, xx)
    rng = np.random.default_rng(SEED)
    groups = [xx[nn == lv] for lv in levels]
    draws = []
    if all(len(g) > 1 for g in groups):
        for _ in range(resamples):
            xs = np.concatenate([rng.choice(g, size=len(g)) for g in groups])
            ns = np.concatenate([np.full(len(g), lv) for g, lv in zip(groups, levels)])
            draws.append(_fit_once(ns, xs)[:2])
    else:
        fitted = lam * nn / (1 + s0 * (nn - 1) + k0 * nn * (nn - 1))
        resid = xx / fitted
        for _ in range(resamples):
            draws.append(_fit_once(nn, fitted * rng.choice(resid, size=len(resid)))[:2])
    d = np.asarray(draws)

    def interval(values: np.ndarray, mid: float) -> Spread:
        lo, hi = np.percentile(values, [2.5, 97.5])
        return Spread(mid, float(min(lo, mid)), float(max(hi, mid)), len(values), "bootstrap 95%")

    with np.errstate(divide="ignore", invalid="ignore"):
        # the peak cannot lie below one session: a curve that only falls peaks at N = 1
        nstar = np.where(d[:, 1] > 0, np.maximum(1.0, np.sqrt(np.clip(1 - d[:, 0], 0, None) / d[:, 1])), np.inf)
        nstar0 = float(max(1.0, np.sqrt(max(1 - s0, 0) / k0))) if k0 > 0 else float("inf")
    finite = nstar[np.isfinite(nstar)]
    if len(finite) == len(nstar):
        ns = interval(nstar, nstar0)
    else:
        lo = float(np.percentile(finite, 2.5)) if len(finite) else float("inf")
        ns = Spread(nstar0, min(lo, nstar0), float("inf"), len(nstar), "bootstrap 95%")
    fit = UslFit(interval(d[:, 0], s0), interval(d[:, 1], k0), lam, ns, len(levels), source)
    return fit, d


def usl_row(fit: UslFit, curve: str, kappa_measured: Spread | None = None) -> dict:
    """One row of a chapter's USL table: σ, κ, N* with intervals, and κ's measured counterpart if any."""
    def show(s: Spread, digits: str = ".3g") -> str:
        return f"{s.median:{digits}} ({s.low:{digits}}–{s.high:{digits}})" if np.isfinite(s.high) else \
            f"{s.median:{digits}} ({s.low:{digits}}–∞)"

    return {"curve": curve, "concurrency levels": fit.points, "σ (contention)": show(fit.sigma),
            "κ (coherency)": show(fit.kappa), "peak concurrency N*": show(fit.n_star, ".1f"),
            "κ from measured costs": show(kappa_measured) if kappa_measured is not None else "—",
            "source": fit.source}


# -- the machine's hand-off costs ---------------------------------------------------------------------------

COSTS_CHAPTER = "logcache-spinlock"        # the chapter whose native run measures line transfers and wake-ups
COSTS_RECORDING = "measured-native-reference"


def machine_costs(recording: str = "") -> dict[str, Input]:
    """Line transfer, same-CPU switch and cross-CPU wake-up, as :class:`Input` rows, from the native run of the
    cache-line chapter (``make chapter CH=logcache-spinlock SOURCE=live ENGINE=native`` measures them on the
    reader's machine; the book's own reference is the default).  Medians with their p10-p90."""
    from contention_book.harness.recording import open_chapter

    r = open_chapter(COSTS_CHAPTER, recording or COSTS_RECORDING)
    src = f"measured: {COSTS_CHAPTER}/{r.id}"
    out: dict[str, Input] = {}
    if r.has("results/core_to_core.csv"):
        c2c = r.csv("results/core_to_core.csv")
        row = c2c.sort_values("median_one_way_ns").iloc[0]
        out["t_xfer"] = Input.interval("cache-line transfer between two cores (one way)", "t_xfer",
                                       row["median_one_way_ns"], row["p10_one_way_ns"], row["p90_one_way_ns"], "ns",
                                       f"{src}, CPU {int(row['cpu_a'])}↔{int(row['cpu_b'])}")
    if r.has("results/context_switch.csv"):
        cs = r.csv("results/context_switch.csv")
        for key, placement, name in (("t_switch", "same_cpu", "context switch on one CPU"),
                                     ("t_wake", "different_cpus", "wake-up of a sleeping thread on another CPU")):
            part = cs[(cs["method"] == "pipe") & (cs["placement"] == placement)]
            if len(part):
                row = part.iloc[0]
                out[key] = Input.interval(name, key, row["median_ns_per_handoff"], row["p10_ns_per_handoff"],
                                          row["p90_ns_per_handoff"], "ns", f"{src} (pipe ping-pong)")
    out["_host"] = r.host  # type: ignore[assignment]
    return out
