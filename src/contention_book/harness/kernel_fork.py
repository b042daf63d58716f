"""Chapter kernels forked from one process that has already imported what every chapter imports.

Why: a book build starts a kernel per chapter, and each spent about 1.9 s of CPU starting Python, ipykernel and
the chapters' common imports (pandas, matplotlib, seaborn) before its first cell: a tenth of a full rebuild on
the 2-CPU build machine.  A fork of a process that holds them is ready in milliseconds, and is still a fresh
process per chapter: nothing one chapter leaves reaches the next.

How: ``serve`` binds a Unix socket, imports ipykernel's application and the modules it is given (and calls a
module's ``warm_up()``, if it has one, for what it loads on first use), then forks a
kernel for each request.  The kernel manager starts ``launch`` where it would start ``ipykernel_launcher``, with
the same arguments: the launcher hands the server its arguments, working folder, environment and standard
streams, forwards SIGINT and SIGTERM to the forked kernel, and exits when the kernel does.  The kernel ends when
its launcher is killed (the manager's shutdown), and the server when its standard input closes (the build's
end).  A launcher that finds no server runs ``ipykernel_launcher`` itself.

    python -m contention_book.harness.kernel_fork serve SOCKET MODULE...     (started by the book build)
    python -m contention_book.harness.kernel_fork launch SOCKET -f CONNECTION_FILE ...
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys

# what ipykernel sets at its own start when nothing else is set: the server's imports must see the same
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
_MESSAGE = 1 << 20


def serve(path: str, modules: list[str]) -> int:
    """Fork a kernel for each launcher that connects, until standard input closes."""
    import importlib
    import select

    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)  # before the imports: a launcher that comes early waits in the backlog
    server.listen(8)
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # as ipykernel_launcher does; the kernel puts the working folder back
    from ipykernel import kernelapp  # noqa: F401 - loaded once, here, for every kernel

    for name in modules:
        module = importlib.import_module(name)
        if callable(getattr(module, "warm_up", None)):  # what the module loads on first use, loaded once here
            module.warm_up()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # kernels are reaped as they end
    while True:
        ready, _, _ = select.select([server, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
            return 0
        if server in ready:
            conn, _ = server.accept()
            fds: list[int] = []
            try:
                message, fds, _, _ = socket.recv_fds(conn, _MESSAGE, 3)
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    server.close()
                    _become_kernel(conn, fds, request)  # does not return
                conn.send(json.dumps({"pid": pid}).encode())
            except (OSError, ValueError) as exc:
                print(f"[kernel_fork] a request failed: {exc}", file=sys.stderr, flush=True)
            finally:
                for fd in fds:
                    os.close(fd)
                conn.close()


def _become_kernel(conn: socket.socket, fds: list[int], request: dict) -> None:
    """In the forked child: take the launcher's streams, folder and environment, and run the kernel."""
    import threading

    try:
        # a session of its own, as jupyter_client gives every kernel: the scheduler's autogroups then weigh each
        # kernel as it would a kernel started from nothing (forks left in the server's session shared one share)
        os.setsid()
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)

        def end_with_launcher() -> None:
            while True:
                try:
                    if not conn.recv(16):
                        break
                except InterruptedError:
                    continue
                except OSError:
                    break
            os._exit(0)  # the launcher is gone: the manager has shut this kernel down

        threading.Thread(target=end_with_launcher, name="launcher-watch", daemon=True).start()
        from ipykernel import kernelapp

        # read from the environment when ipykernel was imported (in the server): the manager's own value, and the
        # parent whose end ends this kernel is the server
        argv = [*request["argv"], f"--IPKernelApp.parent_handle={os.getppid()}"]
        sys.argv = [sys.argv[0], *argv]
        kernelapp.launch_new_instance(argv=argv)
    except BaseException as exc:  # noqa: BLE001 - a kernel that cannot start says why on its log
        if not isinstance(exc, SystemExit):
            print(f"[kernel_fork] the kernel did not start: {exc!r}", file=sys.stderr, flush=True)
    finally:
        os._exit(0)


def launch(path: str, argv: list[str]) -> int:
    """Have the server fork a kernel with ``argv`` and stand for it until it ends (or run one here, without a
    server)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(path)
        request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        reply = conn.recv(4096)
        pid = json.loads(reply)["pid"] if reply else None
    except (OSError, ValueError, KeyError):
        pid = None
    if pid is None:  # no server (or it failed): the kernel the manager would have started
        conn.close()
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])

    def forward(signum, _frame) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    while True:  # the kernel holds the other end: it closes when the kernel ends
        try:
            if not conn.recv(16):
                return 0
        except InterruptedError:
            continue


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 2 and args[0] == "serve":
        return serve(args[1], args[2:])
    if len(args) >= 2 and args[0] == "launch":
        return launch(args[1], args[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
