"""Command line: ``perftools summary|callers|diff|collapse|flame|export``.

The same questions as the library, for a reader at a shell with an export
in hand.  Bad input ends with one line naming the file, the line and what
was expected, and exit status 2; never a traceback.  ``-`` reads standard
input and ``-o -`` writes standard output, so perftools sits in a pipe
(``perf script | perftools collapse - | inferno-flamegraph``).  Heavy
modules (pandas, pyarrow, matplotlib) load only when a command needs them,
so ``--help`` and ``--version`` answer at once.
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
    ap.add_argument("--version", action="version", version=f"perftools (contention-book) {_version()}")
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


def _load(path: str, args):
    from .importers import load

    path, fmt, opts = _resolve(path, args)
    p = load(path, fmt, **opts)
    if path in _SPOOLED:
        p.meta["source"] = _SPOOLED[path]
    _warn(p.meta)
    if _filtered(args):
        p = p.filter(process=args.process, thread=args.thread, module=args.module, start=args.start, end=args.end)
    return p


def _num(w: float) -> str:
    return f"{w:,.0f}" if float(w).is_integer() else f"{w:,.3f}"


def _unspool(text: str) -> str:
    for tmp, name in _SPOOLED.items():
        text = text.replace(tmp, name)
    return text


def _head(p, label: str = "") -> str:
    unit = p.meta.get("weight_unit", "")
    return (
        f"{label}{p.meta.get('source', '')} [{p.meta.get('format', '?')}]: {len(p.samples):,} sample rows, "
        f"{p.n_stacks:,} distinct stacks, total weight {_num(p.total_weight)} {unit}"
    )


def _table(df, name_col: str, title: str) -> list[str]:
    out = [title, f"{'excl %':>8} {'incl %':>8} {'exclusive':>14} {'inclusive':>14}  {name_col}"]
    for r in df.itertuples(index=False):
        out.append(
            f"{r.exclusive_pct:8.2f} {r.inclusive_pct:8.2f} {_num(r.exclusive):>14} {_num(r.inclusive):>14}  {getattr(r, name_col)}"
        )
    return out


def _summary(args) -> list[str]:
    from . import analysis

    p = _load(args.file, args)
    out = [_head(p), ""]
    out += _table(analysis.top_functions(p, args.top, sort=args.sort), "function", f"Top functions by {args.sort} weight")
    out += [""] + _table(analysis.top_modules(p, args.top, sort=args.sort), "module", f"Modules by {args.sort} weight")
    return out


def _callers(args) -> list[str]:
    from . import analysis

    p = _load(args.file, args)
    fn = analysis.callees if args.callees else analysis.callers
    df = fn(p, args.function, depth=args.depth)
    df = df[(df["depth"] == 0) | (df["pct_of_function"] >= args.min_pct)]
    what = "Callees" if args.callees else "Callers (inverted stacks)"
    out = [_head(p), "", f"{what} of {df['frame'].iloc[0]}, depth {args.depth}",
           f"{'% total':>8} {'% func':>8} {'weight':>14}  frame"]
    for r in df.itertuples(index=False):
        out.append(f"{r.pct:8.2f} {r.pct_of_function:8.2f} {_num(r.weight):>14}  {'  ' * r.depth}{r.frame}")
    return out


def _diff(args) -> list[str]:
    from . import analysis

    a, b = _load(args.a, args), _load(args.b, args)
    df = analysis.diff(a, b, by=args.by, measure=args.measure, n=args.top)
    out = [_head(a, "A: "), _head(b, "B: "), "",
           f"{args.measure.capitalize()} weight by {args.by}, sorted by |change|",
           f"{'A %':>8} {'B %':>8} {'change pp':>10}  {args.by}"]
    for r in df.itertuples(index=False):
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
        p = _load(path, args)
        if scale:
            s = p.samples.copy()
            s["weight"] = s["weight"] * scale
            p = type(p)(p.frames, p.stack_offsets, p.stack_frames, s, dict(p.meta))
        from .importers import folded

        lines = folded.lines(p, process_root=args.process_root, integer=bool(scale))
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

    kw = {"weight": opts["weight"], "event": opts["event"]}
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


COMMANDS = {"summary": _summary, "callers": _callers, "diff": _diff, "collapse": _collapse, "flame": _flame,
            "export": _export}


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not fail on a closed pipe."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv=None) -> int:
    """Run the command line; returns the exit status (2 on bad input)."""
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
