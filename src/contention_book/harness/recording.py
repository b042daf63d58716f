"""Recordings: the one contract between a live run and a rendered chapter.

A recording is a directory with a ``manifest.json`` (validated against
``schemas/manifest-1.json``) and the data files it lists, each with its
sha256.  A live run writes one with :class:`RecordingWriter`; a chapter reads
one with :class:`Recording`.  The notebook never knows which happened.

Writing is atomic: files go into a hidden temporary directory beside the
destination, which is renamed into place at the end.  An existing recording
is never overwritten, and an interrupted run is renamed into place marked
``incomplete`` with the reason, so it can be inspected but never passes for a
complete one.
"""
from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

import jsonschema
import pandas as pd

from .checkout import data_root, repo_root  # noqa: F401 (callers import them from here too)
from .spec import TEXT_COLUMNS

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
OWNER = ".owner"  # in a recording being written: the writing process's pid, so a later run can tell it was killed


class RecordingError(ValueError):
    """A recording is missing, malformed, tampered with or incomplete."""


class RecordingExistsError(RecordingError):
    """Refusal to overwrite a recording that is already there."""


def _schema() -> dict:
    text = resources.files("contention_book.harness").joinpath(f"schemas/manifest-{SCHEMA_VERSION}.json").read_text()
    return json.loads(text)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()



def available(chapter: str) -> list[str]:
    folder = data_root() / chapter
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / MANIFEST).is_file())


def resolve(chapter: str, ref: str | os.PathLike) -> Path:
    """Turn a notebook's ``recording`` parameter into a directory.

    ``ref`` is either a recording id under ``data/<chapter>/`` or a path to any
    recording directory (a colleague's, a copy elsewhere).
    """
    ref_path = Path(ref).expanduser()
    if (ref_path / MANIFEST).is_file():
        return ref_path.resolve()
    candidate = data_root() / chapter / str(ref)
    if (candidate / MANIFEST).is_file():
        return candidate
    known = ", ".join(available(chapter)) or "none"
    raise RecordingError(
        f"recording {str(ref)!r}: no {MANIFEST} found, neither at {ref_path.resolve()} "
        f"nor at {candidate}; expected a recording directory or one of the ids "
        f"under data/{chapter}/: {known}"
    )


class Recording:
    """A validated, checksummed recording, opened read-only."""

    def __init__(self, path: Path, manifest: dict):
        self.path = path
        self.manifest = manifest

    # -- opening -----------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, *, allow_incomplete: bool = False) -> "Recording":
        path = Path(path)
        where = f"recording {path}"
        mpath = path / MANIFEST
        if not path.is_dir():
            raise RecordingError(f"{where}: not a directory; expected a recording directory holding {MANIFEST}")
        if not mpath.is_file():
            raise RecordingError(f"{where}: {MANIFEST} is missing; expected the manifest of a recording")
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RecordingError(
                f"{where}: {MANIFEST} line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})"
            ) from None
        except UnicodeDecodeError as exc:
            raise RecordingError(f"{where}: {MANIFEST} byte {exc.start}: not UTF-8 text; expected a UTF-8 JSON "
                                 "manifest (was it saved as UTF-16?)") from None
        if not isinstance(manifest, dict):
            raise RecordingError(f"{where}: {MANIFEST}: expected a JSON object at the top level")
        version = manifest.get("schema_version")
        if version != SCHEMA_VERSION:
            raise RecordingError(
                f"{where}: {MANIFEST} field 'schema_version' is {version!r}; "
                f"this code reads schema version {SCHEMA_VERSION}"
            )
        errors = sorted(jsonschema.Draft202012Validator(_schema()).iter_errors(manifest),
                        key=lambda e: list(e.absolute_path))
        if errors:
            err = errors[0]
            field = "/".join(str(p) for p in err.absolute_path) or "(top level)"
            raise RecordingError(f"{where}: {MANIFEST} field '{field}': {err.message}")
        rec = cls(path, manifest)
        rec._verify_files()
        status = manifest["status"]
        if status["state"] != "complete" and not allow_incomplete:
            raise RecordingError(
                f"{where}: marked incomplete ({status.get('reason', 'no reason given')}); "
                "expected a complete recording (pass allow_incomplete=True to inspect it anyway)"
            )
        return rec

    def _verify_files(self) -> None:
        for entry in self.manifest["files"]:
            fpath = self.path / entry["path"]
            if not fpath.is_file():
                raise RecordingError(
                    f"recording {self.path}: file {entry['path']} is listed in {MANIFEST} but missing"
                )
            actual = sha256_of(fpath)
            if actual != entry["sha256"]:
                raise RecordingError(
                    f"recording {self.path}: file {entry['path']} has sha256 {actual[:12]}…, "
                    f"expected {entry['sha256'][:12]}… from {MANIFEST}: it changed after recording"
                )

    # -- properties --------------------------------------------------------
    @property
    def id(self) -> str:
        return self.manifest["id"]

    @property
    def kind(self) -> str:
        return self.manifest["kind"]

    @property
    def chapter(self) -> str:
        return self.manifest["chapter"]

    @property
    def engine(self) -> dict:
        return self.manifest["engine"]

    @property
    def host(self) -> dict:
        return self.manifest["host"]

    @property
    def parameters(self) -> dict:
        return self.manifest["parameters"]

    @property
    def files(self) -> list[str]:
        return [f["path"] for f in self.manifest["files"]]

    def has(self, name: str) -> bool:
        return name in self.files

    def describe(self) -> str:
        """One line for the note at the top of a chapter."""
        eng = self.engine
        host = self.host
        machine = host.get("description") or host.get("cpu_model") or "unknown machine"
        origin = ""
        if self.kind == "published":
            c = self.manifest["citation"]
            title = f"“{c['title']}”"
            if str(c.get("url", "")).startswith(("https://", "http://")):
                title = f"[{title}]({c['url']})"
            origin = f"; transcribed from {c['author']}, {title} ({c['date']})"
        else:
            origin = f"; recorded {self.manifest['started'][:10]} with `{self.manifest['measured']['command']}`"
        where = "" if self.path.name == self.id else f" (read from {self.path})"
        return f"{self.id}{where}: {self.kind}, {eng['name']} {eng['version']}, {machine}{origin}"

    # -- data --------------------------------------------------------------
    def _listed(self, name: str) -> Path:
        if name not in self.files:
            raise RecordingError(
                f"recording {self.path}: file {name} is not in {MANIFEST}; "
                f"expected one of: {', '.join(self.files) or 'no files'}"
            )
        return self.path / name

    def read_bytes(self, name: str) -> bytes:
        return self._listed(name).read_bytes()

    def read_json(self, name: str) -> Any:
        try:
            return json.loads(self.read_bytes(name).decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise RecordingError(f"recording {self.path}: file {name} byte {exc.start}: not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise RecordingError(f"recording {self.path}: file {name} line {exc.lineno}: not valid JSON ({exc.msg})") from None

    def csv(self, name: str, required: Iterable[str] = ()) -> pd.DataFrame:
        """Read a listed CSV and check that the columns a chapter needs are there."""
        path = self._listed(name)
        try:
            frame = pd.read_csv(path)
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
            raise RecordingError(f"recording {self.path}: file {name}: not a readable CSV ({exc})") from None
        missing = [c for c in required if c not in frame.columns]
        if missing:
            raise RecordingError(
                f"recording {self.path}: file {name} lacks column(s) {', '.join(missing)}; "
                f"expected {', '.join(required)} (found {', '.join(map(str, frame.columns))})"
            )
        return frame


class RecordingWriter:
    """Builds a recording in a temporary directory and renames it into place.

    Use as a context manager.  On a normal exit the manifest says
    ``complete``; on an exception (KeyboardInterrupt included) it says
    ``incomplete`` with the reason, and the exception propagates.
    """

    def __init__(
        self,
        dest: str | os.PathLike,
        *,
        chapter: str,
        kind: str,
        engine: Mapping[str, Any],
        host: Mapping[str, Any],
        parameters: Mapping[str, Any],
        citation: Mapping[str, Any] | None = None,
        measured: Mapping[str, Any] | None = None,
        title: str | None = None,
        started: str | None = None,
    ):
        self.dest = Path(dest)
        if self.dest.exists():
            raise RecordingExistsError(
                f"recording {self.dest} already exists; refusing to overwrite it "
                "(choose another id or directory)"
            )
        self.manifest: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "id": self.dest.name,
            "chapter": chapter,
            "kind": kind,
            "engine": dict(engine),
            "host": dict(host),
            "parameters": dict(parameters),
            "started": started or utc_now(),
            "ended": None,
            "status": {"state": "incomplete", "reason": "still being written"},
            "files": [],
        }
        if title:
            self.manifest["title"] = title
        if citation is not None:
            self.manifest["citation"] = dict(citation)
        if measured is not None:
            self.manifest["measured"] = dict(measured)
        self._descriptions: dict[str, str] = {}
        self.dest.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.dest.name}.", suffix=".partial", dir=self.dest.parent))
        (self.tmp / OWNER).write_text(f"{os.getpid()}\n")
        (self.tmp / MANIFEST).write_text(json.dumps(self.manifest, indent=2) + "\n", encoding="utf-8")
        self._closed = False

    # -- content -----------------------------------------------------------
    def _target(self, name: str) -> Path:
        if name.startswith("/") or ".." in Path(name).parts or name == MANIFEST:
            raise ValueError(f"recording file name {name!r}: expected a relative path inside the recording")
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def write_bytes(self, name: str, data: bytes, description: str | None = None) -> Path:
        path = self._target(name)
        path.write_bytes(data)
        if description:
            self._descriptions[name] = description
        return path

    def write_text(self, name: str, text: str, description: str | None = None) -> Path:
        return self.write_bytes(name, text.encode("utf-8"), description)

    def write_json(self, name: str, obj: Any, description: str | None = None) -> Path:
        return self.write_text(name, json.dumps(obj, indent=2, sort_keys=True) + "\n", description)

    def write_csv(self, name: str, frame: pd.DataFrame, description: str | None = None) -> Path:
        buf = io.StringIO()
        frame.to_csv(buf, index=False, lineterminator="\n")
        return self.write_text(name, buf.getvalue(), description)

    def append_csv(self, name: str, frame: pd.DataFrame) -> Path:
        """Append rows to a CSV as a run goes, so an interruption keeps them."""
        path = self._target(name)
        new = not path.exists()
        frame.to_csv(path, mode="a", header=new, index=False, lineterminator="\n")
        return path

    def file_path(self, name: str) -> Path:
        """A path inside the recording for tools that write files themselves."""
        return self._target(name)

    def add_note(self, note: str) -> None:
        self.manifest.setdefault("notes", []).append(note)

    def update(self, **fields: Any) -> None:
        """Merge late facts (engine version, host, settings) into the manifest."""
        for key, value in fields.items():
            if isinstance(value, Mapping) and isinstance(self.manifest.get(key), dict):
                self.manifest[key].update(value)
            else:
                self.manifest[key] = value

    # -- finishing ---------------------------------------------------------
    def _finish(self, state: str, reason: str | None) -> Path:
        files = []
        (self.tmp / OWNER).unlink(missing_ok=True)
        self._paths_out_of_log()
        for path in sorted(p for p in self.tmp.rglob("*") if p.is_file()):
            rel = path.relative_to(self.tmp).as_posix()
            if rel == MANIFEST:
                continue
            entry = {"path": rel, "sha256": sha256_of(path), "bytes": path.stat().st_size}
            if rel in self._descriptions:
                entry["description"] = self._descriptions[rel]
            files.append(entry)
        self.manifest["files"] = files
        if state == "complete" and not [f for f in files if f["path"] != "run.log"]:
            state, reason = "incomplete", "no data files were written"
        self.manifest["ended"] = utc_now()
        self.manifest["status"] = {"state": state}
        if reason:
            self.manifest["status"]["reason"] = reason
        if state == "complete":
            errors = list(jsonschema.Draft202012Validator(_schema()).iter_errors(self.manifest))
            if errors:
                state, reason = "incomplete", f"manifest failed its schema: {errors[0].message}"
                self.manifest["status"] = {"state": state, "reason": reason}
        (self.tmp / MANIFEST).write_text(json.dumps(self.manifest, indent=2) + "\n", encoding="utf-8")
        if self.dest.exists():  # someone else wrote it meanwhile: keep both, lose nothing
            raise RecordingExistsError(
                f"recording {self.dest} appeared while this run was writing; "
                f"this run's data is kept in {self.tmp}"
            )
        os.rename(self.tmp, self.dest)
        self._closed = True
        return self.dest

    def _paths_out_of_log(self) -> None:
        """The run log names folders of the machine that ran it (its cluster, ``--record-to``); a recording is
        published, so each becomes its place under ``data/`` or a placeholder (``provenance.public_text``)."""
        from .provenance import public_text

        log = self.tmp / "run.log"
        if log.is_file():
            text = log.read_text(encoding="utf-8", errors="replace")
            public = public_text(text, str(self.manifest.get("chapter", "")), str(self.manifest.get("id", "")))
            if public != text:
                log.write_text(public, encoding="utf-8")

    def close(self) -> Path:
        return self._finish("complete", None)

    def abandon(self, reason: str) -> Path:
        return self._finish("incomplete", reason)

    def discard(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        self._closed = True

    def __enter__(self) -> "RecordingWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._closed:
            return False
        if exc_type is None:
            self.close()
        else:
            if issubclass(exc_type, KeyboardInterrupt):
                what = str(exc) or "interrupted (KeyboardInterrupt: Ctrl-C)"
            else:
                what = f"{exc_type.__name__}: {exc}"
            self.abandon(f"run ended early: {what}")
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


ABANDONED = "abandoned: the run was killed before it could finish (found and sealed by a later run)"


def repair_abandoned(folder: str | os.PathLike, log=print, *, older_than_s: float = 600.0) -> list[Path]:
    """Seal what killed runs left in ``folder``: hidden ``.<id>.*.partial`` directories whose writer is gone.

    One that holds data becomes a recording marked ``incomplete`` (ABANDONED), under its intended id
    when that is free; an empty one is removed.  A partial directory without an owner file (written
    before owners were recorded) counts as abandoned once it is ``older_than_s`` old.  Returns the
    recordings sealed.
    """
    import time

    folder = Path(folder)
    sealed: list[Path] = []
    if not folder.is_dir():
        return sealed
    for tmp in sorted(folder.glob(".*.partial")):
        owner = tmp / OWNER
        try:
            if owner.exists():
                if _alive(int(owner.read_text().strip() or 0)):
                    continue
            elif time.time() - tmp.stat().st_mtime < older_than_s:
                continue
        except (OSError, ValueError):
            continue
        data = [p for p in tmp.rglob("*") if p.is_file() and p.name not in (MANIFEST, OWNER)]
        if not data:
            shutil.rmtree(tmp, ignore_errors=True)
            log(f"[harness] removed {tmp.name}: an empty recording left by a killed run")
            continue
        try:
            manifest = json.loads((tmp / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            manifest = None
        intended = tmp.name[1:].rsplit(".", 2)[0]
        dest = folder / intended
        if dest.exists():
            dest = folder / f"{intended}-abandoned-{tmp.name.rsplit('.', 2)[1]}"
        if manifest is None:  # nothing says what it was: keep the data, visibly, without a manifest
            os.rename(tmp, dest)
            log(f"[harness] kept {dest}: data left by a killed run, with no manifest")
            continue
        manifest["id"] = dest.name
        manifest["status"] = {"state": "incomplete", "reason": ABANDONED}
        manifest["ended"] = manifest.get("ended") or utc_now()
        owner.unlink(missing_ok=True)
        manifest["files"] = [{"path": p.relative_to(tmp).as_posix(), "sha256": sha256_of(p), "bytes": p.stat().st_size}
                             for p in sorted(data)]
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        os.rename(tmp, dest)
        sealed.append(dest)
        log(f"[harness] sealed {dest} as incomplete: it was left by a killed run")
    return sealed


def open_chapter(chapter: str, ref: str | os.PathLike) -> Recording:
    """A recording of ``chapter`` by id or directory; an error if it belongs to another chapter."""
    r = Recording.open(resolve(chapter, ref))
    if r.chapter != chapter:
        raise RecordingError(f"recording {r.path}: chapter is {r.chapter!r}, expected {chapter!r}")
    return r


@dataclass
class RecordingView:
    """A recording opened for a chapter: its tables by layout key, its stacks, and a label.

    Chapters subclass it for properties of their own; :func:`load_view` fills it.
    """

    recording: Recording
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    stacks: dict[str, Path] = field(default_factory=dict)

    @property
    def engine(self) -> str:
        return self.recording.engine["name"]

    @property
    def kind(self) -> str:
        return self.recording.kind

    @property
    def id(self) -> str:
        return self.recording.id

    @property
    def runs(self) -> pd.DataFrame | None:
        return self.tables.get("runs")

    def table(self, key: str) -> pd.DataFrame | None:
        return self.tables.get(key)

    def by_repetition(self, key: str) -> pd.DataFrame | None:
        """A layout table with its rows per repetition (``table(key)`` holds their medians, where repeated)."""
        return self.tables.get(f"{key}_by_repetition", self.tables.get(key))

    def repetition_views(self) -> dict[int, "RecordingView"]:
        """One view per repetition: every table cut to that repetition's rows (a table without the column is
        given to the first repetition only).

        A chapter computes a quantity on each view and gets the quantity's
        spread, with every ratio formed inside one repetition (paired).
        """
        runs = self.runs
        reps = sorted(runs["repetition"].dropna().unique()) if runs is not None and "repetition" in runs else [0]
        out = {}
        for rep in reps:
            view = copy.copy(self)
            view.tables = {}
            for key, frame in self.tables.items():
                if key.endswith("_by_repetition"):
                    continue
                raw = self.tables.get(f"{key}_by_repetition", frame)
                if raw is not None and "repetition" in raw.columns:
                    view.tables[key] = raw[raw["repetition"] == rep].reset_index(drop=True)
                elif rep == reps[0]:  # measured once: it belongs to the first repetition, not to every one
                    view.tables[key] = raw
            out[int(rep)] = view
        return out

    @property
    def repetitions(self) -> int:
        """How many repetitions of each point the recording holds (1 where runs.csv has no such column)."""
        runs = self.runs
        if runs is None or "repetition" not in runs.columns or runs.empty:
            return 1
        return int(runs.groupby([c for c in ("variant", "sessions") if c in runs.columns])["repetition"]
                   .nunique().max())

    @property
    def trace_flags(self) -> list[int]:
        return sorted(int(f) for f in self.recording.engine.get("settings", {}).get("trace_flags", []))

    @property
    def label(self) -> str:
        """``PostgreSQL 15.18 (measured)``, ``SQL Server 15.0…, TF 3933 (measured)``, ``native on <CPU>``."""
        eng = self.recording.engine
        if eng["name"] == "sqlserver":
            tf = f", TF {', '.join(map(str, self.trace_flags))}" if self.trace_flags else ""
            return f"SQL Server {eng['version']}{tf} ({self.kind})"
        if eng["name"] == "postgres":
            return f"PostgreSQL {str(eng['version']).split()[0]} ({self.kind})"
        if eng["name"] == "native":
            return f"native on {self.recording.host.get('cpu_model') or 'this machine'} ({self.kind})"
        return f"{eng['name']} {eng['version']} ({self.kind})"

    @property
    def notes(self) -> list[str]:
        return list(self.recording.manifest.get("notes", []))


# Columns that measure something physical: a count, a time, a rate.  Where a table has one, every value
# must be a finite number >= 0 (sessions >= 1); a published recording may leave one empty ("not printed").
NON_NEGATIVE = {"throughput": 0, "elapsed_s": 0, "operations": 0, "sessions": 1, "samples": 0, "waits": 0,
                "wait_time_ms": 0, "spins": 0, "collisions": 0, "backoffs": 0, "pins": 0, "pages": 0,
                "logical_reads": 0, "median_one_way_ns": 0, "ns_per_load": 0, "median_ns_per_handoff": 0,
                "ns_per_increment": 0, "us_per_update": 0, "records": 0, "errors": 0}


def _empty(column: pd.Series) -> pd.Series:
    """Cells with nothing in them.  A column read as numbers has no blank text, only missing values: its cells are
    not turned into text to find out (a third of loading a chapter's recordings went there)."""
    if pd.api.types.is_numeric_dtype(column):
        return column.isna()
    return column.isna() | (column.astype(str).str.strip() == "")


def check_values(r: "Recording", name: str, frame: pd.DataFrame, numeric: Iterable[str] = (),
                 text: Iterable[str] = ()) -> None:
    """Refuse NaN, infinite, negative or non-numeric values in physical columns, and words or infinities in
    the other ``numeric`` columns, naming file, row and column; those columns are then read as numbers.

    A column the layout does not declare (a runner's extra measurements) is refused when it mixes numbers and
    words, unless it is text (TEXT_COLUMNS or ``text``): a word among numbers is a damaged cell, which would
    otherwise reach a notebook cell as a string in a sum or a median.
    """
    numeric = tuple(numeric)
    words = set(TEXT_COLUMNS) | set(text)
    for col in frame.columns:
        if col in numeric or col in NON_NEGATIVE or col in words or pd.api.types.is_numeric_dtype(frame[col]):
            continue
        values = pd.to_numeric(frame[col], errors="coerce")
        cells = frame[col].astype(str).str.strip()
        filled = frame[col].notna() & (cells != "")
        numbers = values.notna() | cells.str.lower().isin(("true", "false"))  # a yes/no column reads as 1/0
        odd = filled & ~numbers
        if numbers.any() and odd.any():
            row = int(odd.to_numpy().nonzero()[0][0])
            raise RecordingError(f"recording {r.path}: file {name} line {row + 2} column {col}: "
                                 f"{frame[col].iloc[row]!r}; expected a number, as in the column's other rows")
    for col in numeric:
        if col not in frame.columns or col in NON_NEGATIVE:
            continue
        values = pd.to_numeric(frame[col], errors="coerce")
        empty = _empty(frame[col])
        bad = (values.isna() & ~empty) | (values.notna() & ~values.abs().lt(float("inf")))
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise RecordingError(f"recording {r.path}: file {name} line {row + 2} column {col}: "
                                 f"{frame[col].iloc[row]!r}; expected a finite number or nothing")
        frame[col] = values
    for col, least in NON_NEGATIVE.items():
        if col not in frame.columns:
            continue
        values = pd.to_numeric(frame[col], errors="coerce")
        empty = _empty(frame[col])
        bad = values.isna() & ~empty
        bad |= values.notna() & ~(values.abs().lt(float("inf")) & values.ge(least))
        if r.kind == "measured":
            bad |= empty
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise RecordingError(
                f"recording {r.path}: file {name} line {row + 2} column {col}: {frame[col].iloc[row]!r}; "
                f"expected a finite number >= {least}" + ("" if r.kind == "measured" else " or nothing"))
        frame[col] = values


def table_property(key: str) -> property:
    """A view attribute for one layout table (``view.waits`` for ``view.tables["waits"]``), settable in tests."""
    return property(lambda self: self.tables.get(key), lambda self, frame: self.tables.__setitem__(key, frame),
                    doc=f"the {key!r} table, or None when the recording lacks it")


def with_tables(*keys: str, **renamed: str):
    """A class decorator giving a view one attribute per layout table (:func:`table_property`): ``keys`` by their
    own names, ``renamed`` as ``attribute="key"``.  A chapter names its tables in one line instead of one
    property each."""
    def decorate(cls: type) -> type:
        for name, key in [*((k, k) for k in keys), *renamed.items()]:
            setattr(cls, name, table_property(key))
        return cls
    return decorate


def load_view(chapter: str, ref: str | os.PathLike, layout: Mapping[str, Any], cls: type = RecordingView):
    """Open a recording of ``chapter`` and read every layout table it lists.

    ``layout`` maps keys to :class:`harness.spec.Table`.  A table the
    recording's kind and engine require but does not list is an error that
    names the file; so is a listed table that lacks a column.  Stacks are
    ``stacks/<variant>.folded.gz``.
    """
    r = open_chapter(chapter, ref)
    engine = r.engine["name"]
    view = cls(r)
    missing = []
    for key, table in layout.items():
        if r.has(table.path):
            view.tables[key] = r.csv(table.path, table.columns)
            check_values(r, table.path, view.tables[key], table.numeric, table.text)
            key_cols = [c for c in getattr(table, "unique", ()) if c in view.tables[key].columns]
            if r.kind == "measured" and key_cols and len(key_cols) == len(table.unique):
                twice = view.tables[key].duplicated(subset=key_cols)
                if twice.any():
                    row = int(twice.to_numpy().nonzero()[0][0])
                    values = ", ".join(f"{c}={view.tables[key][c].iloc[row]!r}" for c in key_cols)
                    raise RecordingError(f"recording {r.path}: file {table.path} line {row + 2}: {values} appears "
                                         f"twice; expected one row per {', '.join(key_cols)}")
            for col, allowed in getattr(table, "values", {}).items():
                frame = view.tables[key]
                if col in frame.columns:
                    odd = ~frame[col].astype(str).isin([str(a) for a in allowed])
                    if odd.any():
                        row = int(odd.to_numpy().nonzero()[0][0])
                        raise RecordingError(f"recording {r.path}: file {table.path} line {row + 2} column {col}: "
                                             f"{frame[col].iloc[row]!r}; expected one of {', '.join(map(str, allowed))}")
            if key != "runs" and "repetition" in table.unique and "repetition" in view.tables[key].columns:
                view.tables[f"{key}_by_repetition"] = view.tables[key]
                view.tables[key] = median_over_repetitions(view.tables[key], table)
        elif table.required_for(r.kind, engine):
            missing.append(table.path)
    if missing:
        raise RecordingError(f"recording {r.path}: a {r.kind} {engine} recording of {chapter} needs "
                             f"{', '.join(missing)}; not listed in its {MANIFEST}")
    view.stacks = {Path(f).name.split(".")[0]: r.path / f for f in r.files
                   if f.startswith("stacks/") and f.endswith(".folded.gz")}
    if r.kind == "measured":
        _set_aside_unbalanced_points(view, layout, engine)
    _set_aside_erroneous_points(view)
    return view


def _set_aside_unbalanced_points(view: "RecordingView", layout: Mapping[str, Any], engine: str) -> None:
    """Rows that break one of their table's accounting identities are kept out of the table (so out of every
    figure and verdict), listed in ``tables["<key>_set_aside"]``, and named in a note: file, line, point and
    the identity that fails.  A required identity whose columns the recording lacks is an error."""
    from .spec import missing_for_identities, point_words, unbalanced

    r = view.recording
    for key, table in layout.items():
        frame = view.tables.get(f"{key}_by_repetition", view.tables.get(key))
        if frame is None or not getattr(table, "identities", ()):
            continue
        for ident, cols in missing_for_identities(table, frame, engine):
            raise RecordingError(f"recording {r.path}: file {table.path} has no column {', '.join(cols)}; "
                                 f"expected it, to check that {ident.name}")
        bad = unbalanced(table, frame, engine)
        if not bad:
            continue
        positions = sorted({pos for pos, _ in bad})
        words = "; ".join(f"line {pos + 2} ({point_words(frame.iloc[pos])}): {ident.name} fails"
                          for pos, ident in bad)
        view.tables[f"{key}_set_aside"] = frame.iloc[positions].reset_index(drop=True)
        keep = frame.drop(frame.index[positions]).reset_index(drop=True)
        if f"{key}_by_repetition" in view.tables:
            view.tables[f"{key}_by_repetition"] = keep
            view.tables[key] = median_over_repetitions(keep, table)
        else:
            view.tables[key] = keep
        r.manifest.setdefault("notes", []).append(
            f"set aside, not shown and not used in any verdict, because they do not balance: file {table.path} "
            f"{words}")


def median_over_repetitions(frame: pd.DataFrame, table: Any) -> pd.DataFrame:
    """One row per key of ``table.unique`` without the repetition: numeric columns' medians over repetitions.

    Tables a chapter reads as "the state after a point" (wait shares, relation
    sizes, plan costs) are shown as their median; the rows per repetition stay
    in ``tables["<key>_by_repetition"]`` for the spread.
    """
    keys = [c for c in table.unique if c != "repetition" and c in frame.columns]
    numeric = [c for c in frame.columns if c not in keys and c != "repetition"
               and c not in TEXT_COLUMNS and pd.api.types.is_numeric_dtype(frame[c])]
    rest = [c for c in frame.columns if c not in keys and c not in numeric and c != "repetition"]
    grouped = frame.groupby(keys, sort=False, dropna=False)
    out = grouped[numeric].median()
    if rest:
        out = out.join(grouped[rest].first())
    out["repetitions"] = grouped.size()
    return out.reset_index()[[*keys, *[c for c in frame.columns if c in numeric or c in rest], "repetitions"]]


MAX_ERROR_SHARE = 0.01


def _set_aside_erroneous_points(view: "RecordingView") -> None:
    """Points whose failed calls exceed 1% of their calls are kept out of ``runs`` (so out of every table,
    figure and verdict) and listed in ``tables["runs_set_aside"]``; a note on the page says which."""
    runs = view.tables.get("runs")
    if runs is None or not {"errors", "operations"} <= set(runs.columns):
        return
    errors = pd.to_numeric(runs["errors"], errors="coerce").fillna(0)
    share = errors / (pd.to_numeric(runs["operations"], errors="coerce").fillna(0) + errors).where(errors > 0, 1)
    lost = _lost_connections(view, runs)
    bad = (share > MAX_ERROR_SHARE) | (lost > 0)
    if not bad.any():
        return
    view.tables["runs_set_aside"] = runs[bad].reset_index(drop=True)
    view.tables["runs"] = runs[~bad].reset_index(drop=True)
    points = ", ".join(f"{row.get('variant', '?')} at {row.get('sessions', '?')} sessions ("
                       + (f"{int(lost[i])} call(s) lost their connection" if lost[i] > 0 else
                          f"{share[i]:.0%} of calls failed") + ")" for i, row in runs[bad].iterrows())
    view.recording.manifest.setdefault("notes", []).append(
        f"set aside, not shown and not used in any verdict: {points} (more than {MAX_ERROR_SHARE:.0%} of calls "
        "failed, or sessions lost their connections)")


def _lost_connections(view: "RecordingView", runs: pd.DataFrame) -> pd.Series:
    """Per runs row: calls of that point whose session lost its connection (load_points' lost_connections)."""
    points = view.tables.get("load_points_by_repetition", view.tables.get("load_points"))
    out = pd.Series(0.0, index=runs.index)
    if points is None or "lost_connections" not in points.columns:
        return out
    keys = [c for c in ("variant", "sessions", "repetition") if c in runs.columns and c in points.columns]
    if not keys:
        return out
    lost = points.assign(lost_connections=pd.to_numeric(points["lost_connections"], errors="coerce").fillna(0))
    lost = lost.groupby(keys)["lost_connections"].sum()
    at = pd.MultiIndex.from_frame(runs[keys]) if len(keys) > 1 else pd.Index(runs[keys[0]])
    return pd.Series(lost.reindex(at).fillna(0).to_numpy(), index=runs.index)


def relocate(path: str | os.PathLike, moves: Mapping[str, str], why: str) -> None:
    """Move files inside a recording to new paths and rewrite their manifest entries.

    The bytes do not change, so every checksum stays valid; the manifest gains
    a note saying what moved and why, so the move is on the record.
    """
    path = Path(path)
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    listed = {e["path"]: e for e in manifest["files"]}
    done = []
    for old, new in moves.items():
        if old not in listed:
            continue
        if new in listed:
            raise RecordingError(f"recording {path}: cannot move {old} to {new}: {new} is already listed")
        (path / new).parent.mkdir(parents=True, exist_ok=True)
        os.rename(path / old, path / new)
        listed[old]["path"] = new
        listed[new] = listed.pop(old)
        done.append(f"{old} -> {new}")
    for folder in sorted({(path / old).parent for old in moves}, key=lambda p: len(p.parts), reverse=True):
        if folder != path and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    if done:
        manifest["files"] = sorted(listed.values(), key=lambda e: e["path"])
        manifest.setdefault("notes", []).append(f"files moved, bytes unchanged ({why}): {'; '.join(done)}")
        (path / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def shown_note(measured: Iterable[tuple[str, Recording]], published: Iterable[Recording]) -> str:
    """The chapter's closing list of the recordings it shows (labelled), linked to the Data page (provenance)."""
    from .provenance import recordings_note

    return recordings_note(list(measured), list(published))
