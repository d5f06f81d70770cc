"""When the console is on, and whether it may let a visitor choose who they act as."""

from __future__ import annotations

import ipaddress

from host.config import Settings

__all__ = ["CONSOLE_PATH", "console_enabled", "console_url", "loopback_bind"]

CONSOLE_PATH = "/-/console"
"""Beside the API prefix, never under it: ``/-/`` is no plugin's namespace."""


def _host_of(bind: str) -> str | None:
    if not bind or bind.startswith(("unix:", "fd://")):
        return None
    host, separator, _ = bind.rpartition(":")
    return host.strip("[]") if separator else bind


def loopback_bind(bind: str) -> bool:
    """``bind`` (a ``--bind`` value) listens on a loopback address only."""
    host = _host_of(bind)
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def console_enabled(settings: Settings) -> bool:
    """``TESSERA_CONSOLE``: on, off, or (auto) on for a loopback ``tessera serve``."""
    if settings.console == "auto":
        return loopback_bind(settings.serve_bind)
    return settings.console == "on"


def console_url(bind: str) -> str:
    """The console's address for a ``--bind`` value (printed by ``tessera serve``)."""
    host = _host_of(bind) or "127.0.0.1"
    port = bind.rpartition(":")[2] if ":" in bind else "8000"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{CONSOLE_PATH}/"
