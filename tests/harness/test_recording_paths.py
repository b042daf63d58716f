"""Issue 31 item 16: a recording's run.log names no folder of the machine that made it."""
from __future__ import annotations

import pandas as pd

from contention_book.harness.provenance import has_machine_path
from contention_book.harness.recording import Recording, RecordingWriter

ENGINE = {"name": "postgres", "version": "15.0"}
HOST = {"cpu_model": "test CPU", "sockets": 1, "cores": 2, "logical_cpus": 2, "numa_nodes": 1}


def test_the_run_log_keeps_no_machine_path(tmp_path):
    with RecordingWriter(tmp_path / "rec", chapter="ghost-cleanup", kind="measured", engine=ENGINE, host=HOST,
                         parameters={}, measured={"tool": "t", "tool_version": "0", "command": "x"}) as w:
        w.write_csv("runs.csv", pd.DataFrame({"variant": ["a"], "repetition": [0]}))
        w.write_text("run.log", "[harness] embedded PostgreSQL started on 127.0.0.1:50211 (data in "
                                "/home/someone/checkout/.cache/pg/data)\n[run] --record-to /tmp/rec2/x done\n"
                                "[run] 1,234 rows/s, see https://www.postgresql.org/docs/15/pgstatstatements.html\n")
    rec = Recording.open(tmp_path / "rec", allow_incomplete=True)
    log = rec.read_bytes("run.log").decode()
    assert not has_machine_path(log), log
    assert "(data in <a folder>)" in log and f"--record-to data/ghost-cleanup/{rec.id}" in log
    assert "1,234 rows/s" in log and "https://www.postgresql.org/docs/15/pgstatstatements.html" in log
