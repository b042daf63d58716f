"""Command line: ``perftools summary|callers|diff|collapse|flame|export|offcpu|wakeup``.

The same questions as the library, for a reader at a shell with an export
in hand.  Bad input ends with one line naming the file, the line and what
was expected, and exit status 2; never a traceback.  ``-`` reads standard
input and ``-o -`` writes standard output, so perftools sits in a pipe
(``perf script | perftools collapse - | inferno-flamegraph``).  Heavy
modules (pandas, pyarrow, matplotlib) load only when a command needs them,
so ``--help`` and ``--version`` answer at once; summary, callers, diff and
collapse never load pandas (:class:`.builder.SampleArrays`, :mod:`.tops`,
:mod:`.callgraph`), flame and export draw on the pandas Profile.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["main"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("contention-book")
    except PackageNotFoundError:
        return "unknown"


class _Version(argparse.Action):
    """``--version``, looked up only when asked (importlib.metadata costs every other command 15 ms)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"perftools (contention-book) {_version()}")
        parser.exit()


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("input and filters")
    g.add_argument("--format", help="wpa_csv, wpa_tree, xperf_dumper, perf_script or folded (default: sniff)")
    g.add_argument("--root-is-process", action="store_true",
                   help="folded input: the first frame of each line is the process (detected when it reads 'name (pid)')")
    g.add_argument("--process", action="append", help="keep samples of this process (name, 'name (pid)' or pid); repeatable")
    g.add_argument("--thread", action="append", type=int, help="keep samples of this thread id; repeatable")
    g.add_argument("--module", action="append", help="keep samples whose stack has a frame in this module; repeatable")
    g.add_argument("--start", type=float, help="keep samples at or after this time (seconds)")
    g.add_argument("--end", type=float, help="keep samples at or before this time (seconds)")
    g.add_argument("--weight", choices=("period", "samples"),
                   help="perf script: weigh each sample by its event period (default when the headers carry one, "
                        "as perf report does) or count samples")
    g.add_argument("--event", help="perf script: keep this event (default: the first in the file; "
                                   "the others are listed on stderr)")
    g.add_argument("--strict", action="store_true",
                   help="perf script: a malformed line is an error (default: skip it, count it, report on stderr)")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="perftools", description="Sampled CPU stacks from WPA, xperf and perf exports. "
                                 "FILE may be '-' for standard input.")
    ap.add_argument("--version", action=_Version, help="show the version and exit")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    s = sub.add_parser("summary", help="top functions and modules by exclusive and inclusive weight")
    s.add_argument("file")
    s.add_argument("--top", type=int, default=20, help="rows per table (default 20)")
    s.add_argument("--sort", choices=("exclusive", "inclusive"), default="exclusive")
    _common(s)

    c = sub.add_parser("callers", help="who calls FUNCTION (inverted stacks), or what it calls")
    c.add_argument("file")
    c.add_argument("function", help="module!function or a function name")
    c.add_argument("--depth", type=int, default=3)
    c.add_argument("--callees", action="store_true", help="show callees instead of callers")
    c.add_argument("--min-pct", type=float, default=0.0, help="hide rows under this percent of the function")
    _common(c)

    d = sub.add_parser("diff", help="percentage-point change per function or module from A to B")
    d.add_argument("a")
    d.add_argument("b")
    d.add_argument("--by", choices=("function", "module"), default="function")
    d.add_argument("--measure", choices=("exclusive", "inclusive"), default="exclusive")
    d.add_argument("--top", type=int, default=20)
    _common(d)

    f = sub.add_parser("collapse", help="print folded stacks (root;...;leaf weight)")
    f.add_argument("file")
    f.add_argument("--process-root", action="store_true", help="write the process as the first frame")
    f.add_argument("--scale", type=float,
                   help="multiply weights by this and round to integers (inferno-flamegraph truncates fractional "
                        "counts: WPA's ms weights with --scale 1000 are whole microseconds)")
    f.add_argument("-o", "--output", help="write here instead of stdout (.gz: gzip'd; '-': stdout)")
    _common(f)

    g = sub.add_parser("flame", help="draw a flame graph (.png, .pdf via matplotlib; .svg interactive)")
    g.add_argument("file")
    g.add_argument("-o", "--output", required=True, help="FILE.png, .pdf or .svg, or '-' for SVG on stdout")
    g.add_argument("--title")
    g.add_argument("--min-fraction", type=float, default=None, help="merge boxes under this share (default 0.005 png, 0.001 svg)")
    g.add_argument("--icicle", action="store_true", help="root at the top, as WPA draws it")
    g.add_argument("--process-root", action="store_true", help="a level per process under the root")
    _common(g)

    for name, text in (("offcpu", "fold scheduler events (perf script of sched:sched_switch, -g) into off-CPU stacks, "
                                  "weighted by microseconds blocked, the blocking state as the top frame"),
                       ("wakeup", "fold wake-ups (sched:sched_waking or sched_wakeup, with sched_switch, -g): the woken "
                                  "thread, the waker's stack and the waker, weighted by microseconds blocked")):
        o = sub.add_parser(name, help=text, description=text + ". See book/perftools.md.")
        o.add_argument("file", help="perf script text (plain or .gz), or '-' for standard input")
        o.add_argument("-o", "--output", help="write here instead of stdout (.gz: gzip'd; '-': stdout)")
        o.add_argument("--state", action="append",
                       help="keep intervals whose blocked thread was in this state (S, D, R, ...); repeatable")
        o.add_argument("--strict", action="store_true",
                       help="a malformed line is an error (default: skip it, count it, report on stderr)")
        if name == "offcpu":
            o.add_argument("--no-process-root", action="store_true",
                           help="leave out the 'comm (pid)' first frame")
        o.add_argument("--stats", action="store_true", help="print the counts (intervals, dropped, skipped) on stderr")

    e = sub.add_parser("export", help="write the profile for another viewer: speedscope JSON, pprof, folded")
    e.add_argument("file")
    e.add_argument("--to", choices=("speedscope", "pprof", "folded"), required=True)
    e.add_argument("-o", "--output", default="-", help="where to write (default '-': stdout)")
    _common(e)
    return ap


_SPOOLED: dict[str, str] = {}  # temporary copy of stdin or a pipe -> the name the user gave


def _input(path: str) -> str:
    """A path the importers can read (twice if they must): stdin and pipes are spooled first."""
    from .source import is_stream_path, spool

    if not is_stream_path(path):
        return path
    tmp = spool(path)
    _SPOOLED[tmp] = "<stdin>" if path == "-" else path
    return tmp


def _resolve(path: str, args) -> tuple[str, str, dict]:
    """The readable path, its format and the importer's options from the command line."""
    from .sniff import canonical_format, sniff

    path = _input(path)
    fmt = canonical_format(args.format) if args.format else sniff(path)
    opts = {}
    if args.root_is_process:
        if fmt != "folded":
            raise ValueError(f"--root-is-process applies to folded stacks; {path} is {fmt}")
        opts["process_root"] = True
    perf_opts = {"weight": args.weight, "event": args.event}
    if fmt == "perf_script":
        opts.update(perf_opts, strict=args.strict)
    elif any(v is not None for v in perf_opts.values()):
        raise ValueError(f"--weight and --event apply to perf script captures; {path} is {fmt}")
    return path, fmt, opts


def _filtered(args) -> bool:
    return any(v is not None for v in (args.process, args.thread, args.module, args.start, args.end))


def _warn(meta: dict) -> None:
    for w in meta.get("warnings", ()):
        print(f"perftools: warning: {_unspool(w)}", file=sys.stderr)


def _load(path: str, args, arrays: bool = False):
    """The profile at ``path`` with the command's filters; ``arrays``: as :class:`.builder.SampleArrays`, with no
    pandas (the same importers and filters)."""
    import contextlib

    from .builder import arrays_only
    from .importers import load

    path, fmt, opts = _resolve(path, args)
    if arrays:
        _keep_pandas_out()
    with arrays_only() if arrays else contextlib.nullcontext():
        p = load(path, fmt, **opts)
    if path in _SPOOLED:
        p.meta["source"] = _SPOOLED[path]
    _warn(p.meta)
    if _filtered(args):
        p = p.filter(process=args.process, thread=args.thread, module=args.module, start=args.start, end=args.end)
    return p


_FROM_SHELL = False  # main() reads sys.argv: this process is the command line's own, not a library's


class _NoPandas:
    """A finder that refuses pandas: see :func:`_keep_pandas_out`."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("pandas is kept out of this perftools command", name=name)
        return None


def _keep_pandas_out() -> None:
    """pyarrow imports pandas on its first ``pa.array()``, to recognise pandas inputs: as long as reading
    a 200 MB export, for a command that draws no DataFrame.  In the command line's own process, for the
    commands that need no pandas (summary, collapse), ``import pandas`` fails; pyarrow then takes pandas
    as absent.  Never in a library caller's process (tests, notebooks)."""
    if _FROM_SHELL and "pandas" not in sys.modules and _NoPandas not in sys.meta_path:
        sys.meta_path.insert(0, _NoPandas)


def _load_arrays(path: str, args):
    """:func:`_load` as :class:`.builder.SampleArrays`: the same importers and filters, no pandas."""
    return _load(path, args, arrays=True)


def _num(w: float) -> str:
    return f"{w:,.0f}" if float(w).is_integer() else f"{w:,.3f}"


def _unspool(text: str) -> str:
    for tmp, name in _SPOOLED.items():
        text = text.replace(tmp, name)
    return text


def _head(p, label: str = "") -> str:
    unit = p.meta.get("weight_unit", "")
    rows = p.n_samples if hasattr(p, "n_samples") else len(p.samples)
    return (
        f"{label}{p.meta.get('source', '')} [{p.meta.get('format', '?')}]: {rows:,} sample rows, "
        f"{p.n_stacks:,} distinct stacks, total weight {_num(p.total_weight)} {unit}"
    )


def _table(rows, name_col: str, title: str) -> list[str]:
    """Rows with exclusive(_pct) and inclusive(_pct), named by ``name`` (tops.Row)."""
    out = [title, f"{'excl %':>8} {'incl %':>8} {'exclusive':>14} {'inclusive':>14}  {name_col}"]
    for r in rows:
        out.append(
            f"{r.exclusive_pct:8.2f} {r.inclusive_pct:8.2f} {_num(r.exclusive):>14} {_num(r.inclusive):>14}  {r.name}"
        )
    return out


def _summary(args) -> list[str]:
    from . import tops

    p = _load_arrays(args.file, args)
    total = p.total_weight
    if not (total >= 0 and total != float("inf")):  # importers check every weight; this is the last guard
        raise ValueError(f"{p.meta.get('source', args.file)}: expected weights that add up to a finite, "
                         f"non-negative total; found {total}")
    out = [_head(p), ""]
    out += _table(tops.top_functions(p, args.top, sort=args.sort), "function", f"Top functions by {args.sort} weight")
    out += [""] + _table(tops.top_modules(p, args.top, sort=args.sort), "module", f"Modules by {args.sort} weight")
    return out


def _callers(args) -> list[str]:
    from . import callgraph

    p = _load_arrays(args.file, args)
    fn = callgraph.callees if args.callees else callgraph.callers
    rows = [r for r in fn(p, args.function, depth=args.depth) if r.depth == 0 or r.pct_of_function >= args.min_pct]
    what = "Callees" if args.callees else "Callers (inverted stacks)"
    out = [_head(p), "", f"{what} of {rows[0].frame}, depth {args.depth}",
           f"{'% total':>8} {'% func':>8} {'weight':>14}  frame"]
    for r in rows:
        out.append(f"{r.pct:8.2f} {r.pct_of_function:8.2f} {_num(r.weight):>14}  {'  ' * r.depth}{r.frame}")
    return out


def _diff(args) -> list[str]:
    from . import tops

    a, b = _load_arrays(args.a, args), _load_arrays(args.b, args)
    rows = tops.diff(a, b, by=args.by, measure=args.measure, n=args.top)
    out = [_head(a, "A: "), _head(b, "B: "), "",
           f"{args.measure.capitalize()} weight by {args.by}, sorted by |change|",
           f"{'A %':>8} {'B %':>8} {'change pp':>10}  {args.by}"]
    for r in rows:
        out.append(f"{r.pct_a:8.2f} {r.pct_b:8.2f} {r.change_pp:+10.2f}  {r.name}")
    return out


def _collapse(args) -> list[str]:
    scale = getattr(args, "scale", None)
    path, fmt, opts = _resolve(args.file, args)
    if fmt == "perf_script" and not _filtered(args) and not scale:
        # the common pipe: straight from the parsed capture to folded lines, no Profile (no pandas); the C core
        # writes them itself when it reads this file (the usual shape, a plain file), else the Python reader
        if not args.process_root and _native_collapse(path, args.output, opts):
            return []
        from .importers import perf_script
        from .source import gzip_errors_named

        lines, meta = gzip_errors_named(perf_script.collapse)(path, process_root=args.process_root, **opts)
        _warn(meta)
    else:
        from .importers import folded

        p = _load_arrays(path, args)
        weight = p.weight * scale if scale else p.weight
        proc = (p.process_codes, p.process_names) if args.process_root else (None, None)
        lines = folded.lines_from(p.frame_names(), p.stack_offsets, p.stack_frames, p.stack_id, weight, *proc,
                                  integer=bool(scale))
    if not scale and any("." in ln[ln.rfind(" "):] for ln in lines):
        print("perftools: warning: some folded weights are fractional; inferno-flamegraph truncates them "
              "(flamegraph.pl keeps them): --scale 1000 writes whole thousandths", file=sys.stderr)
    if args.output and args.output != "-":
        from .importers import folded

        folded.write_lines(lines, args.output)
        return []
    return lines


def _native_collapse(path: str, output: str | None, opts: dict) -> bool:
    """Folded lines written by the C core to ``output`` (a path, ``.gz`` gzip'd, or stdout); False when
    the core does not read this file (nothing is written then)."""
    import gzip
    import io
    import shutil
    import tempfile

    from . import native_collapse

    kw = {"weight": opts["weight"], "event": opts["event"], "strict": opts.get("strict", False)}
    if not output or output == "-":
        try:
            sys.stdout.flush()
            fd = sys.stdout.fileno()
        except (AttributeError, ValueError, io.UnsupportedOperation):  # a captured stdout: no descriptor
            fd = None
        if fd is not None:
            meta = native_collapse.write(path, fd, **kw)
            if meta is not None:
                _warn(meta)
            return meta is not None
        got = native_collapse.collapse(path, **kw)
        if got is None:
            return False
        _warn(got[1])
        sys.stdout.write("".join(line + "\n" for line in got[0]))
        return True
    if output.endswith(".gz"):
        with tempfile.TemporaryFile() as tmp:
            meta = native_collapse.write(path, tmp.fileno(), **kw)
            if meta is None:
                return False
            tmp.seek(0)
            # mtime=0, as folded.write_lines: the same profile always gives the same bytes
            with open(output, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
                shutil.copyfileobj(tmp, gz, 1 << 20)
    else:
        with open(output, "wb") as out:
            meta = native_collapse.write(path, out.fileno(), **kw)
        if meta is None:
            return False
    _warn(meta)
    return True


def _export(args) -> list[str]:
    from . import export

    if args.to == "folded":
        args.process_root = False
        return _collapse(args)
    p = _load(args.file, args)
    export.write(p, args.to, sys.stdout.buffer if args.output == "-" else args.output)
    return [] if args.output == "-" else [f"wrote {args.output}"]


def _flame(args) -> list[str]:
    from . import flame

    p = _load(args.file, args)
    if not len(p.samples):
        raise ValueError("no samples left to draw after filtering")
    if args.output == "-":
        import io

        buf = io.StringIO()
        flame.write_svg(p, buf, title=args.title, icicle=args.icicle, process_root=args.process_root,
                        min_fraction=0.001 if args.min_fraction is None else args.min_fraction)
        return [buf.getvalue()]
    if args.output.lower().endswith(".svg"):
        flame.write_svg(p, args.output, title=args.title, icicle=args.icicle, process_root=args.process_root,
                        min_fraction=0.001 if args.min_fraction is None else args.min_fraction)
    else:
        fig = flame.flame_figure(p, title=args.title, icicle=args.icicle, process_root=args.process_root,
                                 min_fraction=0.005 if args.min_fraction is None else args.min_fraction)
        fig.savefig(args.output, dpi=150)
    return [f"wrote {args.output}"]


def _offcpu(args) -> list[str]:
    """``offcpu`` and ``wakeup``: one pass over the events, folded lines out (no pandas)."""
    from . import offcpu
    from .importers import folded
    from .source import gzip_errors_named

    path = _input(args.file)
    if args.cmd == "offcpu":
        got = gzip_errors_named(offcpu.offcpu)(path, strict=args.strict, process_root=not args.no_process_root,
                                               states=args.state)
    else:
        got = gzip_errors_named(offcpu.wakeup)(path, strict=args.strict, states=args.state)
    _warn({"warnings": got.warnings})
    if args.stats:
        s = got.stats()
        print("perftools: " + ", ".join(f"{k}={_unspool(str(v))}" for k, v in s.items() if k != "warnings"),
              file=sys.stderr)
    lines = got.lines()
    if args.output and args.output != "-":
        folded.write_lines(lines, args.output)
        return []
    return lines


COMMANDS = {"summary": _summary, "callers": _callers, "diff": _diff, "collapse": _collapse, "flame": _flame,
            "export": _export, "offcpu": _offcpu, "wakeup": _offcpu}


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not fail on a closed pipe."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv=None) -> int:
    """Run the command line; returns the exit status (2 on bad input)."""
    global _FROM_SHELL
    _FROM_SHELL = argv is None
    if _FROM_SHELL:
        import gc

        gc.disable()  # a short-lived process: the collector only walked the interned frames again and again
    if _FROM_SHELL and "numpy" not in sys.modules:
        # numpy's OpenBLAS starts a thread per CPU that spins after each call; nothing here multiplies
        # matrices, and on 2 CPUs the spinning took 6% of a summary's CPU from the C core's two threads
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors are 2, --help is 0
        return int(exc.code or 0)
    try:
        lines = COMMANDS[args.cmd](args)
    except BrokenPipeError:  # `... | head` closed the pipe while the C core was writing
        _quiet_stdout()
        return 0
    except KeyError as exc:  # unknown function name
        print(f"perftools: error: {_unspool(str(exc.args[0] if exc.args else exc))}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:  # FormatError is a ValueError
        print(f"perftools: error: {_unspool(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug, not bad input: say so, still no traceback
        print(f"perftools: internal error: {type(exc).__name__}: {_unspool(str(exc))}", file=sys.stderr)
        return 1
    finally:
        for tmp in list(_SPOOLED):
            try:
                os.unlink(tmp)
            except OSError:
                pass
            # keep the name for messages printed below
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head`
        _quiet_stdout()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
