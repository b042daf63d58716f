"""The book build's chapter kernels forked from one server that holds the common imports: each is still a fresh
process, stops with the manager, takes interrupts, and a launcher without a server still starts a kernel."""
from __future__ import annotations

import os
import time

import nbformat
import pytest
from jupyter_core.utils import run_sync

from contention_book.harness import book

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="fork and Unix sockets")]


@pytest.fixture(scope="module")
def forks():
    server = book.KernelForkServer()
    yield server
    server.close()


def _client(km):
    kc = km.blocking_client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return kc


def _run(kc, code: str, timeout: float = 60) -> tuple[str, dict]:
    """What the cell printed, and its reply's content."""
    said = []
    reply = kc.execute_interactive(code, timeout=timeout,
                                   output_hook=lambda m: said.append(m["content"].get("text", "")))
    return "".join(said), reply["content"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has ended too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_forked_kernels_are_fresh_processes_with_the_imports_loaded(forks):
    probe = ("import os, sys\nimport contention_book.chapters.shared.notebook as m\n"
             "print(book_probe_seen := getattr(m, '_probe', None), os.getpid(), os.getsid(0) == os.getpid(),"
             " sorted(k for k in get_ipython().user_ns if k == 'contention_book'))\nm._probe = os.getpid()")
    seen = []
    for _ in range(2):
        km = book.start_kernel(forks)
        kc = _client(km)
        try:
            said, reply = _run(kc, probe)
        finally:
            kc.stop_channels()
            book.stop_kernel(km)
        assert reply["status"] == "ok", reply
        seen.append(said.split())
    (first_seen, first_pid, first_session, *_), (second_seen, second_pid, second_session, *_) = seen
    assert first_seen == second_seen == "None"  # what one kernel set, the next does not see
    assert first_pid != second_pid and first_session == second_session == "True"


def test_a_forked_kernel_runs_a_notebook_as_a_kernel_started_ahead_does(forks, tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# probe"),
                nbformat.v4.new_code_cell(f"import sys\nprint({book.WARM_MODULE!r} in sys.modules)"),
                nbformat.v4.new_code_cell("print(sorted(k for k in get_ipython().user_ns if k == 'contention_book'))"),
                nbformat.v4.new_code_cell("21 * 2")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "notebooks" / "98-probe.ipynb")
    monkeypatch.setenv("CONTENTION_BOOK_ROOT", str(tmp_path))
    km = book.start_kernel(forks)
    try:
        out = book.execute("probe", {}, output=tmp_path / "forked.ipynb", kernel=km)
    finally:
        book.stop_kernel(km)
    got = ["".join(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
           for c in nbformat.read(out, as_version=4).cells if c.cell_type == "code" for o in c.outputs]
    assert got == ["True\n", "[]\n", "42"]


def test_a_forked_kernel_takes_an_interrupt_and_ends_with_its_manager(forks):
    km = book.start_kernel(forks)
    kc = _client(km)
    try:
        said, _ = _run(kc, "import os; print(os.getpid())")
        pid = int(said)
        kc.execute("import time; time.sleep(60)")
        time.sleep(1)
        started = time.monotonic()
        run_sync(km.interrupt_kernel)()
        reply = kc.get_shell_msg(timeout=20)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - started < 20
        assert _run(kc, "print(6 * 7)")[0].strip() == "42"  # still serving after the interrupt
    finally:
        kc.stop_channels()
        book.stop_kernel(km)
    deadline = time.monotonic() + 15
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the forked kernel outlived its launcher"


def test_without_a_server_the_launcher_starts_a_kernel_itself(tmp_path):
    km = book.kernel_manager_class(None, str(tmp_path / "no-server"))(kernel_name="python3")
    run_sync(km.start_kernel)()
    kc = _client(km)
    try:
        said, reply = _run(kc, "import sys; print(sys.argv[0].endswith('ipykernel_launcher.py'))")
    finally:
        kc.stop_channels()
        run_sync(km.shutdown_kernel)(now=True)
    assert reply["status"] == "ok" and said.strip() == "True"


def test_the_server_ends_when_the_build_closes_it():
    server = book.KernelForkServer()
    process = server._process
    server.close()
    assert process.returncode == 0
    assert not os.path.exists(server.socket)

