"""The malformed-input corpus (tests/perftools/bad/): every file must raise
FormatError (a ValueError) whose message names the file, the line and what
was expected there; and the command line must turn it into exit status 2."""

from pathlib import Path

import pytest

from contention_book.perftools import FormatError, load
from contention_book.perftools.__main__ import main

BAD = Path(__file__).parent / "bad"

# file, format passed (None: sniffed), importer options, line, words of the expectation
CASES = [
    # wpaexporter CSV
    ("wpa_csv_missing_stack_column.csv", "wpa_csv", {}, 1, "a 'Stack' column"),
    ("wpa_csv_truncated_row.csv", None, {}, 3, "6 fields as in the header"),
    ("wpa_csv_extra_field.csv", None, {}, 4, "6 fields as in the header"),
    ("wpa_csv_bad_weight.csv", None, {}, 4, "a number in column 'Weight (in view) (ms)'"),
    ("wpa_csv_bad_time.csv", None, {}, 3, "a number in column 'TimeStamp (s)'"),
    ("wpa_csv_bad_thread.csv", None, {}, 3, "a number in column 'Thread ID'"),
    ("wpa_csv_empty.csv", "wpa_csv", {}, 1, "a CSV header line with a 'Stack' column"),
    ("wpa_csv_header_only.csv", None, {}, 2, "at least one data row"),
    ("wpa_csv_unterminated_quote.csv", None, {}, 3, "6 fields as in the header"),
    # WPA tree
    ("tree_missing_root.csv", None, {}, 3, "a '[Root]' row before the first frame"),
    ("tree_children_exceed.csv", None, {}, 3, "children whose weights add up to at most the row's weight"),
    ("tree_misaligned_sibling.csv", None, {}, 5, "like its siblings'"),
    ("tree_bad_weight.csv", None, {}, 3, "a number in column 'Weight'"),
    ("tree_no_weight_column.csv", None, {}, 1, "a 'Weight' or 'Count' column"),
    ("tree_truncated_row.csv", None, {}, 4, "4 fields as in the header"),
    ("tree_marker_above_root.csv", None, {}, 3, "indented deeper than its '[Root]'"),
    ("tree_empty.csv", "wpa_tree", {}, 1, "a header line with 'Stack'"),
    # xperf dumper
    ("xperf_no_header.txt", None, {}, 3, "'BeginHeader' ... 'EndHeader'"),
    ("xperf_missing_column.txt", None, {}, 3, "column(s) 'ThreadID' in the SampledProfile header"),
    ("xperf_truncated_line.txt", None, {}, 9, "9 fields after 'SampledProfile,'"),
    ("xperf_stack_without_sample.txt", None, {}, 9, "a SampledProfile event with TimeStamp 7000 and ThreadID 5999"),
    ("xperf_frame_gap.txt", None, {}, 8, "stack frame number 2"),
    ("xperf_bad_timestamp.txt", None, {}, 6, "an integer in the 'TimeStamp' column"),
    ("xperf_unknown_event.txt", None, {}, 9, "an event type declared between BeginHeader and EndHeader"),
    ("xperf_unclosed_header.txt", None, {}, 4, "'EndHeader' to close the header"),
    ("xperf_no_samples.txt", None, {}, 5, "at least one SampledProfile event"),
    # perf script
    # (strict: by default a malformed perf line is skipped and counted, see test_perftools_perf_script.py)
    ("perf_bad_header.txt", None, {"strict": True}, 4, "a sample header 'comm [pid/]tid [[cpu]] [time:] [period] event:'"),
    ("perf_truncated_frame.txt", None, {"strict": True}, 7, "a stack frame line 'ADDRESS SYMBOL+OFFSET (DSO)'"),
    ("perf_bad_address.txt", None, {"strict": True}, 3, "a stack frame line"),
    ("perf_frames_without_header.txt", "perf_script", {}, 1, "before the stack frames"),
    ("perf_frames_without_header.txt", None, {}, 1, "perf script output or folded stacks"),  # unsniffable
    ("perf_empty.txt", "perf_script", {}, 1, "at least one perf sample"),
    ("perf_empty.txt", None, {}, 1, "a stack export (the file is empty)"),
    ("perf_comments_only.txt", "perf_script", {}, 1, "at least one perf sample"),
    # folded
    ("folded_no_count.folded", "folded", {}, 2, "a folded stack 'frame;frame;... COUNT'"),
    ("folded_bad_count.folded", "folded", {}, 2, "a sample count after the last space"),
    ("folded_empty_frame.folded", "folded", {}, 2, "a frame name between each pair of ';'"),
    ("folded_negative.folded", "folded", {}, 2, "a finite, non-negative sample count"),
    ("folded_process_only.folded", "folded", {"process_root": True}, 2, "a process name and at least one frame"),
]


def test_corpus_is_complete():
    files = {p.name for p in BAD.iterdir()}
    used = {c[0] for c in CASES}
    assert files == used, f"unlisted: {files - used}, missing: {used - files}"
    assert len(CASES) >= 25


@pytest.mark.parametrize("name, fmt, opts, line, expectation", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_bad_input_message(name, fmt, opts, line, expectation):
    path = BAD / name
    with pytest.raises(FormatError) as info:
        load(path, format=fmt, **opts)
    err = info.value
    msg = str(err)
    assert isinstance(err, ValueError)
    assert str(path) in msg, msg
    assert err.line == line, msg
    assert f"line {line}:" in msg, msg
    assert expectation in msg, msg
    assert msg.count("expected") >= 1


@pytest.mark.parametrize("name, fmt, opts", [(c[0], c[1], c[2]) for c in CASES[::4]])
def test_cli_exit_code_2_without_traceback(name, fmt, opts, capsys):
    argv = ["summary", str(BAD / name)] + (["--format", fmt] if fmt else []) + (["--strict"] if opts.get("strict") else [])
    if name == "folded_process_only.folded":
        argv.append("--root-is-process")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("perftools: error: ")
    assert "Traceback" not in err
    assert name in err and "line " in err
