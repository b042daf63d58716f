"""The machine card: the hand-off costs of one recording's own placement, measured at its start and its end.

Why: the capacity models combine a line transfer, a wake-up and increment costs.  Taken from
recordings made at different times they need not describe one placement (a VM's vCPUs move: the
same transfer measured 25.7 ns at 18:27 and 198 ns at 19:05).  So every measured recording carries
``machine_card.json``: ``native/machine_card.c`` run on the CPUs the run used, before and after it,
with the topology (sockets, cores, SMT siblings, hypervisor) and the clock.  A card whose start and
end disagree beyond their spread says the placement moved.

The rules of physics a card must obey are functions here (:func:`rules`); a cost a broken rule
contradicts is barred (:func:`barred`) and no model takes it.

    python -m contention_book.harness.machine_card measure            # print a card of this machine
    python -m contention_book.harness.machine_card add data/<chapter>/<recording>   # add one to a recording
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jsonschema

CARD = "machine_card.json"
PROGRAM = "machine_card"
SCHEMA = Path(__file__).with_name("schemas") / "machine_card-1.json"
QUANTITIES = ("cycle", "one_way_transfer", "futex_wake", "context_switch", "atomic_contended", "ops_per_transfer",
              "atomic_private", "plain_private")
WORDS = {  # what each quantity is, as the pages say it
    "cycle": "one clock cycle (a chain of dependent adds; its fastest batch)",
    "one_way_transfer": "one-way cache-line transfer between the two CPUs",
    "futex_wake": "futex wake-up of a thread sleeping on the other CPU",
    "context_switch": "context switch on one CPU (futex hand-off)",
    "atomic_contended": "contended atomic increment (two CPUs, one counter; wall time per increment)",
    "ops_per_transfer": "increments per line transfer in the contended run",
    "atomic_private": "private atomic increment (own cache line)",
    "plain_private": "private plain increment (volatile counter in memory)",
}
DESCRIPTION = "the machine card: hand-off costs on the CPUs this run used, measured at its start and its end"


class CardError(ValueError):
    pass


# -- measuring ----------------------------------------------------------------------------------------------

def run_cpus() -> list[int]:
    """The logical CPUs this process (and so the run it starts) may use."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _cpu_list(text: str | None) -> list[int]:
    out: list[int] = []
    for part in (text or "").split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        elif part.strip():
            out.append(int(part))
    return out


def topology(cpus: Sequence[int], pair: Sequence[int]) -> dict:
    """Sockets, cores, SMT siblings of the CPUs used, whether the measured pair are siblings, the hypervisor."""
    from .host import _lscpu

    info = _lscpu()
    siblings, packages, cores = [], set(), set()
    for c in cpus:
        base = f"/sys/devices/system/cpu/cpu{c}/topology"
        group = _cpu_list(_read(f"{base}/thread_siblings_list")) or [c]
        if group not in siblings:
            siblings.append(group)
        pkg, core = _read(f"{base}/physical_package_id"), _read(f"{base}/core_id")
        packages.add(pkg)
        cores.add((pkg, core))
    pair_siblings = any(pair[0] in g and pair[1] in g for g in siblings) if len(pair) == 2 else None
    hv_type = _read("/sys/hypervisor/type")
    flags = ""
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("flags"):
            flags = line
            break
    vendor = info.get("Hypervisor vendor") or None
    evidence = [e for e in (f"/sys/hypervisor/type = {hv_type}" if hv_type else "",
                            "the 'hypervisor' flag in /proc/cpuinfo" if " hypervisor" in flags else "",
                            f"lscpu: hypervisor vendor {vendor}" if vendor else "") if e]
    mhz = None
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.lower().startswith("cpu mhz"):
            try:
                mhz = float(line.split(":")[1])
            except ValueError:
                pass
            break
    return {"cpu_model": info.get("Model name") or None, "sockets": len(packages - {None}) or None,
            "cores": len(cores), "logical_cpus": os.cpu_count(), "cpus_used": list(cpus), "pair": list(pair),
            "smt_siblings": siblings, "pair_are_siblings": pair_siblings,
            "hypervisor": (vendor or hv_type or ("present (vendor unknown)" if evidence else None)),
            "hypervisor_evidence": evidence, "nominal_mhz": mhz}


def _load_1min() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def measure_phase(pair: Sequence[int], repetitions: int = 31, run: Callable | None = None) -> dict:
    """One measurement of every quantity on ``pair``: ``{"taken", "load_1min", "costs": {q: spread}}``, or
    ``{"taken", "error"}`` when the program cannot run here (no compiler, not Linux)."""
    from .recording import utc_now

    taken = utc_now()
    try:
        if run is None:
            from . import native

            run = native.run
        frame = run(PROGRAM, [f"--cpu-a={pair[0]}", f"--cpu-b={pair[1]}", f"--repetitions={repetitions}"],
                    timeout_s=120)
    except Exception as exc:  # noqa: BLE001 - a card that could not be measured says why, the run goes on
        return {"taken": taken, "error": f"{type(exc).__name__}: {exc}"[:500]}
    costs = {}
    for _, r in frame.iterrows():
        costs[str(r["quantity"])] = {k: float(r[k]) for k in ("median", "p10", "p90", "min")} | {
            "n": int(r["repetitions"]), "unit": str(r["unit"])}
    missing = [q for q in QUANTITIES if q not in costs]
    if missing:
        return {"taken": taken, "error": f"{PROGRAM} printed no row for {', '.join(missing)}"}
    return {"taken": taken, "load_1min": _load_1min(), "costs": costs}


def new_card(pair: Sequence[int] | None = None, cpus: Sequence[int] | None = None) -> dict:
    cpus = list(cpus or run_cpus())
    pair = list(pair or (cpus[:2] if len(cpus) >= 2 else []))
    from .native import compiler

    return {"schema_version": 1, "program": f"native/{PROGRAM}.c", "compiler": compiler(),
            "topology": topology(cpus, pair), "phases": {}}


def measure_into(card: dict, phase: str, run: Callable | None = None) -> dict:
    pair = card["topology"]["pair"]
    if len(pair) != 2:
        card["phases"][phase] = {"taken": None, "error": "the run may use one CPU only: no pair to measure"}
    else:
        card["phases"][phase] = measure_phase(pair, run=run)
    return card


# -- the runner's two calls -----------------------------------------------------------------------------------

SKIP_ENV = "CONTENTION_BOOK_MACHINE_CARD"  # "0": the runner measures no card (the runner's own fault tests)
_STARTED: dict[int, dict] = {}              # a run's start phase, until its end phase joins it


def at_start(writer, log: Callable[[str], None] = print, run: Callable | None = None) -> None:
    """Measure the card's start phase for the recording being written (``writer``: a RecordingWriter).  It is
    kept here, not written yet: a recording holding only a card would look as if the run wrote data."""
    if os.environ.get(SKIP_ENV) == "0":
        return
    card = measure_into(new_card(), "start", run)
    _STARTED[id(writer)] = card
    log(f"[run] machine card at the start: {summary(card, 'start')}")


def at_end(writer, log: Callable[[str], None] = print, run: Callable | None = None) -> None:
    """Measure the end phase, say whether the placement moved since the start, and write the card."""
    if os.environ.get(SKIP_ENV) == "0":
        return
    card = _STARTED.pop(id(writer), None) or new_card()
    measure_into(card, "end", run)
    moved = placement_moved(card)
    card["placement_moved"] = moved
    writer.write_json(CARD, card, DESCRIPTION)
    log(f"[run] machine card at the end: {summary(card, 'end')}"
        + (f"; the placement moved ({in_words(moved)} changed beyond their spread)" if moved else ""))


def add_to_recording(path: str | os.PathLike, log: Callable[[str], None] = print, run: Callable | None = None,
                     started: dict | None = None) -> Path:
    """Add a card to a sealed recording (when the runner's hook is not in).  ``started``: a card whose start
    phase was measured just before the run (see ``around``); without it both phases are measured now, and the
    card says it was added after the run."""
    from .recording import MANIFEST, Recording, sha256_of

    folder = Path(path)
    Recording.open(folder)  # a complete, unchanged recording, or a clear error
    if (folder / CARD).exists():
        raise CardError(f"recording {folder}: {CARD} already exists; refusing to replace it")
    card = started if started is not None else measure_into(new_card(), "start", run)
    card = measure_into(card, "end", run)
    card["placement_moved"] = placement_moved(card)
    if started is None:
        card["added_after_the_run"] = True
    (folder / CARD).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    mpath = folder / MANIFEST
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    manifest["files"].append({"path": CARD, "sha256": sha256_of(folder / CARD), "bytes": (folder / CARD).stat().st_size,
                              "description": DESCRIPTION + " (added after the run)"})
    manifest["files"].sort(key=lambda f: f["path"])
    mpath.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    Recording.open(folder)
    log(f"{folder}: machine card added: {summary(card, 'start')}")
    return folder / CARD


# -- reading ------------------------------------------------------------------------------------------------

def validate(card: Any, where: str) -> dict:
    errors = sorted(jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
                    .iter_errors(card), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        field = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise CardError(f"{where}: field '{field}': {err.message}")
    return card


def load(recording) -> dict | None:
    """The recording's card (a :class:`~contention_book.harness.recording.Recording`), or None without one."""
    if recording is None or not recording.has(CARD):
        return None
    return validate(recording.read_json(CARD), f"recording {recording.path}: {CARD}")


@dataclass(frozen=True)
class Cost:
    """One quantity of a card over its measured phases: the medians' middle and the p10-p90 hull."""

    quantity: str
    median: float
    low: float
    high: float
    minimum: float
    n: int
    unit: str
    phases: tuple[str, ...]


def cost(card: Mapping, quantity: str) -> Cost | None:
    phases = card.get("phases", {})
    got = [(name, phases[name]["costs"][quantity]) for name in ("start", "end")
           if "costs" in phases.get(name, {}) and quantity in phases[name]["costs"]]
    if not got:
        return None
    meds = [c["median"] for _, c in got]
    return Cost(quantity, float(sum(meds) / len(meds)), min(c["p10"] for _, c in got), max(c["p90"] for _, c in got),
                min(c["min"] for _, c in got), sum(c["n"] for _, c in got), got[0][1]["unit"],
                tuple(name for name, _ in got))


def clock_ghz(card: Mapping) -> float | None:
    """The clock the CPU ran at: 1 / the fastest batch's cycle (a busy machine only slows a batch)."""
    c = cost(card, "cycle")
    return 1.0 / c.minimum if c and c.minimum > 0 else None


def placement_moved(card: Mapping) -> list[str]:
    """The quantities whose start and end p10-p90 intervals do not overlap: the placement moved between them."""
    p = card.get("phases", {})
    s, e = p.get("start", {}).get("costs"), p.get("end", {}).get("costs")
    if not s or not e:
        return []
    return [q for q in ("one_way_transfer", "futex_wake", "context_switch", "atomic_contended")
            if q in s and q in e and (s[q]["p90"] < e[q]["p10"] or e[q]["p90"] < s[q]["p10"])]


# -- the rules of physics -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    name: str
    broken: bool
    says: str
    bars: tuple[str, ...] = ()   # the costs no model may use while the rule is broken


def rule_batched(card: Mapping) -> Rule:
    """A contended atomic cheaper than a one-way transfer: the increments are batched while one core holds
    the line, so the contended cost is no per-transfer cost (and no model assumes one transfer per op)."""
    a, x, b = cost(card, "atomic_contended"), cost(card, "one_way_transfer"), cost(card, "ops_per_transfer")
    name = "contended atomic ≥ one-way transfer"
    if not a or not x:
        return Rule(name, False, "not measured")
    # a repetition in which the line never moved reports all its increments (machine_card.c): not a count of
    # increments per transfer, so a p90 that is one says so instead of printing it as a number
    never_moved = bool(b) and b.high >= 100 * max(b.low, 1.0)
    # the p90 is such a repetition's count; a median as high means half of them or more
    often = "half" if b and never_moved and b.median >= 0.999 * b.high else "a tenth"
    per = ((f"{num(b.low)} increments per transfer at the p10; in at least {often} of the repetitions the line never "
            "moved between the cores, and such a repetition reports every increment it made, not a count per "
            "transfer" if never_moved else
            f"{num(b.median)} increments per transfer (p10–p90 {num(b.low)}–{num(b.high)})") if b
           else "increments per transfer unmeasured")
    if a.median < x.median:
        implied = x.median / b.median if b and not never_moved and b.median > 0 else 0.0
        clash = (f". These cannot all hold at once ({num(b.median)} increments a transfer of {num(x.median)} ns "
                 f"is at least {num(implied)} ns an increment): the card's costs come from runs in which the two "
                 "virtual CPUs may have sat on different cores") if implied > 2 * a.median else ""
        return Rule(name, True, f"a contended increment ({num(a.median)} ns) costs less than a one-way transfer "
                    f"({num(x.median)} ns): the line stays with one core for a batch of increments; measured {per}"
                    + clash, ("atomic_contended_per_transfer",))
    return Rule(name, False, f"holds: {num(a.median)} ns ≥ {num(x.median)} ns; {per}")


def rule_private_cycle(card: Mapping) -> Rule:
    """A private increment below one cycle at the measured clock measures code generation, not the CPU."""
    ghz = clock_ghz(card)
    name = "private increment ≥ one cycle"
    if not ghz:
        return Rule(name, False, "no clock measured")
    below = []
    for q in ("atomic_private", "plain_private"):
        c = cost(card, q)
        if c and c.median * ghz < 1.0:
            below.append((q, c.median * ghz))
    if below:
        return Rule(name, True, "; ".join(f"{WORDS[q]}: {cyc:.2f} cycles at {ghz:.2f} GHz, below one: the "
                                          "benchmark measures code generation" for q, cyc in below),
                    tuple(q for q, _ in below))
    return Rule(name, False, f"holds at {ghz:.2f} GHz")


def rule_handoff(card: Mapping, handoff_ns: float | None = None, what: str = "futex wake-up") -> Rule:
    """A hand-off below the one-way transfer means its two ends shared a core or a cache."""
    x = cost(card, "one_way_transfer")
    name = f"{what} ≥ one-way transfer"
    if handoff_ns is None:
        w = cost(card, "futex_wake")
        handoff_ns = w.median if w else None
    if not x or handoff_ns is None:
        return Rule(name, False, "not measured")
    if handoff_ns < x.median:
        return Rule(name, True, f"the {what} ({num(handoff_ns)} ns) is faster than a one-way transfer "
                    f"({num(x.median)} ns): its two ends shared a core or a cache", (what,))
    return Rule(name, False, f"holds: {num(handoff_ns)} ns ≥ {num(x.median)} ns")


def rules(card: Mapping) -> list[Rule]:
    return [rule_batched(card), rule_private_cycle(card), rule_handoff(card)]


def num(v: float) -> str:
    """A card's number as a page prints it: three significant digits, never in exponent form (43,100, not
    4.31e+04)."""
    if v != v:
        return "—"
    a = abs(v)
    if a >= 100:
        return f"{float(f'{v:.3g}'):,.0f}"
    return f"{v:.3g}"


def barred(card: Mapping) -> set[str]:
    return {b for r in rules(card) if r.broken for b in r.bars}


SHORT_WORDS = {"one_way_transfer": "the line transfer", "futex_wake": "the wake-up", "context_switch": "the context "
               "switch", "atomic_contended": "the contended increment", "ops_per_transfer": "increments per transfer",
               "atomic_private": "the private atomic increment", "plain_private": "the plain increment",
               "cycle": "the clock cycle", "atomic_contended_per_transfer": "the contended increment as a transfer"}


def in_words(quantities) -> str:
    """Card quantities named as a page says them ("the line transfer and the wake-up"), not by their keys."""
    names = [SHORT_WORDS.get(q, q.replace("_", " ")) for q in quantities]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# -- words and pages ----------------------------------------------------------------------------------------

def summary(card: Mapping, phase: str) -> str:
    p = card.get("phases", {}).get(phase, {})
    if "error" in p:
        return f"not measured ({p['error']})"
    c = p.get("costs", {})
    pick = [("one_way_transfer", "transfer"), ("futex_wake", "wake"), ("context_switch", "switch"),
            ("atomic_contended", "contended add")]
    return ", ".join(f"{w} {c[q]['median']:,.1f} ns" for q, w in pick if q in c)


def card_markdown(card: Mapping, title: str) -> str:
    """One card as Markdown: topology, a table of every quantity per phase, the rules, and placement."""
    t = card["topology"]
    sib = {True: "SMT siblings (one core)", False: "on different cores", None: "unknown"}[t.get("pair_are_siblings")]
    if t.get("hypervisor") and t.get("pair_are_siblings") is not None:  # a guest sees its own topology, not the host's
        sib += ", as the guest sees them"
    lines = [f"### {title}", "",
             f"{t.get('cpu_model') or 'unknown CPU'}; {t.get('sockets') or '?'} socket(s), {t.get('cores')} core(s), "
             f"{t.get('logical_cpus')} logical CPUs; the run used CPUs {', '.join(map(str, t['cpus_used']))}; measured "
             f"on CPUs {' and '.join(map(str, t['pair']))} ({sib}); hypervisor: {t.get('hypervisor') or 'none seen'}"
             + (f" ({'; '.join(t['hypervisor_evidence'])})" if t.get("hypervisor_evidence") else "")
             + (f"; clock {clock_ghz(card):.2f} GHz measured" if clock_ghz(card) else "")
             + (f", {t['nominal_mhz']:.0f} MHz nominal" if t.get("nominal_mhz") else "") + "."]
    if card.get("added_after_the_run"):
        lines[-1] += " Added after the run (not measured during it)."
    phases = card.get("phases", {})
    names = list(phases)
    import html as html_

    head = "<th>quantity</th>" + "".join(f"<th>{html_.escape(n)} (median, p10–p90)</th>" for n in names) + "<th>unit</th>"
    body = []
    for q in QUANTITIES:
        cells = []
        unit = ""
        for n in names:
            c = phases[n].get("costs", {}).get(q)
            cells.append(f"{num(c['median'])} ({num(c['p10'])}–{num(c['p90'])})" if c else "—")
            unit = c["unit"] if c else unit
        body.append(f"<tr><td>{html_.escape(WORDS[q])}</td>" + "".join(f"<td>{x}</td>" for x in cells)
                    + f"<td>{html_.escape(unit)}</td></tr>")
    lines += ["", "```{raw} html", '<div class="table-wrap"><table class="book-table"><caption>The machine card of '
              f"{html_.escape(title)}: each quantity at the run's start and end</caption><thead><tr>{head}</tr>"
              f"</thead><tbody>{''.join(body)}</tbody></table></div>", "```"]
    for n in names:
        if "error" in phases[n]:
            lines.append(f"\n*{n}: not measured: {phases[n]['error']}*")
        elif phases[n].get("load_1min") is not None:
            load, cpus = phases[n]["load_1min"], t.get("logical_cpus") or 0
            busy = (f" The machine was busy (load above its {cpus} CPUs): the spreads include time other work held "
                    "the CPUs, and a contended run may have had one thread running at a time.") if load > cpus else ""
            lines.append(f"\n{n}: measured at {phases[n]['taken']}, 1-minute load {load}.{busy}")
    lines.append("")
    for r in rules(card):
        lines.append(f"- {r.name}: {'**broken**: ' if r.broken else ''}{r.says}"
                     + (f" (so no model uses {in_words(r.bars)})" if r.broken and r.bars else ""))
    moved = placement_moved(card)
    if moved:
        placement = f"**moved** between start and end ({in_words(moved)} changed beyond their spread)"
    else:
        placement = "start and end agree within their spread" if len(names) > 1 else "one phase only"
    lines.append(f"- placement: {placement}")
    return "\n".join(lines) + "\n"


def cards_markdown(data_root: Path | None = None) -> str:
    """The Data page's "Machine cards" section: every measured recording's card, or that it has none."""
    from .recording import data_root as default_root

    root = data_root or default_root()
    out = ["## Machine cards", "",
           "Each measured recording carries the hand-off costs of the CPUs it ran on, measured at its start and "
           "its end by the book's machine-card program, a small C program; the chapters' models take their costs "
           "from these cards only.", ""]
    for manifest in sorted(root.glob("*/*/manifest.json")):
        try:
            m = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if m.get("kind") != "measured":
            continue
        title = f"{manifest.parent.parent.name} / {manifest.parent.name}"
        path = manifest.parent / CARD
        if not path.is_file():
            out.append(f"### {title}\n\n*No machine card in this recording.*\n")
            continue
        try:
            card = validate(json.loads(path.read_text(encoding="utf-8")), str(path))
        except (CardError, ValueError) as exc:
            out.append(f"### {title}\n\n*Machine card unreadable: {exc}*\n")
            continue
        out.append(card_markdown(card, title))
    return "\n".join(out)


MODELS_METHOD = (  # Findings' paragraph on how the capacity models are built and judged (book_pages uses it)
    "Each chapter ends (on its details page) with small models whose costs come only from the machine card of the "
    "recording the page renders (a line transfer, a futex wake-up, increment costs, measured on the run's CPUs at "
    "its start and end), plus uncontended measurements of the same recording and the article's description of its "
    "workload. Each model first predicts one of this machine's own contended measurements (*Predictions for this "
    "machine*); only then does it predict a number the article published, which is never an input. Intervals are "
    "95%, propagated from the inputs' intervals; a published number keeps its own precision (\"around 5.5 s\" is "
    "5.45–5.55 s) and a published bound (\"over 4 min\") is compared as a bound. *Predicted*: the value overlaps "
    "the interval; *predicted as a bound* or *as a range*: it lies on the bound's side or inside a range of two "
    "limiting cases (a range is never a probability interval); *missed*: outside, by the computed ratio. Not "
    "scored: *model invalid* (the output leaves the model's domain, such as a negative time, or the run does not "
    "test the model), *published only* (every input is published), *workload bound* (it follows from the "
    "workload's description alone), *model failed here* (the model missed this machine first), and *no model*. A "
    "card that breaks a rule of physics is shown with the rule, and no model uses the cost it breaks.")
USL_METHOD = (
    "Where a measured curve has four or more concurrency levels within the machine's CPUs (one of them a single "
    "session), the chapter fits Gunther's Universal Scalability Law X(N) = λN / (1 + σ(N−1) + κN(N−1)) to those "
    "levels with SciPy's curve_fit (in log throughput), with percentile intervals from scipy.stats.bootstrap, and "
    "shows the residuals. σ is the serial fraction (contention), κ the cost of keeping shared data coherent, and "
    "the curve peaks at N* = √((1−σ)/κ). One line transfer per operation is a serial cost, so its counterpart "
    "(t_xfer · λ, from the recording's card) stands beside σ. Levels beyond the CPUs are not fitted: there, σ "
    "would also hold the time threads wait for a CPU. On this book's own 2-CPU recordings no curve qualifies.")


def machine_predictions_markdown(rows_by_chapter: Mapping[str, Sequence[Mapping]],
                                 chapter_links: Mapping[str, str] | None = None) -> str:
    """The Findings section "Predictions for this machine": each chapter's rows (saved by the chapter as
    ``<chapter>-machine.json``), with the same columns and verdict rule as the article predictions.
    ``chapter_links``: each chapter's title linked to its page (HTML, by slug), shown in the chapter column; a
    chapter without one shows its slug."""
    out = ["## Predictions for this machine", "",
           "Before a chapter's model predicts the article's machine, it predicts one of this machine's own "
           "contended measurements from its uncontended ones and the recording's machine card, with the same "
           "verdict rule. A model that misses here has its article prediction marked *model failed here*, not scored.",
           ""]
    rows = [(ch, r) for ch, rs in rows_by_chapter.items() for r in rs]
    if not rows:
        return "\n".join(out + ["*No chapter saved a prediction for this machine in this build.*", ""])
    import html as html_

    cols = ("quantity", "equation", "inputs", "predicted", "published", "verdict")
    heads = ("chapter", "quantity", "equation", "inputs", "predicted", "measured", "verdict")
    links = chapter_links or {}
    body = "".join("<tr>" + f"<td>{links.get(ch) or html_.escape(ch)}</td>"
                   + "".join(f"<td>{html_.escape(str(r.get(c, '—')))}</td>" for c in cols) + "</tr>"
                   for ch, r in rows)
    table = ('<div class="table-wrap"><table class="book-table text-table" id="machine-predictions"><caption>What '
             "each chapter's model predicts for this machine's own contended measurements, from its uncontended "
             "ones and the recording's machine card, against what the recording measured</caption><thead><tr>"
             + "".join(f"<th>{h}</th>" for h in heads) + f"</tr></thead><tbody>{body}</tbody></table></div>")
    return "\n".join(out) + "\n```{raw} html\n" + table + "\n```\n"


def saved_machine_rows(predictions_dir: Path) -> dict[str, list[dict]]:
    """``<chapter>-machine.json`` files a build saved, by chapter."""
    out = {}
    for f in sorted(Path(predictions_dir).glob("*-machine.json")):
        out[f.name[: -len("-machine.json")]] = json.loads(f.read_text(encoding="utf-8"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m contention_book.harness.machine_card", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="print a card of this machine (both phases, one after the other)")
    m.add_argument("--cpus", default="", help="the pair to measure, e.g. 0,1 (default: the first two allowed)")
    a = sub.add_parser("add", help="add a card to a sealed recording (at re-record time, without the runner hook)")
    a.add_argument("recording", nargs="+")
    r = sub.add_parser("around", help="measure the start phase, run a live run that records to RECORDING, measure "
                                      "the end phase and add the card: ... around DIR -- python -m contention_book.run "
                                      "<chapter> --engine native --record-to DIR")
    r.add_argument("recording")
    r.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    if args.cmd == "around":
        import subprocess

        command = [c for c in args.command if c != "--"]
        if not command:
            print("machine_card around: give the run's command after --", file=sys.stderr)
            return 2
        started = measure_into(new_card(), "start")
        print(f"machine card at the start: {summary(started, 'start')}", file=sys.stderr)
        status = subprocess.call(command)
        if status != 0:
            print(f"machine_card around: the run exited {status}; no card added", file=sys.stderr)
            return status
        try:
            add_to_recording(args.recording, log=lambda line: print(line, file=sys.stderr), started=started)
        except (CardError, ValueError, OSError) as exc:
            print(f"machine_card around: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.cmd == "measure":
        pair = [int(c) for c in args.cpus.split(",")] if args.cpus else None
        card = measure_into(measure_into(new_card(pair), "start"), "end")
        card["placement_moved"] = placement_moved(card)
        print(json.dumps(card, indent=2))
        print(card_markdown(card, "this machine"), file=sys.stderr)
        return 0
    for r in args.recording:
        try:
            add_to_recording(r)
        except (CardError, ValueError, OSError) as exc:
            print(f"machine_card add: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
