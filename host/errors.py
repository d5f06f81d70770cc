"""The host's own exceptions that several layers raise (never answered to a client: the
errors a client sees are :mod:`plugin_api.errors`)."""

from __future__ import annotations

__all__ = ["StartupError"]


class StartupError(Exception):
    """A startup failure explained in one line (``str(error)``): raised by the settings and
    database checks (:mod:`host.startup`), the events setup, the metrics and the CLI."""
