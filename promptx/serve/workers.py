"""Several ``promptx serve`` worker processes on one port.

One process runs Python one request at a time (the interpreter lock): a light or medium
enhancement is mostly Python, so eight concurrent requests to one process are served no
faster than one after another. ``serve_workers`` binds the port once, then forks
``workers`` processes that each build their own app (their own Enhancer and model: the
memory is paid once per worker) and accept on the shared socket; the kernel hands each
connection to one of them. SIGTERM or SIGINT to the parent is passed to every worker as SIGTERM
(the workers are in their own process group, so a terminal's Ctrl-C reaches the parent
only), and each finishes its requests in flight; the parent exits 0 when they all did.
POSIX only.

Not here: the app (``serve.app``), the command's options (``cli.serve``).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from typing import Any, Callable

from ..errors import InvalidInputError

__all__ = ["bind", "serve_workers"]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (IPv6 where the host is), shared by the workers."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit it: without, each small answer waits ~40 ms for a delayed ACK
    # (asyncio sets it only on the sockets it creates itself)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve_workers(
    make_app: Callable[[], Any],
    sock: socket.socket,
    workers: int,
    run_one: Callable[[Any, socket.socket], None],
) -> int:
    """Fork ``workers`` processes, each ``run_one(make_app(), sock)``; wait for them all and
    return 0 when every one exited 0 (else 1)."""
    children = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:  # a worker: serve until told to stop
            os.setpgid(0, 0)  # a terminal's Ctrl-C reaches the parent only
            _end_with_parent()
            status = 1
            try:
                run_one(make_app(), sock)
                status = 0
            except SystemExit as done:
                status = done.code if isinstance(done.code, int) else 0
            except BaseException as exc:  # noqa: BLE001 - said, then the worker ends
                print(
                    f"promptx serve: a worker failed: {type(exc).__name__}: {exc}",
                    file=sys.stderr,
                    flush=True,
                )
            finally:
                os._exit(status)
        children.append(pid)
    sock.close()
    _pass_signals_to(children)
    return _wait_for(children)


def _end_with_parent() -> None:
    """Have Linux send this worker SIGTERM when the parent dies (even killed): no orphan keeps
    serving the port. Elsewhere a no-op."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


_PR_SET_PDEATHSIG = 1


def _pass_signals_to(children: list[int]) -> None:
    def forward(_signum, _frame):
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)


def _wait_for(children: list[int]) -> int:
    """Wait for every child; 0 when all exited 0. A worker that dies stops the others."""
    failed, left = False, set(children)
    while left:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        left.discard(pid)
        if os.waitstatus_to_exitcode(status) != 0 and not failed:
            failed = True
            for other in left:
                try:
                    os.kill(other, signal.SIGTERM)
                except ProcessLookupError:
                    pass
    return 1 if failed else 0
