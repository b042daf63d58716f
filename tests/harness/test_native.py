"""Building and running native programs: clear errors, CSV parsed, the manifest names the compiler."""
import pytest

from contention_book.harness import native
from contention_book.harness.recording import Recording


def test_unknown_program_names_the_file():
    with pytest.raises(native.NativeError, match=r"no native program 'no_such_thing'.*no_such_thing\.c does not exist"):
        native.build("no_such_thing")


def test_bad_csv_says_where():
    with pytest.raises(native.NativeError, match="stdout of prog: expected CSV"):
        native.parse_csv("  \n", where="stdout of prog")
    with pytest.raises(native.NativeError, match="stdout of prog: not the expected CSV"):
        native.parse_csv("a,b\n1,2\n1,2,3,4\n", where="stdout of prog")


def test_native_writer_records_compiler_and_host(tmp_path):
    with native.writer(tmp_path / "r", chapter="latch-fairness", parameters={"threads": [1, 2]},
                       command="make chapter", title="t", programs=["x"]) as w:
        w.write_text("x.csv", "a\n1\n")
    rec = Recording.open(tmp_path / "r")
    assert rec.engine["name"] == "native" and rec.engine["version"]
    assert rec.host["logical_cpus"] >= 1 and rec.manifest["measured"]["command"] == "make chapter"
