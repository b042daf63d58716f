"""One parser for every chapter's live-run parameters.

A chapter declares its parameters as :class:`Param` rows in its ``spec.py``.
Values arrive as strings (``--param sessions=1,2,4`` on the command line,
``PARAMS=...`` through make) or as Python values (a notebook's parameters
cell).  :func:`parse` turns them into typed values with the engine's
defaults filled in, and refuses an unknown name, a value of the wrong type,
one out of range or one not allowed, naming the parameter, the value and
what was expected.  An empty value (``""`` or ``None``) means "the default".
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

KINDS = ("int", "float", "bool", "str", "ints", "strs", "identifier")
TRUE = ("1", "true", "yes", "on", "y", "t")
FALSE = ("0", "false", "no", "off", "n", "f")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


class ParameterError(ValueError):
    """A live-run parameter is unknown or its value is not acceptable."""


@dataclass(frozen=True)
class Param:
    """One parameter of a chapter's live runs.

    ``default`` is a value or a mapping engine -> value; ``choices`` likewise
    (for ``str``/``strs``).  ``engines`` lists the engines it applies to
    (``None``: all).  ``minimum``/``maximum`` bound numbers and list items.
    """

    name: str
    kind: str
    help: str
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: Any = None
    engines: tuple[str, ...] | None = None
    check: Callable[[Any, str], str | None] | None = None  # (value, engine) -> what was expected, or None if fine

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"parameter {self.name}: kind {self.kind!r}, expected one of {KINDS}")

    def default_for(self, engine: str) -> Any:
        return self.default.get(engine) if isinstance(self.default, Mapping) else self.default

    def choices_for(self, engine: str) -> tuple | None:
        c = self.choices.get(engine) if isinstance(self.choices, Mapping) else self.choices
        return tuple(c) if c is not None else None

    def applies_to(self, engine: str) -> bool:
        return self.engines is None or engine in self.engines


def is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or (
        isinstance(value, (list, tuple)) and not value)


def _expected(p: Param, engine: str) -> str:
    what = {"int": "an integer", "float": "a number", "bool": "true or false (yes/no, on/off, 1/0)",
            "str": "text", "ints": "a comma-separated list of integers", "strs": "a comma-separated list",
            "identifier": "a plain identifier (a letter or _, then letters, digits or _, at most 63)"}[p.kind]
    bounds = []
    if p.minimum is not None:
        bounds.append(f">= {p.minimum:g}")
    if p.maximum is not None:
        bounds.append(f"<= {p.maximum:g}")
    if bounds:
        what += (" each" if p.kind == "ints" else "") + " " + " and ".join(bounds)
    choices = p.choices_for(engine)
    if choices:
        what += f" from: {', '.join(map(str, choices))}"
    return what


def _scalar(p: Param, engine: str, raw: Any, kind: str) -> Any:
    def bad() -> ParameterError:
        return ParameterError(f"parameter {p.name}={raw!r}: expected {_expected(p, engine)}")

    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in TRUE:
            return True
        if text in FALSE:
            return False
        raise bad()
    if kind == "int":
        if isinstance(raw, bool):
            raise bad()
        if isinstance(raw, float):
            if not raw.is_integer():
                raise bad()
            raw = int(raw)
        try:
            value = int(str(raw).strip().replace("_", ""))
        except ValueError:
            raise bad() from None
    elif kind == "float":
        if isinstance(raw, bool):
            raise bad()
        try:
            value = float(str(raw).strip())
        except ValueError:
            raise bad() from None
        if not math.isfinite(value):
            raise bad()
    else:
        value = str(raw).strip()
        if kind == "identifier" and not IDENTIFIER.match(value):
            raise bad()
        choices = p.choices_for(engine)
        if choices and value not in choices:
            raise bad()
        return value
    if (p.minimum is not None and value < p.minimum) or (p.maximum is not None and value > p.maximum):
        raise bad()
    return value


def _items(raw: Any) -> list:
    if isinstance(raw, (list, tuple)):
        return list(raw)
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return [raw]
    return [s for s in (x.strip() for x in str(raw).split(",")) if s]


def convert(p: Param, raw: Any, engine: str) -> Any:
    """One value, typed and checked; lists keep their order and refuse duplicates."""
    if p.kind in ("ints", "strs"):
        try:
            items = [_scalar(p, engine, x, "int" if p.kind == "ints" else "str") for x in _items(raw)]
        except ParameterError:
            raise ParameterError(f"parameter {p.name}={raw!r}: expected {_expected(p, engine)}") from None
        if not items:
            raise ParameterError(f"parameter {p.name}={raw!r}: expected {_expected(p, engine)}")
        if len(set(items)) != len(items):
            raise ParameterError(f"parameter {p.name}={raw!r}: a value is given twice; expected each value once")
        return items
    return _scalar(p, engine, raw, p.kind)


def check_names(params: Sequence[Param], names: Iterable[str]) -> None:
    """Refuse a name no parameter of the chapter has, with the closest known name (a typo is the usual cause)."""
    known = sorted({p.name for p in params})
    unknown = sorted(set(names) - set(known))
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6) or difflib.get_close_matches(
            name.lower().replace("-", "_"), known, n=1, cutoff=0.6)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ParameterError(f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(hints)}: this chapter "
                         f"has no parameter by that name; expected one of: {', '.join(known)}")


def parse(params: Sequence[Param], raw: Mapping[str, Any], engine: str) -> dict[str, Any]:
    """Typed values for every parameter that applies to ``engine``, defaults filled in."""
    check_names(params, raw)
    out: dict[str, Any] = {}
    for p in params:
        value = raw.get(p.name)
        if not p.applies_to(engine):
            if not is_empty(value):
                raise ParameterError(f"parameter {p.name}={value!r} applies only to engine "
                                     f"{' or '.join(p.engines or ())}, not {engine}")
            continue
        if is_empty(value):
            default = p.default_for(engine)
            out[p.name] = list(default) if isinstance(default, tuple) else default
        else:
            out[p.name] = convert(p, value, engine)
            problem = p.check(out[p.name], engine) if p.check else None
            if problem:
                raise ParameterError(f"parameter {p.name}={value!r}: expected {problem}")
    return out


def split_assignments(items: Sequence[str], where: str = "--param") -> dict[str, str]:
    """``["a=1", "b=x,y"]`` -> ``{"a": "1", "b": "x,y"}``; a clear error for a malformed item."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = str(item).partition("=")
        name = name.strip()
        if not sep or not name:
            raise ParameterError(f"{where} {item!r}: expected NAME=VALUE")
        if name in out:
            raise ParameterError(f"{where}: parameter {name} is given twice")
        out[name] = value.strip()
    return out


def describe(params: Sequence[Param], engine: str | None = None) -> str:
    """Help text: one line a parameter, with its default per engine."""
    lines = []
    for p in params:
        if engine and not p.applies_to(engine):
            continue
        default = p.default if not isinstance(p.default, Mapping) else (
            p.default.get(engine) if engine else ", ".join(f"{e}: {v}" for e, v in p.default.items()))
        only = f" [{'/'.join(p.engines)} only]" if p.engines else ""
        lines.append(f"  {p.name} ({p.kind}){only}: {p.help} (default {default})")
    return "\n".join(lines)


# -- the parameters every chapter shares, by the same names ------------------------------------
def sessions(default: Any, help: str = "session counts to measure (native: worker threads)") -> Param:
    return Param("sessions", "ints", help, default=default, minimum=1, maximum=1024)


def variants(choices: Mapping[str, Sequence[str]]) -> Param:
    return Param("variants", "strs", "subset of the engine's variants, in order", default=dict(choices),
                 choices=dict(choices))


def duration_s(default: Any, help: str = "most seconds per measured point") -> Param:
    return Param("duration_s", "float", help, default=default, minimum=0.01, maximum=86_400)


def repetitions(default: Any, help: str = "repetitions of every point, interleaved across variants") -> Param:
    """A mapping default also names the engines whose runners repeat (the others run each point once)."""
    engines = tuple(default) if isinstance(default, Mapping) else None
    return Param("repetitions", "int", help, default=default, minimum=1, maximum=1000, engines=engines)


def database(engines: tuple[str, ...] = ("postgres", "sqlserver")) -> Param:
    return Param("database", "identifier", "the database the harness creates, marks as its own and works in",
                 default="contention_lab", engines=engines)


def capture_stacks(engines: tuple[str, ...] = ("postgres",)) -> Param:
    return Param("capture_stacks", "bool", "sample CPU stacks with perf where perf is allowed", default=True,
                 engines=engines)


def stacks(engines: tuple[str, ...] = ("sqlserver",)) -> Param:
    return Param("stacks", "str", "stack exports to store with the run: a path, or variant:path pairs joined "
                 "by commas (WPA CSV or tree, xperf text, perf script, folded)", default="", engines=engines)


def load(engines: tuple[str, ...] = ("postgres",), warmup_default: float = 0.5,
         sqlserver_waits: bool = False) -> tuple[Param, ...]:
    """How the sessions driver drives and watches a point: warm-up, closed or open loop, wait sampling.

    Every chapter that runs the sessions driver takes these, by these names.  ``sqlserver_waits``: the
    chapter's SQL Server runner samples waits too, so ``wait_source`` applies there (polling or xevents).
    """
    return (
        Param("warmup_s", "float", "seconds every session runs its call before the measured window",
              default=warmup_default, minimum=0, maximum=3600, engines=engines),
        Param("rate", "float", "open loop: calls per second across all sessions, latency counted from each "
              "call's scheduled start (empty: closed loop)", default=None, minimum=0.001, maximum=10_000_000,
              engines=engines),
        Param("arrival", "str", "open-loop schedule: poisson (exponential gaps) or fixed", default="poisson",
              choices=("poisson", "fixed"), engines=engines),
        wait_source(tuple(e for e in engines if e == "postgres") + (("sqlserver",) if sqlserver_waits else ())),
    )


def wait_source(engines: tuple[str, ...] = ("postgres",)) -> Param:
    """Where wait samples come from.  On SQL Server ``xevents`` is an Extended Events session, a server-scope
    change: opt-in (allow_server_changes), so polling is the default there and ``auto`` means polling."""
    choices = {"postgres": ("auto", "pg_wait_sampling", "polling"), "sqlserver": ("auto", "polling", "xevents")}
    return Param("wait_source", "str", "wait sampling: PostgreSQL auto (pg_wait_sampling where the server loads it, "
                 "else polling), pg_wait_sampling or polling; SQL Server polling (auto) or xevents (an Extended "
                 "Events session on the run's sessions, created and dropped by the run: needs "
                 "allow_server_changes)", default={"postgres": "auto", "sqlserver": "polling"},
                 choices={e: choices[e] for e in engines}, engines=engines)
