"""Startup failures as one line: the setting, its value (password masked) and the fix.

Used by ``tessera serve``, ``check`` and ``migrate`` and by a Hypercorn worker's own startup
(:mod:`host.asgi`). A known failure (bad URL, missing driver, database unreachable, missing,
or refusing the role, a missing SQLite directory, a bad setting, a broken plugin graph, a
schema change that needs a migration) becomes :class:`~host.errors.StartupError` with one
line; anything else keeps its traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib
import multiprocessing
import os
import signal
import socket
import sqlite3
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import NoReturn, TypeVar
from urllib.parse import urlsplit, urlunsplit

from host.config import Settings
from host.errors import StartupError
from host.storage.database import Storage, UnsupportedScheme, database_file

__all__ = [
    "abort_worker",
    "check_bind",
    "check_database_url",
    "die_with_parent",
    "explain",
    "mask_url",
    "probe_database",
    "reachable",
]

T = TypeVar("T")

CONNECT_TIMEOUT_S = 10.0
EXIT_STARTUP = 1
PR_SET_PDEATHSIG = 1
VAR = "TESSERA_DATABASE_URL"


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def check_database_url(settings: Settings) -> None:
    """What can be checked without connecting: the scheme, the driver, the SQLite directory.

    :raises StartupError: naming the problem and the fix.
    """
    url = settings.database_url
    shown = f"{VAR}={mask_url(url)}"
    try:
        path = database_file(url)
    except UnsupportedScheme as exc:
        raise StartupError(
            f"{shown}: {exc}; use sqlite:///path/to/file.db or postgresql://user@host:port/dbname"
        ) from None
    if path is None:  # a database server: its driver must be installed
        try:
            importlib.import_module("asyncpg")
        except ImportError:
            raise StartupError(
                f"{shown}: the PostgreSQL driver (asyncpg) is not installed; "
                "install it with: pip install 'tessera-host[postgresql]'"
            ) from None
        return
    if not path.name or str(path) == ":memory:":
        raise StartupError(f"{shown}: name a database file, e.g. sqlite:///tessera.db")
    directory = path.parent.resolve()
    if not directory.is_dir():
        raise StartupError(
            f"{shown}: the directory {directory} of the SQLite file does not exist; create it "
            "or point the URL elsewhere"
        )
    target = path if path.exists() else directory
    if not os.access(target, os.R_OK | os.W_OK):
        raise StartupError(
            f"{shown}: {target} is not readable and writable by this user; fix its permissions"
        )


def explain(exc: BaseException, settings: Settings) -> str | None:
    """One line for a known failure to open the database, else ``None``."""
    shown = f"{VAR}={mask_url(settings.database_url)}"
    if isinstance(exc, StartupError):
        return str(exc)
    try:
        parts = urlsplit(settings.database_url)
        where = f"{parts.hostname or 'localhost'}:{parts.port or 5432}"
        database = parts.path.lstrip("/")
    except ValueError:
        where, database = "?", "?"
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate == "3D000":
        return f"{shown}: database {database!r} does not exist; create it (createdb {database})"
    if sqlstate in {"28000", "28P01"}:
        return f"{shown}: the server refused the role or its password ({exc}); fix the URL"
    if isinstance(exc, socket.gaierror):
        return f"{shown}: unknown host {parts.hostname!r}; fix the host name in the URL"
    if isinstance(exc, ConnectionRefusedError):
        return f"{shown}: nothing listens on {where} (connection refused); start the database"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return (
            f"{shown}: the database at {where} did not answer within {CONNECT_TIMEOUT_S:.0f}s; "
            "check the host, port and firewall"
        )
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"{shown}: cannot connect to {where} ({exc.strerror}); check the URL"
    if isinstance(exc, sqlite3.Error):
        return f"{shown}: SQLite refused the file ({exc}); check the path and its permissions"
    if isinstance(exc, ValueError) and str(exc).startswith("TESSERA_"):
        return str(exc)
    return None


async def reachable(work: Awaitable[T], settings: Settings) -> T:
    """Await ``work`` (which connects to the database) within the connect timeout; a known
    failure is raised as :class:`StartupError`."""
    try:
        return await asyncio.wait_for(work, CONNECT_TIMEOUT_S)
    except Exception as exc:
        line = explain(exc, settings)
        if line is None:
            raise
        raise StartupError(line) from exc


def abort_worker(line: str) -> NoReturn:
    """End a Hypercorn worker whose startup failed: ``line`` on stderr, no traceback, and a
    non-zero exit status for the whole server.

    Hypercorn 0.18's master returns 0 after a worker failed (``hypercorn.run.run`` computes
    the failed worker's exit code, then overwrites it with that of the workers it stops next,
    none when there was one), so the worker ends its master itself with ``SIGUSR1``, which the
    master does not handle: its exit status is non-zero (``-10``, shells show 138). The other
    workers stop gracefully through their parent-death signal (:func:`die_with_parent`).
    """
    sys.stderr.write(f"tessera: cannot start: {line}\n")
    sys.stderr.flush()
    parent = os.getppid()
    if _is_hypercorn_master(parent):
        os.kill(parent, signal.SIGUSR1)
    os._exit(EXIT_STARTUP)


def _is_hypercorn_master(pid: int) -> bool:
    if pid <= 1 or multiprocessing.parent_process() is None:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"hypercorn" in cmdline or b"tessera" in cmdline


def die_with_parent() -> None:
    """Linux: ask for ``SIGTERM`` (Hypercorn's graceful stop) when the master dies, so a
    worker never keeps serving without it. Elsewhere nothing."""
    if not sys.platform.startswith("linux") or multiprocessing.parent_process() is None:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return


async def probe_database(settings: Settings) -> str:
    """Check that the database can be opened (``tessera check``); a line saying what was
    found. A SQLite file that does not exist yet is not created.

    :raises StartupError: the database cannot be reached.
    """
    check_database_url(settings)
    shown = f"{VAR}={mask_url(settings.database_url)}"
    storage = Storage(settings)
    if storage.is_new_file():
        return f"database: {shown}: a new SQLite file, created at the first start"
    try:
        await reachable(storage.connect(), settings)
        await reachable(storage.rows("SELECT 1"), settings)
    finally:
        with contextlib.suppress(Exception):
            await storage.disconnect()
    return f"database: {shown}: reachable ({storage.dialect.name})"


def check_bind(bind: str) -> None:
    """``tessera serve --bind HOST:PORT``: the port is free.

    :raises StartupError: the address is in use or cannot be bound.
    """
    if bind.startswith(("unix:", "fd://")) or ":" not in bind:
        return
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    try:
        number = int(port)
    except ValueError:
        raise StartupError(f"--bind {bind}: the port must be a number") from None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, number))
        except OSError as exc:
            raise StartupError(
                f"--bind {bind}: {exc.strerror or exc}; stop what uses it or choose another address"
            ) from None
