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

The verdict of a prediction (:data:`PREDICTION_VERDICTS`; the word before the colon is its category):

- *predicted*: the published (or measured) value itself lies in the predicted interval; when it lies outside
  and only its own precision ("around 5.5 s" is 5.45-5.55 s) or spread reaches the interval, the verdict is a
  miss that says so ("only its spread … reaches it", with the ratio): a median outside the interval is never
  called predicted; a published lower bound ("over 4 min") is compared as a bound: predicted when the interval
  reaches it, and the verdict says that a bound cannot confirm the prediction's size (a prediction far above
  "over 4 min" agrees with it as well as one just above);
- *predicted as a bound*: the model can only bound the quantity, and the value is on the bound's side;
- *predicted as a range*: the model gives a range from two limiting cases (not a probability interval),
  and the value lies in it;
- *missed*: outside, with the computed ratio value/prediction;
- *model invalid*: the equation's output leaves its domain (a negative time, a rate above its ceiling);
- *published only*: every input is published, so nothing measured here is tested: not scored; so is a model whose
  measured inputs move its value by less than :data:`NEGLIGIBLE` of it (each measured input zeroed, or at either
  end of its interval, the others at their medians: :func:`measured_share`), since its prediction is then built
  from published numbers and a verdict on it would claim a test of this machine that did not happen; when the
  source's own outcome breaks what its own inputs allow, the verdict says the model fails there ("published
  only, the model fails on its source"): it leaves out something the article's machine did; a published bound
  breaks only a prediction on its wrong side (the model's 1,272 s does not break "over 240 s");
- *workload bound*: a bound that follows from the workload's own description: not a prediction, not scored;
- *model failed here*: the same model missed this machine's own measurement first: not scored;
- *no model*: an input is missing, with why.

Only the first four are scored (:data:`SCORED`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .spread import Spread, spread

PREDICTION_VERDICTS = ("predicted", "predicted as a bound", "predicted as a range", "missed", "model invalid",
                       "published only", "workload bound", "model failed here", "no model")
SCORED = ("predicted", "predicted as a bound", "predicted as a range", "missed")
VERDICT_MEANING = {  # one clause each, said beside the models that use the word (the Findings page has the rules)
    "predicted": "the value lies in the predicted interval",
    "predicted as a bound": "the model can only bound the quantity, and the value is on the bound's side",
    "predicted as a range": "the value lies in a range between two limiting cases (not a probability interval)",
    "missed": "the value lies outside the interval, by the ratio given",
    "model invalid": "the equation's output leaves its domain, or the run does not test the model; not scored",
    "published only": "every input is published (or the measured ones move it by under 1%), so nothing measured "
                      "here is tested; not scored",
    "workload bound": "it follows from the workload's description alone; not scored",
    "model failed here": "the model missed this machine's own measurement first; not scored",
    "no model": "an input is missing",
}
KINDS = ("value", "at least", "at most", "range", "workload bound")  # what the model says of the quantity
DRAWS = 4000
SEED = 20261126
NEGLIGIBLE = 0.01  # measured inputs that move a prediction by less than this share of it test nothing measured here


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
    published_low: float | None = None   # the published value's own precision ("around 5.5 s": 5.45), or a
    published_high: float | None = None  # measured value's p10-p90
    domain: tuple[float, float, str] | None = None  # (lowest, highest, what leaving it means) of the output
    failed_here: str = ""      # set by :func:`gate`: the model's own-machine prediction missed
    invalid: str = ""          # why the inputs lie outside the model's domain (the run does not test it)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"prediction {self.model!r}: kind {self.kind!r}, expected one of {KINDS}")
        object.__setattr__(self, "verdict", judge_prediction(self))

    @property
    def category(self) -> str:
        return self.verdict.split(":")[0].split(",")[0]  # "published only, the model fails on its source: …"

    def row(self) -> dict:
        p = self.predicted
        if self.kind == "range":
            shown = f"range {_fmt(p.low)}–{_fmt(p.high)} {self.unit} (from limiting cases, not a probability)"
        elif self.kind == "workload bound":
            shown = f"≤ {_fmt(p.high)} {self.unit} (from the workload alone)"
        else:
            mark = {"value": "", "at least": "≥ ", "at most": "≤ "}[self.kind]
            shown = f"{mark}{_fmt(p.median)} {self.unit}"
            if p.high > p.low and _fmt(p.low) != _fmt(p.high):  # a width that shows: never "(95% 1,272–1,272)"
                shown += f" (95% {_fmt(p.low)}–{_fmt(p.high)})"
            elif _published_only(self):
                shown += " (from published numbers alone)"
        return {"chapter": self.chapter, "model": self.model, "equation": self.equation, "quantity": self.quantity,
                "inputs": "; ".join(f"{i.symbol} = {_fmt(i.value.median)} {i.unit}" for i in self.inputs),
                "predicted": shown, "published": self.published_text, "verdict": self.verdict, "lacks": self.lacks}


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


def _span(lo: float, hi: float) -> str:
    """An interval as the pages print it: "2.82–2.9", or the one value when its ends print alike ("1,272")."""
    return _fmt(lo) if _fmt(lo) == _fmt(hi) else f"{_fmt(lo)}–{_fmt(hi)}"


def ratio(a: float, b: float) -> str:
    """a/b to three significant digits, as every ratio on the pages is shown (5.5/5.63 → "0.977")."""
    return f"{a / b:.3g}"


def _published_only(p: Prediction) -> bool:
    return bool(p.inputs) and all(i.source.startswith("published") for i in p.inputs)


def measured_share(p: Prediction) -> tuple[float, float] | None:
    """(share, shift): how far the measured inputs move the prediction's value, as a share of it and in its unit.
    The equation is evaluated at the inputs' medians, then with each measured input zeroed and at either end of its
    interval (the others at their medians), and with every measured input zeroed at once; the largest move counts.
    None when it cannot be said: no equation, no measured input, or a value of zero or not finite."""
    measured = [i for i in p.inputs if not i.source.startswith("published")]
    if p.f is None or not measured or not p.inputs:
        return None
    base = {i.symbol: np.asarray([i.value.median], dtype=float) for i in p.inputs}

    def at(changes: Mapping[str, float]) -> float:
        with np.errstate(all="ignore"):
            out = np.asarray(p.f({**base, **{k: np.asarray([v], dtype=float) for k, v in changes.items()}}),
                             dtype=float).ravel()
        return float(out[0]) if out.size else np.nan

    mid = at({})
    if not np.isfinite(mid) or mid == 0:
        return None
    tries = [{i.symbol: x} for i in measured for x in (0.0, i.value.low, i.value.high)]
    tries.append({i.symbol: 0.0 for i in measured})
    moves = [abs(at(t) - mid) for t in tries]
    shift = float(np.inf) if any(not np.isfinite(m) for m in moves) else float(max(moves))
    return shift / abs(mid), shift


def _measured_negligible(p: Prediction) -> tuple[float, float] | None:
    """:func:`measured_share` when it is below :data:`NEGLIGIBLE` (the prediction rests on published numbers)."""
    got = measured_share(p)
    return got if got is not None and got[0] < NEGLIGIBLE else None


def _outside(p: Prediction) -> str:
    """How the published value lies outside what the model gives, in words, or '' when it does not.  A published
    bound is compared as a bound: "over 240 s" lies outside only a prediction wholly below 240 s."""
    s, pub = p.predicted, p.published
    if not np.isfinite(pub):
        return ""
    lo, hi = s.low, s.high
    if p.published_kind == "at least":  # the source's value is pub or more: only a prediction below it breaks it
        if p.kind != "at least" and hi < pub:
            return (f"the published value is over {_fmt(pub)} {p.unit}, above the predicted {_span(lo, hi)} {p.unit} "
                    f"(at least {ratio(pub, s.median)}× the prediction)")
        return ""
    if p.published_kind == "at most":
        if p.kind != "at most" and lo > pub:
            return (f"the published value is under {_fmt(pub)} {p.unit}, below the predicted {_span(lo, hi)} "
                    f"{p.unit} (at most {ratio(pub, s.median)}× the prediction)")
        return ""
    if p.kind == "at most" and pub > hi:
        return f"the published {_fmt(pub)} {p.unit} is above the bound of {_fmt(hi)} {p.unit} ({ratio(pub, hi)}×)"
    if p.kind == "at least" and pub < lo:
        return f"the published {_fmt(pub)} {p.unit} is below the bound of {_fmt(lo)} {p.unit} ({ratio(pub, lo)}×)"
    if p.kind in ("value", "range") and not lo <= pub <= hi:
        if _fmt(lo) == _fmt(hi):
            return f"the published {_fmt(pub)} {p.unit} is {ratio(pub, lo)}× the predicted {_fmt(lo)} {p.unit}"
        return f"the published {_fmt(pub)} {p.unit} lies outside {_fmt(lo)}–{_fmt(hi)} {p.unit}"
    return ""


def _within_bound(p: Prediction) -> str:
    """How a prediction that agrees with a published bound agrees with it, and how little that says, in words; ''
    when the published value is not a bound.  Called only where the prediction agrees (:func:`_outside` says where
    it does not)."""
    s, pub = p.predicted, p.published
    if p.published_kind not in ("at least", "at most") or not np.isfinite(pub):
        return ""
    lower = p.published_kind == "at least"
    clear = s.low >= pub if lower else s.high <= pub
    side = ("is above" if lower else "is below") if clear else "reaches"
    return (f"the predicted {_span(s.low, s.high)} {p.unit} {side} the published "
            f"{'lower' if lower else 'upper'} bound of {_fmt(pub)} {p.unit}, so it agrees with it, but a bound "
            "cannot confirm the prediction's size")


def judge_prediction(p: Prediction) -> str:
    """The verdict rule, stated once: see the module docstring."""
    s, pub = p.predicted, p.published
    if s.n == 0 or not np.isfinite(s.median):
        return "no model: an input was not measured in this recording"
    if p.invalid:
        return f"model invalid: {p.invalid}"
    if p.domain is not None:
        lowest, highest, why = p.domain
        if not lowest <= s.median <= highest:
            return f"model invalid: the equation gives {_fmt(s.median)} {p.unit}, {why}"
    if p.kind == "workload bound":
        return "workload bound: it follows from the workload's description alone, so it predicts nothing measured"
    negligible = None if _published_only(p) else _measured_negligible(p)
    if _published_only(p) or negligible:
        why = "every input is published, so nothing measured here is tested"
        if negligible:
            names = ", ".join(i.symbol for i in p.inputs if not i.source.startswith("published"))
            share, shift = negligible
            why = (f"the measured input{'s' if ', ' in names else ''} ({names}) move{'' if ', ' in names else 's'} "
                   f"the prediction by at most {_fmt(shift)} {p.unit} of {_fmt(s.median)} {p.unit} "
                   f"({share:.2%}), so it is built from published numbers and nothing measured here is tested")
        broken = _outside(p)
        if broken:
            return (f"published only, the model fails on its source: {broken}, so the model leaves out something the "
                    f"source's machine did; {why}")
        agrees = _within_bound(p)
        return f"published only: {agrees}; {why}" if agrees else f"published only: {why}"
    if p.failed_here:
        return f"model failed here: {p.failed_here}"
    lo, hi = s.low, s.high
    plo = pub if p.published_low is None else min(p.published_low, pub)
    phi = pub if p.published_high is None else max(p.published_high, pub)
    shown_pub = _fmt(pub) if _fmt(plo) == _fmt(phi) else f"{_fmt(pub)} ({_fmt(plo)}–{_fmt(phi)})"

    def miss(ref: float) -> str:
        side = "above" if plo > hi else "below"
        shown = f"{shown_pub} lies {side} the predicted {_span(lo, hi)}"
        if ref > 0 and np.isfinite(ref):
            return f"missed: {shown} ({ratio(pub, ref)}× the prediction)"
        return f"missed: {shown}"

    if p.kind == "range":  # a miss is measured from the nearer end
        return "predicted as a range" if phi >= lo and plo <= hi else miss(hi if plo > hi else lo)
    if p.kind == "at least":  # the model says the quantity is at least L
        if p.published_kind == "at most" and phi < lo:
            return miss(lo)
        return "predicted as a bound" if phi >= lo or p.published_kind == "at least" else miss(lo)
    if p.kind == "at most":
        if p.published_kind == "at least" and plo > hi:
            return miss(hi)
        return "predicted as a bound" if plo <= hi or p.published_kind == "at most" else miss(hi)
    if p.published_kind == "at least":  # "over 4 minutes": the interval must reach it; a miss is "at least"
        if hi >= plo:
            return f"predicted: {_within_bound(p)}"
        return (f"missed: the published value is over {_fmt(pub)}, above the predicted {_span(lo, hi)} "
                f"(at least {ratio(pub, s.median)}× the prediction)")
    if p.published_kind == "at most":
        if lo <= phi:
            return f"predicted: {_within_bound(p)}"
        return (f"missed: the published value is under {_fmt(pub)}, below the predicted {_span(lo, hi)} "
                f"(at most {ratio(pub, s.median)}× the prediction)")
    if lo <= pub <= hi:
        return "predicted"
    if phi >= lo and plo <= hi:  # only the value's own spread reaches the interval: still a miss, said so
        side = "above" if pub > hi else "below"
        return (f"missed: the value {_fmt(pub)} lies {side} the predicted {_span(lo, hi)} "
                f"({ratio(pub, s.median)}× the prediction); only its spread {_fmt(plo)}–{_fmt(phi)} reaches it")
    return miss(s.median)


def gate(article: Sequence[Prediction | dict], machine: Sequence[Prediction]) -> list:
    """The article predictions of a model whose own-machine prediction missed (or left its domain) are marked
    *model failed here* and not scored; the others are returned as they are."""
    from dataclasses import replace

    failed = [m for m in machine if m.category in ("missed", "model invalid")]
    if not failed:
        return list(article)
    why = "; ".join(f"on this machine it predicted {m.quantity}: {m.verdict}" for m in failed)
    return [replace(p, failed_here=why) if isinstance(p, Prediction) else p for p in article]


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
            vary: str = "", published_low: float | None = None, published_high: float | None = None,
            domain: tuple[float, float, str] | None = None, invalid: str = "") -> Prediction:
    """A :class:`Prediction` whose interval is propagated from ``inputs`` through ``f``; ``vary`` names the input
    the page's figure sweeps; ``published_low``/``high`` the compared value's own precision or spread; ``domain``
    where the output means something."""
    return Prediction(chapter, model, equation, quantity, unit, kind, published, published_text,
                      propagate(f, inputs), tuple(inputs), lacks, published_kind, f=f, vary=vary,
                      published_low=published_low, published_high=published_high, domain=domain, invalid=invalid)


def precision(text_value: str) -> tuple[float, float, float]:
    """A published number "around 5.5" as (5.5, 5.45, 5.55): half a unit of its last digit either side."""
    v = float(text_value)
    decimals = len(text_value.split(".")[1]) if "." in text_value else 0
    half = 0.5 * 10 ** (-decimals)
    return v, v - half, v + half


def measured_value(values: Sequence[float]) -> tuple[float, float, float]:
    """A measured value as (median, p10, p90) over its repetitions."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if not len(v):
        return np.nan, np.nan, np.nan
    return float(np.median(v)), float(np.percentile(v, 10)), float(np.percentile(v, 90))


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


def _fit_once(n: np.ndarray, x: np.ndarray, p0: tuple | None = None) -> tuple[float, float, float]:
    """(σ, κ, λ) by SciPy's least squares in log throughput, σ in [0, 1], κ ≥ 0, λ > 0 (log space weighs a
    curve that falls by orders of magnitude evenly)."""
    from scipy.optimize import curve_fit

    def log_usl(nn, sig, kap, loglam):
        return loglam + np.log(nn) - np.log1p(sig * (nn - 1) + kap * nn * (nn - 1))

    def jac(nn, sig, kap, loglam):
        d = 1 + sig * (nn - 1) + kap * nn * (nn - 1)
        return np.stack([-(nn - 1) / d, -nn * (nn - 1) / d, np.ones_like(nn)], axis=1)

    lam0 = float(np.median(x[n == n.min()]) / n.min())
    try:
        (sig, kap, loglam), _ = curve_fit(log_usl, n, np.log(x), p0=p0 or (0.1, 0.001, np.log(lam0)),
                                          bounds=([0.0, 0.0, -np.inf], [1.0, np.inf, np.inf]), jac=jac,
                                          max_nfev=2000)
    except (RuntimeError, ValueError):
        return np.nan, np.nan, lam0
    return float(sig), float(kap), float(np.exp(loglam))


MIN_POINTS = 4


def _paired_bootstrap(nn: np.ndarray, xx: np.ndarray, stat, resamples: int) -> np.ndarray:
    """``stat`` over ``resamples`` resamples of the (N, X) pairs, one row each: the distribution
    ``scipy.stats.bootstrap(..., paired=True, random_state=SEED).bootstrap_distribution.T`` holds (the same
    indices, drawn the same way), without importing scipy.stats, a second of every chapter kernel's CPU."""
    picks = np.random.RandomState(SEED).randint(0, len(nn), (resamples, len(nn)), dtype=np.int64)
    return np.array([stat(nn[i], xx[i]) for i in picks], dtype=float).reshape(resamples, -1)


def fit_usl(frame: pd.DataFrame, n: str, x: str, source: str, resamples: int = 300, cpus: int | None = None
            ) -> tuple[UslFit, np.ndarray] | None:
    """σ, κ and λ fitted to a throughput curve (``scipy.optimize.curve_fit``), with percentile intervals from a
    paired bootstrap over the (N, X) points (:func:`_paired_bootstrap`).  Only levels within ``cpus`` count (beyond, σ would also hold
    the time threads wait for a CPU); None when fewer than :data:`MIN_POINTS` levels, one of them 1, remain."""
    part = frame[[n, x]].apply(pd.to_numeric, errors="coerce").dropna()
    part = part[part[x] > 0]
    if cpus:
        part = part[part[n] <= cpus]
    levels = np.sort(part[n].unique())
    if len(levels) < MIN_POINTS or 1 not in levels:
        return None
    nn, xx = part[n].to_numpy(float), part[x].to_numpy(float)
    s0, k0, lam = _fit_once(nn, xx)
    if not np.isfinite(s0):
        return None

    def stat(ns, xs):
        if len(np.unique(ns)) < 3:   # a resample without enough levels fits nothing
            return np.array([np.nan, np.nan])
        return np.array(_fit_once(ns, xs, (max(s0, 1e-6), max(k0, 1e-9), np.log(lam)))[:2])

    d = _paired_bootstrap(nn, xx, stat, resamples)
    d = d[np.isfinite(d).all(axis=1)]  # resamples that fit nothing

    def interval(values: np.ndarray, mid: float) -> Spread:
        lo, hi = np.percentile(values, [2.5, 97.5])
        return Spread(mid, float(min(lo, mid)), float(max(hi, mid)), len(values), "bootstrap 95%")

    with np.errstate(divide="ignore", invalid="ignore"):
        # the peak cannot lie below one session: a curve that only falls peaks at N = 1
        nstar = np.where(d[:, 1] > 0, np.maximum(1.0, np.sqrt(np.clip(1 - d[:, 0], 0, None) / d[:, 1])), np.inf)
        nstar0 = float(max(1.0, np.sqrt(max(1 - s0, 0) / k0))) if k0 > 0 else float("inf")
    finite = nstar[np.isfinite(nstar)]
    if len(finite) == len(nstar):
        ns_ = interval(nstar, nstar0)
    else:
        lo = float(np.percentile(finite, 2.5)) if len(finite) else float("inf")
        ns_ = Spread(nstar0, min(lo, nstar0), float("inf"), len(nstar), "bootstrap 95%")
    fit = UslFit(interval(d[:, 0], s0), interval(d[:, 1], k0), lam, ns_, len(levels), source)
    return fit, d


def usl_residuals(fit: UslFit, frame: pd.DataFrame, n: str, x: str) -> str:
    """Measured over fitted, per concurrency level (medians), as the table shows them: "1: +0.4%; 2: −3.1%"."""
    med = frame.groupby(n)[x].median()
    return "; ".join(f"{lv:g}: {(v / float(fit.curve(np.asarray([lv]))[0]) - 1) * 100:+.1f}%" for lv, v in med.items())


def usl_row(fit: UslFit, curve: str, sigma_transfer: Spread | None = None, residuals: str = "") -> dict:
    """One row of a chapter's USL table: σ, κ, N* with intervals, σ's counterpart if every operation moved one
    line in its serial part (t_xfer · λ: a serial cost, so beside σ, not κ), and the residuals."""
    def show(s: Spread, digits: str = ".3g") -> str:
        return f"{s.median:{digits}} ({s.low:{digits}}–{s.high:{digits}})" if np.isfinite(s.high) else \
            f"{s.median:{digits}} ({s.low:{digits}}–∞)"

    return {"curve": curve, "concurrency levels": fit.points, "σ (contention)": show(fit.sigma),
            "σ if one transfer per operation": show(sigma_transfer) if sigma_transfer is not None else "—",
            "κ (coherency)": show(fit.kappa), "peak concurrency N*": show(fit.n_star, ".1f"),
            "residuals (measured/fitted − 1)": residuals or "—", "source": fit.source}


# -- the machine card of the recording a chapter renders ------------------------------------------------

NO_CARD = "no machine card in this recording"


def range_prediction(chapter: str, model: str, equation: str, quantity: str, unit: str, value: float, text: str,
                     low: float, high: float, inputs: Sequence[Input], lacks: str, value_low: float | None = None,
                     value_high: float | None = None) -> Prediction:
    """A prediction that is a range between two limiting cases, each at the inputs' medians (never an interval
    of probability)."""
    lo, hi = min(low, high), max(low, high)
    return Prediction(chapter, model, equation, quantity, unit, "range", value, text,
                      Spread(float(np.sqrt(lo * hi)) if lo > 0 else (lo + hi) / 2, lo, hi, 2, "range"),
                      tuple(inputs), lacks, published_low=value_low, published_high=value_high)


def recording_words(view) -> str:
    """How a model's input names the recording it came from: the engine and the day it was recorded
    (``PostgreSQL 15.18, recorded 27 Nov 2026``), not its directory name, which the Data page lists beside them."""
    import datetime as dt

    r = getattr(view, "recording", view)
    rid = str(getattr(view, "id", None) or getattr(r, "id", "?"))
    try:
        label = str(view.label).removesuffix(" (measured)")
    except Exception:  # noqa: BLE001 - a test's stand-in without an engine block: the id is all there is
        return rid
    try:  # every recording's manifest says when it started
        day = dt.date.fromisoformat(str((getattr(r, "manifest", None) or {}).get("started", ""))[:10])
    except ValueError:
        return label
    return f"{label}, recorded {day.day} {day:%b %Y}"


def measured_from(view, what: str = "") -> str:
    """An input's source: ``measured: <recording_words>, <what>``."""
    return f"measured: {recording_words(view)}" + (f", {what}" if what else "")


def card_of(view) -> tuple[dict | None, str]:
    """(card, words naming its recording) of a chapter's measured view; (None, words) when it has no card."""
    from contention_book.harness import machine_card

    r = getattr(view, "recording", view)
    rid = recording_words(view)
    if not hasattr(r, "has"):  # not a recording (a test's stand-in): no card
        return None, rid
    return machine_card.load(r), rid


def card_cost(view, quantity: str):
    """One cost of a view's own machine card (``machine_card.cost``: median, low, high, phases), or None when the
    recording has no card or the card lacks it: what a chapter's prose quotes beside its models."""
    from contention_book.harness import machine_card

    card, _ = card_of(view)
    return machine_card.cost(card, quantity) if card is not None else None


BETWEEN_CPUS = ("one_way_transfer", "futex_wake", "context_switch", "atomic_contended", "ops_per_transfer")


def placement_moved_why(card: dict | None, quantity: str, symbol: str) -> str:
    """Why a model that takes a between-CPU cost (``quantity``) from ``card`` is invalid, else ''.  When the card
    says the placement moved between its start and its end, the pooled cost (the mean of the two medians) describes
    neither placement, and the runs between them may have had either."""
    from contention_book.harness import machine_card

    if card is None or quantity not in BETWEEN_CPUS:
        return ""
    moved = machine_card.placement_moved(card)
    if not moved:
        return ""
    phases = card.get("phases", {})
    at = {name: phases.get(name, {}).get("costs", {}).get(quantity) for name in ("start", "end")}
    if not all(at.values()):
        return ""
    unit = at["start"].get("unit", "")
    return (f"the machine card says the placement moved during the recording ({machine_card.in_words(moved)} "
            f"changed beyond their spread), and its {machine_card.WORDS[quantity]} went from "
            f"{_fmt(at['start']['median'])} {unit} at the start to {_fmt(at['end']['median'])} {unit} at the end, "
            f"so no one {symbol} describes the runs between them")


def card_input(card: dict | None, rid: str, quantity: str, symbol: str, name: str | None = None) -> Input | None:
    """One cost of a recording's own card as an :class:`Input` (the medians of its start and end, the hull of
    their p10-p90), or None when the card lacks it or a broken rule of physics bars it."""
    from contention_book.harness import machine_card

    if card is None or quantity in machine_card.barred(card):
        return None
    c = machine_card.cost(card, quantity)
    if c is None:
        return None
    return Input.interval(name or machine_card.WORDS[quantity], symbol, c.median, c.low, c.high, c.unit,
                          f"measured: the machine card recorded with {rid} ({' and '.join(c.phases)})")
