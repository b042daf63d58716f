"""Bad input, generated across every chapter: each gets a clear error naming what is wrong, and changes nothing.

Parameters: every live parameter of every chapter and engine, given values of the wrong type, out of
range or not allowed.  Recordings: every committed recording, copied and damaged in the ways a disk,
an editor or a careless hand damages one.  (perftools' importers have their own bad-input tests.)
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from contention_book.chapters import PACKAGES, package
from contention_book.harness.params import ParameterError
from contention_book.harness.recording import RecordingError, data_root
from contention_book.harness.runner import resolve_params

BAD = {
    "int": ["abc", "1.5", "-7", "1e999", "true"],
    "float": ["abc", "nan", "inf", "-1"],
    "bool": ["maybe", "2"],
    "ints": ["1,x", "0", "1,1", "-3"],
    "strs": ["no_such_variant", "a,,a"],
    "identifier": ["lab;DROP", "1abc", "x y"],
    "str": [],
}


def _param_cases():
    for chapter in sorted(PACKAGES):
        spec = package(chapter, "spec").SPEC
        for engine in spec.engines:
            yield chapter, engine, "no_such_parameter", "1"
            for p in spec.params:
                if not p.applies_to(engine):
                    continue
                for value in BAD[p.kind]:
                    if p.kind == "ints" and value == "0" and (p.minimum or 0) <= 0:
                        continue  # CPU 0 is a CPU
                    yield chapter, engine, p.name, value


PARAM_CASES = list(_param_cases())


@pytest.mark.parametrize("chapter, engine, name, value", PARAM_CASES,
                         ids=[f"{c}-{e}-{n}={v}" for c, e, n, v in PARAM_CASES])
def test_bad_parameters_are_refused_by_name(chapter, engine, name, value):
    spec = package(chapter, "spec").SPEC
    with pytest.raises(ParameterError) as err:
        resolve_params(spec, engine, {name: value})
    assert name in str(err.value) and "expected" in str(err.value)


def _reseal(dest: Path, rel: str) -> None:
    manifest = json.loads((dest / "manifest.json").read_text())
    for f in manifest["files"]:
        if f["path"] == rel:
            f["sha256"] = hashlib.sha256((dest / rel).read_bytes()).hexdigest()
            f["bytes"] = (dest / rel).stat().st_size
    (dest / "manifest.json").write_text(json.dumps(manifest))


def _first_physical(dest: Path) -> tuple[str, str] | None:
    """A CSV file and one of its physical columns, to damage."""
    from contention_book.harness.recording import NON_NEGATIVE

    manifest = json.loads((dest / "manifest.json").read_text())
    for f in manifest["files"]:
        if f["path"].endswith(".csv"):
            header = (dest / f["path"]).read_text().splitlines()[0].split(",")
            for col in header:
                if col in NON_NEGATIVE and len((dest / f["path"]).read_text().splitlines()) > 1:
                    return f["path"], col
    return None


def _set_cell(dest: Path, rel: str, col: str, value: str) -> None:
    lines = (dest / rel).read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    if len(cells) != len(header):  # a quoted comma: leave such files to the other damages
        pytest.skip(f"{rel}: first row has quoted commas")
    cells[header.index(col)] = value
    lines[1] = ",".join(cells)
    (dest / rel).write_text("\n".join(lines) + "\n")


DAMAGES = {
    "no manifest": (lambda d: (d / "manifest.json").unlink(), "no manifest.json found"),
    "manifest not JSON": (lambda d: (d / "manifest.json").write_text("{ not json"), "not valid JSON"),
    "manifest in UTF-16": (lambda d: (d / "manifest.json").write_bytes((d / "manifest.json").read_text()
                                                                       .encode("utf-16")), "not UTF-8"),
    "manifest a list": (lambda d: (d / "manifest.json").write_text("[]"), "expected a JSON object"),
    "schema version 99": (lambda d: (d / "manifest.json").write_text(
        json.dumps({**json.loads((d / "manifest.json").read_text()), "schema_version": 99})), "schema version"),
    "a listed file missing": (lambda d: (d / json.loads((d / "manifest.json").read_text())["files"][0]["path"])
                              .unlink(), "listed in manifest.json but missing"),
    "a file changed after recording": (lambda d: (d / json.loads((d / "manifest.json").read_text())["files"][0]
                                                  ["path"]).write_bytes(b"changed"), "changed after recording"),
    "status field removed": (lambda d: (d / "manifest.json").write_text(json.dumps(
        {k: v for k, v in json.loads((d / "manifest.json").read_text()).items() if k != "status"})), "status"),
}
PHYSICAL = {"NaN": "nan", "negative": "-1", "infinite": "inf", "text": "lots"}
RECORDINGS = sorted((chapter, p.name) for chapter in PACKAGES for p in (data_root() / chapter).iterdir()
                    if (p / "manifest.json").is_file())
REC_CASES = [(c, r, d) for c, r in RECORDINGS for d in [*DAMAGES, *(f"{k} in a physical column" for k in PHYSICAL)]]


def _tree_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(folder).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.mark.parametrize("chapter, rid, damage", REC_CASES, ids=[f"{c}-{r}-{d}" for c, r, d in REC_CASES])
def test_damaged_recordings_are_refused_clearly_and_nothing_is_changed(tmp_path, chapter, rid, damage):
    source = data_root() / chapter / rid
    before = _tree_hash(source)
    dest = tmp_path / rid
    shutil.copytree(source, dest)
    if damage in DAMAGES:
        apply, words = DAMAGES[damage]
        apply(dest)
    else:
        found = _first_physical(dest)
        if found is None:
            pytest.skip(f"{rid} has no physical column with rows")
        rel, col = found
        if damage.startswith("NaN") and rid.startswith("published"):
            pytest.skip("a published recording may leave a value out: the source did not print it")
        _set_cell(dest, rel, col, PHYSICAL[damage.split(" in ")[0]])
        _reseal(dest, rel)
        words = f"column {col}"
    copy_before = _tree_hash(dest)
    with pytest.raises(RecordingError) as err:
        package(chapter, "recordings").load(dest)
    message = str(err.value)
    assert str(dest) in message and words in message, message
    assert _tree_hash(dest) == copy_before, "reading a recording changed it"
    assert _tree_hash(source) == before


def test_there_are_at_least_150_cases():
    assert len(PARAM_CASES) + len(REC_CASES) >= 150, (len(PARAM_CASES), len(REC_CASES))


@pytest.mark.parametrize("chapter, rid", RECORDINGS, ids=[f"{c}-{r}" for c, r in RECORDINGS])
def test_a_variant_the_chapter_does_not_know_is_refused(tmp_path, chapter, rid):
    dest = tmp_path / rid
    shutil.copytree(data_root() / chapter / rid, dest)
    runs = dest / "runs.csv"
    if not runs.exists() or "variant" not in runs.read_text().splitlines()[0].split(","):
        pytest.skip(f"{rid} has no runs.csv with a variant column")
    _set_cell(dest, "runs.csv", "variant", "bogus_variant")
    _reseal(dest, "runs.csv")
    with pytest.raises(RecordingError, match=r"file runs.csv line 2 column variant: 'bogus_variant'; expected one of"):
        package(chapter, "recordings").load(dest)


MEASURED = [(c, r) for c, r in RECORDINGS if r.startswith("measured")]


@pytest.mark.parametrize("chapter, rid", MEASURED, ids=[f"{c}-{r}" for c, r in MEASURED])
def test_a_measured_point_recorded_twice_is_refused(tmp_path, chapter, rid):
    dest = tmp_path / rid
    shutil.copytree(data_root() / chapter / rid, dest)
    lines = (dest / "runs.csv").read_text().splitlines()
    (dest / "runs.csv").write_text("\n".join([*lines, lines[1]]) + "\n")
    _reseal(dest, "runs.csv")
    with pytest.raises(RecordingError, match=rf"file runs.csv line {len(lines) + 1}: variant=.* appears twice; "
                                             "expected one row per variant, sessions, repetition"):
        package(chapter, "recordings").load(dest)


def _numeric_non_physical(chapter: str, dest: Path) -> tuple[str, str] | None:
    """A layout table the recording holds and one of its numeric columns that is not a physical one."""
    from contention_book.harness.recording import NON_NEGATIVE

    layout = package(chapter, "spec").SPEC.layout
    for table in layout.values():
        path = dest / table.path
        if path.is_file() and len(path.read_text().splitlines()) > 1:
            header = path.read_text().splitlines()[0].split(",")
            for col in table.numeric:
                if col in header and col not in NON_NEGATIVE:
                    return table.path, col
    return None


@pytest.mark.parametrize("chapter, rid", RECORDINGS, ids=[f"{c}-{r}" for c, r in RECORDINGS])
def test_words_in_a_numeric_column_are_refused_by_name(tmp_path, chapter, rid):
    dest = tmp_path / rid
    shutil.copytree(data_root() / chapter / rid, dest)
    found = _numeric_non_physical(chapter, dest)
    if found is None:
        pytest.skip(f"{rid} holds no numeric column beyond the physical ones")
    rel, col = found
    _set_cell(dest, rel, col, "lots")
    _reseal(dest, rel)
    with pytest.raises(RecordingError, match=rf"file {rel} line 2 column {col}: 'lots'; expected a finite number"):
        package(chapter, "recordings").load(dest)


def _rewrite_cell(path: Path, row: int, col: str, value: str) -> None:
    """Set one cell through the csv module (quoted commas stay quoted); row 0 is the first data row."""
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows[row + 1][rows[0].index(col)] = value
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)


def _number_columns(chapter: str, dest: Path) -> list[tuple[str, str]]:
    """Every (file, column) of the chapter's layout tables this recording holds whose cells are numbers: the
    declared numeric columns and any other the file fills with numbers (a runner's extra measurements)."""
    import pandas as pd

    from contention_book.harness.spec import TEXT_COLUMNS

    out = []
    for table in package(chapter, "spec").SPEC.layout.values():
        path = dest / table.path
        if not path.is_file():
            continue
        frame = pd.read_csv(path)
        if frame.empty:
            continue
        for col in frame.columns:
            if col in TEXT_COLUMNS or col in table.text:
                continue
            if pd.api.types.is_numeric_dtype(frame[col]) and frame[col].notna().iloc[0]:
                out.append((table.path, col))
    return out


@pytest.mark.parametrize("chapter, rid", RECORDINGS, ids=[f"{c}-{r}" for c, r in RECORDINGS])
def test_a_word_in_any_number_column_is_named_before_a_cell_uses_it(tmp_path, chapter, rid):
    """Every number column of every table the chapter reads, declared or not: a word in its first row is refused
    by the chapter's loader (what load_shown calls) naming file, line and column, never a KeyError
    or a TypeError in a notebook cell."""
    source = data_root() / chapter / rid
    columns = _number_columns(chapter, source)
    assert columns, f"{rid}: no number columns found"
    recordings = package(chapter, "recordings")
    problems = []
    for rel, col in columns:
        dest = tmp_path / f"{rid}-{rel.replace('/', '_')}-{col}"
        shutil.copytree(source, dest)
        _rewrite_cell(dest / rel, 0, col, "lots")
        _reseal(dest, rel)
        try:
            recordings.load(dest)
        except RecordingError as exc:
            if f"file {rel} line 2 column {col}: 'lots'; expected" not in str(exc):
                problems.append(f"{rel} {col}: refused, but not by file, line and column: {exc}")
        except Exception as exc:  # noqa: BLE001 - what a notebook cell would have met
            problems.append(f"{rel} {col}: {type(exc).__name__}: {exc}")
        else:
            problems.append(f"{rel} {col}: a word in a number column was accepted")
        shutil.rmtree(dest)
    assert not problems, "\n".join(problems)
