import json
import shutil

import pandas as pd
import pytest

from contention_book.harness.recording import Recording, RecordingError, RecordingExistsError, RecordingWriter, resolve

ENGINE = {"name": "postgres", "version": "15.0"}
HOST = {"cpu_model": "test CPU", "sockets": 1, "cores": 2, "logical_cpus": 2, "numa_nodes": 1}
MEASURED = {"tool": "test", "tool_version": "0", "command": "pytest"}


def write(dest, **kw):
    with RecordingWriter(dest, chapter="ghost-cleanup", kind="measured", engine=ENGINE, host=HOST,
                         parameters={"n": 1}, measured=MEASURED, **kw) as w:
        w.write_csv("runs.csv", pd.DataFrame({"variant": ["a"], "elapsed_s": [1.5]}))
        w.write_text("samples/x.txt", "hello\n")
    return dest


def test_round_trip(tmp_path):
    rec = Recording.open(write(tmp_path / "r1"))
    assert rec.kind == "measured" and rec.id == "r1"
    assert rec.manifest["status"] == {"state": "complete"}
    assert sorted(rec.files) == ["runs.csv", "samples/x.txt"]
    assert rec.csv("runs.csv", ["variant", "elapsed_s"])["elapsed_s"].tolist() == [1.5]
    assert not list(tmp_path.glob(".*partial"))  # the temporary directory was renamed away


def test_refuses_to_overwrite(tmp_path):
    write(tmp_path / "r1")
    before = (tmp_path / "r1" / "manifest.json").read_bytes()
    with pytest.raises(RecordingExistsError, match="refusing to overwrite"):
        write(tmp_path / "r1")
    assert (tmp_path / "r1" / "manifest.json").read_bytes() == before


def test_interrupted_run_is_marked_incomplete(tmp_path):
    dest = tmp_path / "r2"
    with pytest.raises(KeyboardInterrupt):
        with RecordingWriter(dest, chapter="ghost-cleanup", kind="measured", engine=ENGINE, host=HOST,
                             parameters={}, measured=MEASURED) as w:
            w.append_csv("runs.csv", pd.DataFrame({"variant": ["a"], "elapsed_s": [1.0]}))
            raise KeyboardInterrupt
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["status"]["state"] == "incomplete"
    assert "KeyboardInterrupt" in manifest["status"]["reason"]
    with pytest.raises(RecordingError, match="marked incomplete"):
        Recording.open(dest)
    assert Recording.open(dest, allow_incomplete=True).csv("runs.csv")["variant"].tolist() == ["a"]


def test_tampered_file_is_caught(tmp_path):
    dest = write(tmp_path / "r3")
    (dest / "runs.csv").write_text("variant,elapsed_s\na,0.1\n")
    with pytest.raises(RecordingError, match=r"r3: file runs.csv has sha256 .* changed after recording"):
        Recording.open(dest)


def test_missing_file_is_caught(tmp_path):
    dest = write(tmp_path / "r4")
    (dest / "samples" / "x.txt").unlink()
    with pytest.raises(RecordingError, match="file samples/x.txt is listed in manifest.json but missing"):
        Recording.open(dest)


def test_missing_manifest(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecordingError, match="manifest.json is missing"):
        Recording.open(tmp_path / "empty")


def edit_manifest(dest, change):
    path = dest / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def test_wrong_schema_version(tmp_path):
    dest = write(tmp_path / "r5")
    edit_manifest(dest, lambda m: m.update(schema_version=2))
    with pytest.raises(RecordingError, match="'schema_version' is 2; this code reads schema version 1"):
        Recording.open(dest)


def test_schema_violation_names_the_field(tmp_path):
    dest = write(tmp_path / "r6")
    edit_manifest(dest, lambda m: m["host"].update(logical_cpus="many"))
    with pytest.raises(RecordingError, match="field 'host/logical_cpus'"):
        Recording.open(dest)


def test_published_needs_citation(tmp_path):
    dest = write(tmp_path / "r7")
    edit_manifest(dest, lambda m: m.update(kind="published"))
    with pytest.raises(RecordingError, match="'citation' is a required property"):
        Recording.open(dest)


def test_invalid_json_names_line(tmp_path):
    dest = write(tmp_path / "r8")
    (dest / "manifest.json").write_text('{\n  "schema_version": 1,\n  oops\n}')
    with pytest.raises(RecordingError, match="manifest.json line 3"):
        Recording.open(dest)


def test_csv_missing_column(tmp_path):
    rec = Recording.open(write(tmp_path / "r9"))
    with pytest.raises(RecordingError, match="runs.csv lacks column\\(s\\) throughput; expected variant, throughput"):
        rec.csv("runs.csv", ["variant", "throughput"])


def test_unlisted_file(tmp_path):
    rec = Recording.open(write(tmp_path / "r10"))
    with pytest.raises(RecordingError, match="file dmv/nope.csv is not in manifest.json"):
        rec.csv("dmv/nope.csv")


def test_resolve_by_id_and_by_path(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTENTION_BOOK_ROOT", str(tmp_path))
    write(tmp_path / "data" / "ghost-cleanup" / "rid")
    assert resolve("ghost-cleanup", "rid") == tmp_path / "data" / "ghost-cleanup" / "rid"
    copy = tmp_path / "elsewhere" / "copied"
    shutil.copytree(tmp_path / "data" / "ghost-cleanup" / "rid", copy)
    assert resolve("ghost-cleanup", str(copy)) == copy.resolve()
    assert Recording.open(resolve("ghost-cleanup", str(copy))).id == "rid"
    with pytest.raises(RecordingError, match="ids under data/ghost-cleanup/: rid"):
        resolve("ghost-cleanup", "nope")


def test_committed_recordings_are_valid():
    from contention_book.harness.recording import available, data_root

    chapters = [p.name for p in data_root().iterdir() if p.is_dir()]
    assert chapters, "no recordings committed under data/"
    for chapter in chapters:
        for rid in available(chapter):
            rec = Recording.open(data_root() / chapter / rid)
            assert rec.chapter == chapter
            if rec.kind == "published":
                url = rec.manifest["citation"]["url"]  # an address, or a plain statement that the source had none
                assert url.startswith("http") or "no address" in url, f"{rid}: citation url {url!r}"
            else:
                assert rec.manifest["measured"]["command"]


def _resealed(tmp_path, edit):
    """A copy of a measured reference with runs.csv edited and its checksum made to agree."""
    import hashlib
    import json
    import shutil

    from contention_book.harness.recording import data_root

    dest = tmp_path / "resealed"
    shutil.copytree(data_root() / "ghost-cleanup" / "measured-postgres-reference", dest)
    runs = dest / "runs.csv"
    runs.write_text(edit(runs.read_text()))
    manifest = json.loads((dest / "manifest.json").read_text())
    for f in manifest["files"]:
        if f["path"] == "runs.csv":
            f["sha256"] = hashlib.sha256(runs.read_bytes()).hexdigest()
            f["bytes"] = runs.stat().st_size
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


@pytest.mark.parametrize("value", ["-6.56", "nan", "inf", "-inf", "", "soon"])
def test_physical_columns_refuse_impossible_values_naming_file_line_and_column(tmp_path, value):
    from contention_book.chapters.ghost_cleanup import recordings

    def edit(text):
        lines = text.splitlines()
        cols = lines[0].split(",")
        cells = lines[2].split(",")
        cells[cols.index("elapsed_s")] = value
        lines[2] = ",".join(cells)
        return "\n".join(lines) + "\n"

    with pytest.raises(RecordingError, match=r"file runs.csv line 3 column elapsed_s: .*expected a finite number >= 0"):
        recordings.load(_resealed(tmp_path, edit))


def test_untouched_copies_still_load(tmp_path):
    from contention_book.chapters.ghost_cleanup import recordings

    assert recordings.load(_resealed(tmp_path, lambda text: text)).runs is not None


def test_points_with_many_failed_calls_are_set_aside_and_said_so(tmp_path):
    from contention_book.chapters.ghost_cleanup import recordings

    def edit(text):
        lines = text.splitlines()
        cols = lines[0].split(",")
        cells = lines[2].split(",")
        cells[cols.index("errors")] = "270241"  # like an lmax run whose consumers were terminated
        lines[2] = ",".join(cells)
        return "\n".join(lines) + "\n"

    view = recordings.load(_resealed(tmp_path, edit))
    clean = recordings.load(_resealed(tmp_path / "clean", lambda text: text))
    assert clean.table("runs_set_aside") is None
    assert len(view.runs) == len(clean.runs) - 1 and len(view.table("runs_set_aside")) == 1
    assert any(n.startswith("set aside, not shown and not used in any verdict") for n in view.notes)


def test_the_writer_never_seals_an_empty_recording_complete(tmp_path):
    with RecordingWriter(tmp_path / "empty", chapter="ghost-cleanup", kind="measured", engine=ENGINE, host=HOST,
                         parameters={}, measured={"tool": "t", "tool_version": "0", "command": "x"}) as w:
        w.write_text("run.log", "[run] nothing measured\n")
    manifest = Recording.open(tmp_path / "empty", allow_incomplete=True).manifest
    assert manifest["status"] == {"state": "incomplete", "reason": "no data files were written"}
