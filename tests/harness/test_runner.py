"""The live runner as a process: plan, signals, restore, incomplete recordings, exit codes.

A toy chapter (engine ``native``, no database) changes a state file the way a
guard changes a server, and restores it in ``finally``.  The process is sent
SIGINT or SIGTERM mid-run, and again while it restores.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from contention_book.harness import params as P
from contention_book.harness import runner
from contention_book.harness.spec import ChapterSpec

TOY = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    from contention_book.harness import params as P, runner
    from contention_book.harness.spec import ChapterSpec, Table

    state = Path(sys.argv[1])
    SPEC = ChapterSpec(chapter="toy", notebook="00-toy.ipynb", titles={"native": "toy"},
                       variants={"native": ("a",)}, labels={}, params=(P.duration_s(30.0),),
                       layout={"runs": Table("runs.csv", ("variant",))}, published=(), reference={})

    def run(ctx):
        prior = state.read_text()
        ctx.log(f"[guard] changing state from {prior!r}")
        state.write_text("changed")
        try:
            ctx.writer.write_text("runs.csv", "variant\\na\\n")
            ctx.log("READY")
            deadline = time.monotonic() + ctx.params["duration_s"]
            while time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            time.sleep(float(sys.argv[3]))  # a slow restore, so a second signal lands inside it
            state.write_text(prior)
            ctx.log("[guard] restored")

    sys.exit(runner.serve(SPEC, {"native": run}, {"duration_s": sys.argv[4]}, engine="native",
                          record_to=sys.argv[2], command="toy"))
''')


def start(tmp_path, restore_s=0.0, duration="30"):
    state = tmp_path / "state"
    state.write_text("prior")
    dest = tmp_path / "rec"
    proc = subprocess.Popen([sys.executable, "-c", TOY, str(state), str(dest), str(restore_s), duration],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "READY" in line:
            break
    return proc, state, dest, lines


def finish(proc, lines, timeout=30):
    out, _ = proc.communicate(timeout=timeout)
    return "".join(lines) + out


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_restores_and_marks_incomplete(tmp_path, sig, code):
    proc, state, dest, lines = start(tmp_path)
    assert state.read_text() == "changed"
    proc.send_signal(sig)
    out = finish(proc, lines)
    assert proc.returncode == code, out
    assert state.read_text() == "prior"
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["status"] == {"state": "incomplete",
                                  "reason": f"run ended early: interrupted by {signal.Signals(sig).name}"}
    assert "run.log" in [f["path"] for f in manifest["files"]]
    assert "[guard] restored" in (dest / "run.log").read_text()


def test_a_second_signal_does_not_cut_the_restore_short(tmp_path):
    proc, state, dest, lines = start(tmp_path, restore_s=1.5)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # inside the slow restore
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGINT)
    out = finish(proc, lines)
    assert proc.returncode == 130, out
    assert "received again: still restoring" in out
    assert state.read_text() == "prior"
    assert "[guard] restored" in out


def test_a_normal_run_is_complete(tmp_path):
    proc, state, dest, lines = start(tmp_path, duration="0.2")
    out = finish(proc, lines)
    assert proc.returncode == 0, out
    assert json.loads((dest / "manifest.json").read_text())["status"] == {"state": "complete"}
    assert state.read_text() == "prior"


def test_a_run_that_writes_no_data_is_not_complete(tmp_path):
    spec = ChapterSpec(chapter="toy", notebook="00-toy.ipynb", titles={}, variants={"native": ("a",)}, labels={},
                       params=(), layout={}, published=(), reference={})
    code = runner.serve(spec, {"native": lambda ctx: None}, {}, engine="native", record_to=str(tmp_path / "r"))
    assert code == runner.EXIT_FAILED
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["status"]["state"] == "incomplete"
    assert "wrote no data files" in manifest["status"]["reason"]


def test_bad_parameters_are_refused_before_anything_starts(tmp_path, capsys):
    spec = ChapterSpec(chapter="toy", notebook="00-toy.ipynb", titles={}, variants={"native": ("a",)}, labels={},
                       params=(P.duration_s(1.0),), layout={}, published=(), reference={})
    called = []
    code = runner.serve(spec, {"native": called.append}, {"duration_s": "soon"}, engine="native",
                        record_to=str(tmp_path / "r"))
    assert code == runner.EXIT_REFUSED and not called and not (tmp_path / "r").exists()
    assert "duration_s='soon'" in capsys.readouterr().out
    code = runner.serve(spec, {"native": called.append}, {}, engine="postgres", record_to=str(tmp_path / "r"))
    assert code == runner.EXIT_REFUSED and not called


def test_the_module_refuses_an_unknown_parameter():
    proc = subprocess.run([sys.executable, "-m", "contention_book.run", "latch-fairness", "--engine", "native",
                           "--param", "sesions=2"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "unknown parameter 'sesions' (did you mean 'sessions'?)" in proc.stdout


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_the_launcher_forwards_a_signal_and_waits(tmp_path):
    """The parent (book builder or notebook) forwards SIGTERM and waits for the child's restore."""
    script = textwrap.dedent(f'''
        import sys
        from contention_book.harness import launch
        launch.runner_command = lambda *a, **k: [sys.executable, "-c", {TOY!r}, "{tmp_path / 'state'}",
                                                 "{tmp_path / 'rec'}", "1.0", "30"]
        try:
            launch.run_live("latch-fairness", "native", record_to="{tmp_path / 'rec'}", relay=print)
        except launch.LiveRunInterrupted as exc:
            print("PARENT", exc.returncode)
            sys.exit(exc.returncode)
    ''')
    (tmp_path / "state").write_text("prior")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "READY" in line:
            break
    proc.send_signal(signal.SIGTERM)
    out = finish(proc, lines)
    assert proc.returncode == 143, out
    assert "PARENT 143" in out and "[guard] restored" in out
    assert (tmp_path / "state").read_text() == "prior"


# -- one run at a time, and what a killed run left ------------------------------------------------
def test_a_second_run_is_refused_at_once_naming_the_first(tmp_path):
    first, state, dest, lines = start(tmp_path)
    try:
        t0 = time.monotonic()
        second = subprocess.run([sys.executable, "-c", TOY, str(tmp_path / "state2"), str(tmp_path / "rec2"), "0",
                                 "0.2"], capture_output=True, text=True, timeout=60)
        took = time.monotonic() - t0
    finally:
        first.send_signal(signal.SIGINT)
        finish(first, lines)
    assert second.returncode == runner.EXIT_REFUSED, second.stdout + second.stderr
    assert f"chapter toy on this machine is in use by another run (pid {first.pid}, chapter toy on native, " \
           "started " in second.stdout
    assert took < 10  # refused at once (the interpreter's start-up is most of this)
    assert not (tmp_path / "rec2").exists()


def test_after_sigkill_the_lock_is_free_and_the_partial_recording_is_sealed(tmp_path):
    proc, state, dest, lines = start(tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    partial = list(tmp_path.glob(".rec.*.partial"))
    assert len(partial) == 1 and not dest.exists()
    (tmp_path / "state").write_text("prior")
    again = subprocess.run([sys.executable, "-c", TOY, str(tmp_path / "state"), str(tmp_path / "rec-next"), "0",
                            "0.2"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "sealed" in again.stdout and not list(tmp_path.glob(".rec.*.partial"))
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["status"]["state"] == "incomplete" and "killed" in manifest["status"]["reason"]
    assert {"runs.csv", "run.log"} <= {f["path"] for f in manifest["files"]}  # the log survives SIGKILL
    from contention_book.harness.recording import Recording

    assert Recording.open(dest, allow_incomplete=True).kind == "measured"  # checksums hold


SIGNAL_MID_LINE = textwrap.dedent("""
    import os, signal, sys
    from contention_book.harness.runner import RunInterrupted, RunLog, stop_signals

    class File:  # the run.log file: a second SIGTERM lands while the first one's line is being written
        sent = False
        def write(self, text):
            if "received:" in text and not File.sent:
                File.sent = True
                os.kill(os.getpid(), signal.SIGTERM)
        def flush(self):
            pass
        def close(self):
            pass

    log = RunLog(echo=lambda line: None)
    log._file = File()
    try:
        with stop_signals(log):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
    except RunInterrupted:
        pass
    log.detach()
    print(log.text(), end="")
""")


def test_a_second_signal_while_the_first_is_being_logged_does_not_hang():
    """The handler of the second signal must not wait for the log the first handler is writing with
    (it did, and a SIGTERM sent to make's process group, so twice to the runner, hung a run for good)."""
    r = subprocess.run([sys.executable, "-c", SIGNAL_MID_LINE], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["[run] SIGTERM received", "[run] SIGTERM received again"], lines
