"""Knowing that this Hypercorn worker has begun to stop, so that keep-alive clients are told.

Hypercorn stops a worker through a multiprocessing event that its master sets on SIGTERM
(and the worker polls every 0.1 s); the ASGI app hears of it only through the lifespan
shutdown, after every connection has been drained. Responses sent meanwhile, to requests in
flight, went out without ``Connection: close`` although Hypercorn closes the connection right
after them, so a keep-alive client could send its next request into a closing socket and get
no answer. :class:`Draining` reads the same event, so those responses say
``Connection: close`` and the client opens a new connection (to another worker or instance)
instead.

The event is found on the worker's own ``multiprocessing`` process object (the keyword
argument ``shutdown_event`` Hypercorn 0.18's master passes to ``asyncio_worker``): like
:mod:`host.http.protocol`, this leans on Hypercorn's internals, pinned below 0.19. A process
that was not started that way (``--workers 0``, tests, another server) never reports
draining.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import signal
from typing import Protocol

__all__ = ["Draining", "hypercorn_shutdown_event", "stop_all_on_sigterm"]

logger = logging.getLogger("tessera.http")


class _Event(Protocol):
    def is_set(self) -> bool: ...

    def set(self) -> None: ...


def hypercorn_shutdown_event() -> _Event | None:
    """The shutdown event Hypercorn's master gave this worker process, if it is one."""
    kwargs = getattr(multiprocessing.current_process(), "_kwargs", None)
    event = kwargs.get("shutdown_event") if isinstance(kwargs, dict) else None
    return event if callable(getattr(event, "is_set", None)) else None


def stop_all_on_sigterm() -> None:
    """In a Hypercorn worker: a SIGTERM sent to the worker itself (systemd's default
    ``KillMode=control-group``, ``kill 0``, a process supervisor) stops the whole server
    gracefully, as a SIGTERM to the master does, instead of killing the worker mid-request
    (Hypercorn's workers leave SIGTERM at its default). Call from the running event loop."""
    event = hypercorn_shutdown_event()
    if event is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, event.set)


class Draining:
    """``draining()`` is true once the worker's server has begun to stop."""

    def __init__(self, event: _Event | None = None) -> None:
        self._event = event if event is not None else hypercorn_shutdown_event()
        self._began = False

    def __call__(self) -> bool:
        if self._began or self._event is None:
            return self._began
        if self._event.is_set():
            self._began = True
            logger.info(
                "shutdown began: responses now say Connection: close, "
                "requests in flight are finished"
            )
        return self._began
