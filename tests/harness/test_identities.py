"""Accounting identities: a row that does not balance is named by the runner and set aside by the loader."""
from __future__ import annotations

import pandas as pd
import pytest

from contention_book.harness.spec import Identity, Table, Unbalanced, check_balanced, point_words, unbalanced

DELIVERS = Identity("pushed = popped + backlog change + lost",
                    lambda f: f["pushed"] == f["popped"] + f["backlog_change"] + f["lost"],
                    ("pushed", "popped", "backlog_change", "lost"))
TABLE = Table("runs.csv", ("variant", "sessions", "pushed", "popped", "backlog_change", "lost"), identities=(DELIVERS,))


def frame(**over):
    row = {"variant": "ring", "sessions": 4, "repetition": 1, "pushed": 100, "popped": 90, "backlog_change": 10,
           "lost": 0}
    row.update(over)
    return pd.DataFrame([row])


def test_a_balanced_point_passes():
    check_balanced(TABLE, frame(), "postgres")
    assert unbalanced(TABLE, frame(), "postgres") == []


def test_a_lost_message_is_named_with_its_point():
    with pytest.raises(Unbalanced, match=r"ring at 4 sessions repetition 1 does not balance: pushed = popped"):
        check_balanced(TABLE, frame(popped=80), "postgres")


def test_an_identity_for_another_engine_is_not_applied():
    other = Table("runs.csv", TABLE.columns, identities=(Identity(DELIVERS.name, DELIVERS.holds, DELIVERS.needs,
                                                                  engines=("sqlserver",)),))
    assert unbalanced(other, frame(popped=0), "postgres") == []


def test_a_missing_column_cannot_be_checked():
    with pytest.raises(Unbalanced, match="cannot check"):
        check_balanced(TABLE, frame().drop(columns=["lost"]), "postgres")


def test_point_words_reads_like_a_point():
    assert point_words({"variant": "fair", "threads": 2.0}) == "fair at 2 threads"
    assert point_words({"variant": "fair", "sessions": 2, "threads": 2}) == "fair at 2 threads"
