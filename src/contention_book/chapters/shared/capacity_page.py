"""The "What this machine predicts for the article's" section: words, tables and figures from the models.

A chapter's notebook calls :func:`section` with its predictions and USL fits;
the rows are also saved for the Findings page (:func:`save_predictions`),
so the page and Findings never disagree.
"""
from __future__ import annotations

import textwrap
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .capacity import Input, Prediction, UslFit, inputs_table, predictions_table, sweep, usl_row
from .spread import Spread

def save_predictions(chapter: str, rows: Sequence[Prediction | dict]) -> None:
    """Keep a chapter's prediction rows for the Findings page, when this execution is the book's own copy."""
    from contention_book.harness.book_pages import PREDICTIONS_DIR, page_data_dir
    from contention_book.harness.recording import repo_root

    if page_data_dir() is None:
        return
    out = repo_root() / PREDICTIONS_DIR / f"{chapter}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(predictions_table(rows).to_json(orient="records", force_ascii=False, indent=1), encoding="utf-8")


def glossary_terms() -> frozenset[str]:
    """The terms book/glossary.md defines (lower case), so a page links a word only where the glossary has it (a
    {term} role to a missing term fails the build); empty when the glossary is not there."""
    from contention_book.harness.recording import repo_root

    path = repo_root() / "book" / "glossary.md"
    if not path.exists():
        return frozenset()
    text = path.read_text(encoding="utf-8")
    block = text.split("```{glossary}", 1)[1].split("```", 1)[0] if "```{glossary}" in text else ""
    return frozenset(line.strip().lower() for line in block.splitlines() if line.strip() and not line[:1].isspace())


def intro(preds: Sequence[Prediction | dict]) -> str:
    """The section's words: each model's equation, what it leaves out, and the verdict rule.  A verdict word the
    glossary defines links to it."""
    from contention_book.harness.book_pages import CAPACITY_LABEL

    from .capacity import SCORED, VERDICT_MEANING

    used = {(p.verdict if isinstance(p, Prediction) else p["verdict"]).split(":")[0].split(",")[0] for p in preds}
    terms = glossary_terms()
    words = "; ".join((f"{{term}}`{w}`" if w.lower() in terms else f"*{w}*") + f": {m}"
                      for w, m in VERDICT_MEANING.items() if w in used)
    lines = [f"How these models are built and judged is said once for every chapter: {{ref}}`{CAPACITY_LABEL}`."
             + (f" The verdict words below: {words}." if words else ""), ""]

    verdicts = [(p.verdict if isinstance(p, Prediction) else p["verdict"]).split(":")[0] for p in preds]
    verdicts = [v for v in verdicts if v in SCORED]  # unscored rows (published only, failed here …) are no misses
    missed = verdicts.count("missed")
    if missed and missed * 2 >= len(verdicts):
        head = ("The scored prediction below misses." if len(verdicts) == 1 else
                f"{missed} of the {len(verdicts)} scored predictions below {'misses' if missed == 1 else 'miss'}.")
        lines += [f"**{head}** That is a finding too: each model says what it leaves out, and the size of the miss "
                  "measures how much that is.", ""]
    for p in preds:
        if isinstance(p, Prediction):
            lines.append(f"- **{p.model[0].upper() + p.model[1:]}**: *{p.equation}*. "
                         f"Verdict: *{p.verdict}*. What it leaves out: {p.lacks}.")
        else:
            lines.append(f"- {p['quantity'][0].upper() + p['quantity'][1:]}: *{p['verdict']}*.")
    return "\n".join(lines)


def inputs_frame(preds: Sequence[Prediction | dict]) -> pd.DataFrame:
    """Every measured or published input of the chapter's models, once each."""
    frames = [inputs_table(p) for p in preds if isinstance(p, Prediction)]
    if not frames:
        return pd.DataFrame(columns=["input", "symbol", "median", "interval", "unit", "source"])
    return pd.concat(frames).drop_duplicates(subset=["symbol", "source"]).reset_index(drop=True)


def results_frame(preds: Sequence[Prediction | dict]) -> pd.DataFrame:
    return predictions_table(preds)[["quantity", "equation", "predicted", "published", "verdict"]]


def _x_range(p: Prediction) -> np.ndarray:
    x0 = next(i.value.median for i in p.inputs if i.symbol == p.vary)
    if p.vary == "P":
        return np.arange(1, max(8, int(x0) * 2) + 1, dtype=float)
    if 0 < x0 < 1:
        return np.linspace(0, min(0.9, x0 * 2.5), 40)
    return np.linspace(0, x0 * 1.6, 40)


def figure(preds: Sequence[Prediction | dict]):
    """One panel per prediction: the predicted curve with its band as one input varies, and the article's point."""
    drawable = [p for p in preds if isinstance(p, Prediction) and p.f is not None and p.vary
                and p.category != "model invalid"]  # a curve outside its domain (a negative time) shows nothing
    if not drawable:
        return None
    # one panel is drawn wider than a third of the column: its legend, one entry a row, sits under it
    fig, axes = plt.subplots(1, len(drawable), figsize=(max(3.4 * len(drawable), 4.6), 2.9 + 0.5 * (len(drawable) == 1)),
                             squeeze=False)
    for ax, p in zip(axes[0], drawable):
        xs = _x_range(p)
        mid, low, high = sweep(p, xs)
        ax.fill_between(xs, low, high, alpha=0.25, color="tab:blue", label="predicted, 95% band")
        ax.plot(xs, mid, color="tab:blue", label=f"predicted ({p.kind})" if p.kind != "value" else "predicted")
        x0 = next(i.value.median for i in p.inputs if i.symbol == p.vary)
        marker = {"value": "o", "at least": "^", "at most": "v"}[p.published_kind]
        ax.plot([x0], [p.published], marker=marker, color="tab:red", linestyle="none", markersize=8,
                label="the article's number" + ("" if p.published_kind == "value" else f" ({p.published_kind})"))
        symbol = next(i for i in p.inputs if i.symbol == p.vary)
        ax.set_xlabel(f"{symbol.name} ({symbol.symbol})")
        ax.set_ylabel("\n".join(textwrap.wrap(p.unit, 28)))  # a long unit wraps rather than run off the canvas
        ax.set_title("\n".join(textwrap.wrap(p.quantity[0].upper() + p.quantity[1:], 42 if len(drawable) > 1 else 60)), loc="left", fontsize=8)
        if p.vary == "P":
            ax.xaxis.get_major_locator().set_params(integer=True)
        elif x0 >= 1e4:  # counts in the millions: few ticks, in engineering units, so the labels do not overlap
            from matplotlib.ticker import EngFormatter, MaxNLocator
            ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
            ax.xaxis.set_major_formatter(EngFormatter(sep=" "))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3 if len(drawable) > 1 else 1, frameon=False)
    return fig


def usl_frame(fits, transfer: Input | None = None) -> pd.DataFrame:
    """The USL table: σ, κ, N* per curve and the residuals; beside σ, the serial share one line transfer per
    operation would take (t_xfer · λ, from the recording's own machine card, where it has one)."""
    from .capacity import usl_residuals

    rows = []
    for name, fit, _draws, points in fits:
        k = None
        if transfer is not None:
            t = transfer.value
            k = Spread(t.median * 1e-9 * fit.lam, t.low * 1e-9 * fit.lam, t.high * 1e-9 * fit.lam, t.n, t.method)
        n_col, x_col = points.columns[0], points.columns[1]
        rows.append(usl_row(fit, name, k, usl_residuals(fit, points, n_col, x_col)))
    return pd.DataFrame(rows)


def usl_figure(fits, n_label: str, x_label: str, cpus: int | None = None):
    """Each curve's points with its fitted USL curve and bootstrap band; points beyond the CPUs marked."""
    if not fits:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for i, (name, fit, draws, points) in enumerate(fits):
        colour = f"C{i}"
        n_col, x_col = points.columns[0], points.columns[1]
        ns = np.linspace(1, float(points[n_col].max()), 80)
        low, high = fit.band(ns, draws[:: max(1, len(draws) // 400)])
        ax.fill_between(ns, low, high, color=colour, alpha=0.15)
        ax.plot(ns, fit.curve(ns), color=colour, label=f"{name}: USL fit")
        ax.plot(points[n_col], points[x_col], "o", color=colour, markersize=3)
    if cpus:
        ax.axvline(cpus, color="grey", linestyle=":", label=f"{cpus} CPUs: beyond, oversubscribed")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel(n_label)
    ax.set_ylabel(x_label)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, frameon=False)
    return fig


def usl_curves(runs: pd.DataFrame | None, n: str, x: str, by: str, source: str, labels=None,
               cpus: int | None = None):
    """USL fits for every group of ``runs`` (a variant, a lock kind) with 4 or more concurrency levels within
    ``cpus`` (the points kept are those levels)."""
    from .capacity import fit_usl

    out = []
    if runs is None or not {n, x, by} <= set(runs.columns):
        return out
    for key, part in runs.groupby(by):
        got = fit_usl(part, n, x, source, cpus=cpus)
        if got:
            name = (labels or {}).get(key, str(key))
            kept = part[pd.to_numeric(part[n], errors="coerce") <= cpus] if cpus else part
            out.append((name, got[0], got[1], kept[[n, x]]))
    return out


def no_usl_words(cpus: int | None) -> str:
    """The one sentence a chapter says when no curve can carry a fit."""
    from .capacity import MIN_POINTS

    within = f"within this machine's {cpus} CPUs" if cpus else "within the machine's CPUs"
    return (f"No USL fit: no curve in this recording has {MIN_POINTS} concurrency levels {within}, and levels "
            "beyond the CPUs would also measure the wait for a CPU.")


def recording_cpus(view) -> int | None:
    """The logical CPUs of the machine a measured view was recorded on."""
    r = getattr(view, "recording", None)
    v = r.host.get("logical_cpus") if r is not None else None
    return int(v) if v else None


def _card_transfer(shown) -> Input | None:
    """The one-way transfer from the card of the measured recording shown (the first one with a card)."""
    from .capacity import card_input, card_of

    m = getattr(shown, "measured", None)
    views = list(m.values()) if isinstance(m, dict) else [m]
    views += [getattr(shown, "native", None), getattr(shown, "db", None)]
    for v in views:
        if v is None or getattr(v, "recording", None) is None:
            continue
        card, rid = card_of(v)
        got = card_input(card, rid, "one_way_transfer", "t_xfer")
        if got is not None:
            return got
    return None


def machine_frame(preds: Sequence[Prediction]) -> pd.DataFrame:
    """The "Predictions for this machine" table."""
    rows = [p.row() for p in preds]
    return pd.DataFrame([{"quantity": r["quantity"], "equation": r["equation"], "inputs": r["inputs"],
                          "predicted": r["predicted"], "measured": r["published"], "verdict": r["verdict"]}
                         for r in rows], columns=["quantity", "equation", "inputs", "predicted", "measured", "verdict"])


_BARRED_WORDS = {"atomic_contended_per_transfer": "taking the contended increment as the cost of one line transfer"}


def machine_words(chapter_views) -> str:
    """What a chapter page says about each recording's machine card: one plain sentence naming the costs the card
    flags and what that means for the models below (a barred cost is taken by none of them; a cost that moved
    during the recording is taken as the span of its start and end, as :func:`.capacity.card_input` does).  The diagnostics themselves (the broken rules, their numbers)
    are the Data page's (:func:`contention_book.harness.machine_card.card_markdown`)."""
    from contention_book.harness import machine_card

    from .capacity import NO_CARD, card_of

    lines = []
    for v in chapter_views:
        card, rid = card_of(v)
        engine = getattr(v, "engine", "")
        rid = {"native": "The C model's recording", "postgres": "The PostgreSQL recording",
               "sqlserver": "The SQL Server recording"}.get(engine, f"The recording {rid}")  # words, not ids
        if card is None:
            lines.append(f"{rid}: *{NO_CARD}*, so no prediction for this machine takes a cost from one.")
            continue
        broken = [r for r in machine_card.rules(card) if r.broken]
        bars = list(dict.fromkeys(b for r in broken for b in r.bars)) or [r.name for r in broken]
        moved = machine_card.placement_moved(card)
        said = []
        if bars:
            uses = [_BARRED_WORDS.get(b, f"using {machine_card.in_words([b])}") for b in bars]
            said.append(f"bars {' and '.join(uses)}, so no prediction below does")
        if moved:
            said.append(f"says {machine_card.in_words(moved)} moved during the recording, so a prediction below "
                        f"that takes {'it' if len(moved) == 1 else 'one of them'} takes the span of its start and end")
        lines.append(f"{rid}: its machine card (on the Data page, with the reasons) "
                     + ("; it also ".join(said) if said else "flags none of its costs") + ".")
    return "\n\n".join(lines)


def save_machine_predictions(chapter: str, preds: Sequence[Prediction]) -> None:
    """Keep a chapter's own-machine rows for Findings' "Predictions for this machine" section."""
    from contention_book.harness.book_pages import PREDICTIONS_DIR, page_data_dir
    from contention_book.harness.recording import repo_root

    if page_data_dir() is None:
        return
    out = repo_root() / PREDICTIONS_DIR / f"{chapter}-machine.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(machine_frame(preds).rename(columns={"measured": "published"}).to_json(
        orient="records", force_ascii=False, indent=1), encoding="utf-8")


def measured_views(shown) -> list:
    m = getattr(shown, "measured", None)
    views = list(m.values()) if isinstance(m, dict) else [m] if m is not None else []
    views += [v for v in (getattr(shown, "native", None), getattr(shown, "db", None)) if v is not None]
    return [v for v in views if getattr(v, "recording", None) is not None]


def machine_lacks(preds: Sequence[Prediction]) -> str:
    """Under the table: each own-machine model with what it leaves out (a bound says there why it is one)."""
    return "\n".join(f"- **{p.model[0].upper() + p.model[1:]}** (*{p.equation}*): {p.lacks}." for p in preds
                      if isinstance(p, Prediction) and p.lacks)


def show_machine_predictions(chapter, shown, say_lacks: bool = False) -> None:
    """The "Predictions for this machine" table: each model first predicts one of this recording's own contended
    measurements from its uncontended ones and the recording's machine card; rows saved for Findings.  A chapter
    whose ``model`` sets ``USES_MACHINE_CARD = False`` (no model takes a cost from a card) gets no sentence about
    the card.
    ``say_lacks``: each model's "what it leaves out" under the table (:func:`machine_lacks`)."""
    import importlib

    from IPython.display import Markdown, display

    from .notebook import show_table

    model = importlib.import_module(f"{chapter.__name__}.model")
    preds = model.machine_predictions(shown) if hasattr(model, "machine_predictions") else []
    save_machine_predictions(chapter.SPEC.chapter, preds)
    if getattr(model, "USES_MACHINE_CARD", True):  # a chapter whose models take no cost from a card says nothing of it
        display(Markdown(machine_words(measured_views(shown))))
    if preds:
        show_table(machine_frame(preds).set_index("quantity"), "Predictions for this machine: each model against "
                   "this recording's own contended measurement, judged by the same rule as the article's.")
        if say_lacks and machine_lacks(preds):
            display(Markdown("What each leaves out:\n\n" + machine_lacks(preds)))


def usl_words() -> str:
    """The USL paragraph: one line here, the method once on the Findings page."""
    from contention_book.harness.book_pages import USL_LABEL

    return (f"**Universal Scalability Law** fits to this recording's curves (how they are made and read: "
            f"{{ref}}`{USL_LABEL}`).")


def _without_empty_columns(frame):
    """The frame less the columns no row fills (a model with no input shows no equation and no prediction: a
    column of dashes says nothing the verdict does not)."""
    empty = [c for c in frame.columns
             if frame[c].map(lambda v: v is None or (isinstance(v, float) and v != v) or str(v).strip() in ("", "—"))
             .all()]
    return frame.drop(columns=empty)


def show_capacity(chapter, shown, n_label: str = "sessions", x_label: str = "operations/s") -> None:
    """The whole section for a chapter whose package has a ``model`` module: words, inputs, predictions against
    the published numbers, a figure of each prediction, and the USL fits; rows saved for Findings."""
    import importlib

    from IPython.display import Markdown, display

    from .notebook import show_figure, show_table

    model = importlib.import_module(f"{chapter.__name__}.model")
    preds = model.predictions(shown)
    save_predictions(chapter.SPEC.chapter, preds)
    key = chapter.SPEC.chapter.replace("-", "_")
    if not preds:
        display(Markdown("*No prediction: the recording shown lacks an input the models need.*"))
    else:
        display(Markdown(intro(preds)))
        inputs = _without_empty_columns(inputs_frame(preds))
        if len(inputs):  # a recording without a card may leave a model no input at all
            show_table(inputs.set_index("input"), "The models' inputs: measured on this machine, or "
                       "the article's own description of its workload.")
        show_table(_without_empty_columns(results_frame(preds)).set_index("quantity"), "Each prediction against the "
                   "number the article published.")
        fig = figure(preds)
        if fig is not None:
            show_figure(f"fig_{key}_predictions", fig)
            display(Markdown(f"```{{glue:figure}} fig_{key}_predictions\n:name: fig-{chapter.SPEC.chapter}-predictions"
                             "\n\nEach prediction as one input varies: the line is the model at the inputs' medians, "
                             "the band its 95% interval, the red mark the article's number (a triangle where the "
                             "article or the model gives only a bound).\n```"))
    fits = model.usl_fits(shown) if hasattr(model, "usl_fits") else []
    if hasattr(model, "usl_fits") and not fits:
        views = measured_views(shown)
        display(Markdown(no_usl_words(recording_cpus(views[0]) if views else None)))
    if fits:
        display(Markdown(usl_words()))
        show_table(usl_frame(fits, _card_transfer(shown)).set_index("curve"), "USL fits to this recording's curves "
                   "within its CPUs (95% intervals in brackets).")
        cpus = getattr(getattr(shown, "measured", None), "logical_cpus", None)
        fig = usl_figure(fits, n_label, x_label, int(cpus) if isinstance(cpus, (int, float)) and cpus else None)
        show_figure(f"fig_{key}_usl", fig)
        display(Markdown(f"```{{glue:figure}} fig_{key}_usl\n:name: fig-{chapter.SPEC.chapter}-usl\n\n"
                         "Measured points with each curve's USL fit and its bootstrap 95% band.\n```"))
