"""Locale-aware number parsing (perftools.numbers)."""

import numpy as np
import pyarrow as pa
import pytest

from contention_book.perftools.numbers import column_evidence, decimal_evidence, detect_decimal, parse_number, parse_strings, split_unit


@pytest.mark.parametrize(
    "text, decimal, value",
    [
        ("1,176567818", ",", 1.176567818),  # German decimal comma
        ("39.992,941063", ",", 39992.941063),  # German grouping + decimal
        ("1.234.567,5", ",", 1234567.5),
        ("20,726,984.943082", ".", 20726984.943082),  # en-US grouping
        ('"1,000.000000"', ".", 1000.0),
        ("1\u00a0234,5", ",", 1234.5),  # French: no-break space grouping
        ("  12 ", ".", 12.0),
        ("-0.5", ".", -0.5),
        ("1e-3", ".", 0.001),
    ],
)
def test_parse_number(text, decimal, value):
    assert detect_decimal([text], default=decimal) == decimal
    assert parse_number(text, decimal) == pytest.approx(value)


@pytest.mark.parametrize("text", ["1,234", "1.234", "12"])
def test_ambiguous_values_prove_nothing(text):
    assert decimal_evidence(text) is None


def test_ambiguous_value_follows_the_file_locale():
    # "1.234" is 1234 in a file whose other numbers use a decimal comma
    assert detect_decimal(["1.234", "0,5"]) == ","
    assert parse_number("1.234", ",") == 1234.0
    assert parse_number("1.234", ".") == 1.234


@pytest.mark.parametrize("text, decimal", [("abc", "."), ("1.2.3", "."), ("", "."), ("1,5", "."), ("12:30", ","), ("-", ".")])
def test_parse_number_rejects(text, decimal):
    with pytest.raises(ValueError):
        parse_number(text, decimal)


def test_parse_strings_vectorised():
    vals, bad = parse_strings(pa.array(["1,5", "2.000,25", "", " 3 "]), ",", allow_null=True)
    assert bad is None
    np.testing.assert_allclose(vals, [1.5, 2000.25, np.nan, 3.0])
    vals, bad = parse_strings(pa.array(["1,5", "x", "2"]), ",")
    assert vals is None and bad == 1
    _, bad = parse_strings(pa.array(["1", ""]), ".")  # empty not allowed
    assert bad == 1


def test_column_evidence():
    assert column_evidence(pa.array(["1,234", "1,5"])) == ","
    assert column_evidence(pa.array(["1,234", "1,000.5"])) == "."
    assert column_evidence(pa.array(["1,234", "12"])) is None


@pytest.mark.parametrize(
    "header, name, unit",
    [
        ("Weight (in view) (ms)", "Weight (in view)", "ms"),
        ("TimeStamp (s)", "TimeStamp", "s"),
        ("Weight (in view)", "Weight (in view)", None),
        ("Count", "Count", None),
        ("Duration (\u00b5s)", "Duration", "\u00b5s"),
    ],
)
def test_split_unit(header, name, unit):
    assert split_unit(header) == (name, unit)
