"""harness.params: one parser; every refusal names the parameter, the value and what was expected."""
import pytest

from contention_book.harness import params as P

SPEC = (
    P.sessions({"postgres": (1, 2), "native": (1,)}),
    P.variants({"postgres": ("a", "b"), "native": ("x",)}),
    P.duration_s(5.0),
    P.repetitions({"postgres": 1, "native": 3}),
    P.database(),
    P.capture_stacks(),
    P.Param("updates", "int", "rows to update", default=1000, minimum=1),
)


def test_defaults_per_engine():
    got = P.parse(SPEC, {}, "postgres")
    assert got == {"sessions": [1, 2], "variants": ["a", "b"], "duration_s": 5.0, "repetitions": 1,
                   "database": "contention_lab", "capture_stacks": True, "updates": 1000}
    native = P.parse(SPEC, {"sessions": ""}, "native")
    assert native["sessions"] == [1] and native["repetitions"] == 3
    assert "database" not in native and "capture_stacks" not in native


def test_strings_and_python_values_are_the_same():
    a = P.parse(SPEC, {"sessions": "1,2,4", "duration_s": "2.5", "capture_stacks": "no", "variants": "b"}, "postgres")
    b = P.parse(SPEC, {"sessions": [1, 2, 4], "duration_s": 2.5, "capture_stacks": False, "variants": ["b"]}, "postgres")
    assert a == b and a["capture_stacks"] is False
    assert P.parse(SPEC, {"sessions": 2}, "postgres")["sessions"] == [2]  # one int for a list


@pytest.mark.parametrize("raw, words", [
    ({"sesions": "2"}, ["unknown parameter", "sesions", "sessions"]),
    ({"sessions": "abc"}, ["sessions='abc'", "comma-separated list of integers"]),
    ({"sessions": "0"}, ["sessions='0'", ">= 1"]),
    ({"sessions": "1,1"}, ["sessions", "twice"]),
    ({"updates": "abc"}, ["updates='abc'", "an integer"]),
    ({"updates": "-5"}, ["updates='-5'", ">= 1"]),
    ({"updates": "2.5"}, ["updates='2.5'"]),
    ({"duration_s": "-1"}, ["duration_s='-1'"]),
    ({"duration_s": "nan"}, ["duration_s='nan'"]),
    ({"duration_s": "inf"}, ["duration_s='inf'"]),
    ({"capture_stacks": "maybe"}, ["capture_stacks='maybe'", "true or false"]),
    ({"variants": "c"}, ["variants='c'", "from: a, b"]),
    ({"database": "lab;DROP"}, ["database='lab;DROP'", "plain identifier"]),
    ({"updates": True}, ["updates=True"]),
])
def test_refusals_name_the_parameter(raw, words):
    with pytest.raises(P.ParameterError) as err:
        P.parse(SPEC, raw, "postgres")
    for w in words:
        assert w in str(err.value)


def test_a_parameter_of_another_engine_is_refused():
    with pytest.raises(P.ParameterError, match="database.*applies only to engine postgres or sqlserver"):
        P.parse(SPEC, {"database": "lab"}, "native")


def test_split_assignments():
    assert P.split_assignments(["a=1", "b=x,y", "c="]) == {"a": "1", "b": "x,y", "c": ""}
    with pytest.raises(P.ParameterError, match="expected NAME=VALUE"):
        P.split_assignments(["oops"])
    with pytest.raises(P.ParameterError, match="given twice"):
        P.split_assignments(["a=1", "a=2"])


@pytest.mark.parametrize("given, closest", [("sesions", "sessions"), ("duration", "duration_s"),
                                            ("Updates", "updates"), ("capture-stacks", "capture_stacks")])
def test_an_unknown_name_is_named_unknown_with_the_closest_known_name(given, closest):
    with pytest.raises(P.ParameterError) as err:
        P.parse(SPEC, {given: "1"}, "postgres")
    assert f"unknown parameter {given!r} (did you mean {closest!r}?)" in str(err.value)
    assert "expected one of: capture_stacks, database, duration_s" in str(err.value)


def test_an_unknown_name_far_from_every_known_one_gets_no_guess():
    with pytest.raises(P.ParameterError, match=r"unknown parameter 'zzz': this chapter has no parameter by that "
                                               r"name; expected one of: "):
        P.check_names(SPEC, ["zzz", "sessions"])
    P.check_names(SPEC, ["sessions", "updates"])  # known names pass
