"""``python -m host.supervisor``: the process master ``tessera serve`` runs.

It is Hypercorn's command line (every Hypercorn option works) with one change to its master:
when a worker dies while the server is not stopping (``kill -9``, the out-of-memory killer, a
crash), the master stops the other workers gracefully and exits with a non-zero status: the
worker's own (``128 + signal`` for a worker killed by a signal, as shells report it). A
supervisor that restarts on failure (systemd ``Restart=on-failure``, docs/deploy.md) then
brings the whole service back. Hypercorn 0.18's master neither replaces such a worker nor
exits non-zero (it stops serving and exits 0). ``SIGTERM`` and ``SIGINT`` stop the server
gracefully with status 0. With ``--reload`` or ``--workers 0`` Hypercorn's own master runs.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Sequence
from multiprocessing import get_context
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType

import hypercorn.__main__ as hypercorn_main
from hypercorn.config import Config
from hypercorn.run import run as hypercorn_run
from hypercorn.typing import WorkerFunc
from hypercorn.utils import write_pid_file

__all__ = ["EXIT_STARTUP", "exit_status", "main", "supervise"]

EXIT_STARTUP = 1
"""What a worker that could not start exits with (it has said why on stderr)."""
STOP_MARGIN = 5.0
"""Seconds beyond Hypercorn's ``graceful_timeout`` the workers get to stop."""


def exit_status(exitcode: int) -> int:
    """A worker's exit code as a process status: ``128 + n`` for death by signal ``n``."""
    return 128 - exitcode if exitcode < 0 else exitcode


def _worker_func(worker_class: str) -> WorkerFunc:
    if worker_class == "trio":
        from hypercorn.trio.run import trio_worker

        return trio_worker
    from hypercorn.asyncio.run import asyncio_worker, uvloop_worker

    return uvloop_worker if worker_class == "uvloop" else asyncio_worker


def supervise(config: Config) -> int:
    """Run ``config.workers`` Hypercorn workers until a signal stops them (status 0) or one
    of them dies (the non-zero status of the first to die)."""
    if config.workers == 0 or config.use_reloader:
        return hypercorn_run(config)
    if config.pid_path is not None:
        write_pid_file(config.pid_path)
    worker_func = _worker_func(config.worker_class)
    sockets = config.create_sockets()
    context = get_context("spawn")
    shutdown = context.Event()
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        shutdown.set()

    # The workers inherit "ignore SIGINT": a terminal's Ctrl+C reaches the master only.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    workers: list[BaseProcess] = []
    for _ in range(config.workers):
        process = context.Process(
            target=worker_func,
            kwargs={"config": config, "shutdown_event": shutdown, "sockets": sockets},
        )
        process.daemon = config.daemon
        process.start()
        workers.append(process)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)

    ready = wait([worker.sentinel for worker in workers])
    # A sentinel is ready as the worker's files close, a moment before it can be reaped.
    dead = [worker for worker in workers if worker.sentinel in ready]
    for worker in dead:
        worker.join()
    unexpected = not stopping
    shutdown.set()
    deadline = time.monotonic() + config.graceful_timeout + STOP_MARGIN
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive():
            worker.terminate()
            worker.join()
    for sock in (*sockets.secure_sockets, *sockets.insecure_sockets):
        sock.close()

    codes = [exit_status(worker.exitcode or 0) for worker in dead]
    status = next((code for code in codes if code), 0)
    if unexpected:
        status = status or 1  # a worker that ends by itself is lost all the same
        if status != EXIT_STARTUP:  # a worker that could not start has said why
            sys.stderr.write(
                f"tessera: worker {dead[0].pid} died (exit status {status}); "
                f"stopped the server, exit status {status} for the supervisor to restart it\n"
            )
            sys.stderr.flush()
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Hypercorn's command line with :func:`supervise` as its master."""
    hypercorn_main.run = supervise  # type: ignore[attr-defined]  # its master, replaced
    return hypercorn_main.main(list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
